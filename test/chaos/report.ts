// One row per scenario and the table `make chaos` prints.
import type { AuditResult, Finding } from './audit.js';
import type { StatusCounts } from './load.js';

export interface Row {
  scenario: string;
  /** What was injected, in a few words ("200 SIGKILLs", "30 s outage"). */
  faults: string;
  admissions: number;
  lost: number;
  runTwice: number;
  unknown: number;
  /** Turns cut by a fence or shutdown and continued once. */
  resumed: number;
  /** 5xx that are not a correct answer. */
  unexpected5xx: number;
  /** 503s while Postgres was really down (the right answer then). */
  outage503: number;
  /** Fault end → a new message answered and everything earlier settled (s). */
  recoverySeconds: number | undefined;
  wallSeconds: number;
  /** Scenario facts worth printing ("listener connections 3/3", "kills by phase …"). */
  notes: string[];
  findings: Finding[];
}

export const passed = (r: Row) => r.findings.length === 0;

/** The common columns of a row, from an audit and the load's status counts. */
export function rowFrom(scenario: string, faults: string, a: AuditResult, s: StatusCounts | undefined, extra: Partial<Row> = {}): Row {
  return {
    scenario, faults,
    admissions: a.admissions, lost: a.lost, runTwice: a.runTwice, unknown: a.unknown, resumed: a.resumed,
    unexpected5xx: s?.unexpected5xx ?? 0, outage503: s?.outage503 ?? 0,
    recoverySeconds: undefined, wallSeconds: 0, notes: [], findings: [...a.findings],
    ...extra,
  };
}

const seconds = (v: number | undefined) => (v === undefined ? '—' : v.toFixed(1));

export function formatTable(rows: Row[]): string {
  const head = ['scenario', 'faults', 'admissions', 'lost', 'run twice', 'unknown', 'resumed', '5xx', '503 (outage)', 'recovery s', 'wall s', 'result'];
  const body = rows.map((r) => [
    r.scenario, r.faults, String(r.admissions), String(r.lost), String(r.runTwice), String(r.unknown), String(r.resumed),
    String(r.unexpected5xx), String(r.outage503), seconds(r.recoverySeconds), seconds(r.wallSeconds), passed(r) ? 'ok' : `FAILED (${r.findings.length})`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i < 2 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const out = [line(head), `|${widths.map((w, i) => (i < 2 || i === widths.length - 1 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...body.map(line)];
  const totals = rows.reduce((t, r) => ({ a: t.a + r.admissions, l: t.l + r.lost, d: t.d + r.runTwice, u: t.u + r.unknown, x: t.x + r.unexpected5xx }), { a: 0, l: 0, d: 0, u: 0, x: 0 });
  out.push('', `total: ${totals.a} admissions, ${totals.l} lost, ${totals.d} run twice, ${totals.u} unknown, ${totals.x} unexpected 5xx`);
  for (const r of rows) {
    if (r.notes.length) out.push('', `${r.scenario}:`, ...r.notes.map((n) => `  - ${n}`));
    for (const f of r.findings) out.push(`  ! ${f.check}: ${f.detail}`);
  }
  return out.join('\n');
}
