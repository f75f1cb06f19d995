// A Redis connection whose peer vanishes without a word (a node or NAT failure) is replaced, not
// waited on for ever: the silent-connection watchdog (services/core/redis-liveness.ts) drops it,
// ioredis reconnects, queued commands complete and subscriptions come back. Real Redis behind a
// TCP proxy whose `strand()` leaves every open connection half-open for good.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import {
  admit, connectRedis, createLogger, duplicateRedis, getAdmission, publishSignal, recordSignal,
} from '../../../services/core/index.js';
import { TurnControl } from '../../../services/agent/index.js';
import { startControlHub, type ControlHub } from '../../../services/worker/control.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { createTestDatabase, eventually, serverUrls, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, type TestRuntime } from '../../support/system.js';

const fast = { intervalMs: 100, timeoutMs: 400 };
const log = createLogger('test', 'silent');
let proxy: TcpProxy;
const opened: Redis[] = [];
const track = (r: Redis) => { opened.push(r); return r; };

beforeAll(async () => {
  proxy = await startTcpProxy({ port: Number(new URL(serverUrls().redisUrl).port) });
});
afterEach(() => {
  for (const r of opened.splice(0)) r.disconnect();
  proxy.mode = 'forward';
});
afterAll(async () => proxy?.close());

const viaProxy = () => proxy.via(serverUrls().redisUrl);
/** A promise's state without waiting for it. */
const settled = async (p: Promise<unknown>) => Promise.race([p.then(() => true, () => true), new Promise<false>((r) => setImmediate(() => r(false)))]);

describe('a silent Redis connection', () => {
  it('is dropped and reconnected, and the command waiting on it completes; without the watchdog it waits for ever', async () => {
    let dropped = 0;
    const guarded = track(connectRedis(viaProxy(), { liveness: { ...fast, onDropped: () => { dropped++; } } }));
    const bare = track(connectRedis(viaProxy(), { liveness: false }));
    expect(await guarded.ping()).toBe('PONG');
    expect(await bare.ping()).toBe('PONG');
    const key = `silence-${process.pid}-${Date.now()}`;
    proxy.strand();
    const write = guarded.set(key, 'written');
    const stuck = bare.get(key);
    stuck.catch(() => undefined); // rejected when the test closes it
    expect(await write).toBe('OK'); // re-sent on the new connection
    expect(dropped).toBe(1);
    expect(guarded.status).toBe('ready');
    expect(await guarded.get(key)).toBe('written');
    // The same silence, no watchdog: still waiting after the guarded one reconnected and wrote.
    expect(await settled(stuck)).toBe(false);
    expect(bare.status).toBe('ready');
    await guarded.del(key);
  });

  it('on a fail-fast producer, settles the command in flight and serves the next one', async () => {
    let dropped = 0;
    const producer = track(connectRedis(viaProxy(), { failFast: true, liveness: { ...fast, onDropped: () => { dropped++; } } }));
    await eventually(() => producer.status === 'ready', 'the producer connected');
    expect(await producer.ping()).toBe('PONG');
    proxy.strand();
    const inFlight = producer.ping();
    await eventually(() => dropped === 1, 'the producer connection dropped');
    await inFlight.catch(() => undefined); // rejected or re-sent: either way it returns
    expect(await eventually(() => producer.ping().catch(() => undefined), 'the producer answering again')).toBe('PONG');
  });

  it('comes back subscribed: a subscriber hears messages again', async () => {
    const channel = `silence-channel-${process.pid}-${Date.now()}`;
    const publisher = track(connectRedis(serverUrls().redisUrl));
    const base = track(connectRedis(viaProxy(), { liveness: false }));
    const sub = track(duplicateRedis(base, { liveness: fast }));
    const heard: string[] = [];
    sub.on('message', (_c: string, m: string) => heard.push(m));
    await sub.subscribe(channel);
    await publisher.publish(channel, 'before');
    await eventually(() => heard.includes('before'), 'the first message');
    proxy.strand();
    await eventually(async () => {
      await publisher.publish(channel, 'after');
      return heard.includes('after');
    }, 'a message after the connection went silent', 30_000, 100);
  });

  it('is not a stalled event loop: a process that did not run for longer than the timeout keeps its connection', async () => {
    let dropped = 0;
    const redis = track(connectRedis(viaProxy(), { liveness: { intervalMs: 50, timeoutMs: 150, onDropped: () => { dropped++; } } }));
    expect(await redis.ping()).toBe('PONG');
    const before = proxy.connections;
    // Right after each of the next three probes goes out, the loop is blocked three times the
    // timeout, in the check phase: when it runs again, expired timers come before the reply is read.
    let stalls = 0;
    const ping = redis.ping.bind(redis);
    redis.ping = (() => {
      const answer = ping();
      if (stalls < 3) {
        stalls++;
        setImmediate(() => {
          const until = performance.now() + 450;
          while (performance.now() < until) { /* a blocked event loop */ }
        });
      }
      return answer;
    }) as typeof redis.ping;
    await eventually(() => stalls === 3, 'three stalls');
    expect(await ping()).toBe('PONG');
    expect(dropped).toBe(0);
    expect(proxy.connections).toBe(before);
  });
});

describe('worker control signals across a silent subscription', () => {
  let database: TestDatabase;
  let rt: TestRuntime;
  let hub: ControlHub | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    rt = await openTestRuntime(testConfig(database.url));
  });
  afterAll(async () => {
    await hub?.close();
    await rt?.close();
    await database?.drop();
  });

  it('a /stop published while the subscription was silent reaches the running turn once it is back', async () => {
    const agentId = await createTestAgent(rt, 'http://127.0.0.1:9/v1');
    const session = { agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:silence-${Date.now()}`, user: { platformUserId: 'u1' }, replyTarget: { kind: 'api' } };
    const running = await admit(rt.db, { ...session, content: 'a long task' });
    const adm = (await getAdmission(rt.db.pool, running.admissionId))!;
    const prefix = rt.config.HERMES_QUEUE_PREFIX;
    const base = track(connectRedis(viaProxy(), { liveness: false }));
    hub = await startControlHub(base, prefix, log, 0.4);
    const control = new TurnControl();
    const watching = hub.watch(rt.db, adm.sessionId, adm, control);
    proxy.strand();
    // The gateway's side: the /stop is recorded, then announced — to a subscription that hears nothing.
    const stop = await admit(rt.db, { ...session, content: '/stop' });
    const signal = await recordSignal(rt.db.pool, { sessionId: adm.sessionId, admissionId: stop.admissionId, kind: 'stop', text: '' });
    await publishSignal(rt.redis, prefix, signal);
    await eventually(() => control.signal.aborted, 'the running turn stopped', 30_000);
    const { rows } = await rt.db.pool.query<{ consumed_by: string }>('SELECT consumed_by FROM session_signals WHERE id = $1', [signal.id]);
    expect(rows[0]?.consumed_by).toBe(adm.id);
    watching.stop();
  });
});
