// Redis loses everything under load, two ways, on a private redis-server:
//   flush    FLUSHALL while turns run: every queued job, lock and event channel is gone at once
//   restart  the server is killed, stays down a few seconds, and comes back empty
// Postgres holds every admission, so nothing may be lost or run twice and no turn may end unknown:
// the gateways answer from the ledger, and the sweepers re-enqueue what was queued.
import { Redis } from 'ioredis';
import { privateRedis } from '../../support/redis-server.js';
import { finish, startLoad, withCluster, type Scenario } from '../scenario.js';
import { nextCall } from '../model.js';
import { statusOf, within } from '../cluster.js';
import { pause } from '../random.js';

function redisScenario(mode: 'flush' | 'restart'): Scenario {
  return {
    id: `redis-${mode}`,
    name: mode === 'flush' ? 'Redis FLUSHALL' : 'Redis restart',
    async run(ctx) {
      const startedAt = performance.now();
      const redis = await privateRedis();
      await redis.start();
      try {
        return await withCluster(ctx, this.id, { redisUrl: redis.url, gateways: 1, workers: 2, holdMs: [200, 1_000] }, async ({ cluster, model }) => {
          const load = startLoad(ctx, cluster);
          // Under load: some turns at the model, others queued behind them.
          await within(30_000, () => load.acked().length >= ctx.scale.sessions * 2);
          await nextCall(model.onRequest, () => true, 10_000);
          let faults: string;
          let unready = 0;
          if (mode === 'flush') {
            const admin = new Redis(redis.url);
            await admin.flushall();
            admin.disconnect();
            faults = 'FLUSHALL';
          } else {
            await redis.stop();
            const downUntil = performance.now() + ctx.scale.redisDownSeconds * 1_000;
            // While Redis is away, the gateway's /readyz says so.
            while (performance.now() < downUntil) {
              if ((await statusOf(`${cluster.gateways[0]!.url}/readyz`)) === 503) unready++;
              await pause(250);
            }
            await redis.start();
            faults = `${ctx.scale.redisDownSeconds} s down`;
          }
          const faultEnd = performance.now();
          // More load after the fault, then the common end.
          const after = load.acked().length;
          await within(30_000, () => load.acked().length >= after + ctx.scale.sessions);
          const row = await finish({ ctx, cluster, load, model, faultEnd, id: this.id, name: this.name, faults, startedAt });
          if (mode === 'restart' && unready === 0) row.findings.push({ check: 'readyz', detail: 'the gateway never answered 503 while Redis was down' });
          return row;
        });
      } finally {
        await redis.cleanup();
      }
    },
  };
}

export const redisFlush = redisScenario('flush');
export const redisRestart = redisScenario('restart');
