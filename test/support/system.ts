// Builds in-process pieces of the system (worker, agents) on a test database and prefix.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, publishRevision, sha256, type Admission, type CompiledAgent, type Config, type Obligation, type Sql } from '../../services/core/index.js';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from './services.js';
import { startFakeOpenAI, type FakeOpenAI, type ScriptFn } from './fake-openai.js';
import { openResources, type Runtime } from '../../services/cli/runtime.js';
import { staticSecrets, type SecretData } from '../../services/agent/index.js';
import { startWorker, type LoopOptions, type RunningWorker, type WorkerDeps } from '../../services/worker/index.js';
import type { RunningGateway } from '../../services/gateway/index.js';
import { startGatewayOn } from '../../services/cli/gateway.js';

export type TestRuntime = Runtime;

/** The same resources a `hermes` process opens, on a test config. */
export function openTestRuntime(config: Config, component = 'test'): Promise<TestRuntime> {
  return openResources(config, component);
}

export const testApiKey = 'test-key-0123456789';

export function testAgent(baseURL: string, overrides: Partial<CompiledAgent> = {}): CompiledAgent {
  return {
    apiVersion: 'hermes.dev/v1alpha1',
    agent: { namespace: 'default', name: 'demo' },
    profile: { namespace: 'default', name: 'default' },
    model: { provider: 'openai', model: 'gpt-test', baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } },
    persona: 'You are the test agent.',
    // The test system is a backend serving many people: its key may name the user of each request.
    api: { enabled: true, keySha256: [sha256(testApiKey)], keys: [{ sha256: sha256(testApiKey), trustedBackend: true }] },
    busyPolicy: 'queue',
    ...overrides,
    // A trusted backend turns write approval on by default (many people); tests of it say so explicitly.
    learning: { memoryWriteApproval: false, skillWriteApproval: false, ...overrides.learning },
  };
}

export async function createTestAgent(rt: TestRuntime, baseURL: string, overrides: Partial<CompiledAgent> = {}): Promise<string> {
  const { agentId } = await publishRevision(rt.db, testAgent(baseURL, overrides));
  return agentId;
}

/** The Secret the test agents name ({name: openai, key: OPENAI_API_KEY} in namespace default). */
export const testModelSecret: SecretData = { namespace: 'default', name: 'openai', data: { OPENAI_API_KEY: 'sk-test' } };

/**
 * An in-process worker. Its Secrets are `testModelSecret` plus `secrets`; `env` are the
 * allow-listed variables `env:` sources may resolve to (none unless given).
 */
export async function startTestWorker(rt: TestRuntime, extra: { sweeper?: boolean; loop?: LoopOptions; secrets?: SecretData[]; env?: Record<string, string>; cron?: WorkerDeps['cron'] } = {}): Promise<RunningWorker> {
  const { secrets = [], env, ...rest } = extra;
  return startWorker({ ...rt, secrets: staticSecrets([testModelSecret, ...secrets], env ? { env } : {}), ...rest });
}

/**
 * A worker as its own process (`hermes worker`), for tests that SIGKILL one mid-turn: quick
 * heartbeats and instance TTL (dead within ≈ 3 s), a lease renewed every second but valid for
 * 600 s (so only the death verdict can free it), the test model key allow-listed. `env` adds to it.
 */
export function spawnTestWorker(config: Config, env: Record<string, string> = {}): ChildProcess {
  const bin = fileURLToPath(new URL('../../bin/hermes.js', import.meta.url));
  return spawn(process.execPath, [bin, 'worker'], {
    env: {
      PATH: process.env.PATH, DATABASE_URL: config.DATABASE_URL, REDIS_URL: config.REDIS_URL, HERMES_QUEUE_PREFIX: config.HERMES_QUEUE_PREFIX,
      HERMES_HEARTBEAT_SECONDS: '1', HERMES_INSTANCE_TTL_SECONDS: '3', HERMES_LEASE_TTL_SECONDS: '600', HERMES_LEASE_RENEW_SECONDS: '1',
      HERMES_LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sk-test', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY', HERMES_WORKER_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/**
 * One message through the ledger as the message API admits it (platform `api` unless given),
 * waited on until its turn is terminal: the admission and the reply it produced.
 */
export async function runTurn(rt: TestRuntime, m: { agentId: string; sessionKey: string; content: string; userId?: string; platform?: string }): Promise<{ a: Admission; reply: string }> {
  const adm = await admit(rt.db, { agentId: m.agentId, platform: m.platform ?? 'api', sessionKey: m.sessionKey, user: { platformUserId: m.userId ?? 'u1' }, content: m.content, replyTarget: { kind: 'api' } });
  await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
  const a = await eventually(async () => {
    const row = await getAdmission(rt.db.pool, adm.admissionId);
    return row?.state === 'terminal' ? row : undefined;
  }, `turn of "${m.content.slice(0, 40)}" terminal`);
  return { a, reply: (await getObligationForAdmission(rt.db.pool, adm.admissionId))!.content };
}

/**
 * The admission's reply obligation once the delivery worker has recorded it delivered (a fake
 * platform sees the send before the worker has its answer and marks the row).
 */
export function deliveredObligation(sql: Sql, admissionId: string, what = 'the reply delivered', timeoutMs?: number): Promise<Obligation> {
  return eventually(async () => {
    const o = await getObligationForAdmission(sql, admissionId);
    return o?.state === 'delivered' ? o : undefined;
  }, what, timeoutMs);
}

/** What {@link useAgentSystem} starts: a test database, a scripted fake OpenAI server, a runtime and a worker. */
export interface AgentSystem {
  database: TestDatabase;
  model: FakeOpenAI;
  rt: TestRuntime;
  worker: RunningWorker;
}

/** {@link useAgentSystem} with the gateway in front (HTTP on a free loopback port). */
export interface GatewaySystem extends AgentSystem {
  gateway: RunningGateway;
}

/**
 * Registers the suite's beforeAll/afterAll: a migrated database, the fake model answering with
 * `script`, the runtime and an in-process worker (with `worker` options). The returned object is
 * filled in by beforeAll.
 */
export function useAgentSystem(script: ScriptFn, worker: Parameters<typeof startTestWorker>[1] = {}, config: Partial<Record<keyof Config, unknown>> = {}): AgentSystem {
  const sys = {} as AgentSystem;
  beforeAll(async () => {
    sys.database = await createTestDatabase();
    sys.model = await startFakeOpenAI(script);
    sys.rt = await openTestRuntime(testConfig(sys.database.url, config));
    sys.worker = await startTestWorker(sys.rt, worker);
  });
  afterAll(async () => {
    await sys.worker?.close();
    await sys.rt?.close();
    await sys.model?.close();
    await sys.database?.drop();
  });
  return sys;
}

/** {@link useAgentSystem} plus a gateway on 127.0.0.1 (port 0), closed first after the suite. */
export function useGatewaySystem(script: ScriptFn, config: Partial<Record<keyof Config, unknown>> = {}): GatewaySystem {
  const sys = useAgentSystem(script, {}, { HERMES_PORT: 0, HERMES_HOST: '127.0.0.1', ...config }) as GatewaySystem;
  beforeAll(async () => { sys.gateway = await startGatewayOn(sys.rt); });
  afterAll(async () => { await sys.gateway?.close(); });
  return sys;
}
