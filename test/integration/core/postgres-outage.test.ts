// A gateway and a worker's probe server through a real Postgres outage (a private server,
// stopped and started): /healthz answers throughout, /readyz is 503 while Postgres is down —
// naming it, without its address or the driver's text — and 200 again after; requests get a 503
// instead of hanging (a Slack event and a Telegram update too, so the platform retries them); the config listener comes back as
// one connection; no process crashes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { request } from 'undici';
import { applyMigrations } from '../../../prisma/migrate.js';
import {
  AgentCache, connectRedis, createLogger, createMetrics, openDb, openQueues, publishRevision,
  type Config, type Db, type Queues,
} from '../../../services/core/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import { startWorkerProbes, type RunningProbes } from '../../../services/worker/index.js';
import type { Redis } from 'ioredis';
import { compiledAgent, testKey } from '../gateway/harness.js';
import { staticSecrets } from '../../../services/agent/index.js';
import { slackEvent, slackSignedHeaders } from '../../support/fake-slack.js';
import { startFakeTelegram, telegramMessage, type FakeTelegram } from '../../support/fake-telegram.js';
import { privatePostgres, type PrivatePostgres } from '../../support/postgres-server.js';
import { eventually, testConfig } from '../../support/services.js';

let server: PrivatePostgres;
let config: Config;
let db: Db;
let agents: AgentCache;
let redis: Redis;
let queues: Queues;
let app: FastifyInstance;
let probes: RunningProbes;
let fakeTg: FakeTelegram;

beforeAll(async () => {
  server = await privatePostgres();
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE hermes');
  await admin.end();
  const url = server.urlFor('hermes');
  await applyMigrations(url);
  fakeTg = await startFakeTelegram(tgToken);
  config = testConfig(url, { HERMES_WORKER_PORT: 0, HERMES_HOST: '127.0.0.1', HERMES_TELEGRAM_API_URL: fakeTg.url });
  db = openDb(url);
  agents = new AgentCache(db, url, { listener: { initialBackoffMs: 20, maxBackoffMs: 200 } });
  await agents.start();
  await publishRevision(db, { ...compiledAgent('demo'), platforms: [
    { type: 'slack', credentialsSecret: 'slack', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' },
    { type: 'telegram', credentialsSecret: 'slack', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' },
  ] });
  redis = connectRedis(config.REDIS_URL, { failFast: true });
  queues = openQueues(redis, config.HERMES_QUEUE_PREFIX);
  const log = createLogger('test', config.HERMES_LOG_LEVEL);
  const secrets = staticSecrets([{ namespace: 'default', name: 'slack', data: { SLACK_SIGNING_SECRET: signingSecret, TELEGRAM_BOT_TOKEN: tgToken, TELEGRAM_WEBHOOK_SECRET: signingSecret } }]);
  app = buildGatewayApp({ config, db, redis, queues, agents, log, metrics: createMetrics('gateway'), secrets, tuning: { readinessTimeoutMs: 1_000 } });
  await app.ready();
  probes = await startWorkerProbes({ config, db, redis, log, metrics: createMetrics('worker') }, { readinessTimeoutMs: 1_000 });
});
afterAll(async () => {
  await app?.close();
  await probes?.close();
  await queues?.close();
  redis?.disconnect();
  await agents?.close();
  await db?.close();
  await server?.cleanup();
  await fakeTg?.close();
});

const signingSecret = 'outage-signing-secret';

/** A signed Slack DM event: Slack retries anything but a 2xx, so an outage must answer 5xx. */
const slackDm = (text: string) => {
  const payload = JSON.stringify(slackEvent({ user: 'U1', text, channel: 'D1', channelType: 'im' }).body);
  return app.inject({ method: 'POST', url: '/hooks/slack/default/demo', headers: slackSignedHeaders(signingSecret, payload), payload });
};

const tgToken = '777:outage-telegram-token';
let updateId = 1;
/** A Telegram DM update with the webhook's secret token: Telegram re-sends anything but a 2xx. */
const telegramDm = (text: string) => app.inject({
  method: 'POST', url: '/hooks/telegram/default/demo',
  headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': signingSecret },
  payload: JSON.stringify({ update_id: updateId++, ...telegramMessage({ chat: { id: 5, type: 'private' }, from: { id: 5 }, text }) }),
});

const listeners = async () => {
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  try {
    return (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'hermes-config-listener'`)).rows[0]!.n;
  } finally {
    await c.end();
  }
};

const gatewayProbe = async (path: string) => {
  const res = await app.inject(path);
  return { status: res.statusCode, body: res.body };
};
const workerProbe = async (path: string) => {
  const res = await request(`${probes.url}${path}`);
  return { status: res.statusCode, body: await res.body.text() };
};
const post = (content: string) => app.inject({
  method: 'POST', url: '/v1/agents/default/demo/messages',
  headers: { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' }, payload: JSON.stringify({ content }),
});

describe('a Postgres outage', () => {
  it('is reported by /readyz without internal detail, answered with 503s, and survived', async () => {
    for (const probe of [gatewayProbe, workerProbe]) await eventually(async () => (await probe('/readyz')).status === 200, 'ready (Redis connected)');
    expect((await post('before')).statusCode).toBe(202);
    expect((await slackDm('before')).statusCode).toBe(200);
    expect((await telegramDm('before')).statusCode).toBe(200);

    await server.stop('immediate');
    for (const probe of [gatewayProbe, workerProbe]) {
      expect((await probe('/healthz')).status).toBe(200);
      const ready = await probe('/readyz');
      expect(ready.status).toBe(503);
      const body = JSON.parse(ready.body);
      expect(body.checks.postgres.ok).toBe(false);
      expect(body.checks.redis.ok).toBe(true);
      expect(body.error.message).toContain('postgres');
      expect(ready.body).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|connect /);
      expect(ready.body).not.toContain(String(server.port));
    }
    const refused = await post('during');
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('HERMES_STORE_UNAVAILABLE');
    expect(refused.body).not.toContain(String(server.port));
    const slackRefused = await slackDm('during');
    expect(slackRefused.statusCode).toBe(503);
    expect(slackRefused.json().error.code).toBe('HERMES_STORE_UNAVAILABLE');
    const telegramRefused = await telegramDm('during');
    expect(telegramRefused.statusCode).toBe(503);
    expect(telegramRefused.json().error.code).toBe('HERMES_STORE_UNAVAILABLE');

    await server.start();
    for (const probe of [gatewayProbe, workerProbe]) {
      await eventually(async () => (await probe('/readyz')).status === 200, 'ready again after Postgres came back');
      expect((await probe('/healthz')).status).toBe(200);
    }
    expect((await post('after')).statusCode).toBe(202);
    expect((await slackDm('after')).statusCode).toBe(200);
    expect((await telegramDm('after')).statusCode).toBe(200);
    await eventually(() => agents.listening, 'the config listener back');
    expect(await listeners()).toBe(1);
  });
});
