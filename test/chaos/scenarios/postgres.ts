// Postgres goes away under load, on a private server:
//   restart  a clean restart (pg_ctl -m fast: every connection is terminated)
//   outage   a crash (pg_ctl -m immediate), down for the scale's outage (30 s at full scale), back
// While it is down, every process's /readyz answers 503 and the gateway refuses new input with
// 503 (clients retry); afterwards every process is ready again with exactly one config-listener
// connection each (no reconnect storm), and the audit holds: nothing lost or run twice, and no
// turn unknown — the lease (60 s) outlives the outage, so turns cut by their workers' own fence
// resume once instead.
import { privatePostgres } from '../../support/postgres-server.js';
import { finish, startLoad, withCluster, type Scenario } from '../scenario.js';
import { nextCall } from '../model.js';
import { statusOf, within, type Cluster } from '../cluster.js';
import { pause } from '../random.js';

/** Samples the config-listener connections until stopped: the most seen and the last. */
function sampleListeners(cluster: Cluster): { stop(): Promise<{ max: number; last: number }> } {
  let max = 0;
  let last = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const n = await cluster.listenerConnections().catch(() => undefined);
      if (n !== undefined) {
        max = Math.max(max, n);
        last = n;
      }
      await pause(250);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { max, last };
    },
  };
}

/** While `untilMs` (performance.now) has not passed: which slots answered /readyz 503 at least once. */
async function unreadyDuring(cluster: Cluster, untilMs: number): Promise<Set<string>> {
  const seen = new Set<string>();
  while (performance.now() < untilMs) {
    await Promise.all(cluster.slots().map(async (s) => {
      if ((await statusOf(`${s.url}/readyz`, 3_000)) === 503) seen.add(`${s.role} ${s.index}`);
    }));
    await pause(500);
  }
  return seen;
}

function postgresScenario(mode: 'restart' | 'outage'): Scenario {
  return {
    id: `postgres-${mode}`,
    name: mode === 'restart' ? 'Postgres restart' : 'Postgres outage',
    async run(ctx) {
      const startedAt = performance.now();
      const server = await privatePostgres({ maxConnections: 200 });
      try {
        return await withCluster(ctx, this.id, { serverUrl: server.url, gateways: 1, workers: 2, holdMs: [200, 1_500] }, async ({ cluster, model }) => {
          const load = startLoad(ctx, cluster);
          await within(30_000, () => load.acked().length >= ctx.scale.sessions * 2);
          await nextCall(model.onRequest, () => true, 10_000);
          let faults: string;
          let unready = new Set<string>();
          if (mode === 'restart') {
            await server.restart('fast');
            faults = 'restart';
          } else {
            await server.stop('immediate');
            unready = await unreadyDuring(cluster, performance.now() + ctx.scale.outageSeconds * 1_000);
            await server.start();
            faults = `${ctx.scale.outageSeconds} s outage`;
          }
          const faultEnd = performance.now();
          const listeners = sampleListeners(cluster);
          const row = await finish({ ctx, cluster, load, model, faultEnd, id: this.id, name: this.name, faults, startedAt });
          // The listeners reconnect with backoff: give them the same deadline as everything else.
          const processes = cluster.liveProcesses();
          await within(30_000, async () => (await cluster.listenerConnections()) === processes, 250);
          const sampled = await listeners.stop();
          // The sampler may not have looked since the within() above saw the last one come back.
          const last = await cluster.listenerConnections();
          const seen = { last, max: Math.max(sampled.max, last) };
          row.notes.push(`config-listener connections after the fault: ${seen.last} for ${processes} processes (most seen at once: ${seen.max})`);
          if (seen.last !== processes || seen.max > processes) row.findings.push({ check: 'listener', detail: `expected ${processes} config-listener connections, saw ${seen.last} (max ${seen.max}); connections: ${(await cluster.connections()).join('; ')}` });
          if (mode === 'outage') {
            const missing = cluster.slots().map((s) => `${s.role} ${s.index}`).filter((s) => !unready.has(s));
            row.notes.push(`/readyz 503 during the outage: ${[...unready].sort().join(', ') || 'none'}`);
            if (missing.length) row.findings.push({ check: 'readyz', detail: `never answered 503 during the outage: ${missing.join(', ')}` });
          }
          return row;
        });
      } finally {
        await server.cleanup();
      }
    },
  };
}

export const postgresRestart = postgresScenario('restart');
export const postgresOutage = postgresScenario('outage');
