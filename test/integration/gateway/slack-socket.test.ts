// Slack Socket Mode end to end: a fake Slack (apps.connections.open with the app-level token, a
// WebSocket sending `events_api` envelopes) driven through the official @slack/socket-mode
// client; a real gateway process holding the connection, real Postgres and Redis, a real worker
// replying through chat.postMessage. Envelopes are acknowledged only after their admission is
// committed, a redelivered envelope (same event_id) is one admission, and when the holding
// gateway is SIGKILLed the other replica connects and nothing is admitted twice.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import type { GatewayContext } from '../../../services/gateway/context.js';
import { slackSocketConnector, socketIdentity } from '../../../services/gateway/connectors/slack-socket.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { ProcessGroup, type Proc } from '../../chaos/processes.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { slackEvent, startFakeSlack, type FakeSlack } from '../../support/fake-slack.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const BOT_TOKEN = 'xoxb-socket-bot-token';
const APP_TOKEN = 'xapp-1-A1-socket-app-token';
const ALICE = 'UALICE';
// Only an app token (no signing secret): Socket Mode.
const slackSecret: SecretData = { namespace: 'default', name: 'slack-socket', data: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_APP_TOKEN: APP_TOKEN } };
const platform: NonNullable<CompiledAgent['platforms']>[number] = {
  type: 'slack', credentialsSecret: 'slack-socket', allowlist: [ALICE], allowAll: false, dmPairing: false, groupPolicy: 'mention',
};

let database: TestDatabase;
let model: FakeOpenAI;
let fake: FakeSlack;
let rt: TestRuntime;
let worker: RunningWorker;
let secretsDir: string;
let procs: ProcessGroup;
let gatewayA: Proc | undefined;
let gatewayB: RunningGateway | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => ({ text: `answer to: ${lastUser(body)}` }));
  fake = await startFakeSlack(BOT_TOKEN, APP_TOKEN);
  rt = await openTestRuntime(testConfig(database.url, { HERMES_SLACK_API_URL: fake.apiUrl, HERMES_CONNECTOR_REFRESH_SECONDS: 0.2 }), 'socket');
  await createTestAgent(rt, model.baseURL, { platforms: [platform] });
  worker = await startTestWorker(rt, { secrets: [slackSecret] });
  // Gateway A: a real `hermes gateway` process reading the Secret from files (as mounted Secrets).
  secretsDir = await mkdtemp(join(tmpdir(), 'hermes-socket-'));
  await mkdir(join(secretsDir, 'default', 'slack-socket'), { recursive: true });
  for (const [k, v] of Object.entries(slackSecret.data)) await writeFile(join(secretsDir, 'default', 'slack-socket', k), v);
  procs = new ProcessGroup(secretsDir);
  gatewayA = procs.spawn('gateway', {
    DATABASE_URL: rt.config.DATABASE_URL, REDIS_URL: rt.config.REDIS_URL, HERMES_QUEUE_PREFIX: rt.config.HERMES_QUEUE_PREFIX,
    HERMES_PORT: '0', HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'info', HERMES_SLACK_API_URL: fake.apiUrl,
    HERMES_CONNECTOR_REFRESH_SECONDS: '0.2', HERMES_SECRETS_SOURCE: 'files', HERMES_SECRETS_DIR: secretsDir,
  });
}, 60_000);

afterAll(async () => {
  if (gatewayA) await procs.kill(gatewayA);
  await gatewayB?.close();
  await worker?.close();
  await rt?.close();
  await fake?.close();
  await model?.close();
  await database?.drop();
  if (secretsDir) await rm(secretsDir, { recursive: true, force: true });
});

async function admissionsOf(eventId: string): Promise<number> {
  const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbound_events WHERE event_id = $1`, [eventId]);
  return rows[0]!.n;
}
const repliesWith = (text: string) => fake.posts().filter((c) => c.args.text === text);
const dm = (text: string, eventId?: string) => slackEvent({ user: ALICE, text, channel: 'DSOCK', channelType: 'im', ...(eventId ? { eventId } : {}) });
const acked = (id: string) => eventually(() => fake.socket.acked(id), `the ack of envelope ${id}`);

describe('Slack Socket Mode', () => {
  it('connects with the app token through HERMES_SLACK_API_URL, once for the app', async () => {
    await eventually(() => fake.socket.open().length === 1, 'gateway A opens one socket', 40_000);
    const opens = fake.calls.filter((c) => c.method === 'apps.connections.open');
    expect(opens.every((c) => c.token === APP_TOKEN)).toBe(true);
    expect(socketIdentity(APP_TOKEN)).not.toContain(APP_TOKEN);
  });

  it('answers a DM sent over the socket; a redelivered envelope (same event_id) is admitted once', async () => {
    const ev = dm('hello over the socket');
    const first = fake.socket.sendEvent(ev.body);
    await acked(first);
    expect(await admissionsOf(ev.eventId)).toBe(1);
    await eventually(() => repliesWith('answer to: hello over the socket').length === 1 || undefined, 'the reply in Slack');
    const again = fake.socket.sendEvent(ev.body, 1);
    await acked(again);
    expect(await admissionsOf(ev.eventId)).toBe(1);
    await new Promise((r) => setTimeout(r, 500));
    expect(repliesWith('answer to: hello over the socket')).toHaveLength(1);
    expect(repliesWith('answer to: hello over the socket')[0]!.args.channel).toBe('DSOCK');
  });

  it('acknowledges an envelope only after its admission is committed', async () => {
    const ev = dm('wait for the ledger');
    const client = await rt.db.pool.connect();
    let envelope: string;
    try {
      await client.query('BEGIN');
      await client.query('LOCK TABLE admissions IN EXCLUSIVE MODE'); // admissions cannot be written until we commit
      envelope = fake.socket.sendEvent(ev.body);
      await new Promise((r) => setTimeout(r, 800));
      expect(fake.socket.acked(envelope)).toBe(false);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await acked(envelope);
    const ack = fake.socket.acks.find((a) => a.envelopeId === envelope)!;
    expect(await admissionsOf(ev.eventId)).toBe(1);
    expect(ack.socket).toBe(fake.socket.sent.find((e) => e.envelopeId === envelope)!.socket);
    await eventually(() => repliesWith('answer to: wait for the ledger').length === 1 || undefined, 'the reply');
  });

  it('reconnects when Slack asks for a refresh (a `disconnect` message) and goes on', async () => {
    const before = fake.socket.opened();
    fake.socket.disconnectSockets();
    await eventually(() => fake.socket.opened() > before && fake.socket.open().length === 1, 'a new socket after the refresh', 20_000);
    const ev = dm('after the refresh');
    await acked(fake.socket.sendEvent(ev.body));
    await eventually(() => repliesWith('answer to: after the refresh').length === 1 || undefined, 'the reply');
  });

  it('fails over to the other gateway when the holder is killed; nothing is admitted twice', async () => {
    // Gateway B: in this process, campaigning while A holds the connection.
    gatewayB = await startGateway({ ...rt, secrets: staticSecrets([testModelSecret, slackSecret]) });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(fake.socket.open()).toHaveLength(1);
    const before = fake.socket.opened();

    // An event A admitted and acknowledged, and one A is admitting when it dies (never acknowledged).
    const done = dm('answered before the failover');
    await acked(fake.socket.sendEvent(done.body));
    const inFlight = dm('sent while the holder dies');
    const client = await rt.db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('LOCK TABLE admissions IN EXCLUSIVE MODE');
      const envelope = fake.socket.sendEvent(inFlight.body);
      await new Promise((r) => setTimeout(r, 300));
      await procs.kill(gatewayA!, 'SIGKILL');
      gatewayA = undefined;
      expect(fake.socket.acked(envelope)).toBe(false);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    // A's admission statement may already sit in Postgres behind the lock: Postgres runs it to the
    // end when the lock goes, though its client is dead. Either way nothing was acknowledged, so
    // Slack sends the event again, and its dedupe row keeps it to one admission (checked below).
    expect(await admissionsOf(inFlight.eventId)).toBeLessThanOrEqual(1);

    await eventually(() => fake.socket.opened() > before && fake.socket.open().length === 1, 'gateway B connects', 30_000);
    // Slack sends what nobody acknowledged again, and retries the acknowledged one too (a late retry).
    const redelivered = fake.socket.redeliverUnacked();
    expect(redelivered.length).toBeGreaterThanOrEqual(1);
    for (const id of redelivered) await acked(id);
    await acked(fake.socket.sendEvent(done.body, 1));
    expect(await admissionsOf(inFlight.eventId)).toBe(1);
    expect(await admissionsOf(done.eventId)).toBe(1);
    await eventually(() => repliesWith('answer to: sent while the holder dies').length === 1 || undefined, 'the reply via B');
    // Its reply and the earlier one's are separate deliveries, in no set order.
    await eventually(() => repliesWith('answer to: answered before the failover').length >= 1 || undefined, 'the earlier reply');
    await new Promise((r) => setTimeout(r, 500));
    expect(repliesWith('answer to: answered before the failover')).toHaveLength(1);
    expect(repliesWith('answer to: sent while the holder dies')).toHaveLength(1);
  });

  it('plans no socket for a Secret with a signing secret (Events API) or without an app token', async () => {
    const connector = slackSocketConnector();
    const agent = (await rt.agents.get('default', 'demo'))!;
    // plan reads only the Secret.
    const withSecrets = (data: Record<string, string>) => ({ deps: { secrets: staticSecrets([{ namespace: 'default', name: 'slack-socket', data }]) } }) as unknown as GatewayContext;
    const cases: [Record<string, string>, boolean][] = [
      [{ SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_APP_TOKEN: APP_TOKEN }, true],
      [{ SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_APP_TOKEN: APP_TOKEN, SLACK_SIGNING_SECRET: 's' }, false],
      [{ SLACK_BOT_TOKEN: BOT_TOKEN }, false],
    ];
    for (const [data, socket] of cases) {
      const ctx = withSecrets(data);
      expect(await connector.plan(ctx, agent, platform), JSON.stringify(Object.keys(data))).toBe(socket ? socketIdentity(APP_TOKEN) : undefined);
    }
  });
});
