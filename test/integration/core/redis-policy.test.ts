// BullMQ loses jobs under an evicting Redis policy: the processes must say so loudly at start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEvictionPolicy, connectRedis } from '../../../services/core/index.js';
import { privateRedis, type PrivateRedis } from '../../support/redis-server.js';

let server: PrivateRedis;
beforeAll(async () => {
  server = await privateRedis();
  await server.start();
});
afterAll(async () => server?.cleanup());

describe('Redis eviction policy check', () => {
  it('is quiet under noeviction and warns, naming the policy, otherwise', async () => {
    const redis = connectRedis(server.url);
    try {
      expect(await checkEvictionPolicy(redis)).toBeUndefined();
      await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const warning = await checkEvictionPolicy(redis);
      expect(warning).toMatch(/"allkeys-lru"/);
      expect(warning).toMatch(/noeviction/);
    } finally {
      redis.disconnect();
    }
  });
});
