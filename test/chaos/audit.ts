// The audit after a scenario: the ledger (admissions, their delivery obligations, the workers that
// owned them) and the model's record of every request, checked against what the load was told.
//   lost       an acknowledged input with no admission, an admission never settled (still queued or
//              started), or a settled one without the reply (or notice) its caller is owed
//   run twice  an input admitted twice, or sent to the model by two turns (a resume, which
//              continues a turn a fence or shutdown cut, is counted apart: it runs once)
//   unknown    turns whose holder ended mid-turn; each must be owned by a process the scenario
//              stopped (killed, or cut off from Postgres) and carry the notice
//   FIFO       per session, turns start in admission order
//   overlap    per session, no turn starts before the previous one ended (ledger), and no model
//              request starts before the previous one of the session closed (model)
import type pg from 'pg';
import { unknownNotice } from '../../services/core/index.js';
import type { Input, Load } from './load.js';
import type { ChaosModel, ModelCall } from './model.js';
import { within } from './cluster.js';

export interface LedgerRow {
  id: string;
  seq: number;
  sessionId: string;
  intent: string;
  state: string;
  outcome: string | null;
  content: string;
  resumeOf: string | null;
  owner: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The last change (for an unknown turn: when it was settled). */
  updatedAt: Date;
  error: string | null;
  obligationId: string | null;
  reply: string | null;
}

export async function readLedger(pool: pg.Pool): Promise<LedgerRow[]> {
  const { rows } = await pool.query<LedgerRow>(
    `SELECT a.id, a.seq, a.session_id AS "sessionId", a.intent, a.state, a.outcome, a.content, a.resume_of AS "resumeOf",
       a.owner_instance_id AS owner, a.created_at AS "createdAt", a.started_at AS "startedAt", a.finished_at AS "finishedAt",
       a.updated_at AS "updatedAt", a.error,
       o.id AS "obligationId", o.content AS reply
     FROM admissions a LEFT JOIN delivery_obligations o ON o.admission_id = a.id ORDER BY a.seq`);
  // seq is a bigint, which pg returns as a string: as one, a resume's place `cut.seq + 0.5` was
  // '13' + 0.5 = '130.5', after every later message, and a correct resume-first order read as FIFO breaks.
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

/** Waits until no admission is queued or started; the moment (performance.now) it happened, or undefined. */
export async function settled(pool: pg.Pool, timeoutMs: number): Promise<number | undefined> {
  return within(timeoutMs, async () => {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions WHERE state IN ('queued', 'started')`);
    return rows[0]!.n === 0 ? performance.now() : undefined;
  }, 250);
}

export interface Finding { check: string; detail: string }

export interface AuditResult {
  /** Inputs of the load that were admitted (resumes not counted). */
  admissions: number;
  acked: number;
  lost: number;
  runTwice: number;
  unknown: number;
  resumed: number;
  failed: number;
  findings: Finding[];
}

export interface AuditOptions {
  load?: Load;
  model?: ChaosModel;
  /** Instance ids that may own `unknown` turns (killed, or cut off from Postgres). */
  mayBeUnknown?: ReadonlySet<string>;
  /** Admissions that are not the load's (fuzz, probes) are audited for settling and replies only. */
  foreign?: (row: LedgerRow) => boolean;
}

const push = (out: Finding[], check: string, detail: string, max = 5) => {
  if (out.filter((f) => f.check === check).length < max) out.push({ check, detail });
};

function countBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    m.set(k, [...(m.get(k) ?? []), x]);
  }
  return m;
}

/**
 * FIFO and no overlap on the ledger, per session. A resume takes the place of the turn it
 * continues (it runs before the messages admitted while that turn ran, though its seq is higher).
 */
function sessionOrder(rows: LedgerRow[], byId: Map<string, LedgerRow>, findings: Finding[]): void {
  const place = (r: LedgerRow): number => {
    const cut = r.intent === 'resume' && r.resumeOf ? byId.get(r.resumeOf) : undefined;
    return cut ? cut.seq + 0.5 : r.seq;
  };
  for (const [session, list] of countBy(rows, (r) => r.sessionId)) {
    const started = list.filter((r) => r.startedAt).sort((a, b) => place(a) - place(b));
    for (let i = 1; i < started.length; i++) {
      const prev = started[i - 1]!;
      const cur = started[i]!;
      if (cur.startedAt! < prev.startedAt!) push(findings, 'FIFO', `session ${session}: #${cur.seq} started before #${prev.seq}`);
      if (prev.finishedAt && cur.startedAt! < prev.finishedAt) push(findings, 'overlap (ledger)', `session ${session}: #${cur.seq} started before #${prev.seq} finished`);
    }
  }
}

/** No two model requests of one session open at once. */
function modelOverlap(calls: readonly ModelCall[], findings: Finding[]): void {
  for (const [session, list] of countBy(calls.filter((c) => c.session), (c) => c.session)) {
    const sorted = [...list].sort((a, b) => a.seen.receivedAt - b.seen.receivedAt);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      const cur = sorted[i]!;
      const prevEnd = prev.seen.endedAt ?? Infinity;
      if (cur.seen.receivedAt < prevEnd) {
        push(findings, 'overlap (model)', `session ${session}: ${cur.token} (w${cur.gen}) reached the model ${Math.round(prevEnd - cur.seen.receivedAt)} ms before ${prev.token} (w${prev.gen}) closed`);
      }
    }
  }
}

function replies(rows: LedgerRow[], byId: Map<string, LedgerRow>, resumes: Map<string, LedgerRow[]>, findings: Finding[]): number {
  let lost = 0;
  for (const r of rows) {
    if (r.state === 'queued' || r.state === 'started') {
      lost++;
      push(findings, 'lost', `admission #${r.seq} (${r.content.slice(0, 60)}) still ${r.state}`);
      continue;
    }
    const continued = r.outcome === 'interrupted' && (resumes.get(r.id)?.length ?? 0) > 0;
    if (!r.obligationId && !continued) {
      lost++;
      push(findings, 'lost', `admission #${r.seq} (${r.content.slice(0, 60)}) ${r.state}/${r.outcome} without a reply obligation`);
    }
    if (r.state === 'unknown' && r.reply !== unknownNotice) push(findings, 'notice', `unknown admission #${r.seq} has reply ${JSON.stringify(r.reply?.slice(0, 80))}`);
    if (r.resumeOf && !byId.has(r.resumeOf)) push(findings, 'resume', `resume #${r.seq} continues an admission that does not exist`);
  }
  return lost;
}

function inputsAgainstLedger(inputs: readonly Input[], admitted: Map<string, LedgerRow[]>, findings: Finding[]): { lost: number; twice: number } {
  let lost = 0;
  let twice = 0;
  for (const input of inputs) {
    const rows = admitted.get(input.token) ?? [];
    if (rows.length > 1) {
      twice++;
      push(findings, 'run twice', `${input.token} admitted ${rows.length} times`);
    }
    if (input.gaveUp) push(findings, 'refused', `${input.token} was never acknowledged (${input.attempts} attempts)`);
    if (!input.acked) continue;
    if (input.acked.status >= 400 && input.acked.status !== 502) push(findings, 'refused', `${input.token} answered ${input.acked.status}`);
    if (rows.length === 0 && input.acked.status < 300) {
      lost++;
      push(findings, 'lost', `${input.token} was acknowledged (${input.acked.status}) but has no admission`);
    }
    if (input.acked.admissionId && rows.length > 0 && !rows.some((r) => r.id === input.acked!.admissionId)) {
      push(findings, 'acknowledgement', `${input.token} acknowledged as ${input.acked.admissionId}, admitted as ${rows.map((r) => r.id).join(', ')}`);
    }
    if (input.api === 'chat' && input.acked.status === 200 && input.acked.reply !== `answer to ${input.token}`) {
      push(findings, 'reply', `${input.token} got the chat answer ${JSON.stringify(input.acked.reply?.slice(0, 80))}`);
    }
  }
  return { lost, twice };
}

/** A completed turn's reply answers its own input (a resume's, the input it continues). */
function completedReplies(rows: LedgerRow[], findings: Finding[]): void {
  for (const r of rows) {
    if (r.outcome !== 'completed') continue;
    if (r.reply !== `answer to ${r.content}`) push(findings, 'reply', `#${r.seq} (${r.content.slice(0, 60)}) completed with ${JSON.stringify(r.reply?.slice(0, 80))}`);
  }
}

export function audit(rows: LedgerRow[], o: AuditOptions): AuditResult {
  const findings: Finding[] = [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const resumes = countBy(rows.filter((r) => r.intent === 'resume' && r.resumeOf), (r) => r.resumeOf!);
  const own = rows.filter((r) => !o.foreign?.(r));
  const inputs = own.filter((r) => r.intent !== 'resume');
  const admitted = countBy(inputs, (r) => r.content);

  let lost = replies(rows, byId, resumes, findings);
  let runTwice = 0;
  if (o.load) {
    const fromInputs = inputsAgainstLedger(o.load.inputs, admitted, findings);
    lost += fromInputs.lost;
    runTwice += fromInputs.twice;
  }
  for (const [cut, list] of resumes) if (list.length > 1) push(findings, 'resume', `admission ${cut} resumed ${list.length} times`);
  if (o.model) {
    for (const [token, calls] of countBy(o.model.calls.filter((c) => !c.resume && c.session), (c) => c.token)) {
      if (calls.length > 1) {
        runTwice++;
        push(findings, 'run twice', `${token} reached the model ${calls.length} times (workers ${calls.map((c) => `w${c.gen}`).join(', ')})`);
      }
    }
    modelOverlap(o.model.calls, findings);
  }
  sessionOrder(rows, byId, findings);
  completedReplies(own, findings);
  const unknown = rows.filter((r) => r.state === 'unknown');
  for (const r of unknown) {
    if (!r.owner || !o.mayBeUnknown?.has(r.owner)) push(findings, 'unknown on a live owner', `#${r.seq} (${r.content.slice(0, 60)}) owner ${r.owner ?? 'none'}: ${r.error ?? ''}`);
  }
  const failed = rows.filter((r) => r.outcome === 'failed');
  for (const r of failed) push(findings, 'failed turn', `#${r.seq} (${r.content.slice(0, 60)}): ${r.error ?? ''}`);
  return {
    admissions: inputs.length,
    acked: o.load?.acked().length ?? inputs.length,
    lost,
    runTwice,
    unknown: unknown.length,
    resumed: rows.length - rows.filter((r) => r.intent !== 'resume').length,
    failed: failed.length,
    findings,
  };
}
