// The operations pack: the alert rules pass Prometheus' own rule parser (promrules: rulefmt +
// PromQL, what promtool check rules runs), every alert has its runbook, and every metric named by
// a rule or a dashboard panel is one the processes export (read from their real registries).
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createMetrics } from '../../../services/core/metrics.js';
import { createOperatorMetrics } from '../../../operator/runtime/metrics.js';
import { approvalCounter } from '../../../services/worker/approvals.js';
import { sandboxCallCounter, sessionSandboxMetrics } from '../../../services/worker/sandboxes.js';
import { costCounter, spendCapMetrics } from '../../../services/worker/usage.js';
import { chartDir, chartTools, run } from '../../support/chart.js';
import { repoRoot } from '../../support/kube/binaries.js';

const rulesFile = join(chartDir, 'files/prometheus-rules.yaml');
const dashboard = JSON.parse(readFileSync(join(chartDir, 'files/dashboards/hermes.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };

/** Series names the registries expose: histograms as their _bucket/_sum/_count series. */
async function exported(): Promise<Set<string>> {
  const worker = createMetrics('worker');
  costCounter(worker); approvalCounter(worker); sessionSandboxMetrics(worker); spendCapMetrics(worker); sandboxCallCounter(worker);
  const names = new Set<string>();
  for (const registry of [worker.registry, createMetrics('gateway').registry, createOperatorMetrics().registry]) {
    for (const m of await registry.getMetricsAsJSON()) {
      names.add(m.name);
      if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
    }
  }
  return names;
}

async function selected(file: string): Promise<string[]> {
  const out = await run(chartTools().promrules, ['-metrics', file]);
  expect(out.code, out.stderr).toBe(0);
  return out.stdout.trim().split('\n');
}

describe('alert rules', () => {
  it('pass Prometheus\' rule parser', async () => {
    const out = await run(chartTools().promrules, [rulesFile]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/SUCCESS: 1\d rules found/);
  });

  it('are refused by it when broken (the check can fail)', async () => {
    const bad = join(mkdtempSync(join(tmpdir(), 'rules-')), 'bad.yaml');
    writeFileSync(bad, stringify({ groups: [{ name: 'g', rules: [{ alert: 'Broken', expr: 'sum(rate(hermes_turns_total[5m]) >' }] }] }));
    const out = await run(chartTools().promrules, [bad]);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/parse error/);
  });

  it('each have a runbook under docs/runbooks/', () => {
    const rules = (parse(readFileSync(rulesFile, 'utf8')) as { groups: { rules: { alert: string }[] }[] }).groups.flatMap((g) => g.rules);
    const issueList = ['HermesDeliveryBacklog', 'HermesDeliveryOldestPendingAge', 'HermesAdmissionsStuckQueued', 'HermesUnknownTurns', 'HermesLeaseLosses',
      'HermesLedgerWriteFailures', 'HermesModelErrorRate', 'HermesSpendSpike', 'HermesSpendApproachingCap', 'HermesSandboxStartFailures', 'HermesSandboxClaimLatency', 'HermesSandboxWarmPoolMisses', 'HermesOperatorReconcileErrors', 'HermesOperatorLeaderAbsent'];
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(issueList));
    for (const { alert } of rules) {
      const file = join(repoRoot, 'docs/runbooks', `${alert.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}.md`);
      expect(existsSync(file), `runbook of ${alert}: ${file}`).toBe(true);
      expect(readFileSync(file, 'utf8')).toContain(`# ${alert}`);
    }
  });

  it('name only metrics the code exports', async () => {
    const names = await exported();
    const used = await selected(rulesFile);
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((n) => !names.has(n))).toEqual([]);
  });
});

describe('Grafana dashboard', () => {
  it('has the panels the issue asks for, with valid PromQL over exported metrics only', async () => {
    const titles = dashboard.panels.map((p) => p.title).join(' | ');
    for (const want of [/Turn rate/, /Turn latency/, /Queue depth/, /Model latency/, /tokens/, /Cost by agent/, /Delivery states/, /Sandbox pods/]) expect(titles).toMatch(want);
    // Each panel query as a recording rule: the same parser checks its PromQL and lists its metrics.
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    const file = join(mkdtempSync(join(tmpdir(), 'dash-')), 'panels.yaml');
    writeFileSync(file, stringify({ groups: [{ name: 'panels', rules: exprs.map((expr, i) => ({ record: `panel:${i}`, expr })) }] }));
    const used = await selected(file);
    const names = await exported();
    expect(used.filter((n) => !names.has(n))).toEqual([]);
  });
});
