// Following turns on real sockets: a client that hangs up at any moment leaves no subscription
// and no polling behind (M5); one key cannot hold more than HERMES_MAX_WAITS_PER_KEY waits; all
// followers of a process share one narrow status poll, however many follow one admission (M8).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { admit, publishRevision, publishTurnEvent, sha256 } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { eventually } from '../../support/services.js';
import { admissionWithContent, auth, compiledAgent, openHarness, readSse, runFakeTurn, subscribed, testKey, type Harness } from './harness.js';

/** Sends one raw HTTP request and resets the connection right after the last byte is written. */
function sendAndReset(port: number, head: string, body = ''): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => {
        socket.resetAndDestroy();
        resolve();
      });
    });
    socket.on('error', () => resolve());
  });
}

const gauge = async (h: Harness) => (await h.deps.metrics.followedAdmissions.get()).values[0]?.value ?? 0;
const polls = async (h: Harness) => (await h.deps.metrics.admissionPolls.get()).values[0]?.value ?? 0;
const subscriptions = async (h: Harness) => ((await h.redis.call('PUBSUB', 'CHANNELS', `${h.config.HERMES_QUEUE_PREFIX}:admission:*`)) as string[]).length;
/**
 * Counts the statements the gateway sends through its pool from now on (the status poller, follower
 * reads). Exact and immediate, unlike pg_stat_database, whose counters arrive up to seconds late.
 */
function countStatements(h: Harness): { readonly count: number; readonly turnEndReads: number; readonly progressReads: number; stop(): void } {
  const pool = h.db.pool;
  const original = pool.query;
  let count = 0;
  let turnEndReads = 0;
  let progressReads = 0;
  pool.query = ((...args: Parameters<typeof original>) => {
    count++;
    const name = (args[0] as { name?: string } | undefined)?.name;
    if (name === 'hermes_turn_end') turnEndReads++;
    if (name === 'hermes_admission_progress') progressReads++;
    return (original as (...a: unknown[]) => unknown).apply(pool, args);
  }) as typeof original;
  return { get count() { return count; }, get turnEndReads() { return turnEndReads; }, get progressReads() { return progressReads; }, stop: () => { pool.query = original; } };
}

describe('clients that hang up (M5)', () => {
  let h: Harness;
  let gw: RunningGateway;
  let port: number;
  beforeAll(async () => {
    h = await openHarness();
    gw = await startGateway(h.deps);
    port = Number(new URL(gw.url).port);
  });
  afterAll(async () => {
    await gw?.close();
    await h?.close();
  });

  it('leaves no subscription and no polling when clients reset right after sending (SSE and both completion modes)', async () => {
    const queued: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await h.app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { ...auth(), 'content-type': 'application/json' }, payload: JSON.stringify({ content: `stays queued ${i}`, conversation: `zombie-${i}` }) });
      queued.push(res.json().admissionId);
    }
    const authz = `authorization: Bearer ${testKey}\r\nhost: 127.0.0.1`;
    await Promise.all([
      ...queued.map((id) => sendAndReset(port, `GET /v1/agents/default/demo/admissions/${id}/events HTTP/1.1\r\n${authz}`)),
      ...Array.from({ length: 20 }, (_, i) => sendAndReset(port, `POST /v1/chat/completions HTTP/1.1\r\n${authz}\r\ncontent-type: application/json`,
        JSON.stringify({ model: 'default/demo', stream: i % 2 === 0, messages: [{ role: 'user', content: `hung up ${i}` }] }))),
    ]);
    // Every completion was admitted (the message stands, its turn will run and record the reply)…
    await eventually(async () => (await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions WHERE content LIKE 'hung up %'`)).rows[0]!.n === 20, 'the 20 completions admitted');
    // …and nothing follows any of them, nor the queued admissions whose streams were dropped.
    await eventually(async () => (await subscriptions(h)) === 0, 'no subscription left');
    await eventually(async () => (await gauge(h)) === 0, 'no admission followed');
    // No polling either: over at least 10 poll intervals the gateway sends Postgres nothing.
    const pollsBefore = await polls(h);
    const statements = countStatements(h);
    let looks = 0;
    await eventually(() => ++looks >= 20, '20 looks, 50 ms apart', 10_000, 50);
    statements.stop();
    expect(statements.count).toBe(0);
    expect(await polls(h)).toBe(pollsBefore);
  });
});

describe('a cap on waits per key', () => {
  let h: Harness;
  let gw: RunningGateway;
  beforeAll(async () => {
    h = await openHarness({ HERMES_MAX_WAITS_PER_KEY: 2 });
    await publishRevision(h.db, compiledAgent('second', [testKey]));
    gw = await startGateway(h.deps);
  });
  afterAll(async () => {
    await gw?.close();
    await h?.close();
  });

  it('refuses a third stream or completion of one key with 429, admitting nothing, and frees the slot when a wait ends', async () => {
    const admitOne = async (conversation: string) => (await h.app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { ...auth(), 'content-type': 'application/json' }, payload: JSON.stringify({ content: 'wait for me', conversation }) })).json();
    const first = await admitOne('cap-1');
    const second = await admitOne('cap-2');
    const third = await admitOne('cap-3');
    const streams = await Promise.all([first, second].map((a) => fetch(`${gw.url}${a.links.events}`, { headers: auth() })));
    await eventually(async () => (await gauge(h)) === 2, 'two streams following');

    const refused = await fetch(`${gw.url}${third.links.events}`, { headers: auth() });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'HERMES_TOO_MANY_WAITS', message: expect.stringContaining('HERMES_MAX_WAITS_PER_KEY') });
    const before = (await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM admissions')).rows[0]!.n;
    const completion = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'default/second', messages: [{ role: 'user', content: 'one too many' }] }) });
    expect(completion.status).toBe(429);
    expect(((await completion.json()) as { error: { type: string; code: string } }).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect((await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM admissions')).rows[0]!.n).toBe(before);

    await runFakeTurn(h, first.admissionId, { result: { outcome: 'completed', reply: 'done' } });
    await readSse(streams[0]!);
    const now = await fetch(`${gw.url}${third.links.events}`, { headers: auth() });
    expect(now.status).toBe(200);
    await now.body?.cancel();
    await streams[1]!.body?.cancel();
  });
});

describe('followers share one narrow poll (M8)', () => {
  let h: Harness;
  let gw: RunningGateway;
  beforeAll(async () => {
    h = await openHarness();
    gw = await startGateway(h.deps);
  });
  afterAll(async () => {
    await gw?.close();
    await h?.close();
  });

  it('polls once per tick for 40 followers of an admission carrying half a megabyte of history', async () => {
    const history = Array.from({ length: 50 }, (_, i) => ({ role: 'user' as const, content: `${i} ${'x'.repeat(10_000)}` }));
    const keyUser = `k:${sha256(testKey).slice(0, 12)}`;
    const { admissionId } = await admit(h.db, {
      agentId: h.agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:${keyUser}:big`,
      user: { platformUserId: keyUser }, content: 'big', callerHistory: history,
    });
    const url = `${gw.url}/v1/agents/default/demo/admissions/${admissionId}/events`;
    const followers = await Promise.all(Array.from({ length: 40 }, () => fetch(url, { headers: auth() })));
    expect(followers.every((f) => f.status === 200)).toBe(true);
    await eventually(async () => (await gauge(h)) === 1, 'one admission followed (by 40 streams)');

    const statements = countStatements(h);
    const pollsBefore = await polls(h);
    await eventually(async () => (await polls(h)) - pollsBefore >= 10, 'ten poll ticks');
    statements.stop();
    const ticks = (await polls(h)) - pollsBefore;
    // One poll per tick for all 40 followers (a tick may straddle the window's edges), and nothing
    // per follower: the process's own statements (heartbeat, cache refresh) are a handful, 40
    // followers reading anything each tick would be hundreds. (A loaded clean-clone run counted
    // one statement past ticks + 1 when this counted every statement as a poll.)
    expect(statements.progressReads).toBeLessThanOrEqual(ticks + 1);
    expect(statements.count).toBeLessThan(ticks + 10);

    await runFakeTurn(h, admissionId, { result: { outcome: 'completed', reply: 'done' } });
    const ends = await Promise.all(followers.map((f) => readSse(f)));
    expect(ends.every((events) => events.at(-1)?.event === 'reply')).toBe(true);
    await eventually(async () => (await gauge(h)) === 0, 'nothing followed any more');
  });
});

describe('a finished turn\'s ping carries its end', () => {
  let h: Harness;
  let gw: RunningGateway;
  beforeAll(async () => {
    h = await openHarness();
    gw = await startGateway(h.deps);
  });
  afterAll(async () => {
    await gw?.close();
    await h?.close();
  });

  it('answers a waiting completion from the "changed" event\'s end, without reading the turn back', async () => {
    const answer = fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'default/demo', messages: [{ role: 'user', content: 'ends by event' }] }) });
    const admissionId = await admissionWithContent(h, 'ends by event');
    await subscribed(h, admissionId);
    await eventually(async () => (await gauge(h)) === 1, 'the completion follows its admission');
    // Postgres still says `queued`: only the event's end can answer the caller now.
    const statements = countStatements(h);
    await publishTurnEvent(h.redis, h.config.HERMES_QUEUE_PREFIX, admissionId, { type: 'changed', end: {
      outcome: 'completed', usage: { inputTokens: 3, outputTokens: 5 },
      reply: { id: randomUUID(), agentId: h.agentId, sessionId: randomUUID(), platform: 'api', target: { kind: 'api' }, content: 'from the event', state: 'delivered' },
    } });
    const res = await answer;
    statements.stop();
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { content: string } }[]; usage: { prompt_tokens: number; completion_tokens: number } };
    expect(body.choices[0]!.message.content).toBe('from the event');
    expect(body.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 5 });
    // No read of the reply (poll ticks and heartbeats that fall in the window are not the answer's:
    // on a loaded machine a full run saw two of them here).
    expect(statements.turnEndReads).toBe(0);
  });
});
