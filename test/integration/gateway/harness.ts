// A gateway on a fresh test database and queue prefix, plus an in-test "worker" that moves an
// admission through the real ledger calls (lease → start → finish) and publishes turn events.
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import {
  AgentCache, acquireLease, connectRedis, createLogger, createMetrics, finishTurn, getAdmission, markStopped, openDb,
  openQueues, publishRevision, publishTurnEvent, registerInstance, releaseLease, settleOrphanedTurns, freeDeadOwnersLeases, sha256, startNextTurn,
  admissionChannel, cutTurn, type CompiledAgent, type Config, type Db, type Queues, type TurnResult,
} from '../../../services/core/index.js';
import { buildGatewayApp, type GatewayDeps } from '../../../services/gateway/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { sseFrames, type SseEvent } from '../../support/sse.js';

export const testKey = 'test-key';

export function compiledAgent(name: string, keys: string[] = [testKey], namespace = 'default'): CompiledAgent {
  return {
    apiVersion: 'hermes.dev/v1alpha1',
    agent: { namespace, name },
    profile: { namespace, name: 'default' },
    model: { provider: 'openai', model: 'gpt-test' },
    persona: '',
    api: { enabled: true, keySha256: keys.map(sha256) },
    busyPolicy: 'queue',
  };
}

export interface Harness {
  database: TestDatabase;
  config: Config;
  db: Db;
  redis: Redis;
  subscriber: Redis;
  queues: Queues;
  agents: AgentCache;
  deps: GatewayDeps;
  app: FastifyInstance;
  agentId: string;
  close(): Promise<void>;
}

export async function openHarness(overrides: Partial<Record<keyof Config, unknown>> = {}): Promise<Harness> {
  const database = await createTestDatabase();
  const config = testConfig(database.url, overrides);
  const db = openDb(config.DATABASE_URL);
  const redis = connectRedis(config.REDIS_URL, { failFast: true });
  const subscriber = connectRedis(config.REDIS_URL);
  const queues = openQueues(redis, config.HERMES_QUEUE_PREFIX);
  const agents = new AgentCache(db, config.DATABASE_URL);
  await agents.start();
  const { agentId } = await publishRevision(db, compiledAgent('demo'));
  await publishRevision(db, compiledAgent('other', ['other-key']));
  const deps: GatewayDeps = {
    config, db, redis, subscriber, queues, agents,
    log: createLogger('gateway', config.HERMES_LOG_LEVEL),
    metrics: createMetrics('gateway'),
    tuning: { pollMs: 100 },
  };
  const app = buildGatewayApp(deps);
  await app.ready();
  return {
    database, config, db, redis, subscriber, queues, agents, deps, app, agentId,
    async close() {
      await app.close();
      await queues.close();
      await agents.close();
      subscriber.disconnect();
      redis.disconnect();
      await db.close();
      await database.drop();
    },
  };
}

export const auth = (key = testKey) => ({ authorization: `Bearer ${key}` });

/** The newest admission whose content is `content` (a request still waiting created it). */
export function admissionWithContent(h: Harness, content: string): Promise<string> {
  return eventually(async () => {
    const { rows } = await h.db.pool.query<{ id: string }>(`SELECT id FROM admissions WHERE content = $1 ORDER BY seq DESC LIMIT 1`, [content]);
    return rows[0]?.id;
  }, `an admission with content "${content}"`);
}

/** Resolves once some gateway listens on the admission's channel. */
export function subscribed(h: Harness, admissionId: string): Promise<true> {
  const channel = admissionChannel(h.config.HERMES_QUEUE_PREFIX, admissionId);
  return eventually(async () => {
    const reply = (await h.redis.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
    return Number(reply[1]) > 0 || undefined;
  }, `a subscriber on ${channel}`);
}

export interface FakeTurn {
  deltas?: string[];
  result?: TurnResult;
  /** Stop the owner mid-turn and let recovery settle the admission as `unknown`. */
  dies?: boolean;
  /** A worker shutdown cuts the turn; its resume (a new admission) then streams these deltas and ends with `result`. */
  cutThenResume?: { deltas?: string[]; result: TurnResult; /** No waiter follows it (a client polling GET admissions/:id): don't wait for one. */ unfollowed?: boolean };
}

/** What a worker does, through the real ledger: claim, stream, finish (or die). */
export async function runFakeTurn(h: Harness, admissionId: string, turn: FakeTurn): Promise<void> {
  const prefix = h.config.HERMES_QUEUE_PREFIX;
  const admission = await getAdmission(h.db.pool, admissionId);
  if (!admission) throw new Error(`no admission ${admissionId}`);
  const instance = await registerInstance(h.db.pool, 'worker');
  const lease = await acquireLease(h.db.pool, admission.sessionId, instance.id, 60, { instanceTtlSeconds: h.config.HERMES_INSTANCE_TTL_SECONDS, steady: true });
  if (!lease) throw new Error('session lease is taken');
  const started = await startNextTurn(h.db, lease);
  if (started?.id !== admissionId) throw new Error(`started ${started?.id}, expected ${admissionId}`);
  await publishTurnEvent(h.redis, prefix, admissionId, { type: 'changed' });
  for (const text of turn.deltas ?? []) await publishTurnEvent(h.redis, prefix, admissionId, { type: 'delta', text });
  if (turn.cutThenResume) {
    const cut = await cutTurn(h.db, lease, admissionId, { reply: turn.deltas?.join('') ?? '' });
    if (!cut.resumed) throw new Error('the cut did not resume');
    await publishTurnEvent(h.redis, prefix, admissionId, { type: 'changed' });
    if (!turn.cutThenResume.unfollowed) await subscribed(h, cut.resumeAdmissionId); // the waiter moved on to the resume before it streams
    const resume = await startNextTurn(h.db, lease);
    if (resume?.id !== cut.resumeAdmissionId) throw new Error(`started ${resume?.id}, expected the resume ${cut.resumeAdmissionId}`);
    await publishTurnEvent(h.redis, prefix, resume.id, { type: 'changed' });
    for (const text of turn.cutThenResume.deltas ?? []) await publishTurnEvent(h.redis, prefix, resume.id, { type: 'delta', text });
    await finishTurn(h.db, lease, resume.id, turn.cutThenResume.result);
    await publishTurnEvent(h.redis, prefix, resume.id, { type: 'changed' });
  } else if (turn.dies) {
    await markStopped(h.db.pool, instance.id);
    await freeDeadOwnersLeases(h.db.pool, { instanceTtlSeconds: h.config.HERMES_INSTANCE_TTL_SECONDS, steady: false });
    await settleOrphanedTurns(h.db);
  } else {
    await finishTurn(h.db, lease, admissionId, turn.result ?? { outcome: 'completed', reply: 'ok' });
  }
  await releaseLease(h.db.pool, lease);
  await publishTurnEvent(h.redis, prefix, admissionId, { type: 'changed' });
}

/** Reads server-sent events from a fetch response until `done(events)` (checked at each frame) or the stream ends. */
export async function readSse(res: Response, done: (events: SseEvent[]) => boolean = () => false): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const frame of sseFrames(res.body!)) {
    events.push(frame);
    if (done(events)) break;
  }
  return events;
}
