// A half-open path to Postgres: worker 0 reaches Postgres through a TCP proxy, worker 1 and the
// gateway directly. Under load, while worker 0 has turns at the model:
//   1. stall: the proxy stops forwarding (its connections stay open, say nothing; new ones are
//      accepted and held) for longer than the instance TTL. Worker 0 must stop its own turns before
//      anyone may take its sessions over (no two turns of a session overlap), worker 1 takes them
//      over (their cut turns end unknown, with a notice), and when the path heals worker 0 comes
//      back: ready, one config listener, taking turns again.
//   2. strand: every connection open through the proxy goes silent for good while new ones
//      work (a NAT or node failure): worker 0 must notice through its query timeouts, replace them,
//      and take turns again.
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { finish, nudge, startLoad, withCluster, type Scenario, type ScenarioContext } from '../scenario.js';
import { nextCall, type ChaosModel } from '../model.js';
import { statusOf, within, type Cluster } from '../cluster.js';
import { pause } from '../random.js';
import type { Row } from '../report.js';

/**
 * Worker 0 is back: it answers /readyz and runs a turn that started after `since`. Sessions stay
 * with the worker draining them, so new ones are posted until worker 0 takes one.
 */
async function backAt(ctx: ScenarioContext, cluster: Cluster, model: ChaosModel, since: number): Promise<number | undefined> {
  const w = cluster.workers[0]!;
  const ran = () => model.calls.some((c) => c.gen === w.proc!.gen && c.seen.receivedAt > since);
  return within(90_000, async () => {
    if ((await statusOf(`${w.url}/readyz`)) !== 200) return undefined;
    if (!ran()) await nudge(ctx, cluster.gateways[0]!.url, 4);
    return (await within(3_000, ran, 100)) ? performance.now() : undefined;
  }, 200);
}

async function stallThenHeal(ctx: ScenarioContext, cluster: Cluster, model: ChaosModel, proxy: TcpProxy, row: { notes: string[]; findings: Row['findings'] }) {
  const w = cluster.workers[0]!;
  await nextCall(model.onRequest, (c) => c.gen === w.proc!.gen, 20_000);
  const cutAt = performance.now();
  proxy.mode = 'stall';
  await pause(ctx.scale.halfOpenSeconds * 1_000);
  // Worker 0's model calls opened before the stall were all closed by its own fence, long before the heal.
  const open = model.calls.filter((c) => c.gen === w.proc!.gen && c.seen.receivedAt < cutAt && c.seen.endedAt === undefined);
  if (open.length) row.findings.push({ check: 'self-fence', detail: `${open.length} model call(s) of the cut-off worker still open after ${ctx.scale.halfOpenSeconds} s` });
  proxy.mode = 'forward';
  const healed = performance.now();
  const back = await backAt(ctx, cluster, model, healed);
  row.notes.push(back === undefined ? 'stall: worker 0 did not come back' : `stall ${ctx.scale.halfOpenSeconds} s: worker 0 ready and taking turns ${((back - healed) / 1_000).toFixed(1)} s after the path healed`);
  if (back === undefined) row.findings.push({ check: 'recovery', detail: 'worker 0 never took a turn again after the stalled path healed' });
}

async function strand(ctx: ScenarioContext, cluster: Cluster, model: ChaosModel, proxy: TcpProxy, row: { notes: string[]; findings: Row['findings'] }) {
  const w = cluster.workers[0]!;
  await nextCall(model.onRequest, (c) => c.gen === w.proc!.gen, 20_000);
  proxy.strand();
  const at = performance.now();
  const back = await backAt(ctx, cluster, model, at + 1);
  row.notes.push(back === undefined ? 'strand: worker 0 did not come back' : `strand: worker 0 took a turn on new connections ${((back - at) / 1_000).toFixed(1)} s after its connections went silent`);
  if (back === undefined) row.findings.push({ check: 'recovery', detail: 'worker 0 never took a turn again after its connections went silent' });
}

export const halfOpen: Scenario = {
  id: 'half-open',
  name: 'Postgres half-open',
  async run(ctx) {
    const startedAt = performance.now();
    const target = new URL(ctx.serverUrl);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    try {
      return await withCluster(ctx, this.id, { gateways: 1, workers: 2, holdMs: [500, 2_000], workerDatabaseUrl: (i, url) => (i === 0 ? proxy.via(url) : url) }, async ({ cluster, model }) => {
        const load = startLoad(ctx, cluster);
        const isolated = await cluster.instanceOf(cluster.workers[0]!.proc!.pid);
        const notes = { notes: [] as string[], findings: [] as Row['findings'] };
        await stallThenHeal(ctx, cluster, model, proxy, notes);
        await strand(ctx, cluster, model, proxy, notes);
        const faultEnd = performance.now();
        const row = await finish({ ctx, cluster, load, model, faultEnd, id: this.id, name: this.name, faults: `${ctx.scale.halfOpenSeconds} s stall, strand`, startedAt, audit: { mayBeUnknown: new Set(isolated ? [isolated] : []) } });
        row.notes.push(...notes.notes);
        row.findings.push(...notes.findings);
        const processes = cluster.liveProcesses();
        // The listener worker 0 had when its connections went silent still looks open to Postgres.
        const ghosts = proxy.strandedPorts();
        // A stranded listener is noticed by its ping (every 30 s, answered within 5 s: config-listener.ts),
        // so its reconnect may come up to 35 s after the strand: wait past that, not just 30 s.
        const listeners = await within(50_000, async () => ((await cluster.listenerConnections(ghosts)) === processes ? processes : undefined), 250);
        if (listeners === undefined) row.findings.push({ check: 'listener', detail: `expected ${processes} config-listener connections (besides ${ghosts.length} stranded), saw ${await cluster.listenerConnections(ghosts)}` });
        else row.notes.push(`config-listener connections: ${processes} for ${processes} processes (besides the ${ghosts.length} stranded connections Postgres still holds)`);
        return row;
      });
    } finally {
      await proxy.close();
    }
  },
};
