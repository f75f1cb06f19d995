// Fuzzed requests against a real gateway process (test/support/gateway-fuzz.ts: malformed,
// oversized, control-character and random requests, with the agent's key and without), with a
// worker running the messages that are admitted. None may get a 5xx; the gateway stays healthy,
// its memory does not run away, and every admitted message settles with a reply.
import { readFile } from 'node:fs/promises';
import { fuzzGateway } from '../../support/gateway-fuzz.js';
import { chaosApiKey, statusOf } from '../cluster.js';
import { finish, withCluster, type Scenario } from '../scenario.js';

const rssMb = async (pid: number) => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};

export const fuzz: Scenario = {
  id: 'fuzz',
  name: 'fuzzed requests',
  async run(ctx) {
    const startedAt = performance.now();
    return withCluster(ctx, this.id, { gateways: 1, workers: 1, holdMs: [0, 20] }, async ({ cluster, model }) => {
      const gw = cluster.gateways[0]!;
      const before = await rssMb(gw.proc!.pid);
      const result = await fuzzGateway({ url: gw.url, key: chaosApiKey, agents: ['default/demo', 'default/other'], requests: ctx.scale.fuzzRequests, seed: ctx.seed, lanes: 16, timeoutMs: 3_000 });
      const faultEnd = performance.now();
      const after = await rssMb(gw.proc!.pid);
      const row = await finish({
        ctx, cluster, model, faultEnd, id: this.id, name: this.name, faults: `${ctx.scale.fuzzRequests} requests`, startedAt,
        // Fuzzed messages carry no token: audited for settling and replies only.
        audit: { foreign: (r) => !r.content.startsWith('chaos.') },
      });
      const fiveXx = Object.entries(result.statuses).filter(([s]) => s.startsWith('5')).reduce((t, [, n]) => t + n, 0);
      row.unexpected5xx = fiveXx;
      if (fiveXx) row.findings.push({ check: '5xx', detail: result.serverErrors.slice(0, 5).map((e) => `${e.status} ${e.request.slice(0, 160)}`).join(' | ') });
      if ((await statusOf(`${gw.url}/healthz`)) !== 200) row.findings.push({ check: 'healthz', detail: 'the gateway does not answer /healthz after the fuzz' });
      if (!gw.proc!.alive) row.findings.push({ check: 'gateway', detail: 'the gateway process died during the fuzz' });
      const statuses = Object.entries(result.statuses).sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}: ${n}`).join(', ');
      row.notes.push(`statuses: ${statuses}`, `gateway RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB`);
      return row;
    });
  },
};
