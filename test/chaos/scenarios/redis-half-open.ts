// A half-open path to Redis: every process (gateway and workers) reaches a private redis-server
// through a TCP proxy. Under load:
//   1. stall: the proxy stops forwarding (connections stay open and say nothing; new ones are
//      accepted and held) for a while, then forwards again. Nothing may be lost or run twice,
//      and the system answers again soon after the path heals.
//   2. strand: every connection open through the proxy goes silent for good while new ones work
//      (a Redis node or NAT failure): each process must notice, reconnect, and turns flow again.
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { privateRedis } from '../../support/redis-server.js';
import { finish, probe, startLoad, withCluster, type Scenario } from '../scenario.js';
import { nextCall } from '../model.js';
import { within } from '../cluster.js';
import { pause } from '../random.js';

export const redisHalfOpen: Scenario = {
  id: 'redis-half-open',
  name: 'Redis half-open',
  async run(ctx) {
    const startedAt = performance.now();
    const redis = await privateRedis();
    await redis.start();
    const proxy = await startTcpProxy({ port: Number(new URL(redis.url).port) });
    try {
      return await withCluster(ctx, this.id, { redisUrl: proxy.via(redis.url), gateways: 1, workers: 2, holdMs: [200, 1_000] }, async ({ cluster, model }) => {
        const load = startLoad(ctx, cluster);
        await within(30_000, () => load.acked().length >= ctx.scale.sessions * 2);
        await nextCall(model.onRequest, () => true, 10_000);
        const notes: string[] = [];
        proxy.mode = 'stall';
        await pause(ctx.scale.halfOpenSeconds * 1_000);
        proxy.mode = 'forward';
        const healed = performance.now();
        const back = await probe(ctx, cluster.gateways[0]!.url, 90_000);
        notes.push(back === undefined ? 'stall: no answer within 90 s of the heal' : `stall ${ctx.scale.halfOpenSeconds} s: a new message answered ${((back - healed) / 1_000).toFixed(1)} s after the path healed`);
        await nextCall(model.onRequest, () => true, 10_000);
        proxy.strand();
        const stranded = performance.now();
        const again = await probe(ctx, cluster.gateways[0]!.url, 90_000);
        notes.push(again === undefined ? 'strand: no answer within 90 s' : `strand: a new message answered ${((again - stranded) / 1_000).toFixed(1)} s after every connection went silent`);
        const faultEnd = performance.now();
        const row = await finish({ ctx, cluster, load, model, faultEnd, id: this.id, name: this.name, faults: `${ctx.scale.halfOpenSeconds} s stall, strand`, startedAt });
        row.notes.push(...notes);
        if (back === undefined) row.findings.push({ check: 'recovery', detail: 'no message answered after the stalled Redis path healed' });
        if (again === undefined) row.findings.push({ check: 'recovery', detail: 'no message answered after every Redis connection went silent' });
        return row;
      });
    } finally {
      await proxy.close();
      await redis.cleanup();
    }
  },
};
