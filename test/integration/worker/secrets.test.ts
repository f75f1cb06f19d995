// Profile secrets are read by reference, never by name from the process environment (finding H1).
// A worker wired as `hermes dev` wires it (HERMES_SECRETS_SOURCE=local: Secret manifests, then the
// allow-listed variables) runs with DATABASE_URL, REDIS_URL and PGPASSWORD in its environment and
// a capture server standing in for a model host the Profile author chose.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_SECRET_ENV, type CompiledModel } from '../../../services/core/index.js';
import { startWorker, type RunningWorker } from '../../../services/worker/index.js';
import { openSecrets } from '../../../services/cli/secrets.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, runTurn, type TestRuntime } from '../../support/system.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));

let database: TestDatabase;
let capture: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
/** The worker's environment: its own connection strings, a Postgres password, the install's model key. */
let processEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  database = await createTestDatabase();
  capture = await startFakeOpenAI(() => ({ text: 'captured' }));
  // OPENAI_BASE_URL: the install's own endpoint for provider "openai" (here the capture server too).
  rt = await openTestRuntime(testConfig(database.url, { OPENAI_BASE_URL: capture.baseURL }));
  processEnv = { DATABASE_URL: rt.config.DATABASE_URL, REDIS_URL: rt.config.REDIS_URL, PGPASSWORD: 'pg-secret', OPENAI_API_KEY: 'sk-install', UNLISTED_TOKEN: 'not-allowed' };
  const secrets = await openSecrets(rt.config, {
    defaultSource: 'local', defaultEnvAllow: DEV_SECRET_ENV,
    manifests: [{ namespace: 'default', name: 'mine', data: { DATABASE_URL: 'manifest-value' } }],
  }, processEnv);
  worker = await startWorker({ ...rt, secrets });
});
afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await capture?.close();
  await database?.drop();
});

let n = 0;
async function turnWith(model: Partial<CompiledModel>): Promise<{ outcome: string | null; reply: string; error: string | null; sent: (string | undefined)[] }> {
  const name = `agent-${++n}`;
  const agentId = await createTestAgent(rt, capture.baseURL, { agent: { namespace: 'default', name }, model: { provider: 'openai', model: 'gpt-test', ...model } });
  const before = capture.requests.length;
  const { a, reply } = await runTurn(rt, { agentId, sessionKey: `agent:default/${name}:api:dm:u1`, content: 'hello' });
  return { outcome: a.outcome, reply, error: a.error, sent: capture.requests.slice(before).map((r) => r.headers.authorization) };
}

const leaked = (sent: (string | undefined)[]) => sent.filter((h) => /postgres|redis|pg-secret|sk-install|not-allowed/.test(h ?? ''));

describe('secret references resolve by {name, key}, never from the whole environment', () => {
  it('a secretKeyRef naming DATABASE_URL sends nothing: the Secret does not exist and the variable is never allowed', async () => {
    const t = await turnWith({ provider: 'openai-compatible', baseURL: capture.baseURL, apiKeyRef: { name: 'x', key: 'DATABASE_URL' } });
    expect(t.outcome).toBe('failed');
    expect(t.reply).toBe('This agent is misconfigured: an operator needs to fix its model settings.');
    expect(t.error).toBe('The model\'s API key did not resolve: Secret "x" key "DATABASE_URL" in namespace default was not found (read from Secret manifests, allow-listed variables OPENAI_API_KEY).');
    expect(t.sent).toEqual([]);
  });

  it('a Secret the author may name resolves to its own value, wherever the Profile points', async () => {
    const t = await turnWith({ provider: 'openai-compatible', baseURL: capture.baseURL, apiKeyRef: { name: 'mine', key: 'DATABASE_URL' } });
    expect(t.outcome).toBe('completed');
    expect(t.sent).toEqual(['Bearer manifest-value']);
  });

  it('`env:` sources resolve only from the allow-list: DATABASE_URL, PGPASSWORD and unlisted variables are refused', async () => {
    for (const key of ['DATABASE_URL', 'REDIS_URL', 'PGPASSWORD', 'UNLISTED_TOKEN']) {
      const t = await turnWith({ apiKeyRef: { name: '', key } }); // provider openai, no baseURL: the install's endpoint
      expect(t.outcome).toBe('failed');
      expect(t.error).toBe(`The model's API key did not resolve: environment variable "${key}" (env:) was not found (only the variables in HERMES_SECRETS_ENV_ALLOW resolve, and only when set).`);
      expect(t.sent).toEqual([]);
    }
  });

  it('an allow-listed `env:` key goes to the install\'s endpoint, and is refused for a baseURL the Profile chose', async () => {
    const ok = await turnWith({ apiKeyRef: { name: '', key: 'OPENAI_API_KEY' } });
    expect(ok.outcome).toBe('completed');
    expect(ok.sent).toEqual(['Bearer sk-install']);

    for (const model of [
      { baseURL: capture.baseURL, apiKeyRef: { name: '', key: 'OPENAI_API_KEY' } },
      // An extra key of the pool is the same value: refused too, even next to a Secret.
      { provider: 'openai-compatible' as const, baseURL: capture.baseURL, apiKeyRef: { name: 'mine', key: 'DATABASE_URL' }, extraApiKeyRefs: [{ name: '', key: 'OPENAI_API_KEY' }] },
    ]) {
      const t = await turnWith(model);
      expect(t.outcome).toBe('failed');
      expect(t.error).toBe(`The model's API key comes from the environment variable "OPENAI_API_KEY" (env:), and keys from the environment are only sent to the provider's default endpoint or the install's OPENAI_BASE_URL, not to the Profile's baseURL ${capture.baseURL}. Put the key in a Secret in the Agent's namespace and use apiKey.secretKeyRef.`);
      expect(t.sent).toEqual([]);
    }
    expect(leaked(capture.requests.map((r) => r.headers.authorization))).toEqual(['Bearer sk-install']);
  });
});

describe('secret sources', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hermes-secrets-'));
    await mkdir(join(dir, 'team-a', 'model'), { recursive: true });
    await writeFile(join(dir, 'team-a', 'model', 'API_KEY'), 'sk-from-file\n');
    await mkdir(join(dir, 'team-b', 'model'), { recursive: true });
    await writeFile(join(dir, 'team-b', 'model', 'API_KEY'), 'sk-team-b');
    await writeFile(join(dir, 'secrets.yaml'), 'apiVersion: v1\nkind: Secret\nmetadata: { name: model, namespace: team-a }\ndata:\n  API_KEY: c2stYmFzZTY0\nstringData:\n  OTHER: plain\n');
  });
  afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

  it('files: <dir>/<namespace>/<name>/<key>, in the Agent\'s namespace only, never outside the folder', async () => {
    const config = testConfig(database.url, { HERMES_SECRETS_SOURCE: 'files', HERMES_SECRETS_DIR: dir });
    const r = await openSecrets(config, { defaultSource: 'kubernetes' }, processEnv);
    expect(await r.resolve('team-a', { name: 'model', key: 'API_KEY' })).toBe('sk-from-file');
    expect(await r.resolve('team-c', { name: 'model', key: 'API_KEY' })).toBeUndefined();
    for (const [ns, name, key] of [['team-a', '..', 'team-b'], ['..', 'team-b', 'model'], ['team-a', 'model/../../team-b/model', 'API_KEY'], ['team-a', 'model', '../../team-b/model/API_KEY']] as const) {
      expect(await r.resolve(ns, { name, key })).toBeUndefined();
    }
    // No fallback to variables for a secretKeyRef outside `local`; `env:` sources only when allowed (none here).
    expect(await r.resolve('team-a', { name: 'model', key: 'OPENAI_API_KEY' })).toBeUndefined();
    expect(await r.resolve('team-a', { name: '', key: 'OPENAI_API_KEY' })).toBeUndefined();
    const allowed = await openSecrets(testConfig(database.url, { HERMES_SECRETS_SOURCE: 'files', HERMES_SECRETS_DIR: dir, HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY' }), { defaultSource: 'kubernetes' }, processEnv);
    expect(await allowed.resolve('team-a', { name: '', key: 'OPENAI_API_KEY' })).toBe('sk-install');
  });

  it('local: HERMES_SECRETS_FILE holds Secret manifests (data in base64, stringData)', async () => {
    const r = await openSecrets(testConfig(database.url, { HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_FILE: join(dir, 'secrets.yaml') }), { defaultSource: 'kubernetes' }, processEnv);
    expect(await r.resolve('team-a', { name: 'model', key: 'API_KEY' })).toBe('sk-base64');
    expect(await r.resolve('team-a', { name: 'model', key: 'OTHER' })).toBe('plain');
    expect(await r.resolve('team-b', { name: 'model', key: 'API_KEY' })).toBeUndefined();
  });

  it('says at start what to set when the source cannot work', async () => {
    await expect(openSecrets(testConfig(database.url, { HERMES_SECRETS_SOURCE: 'files', HERMES_SECRETS_DIR: join(dir, 'missing') }), { defaultSource: 'kubernetes' }, {}))
      .rejects.toThrow(/HERMES_SECRETS_SOURCE=files: HERMES_SECRETS_DIR .*missing is not a folder/);
    await expect(openSecrets(testConfig(database.url, { HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_FILE: join(dir, 'nope.yaml') }), { defaultSource: 'kubernetes' }, {}))
      .rejects.toThrow(/HERMES_SECRETS_FILE: .*nope\.yaml does not exist/);
    // `hermes worker` defaults to the Kubernetes API: without a cluster it stops with what to set.
    const home = await mkdtemp(join(tmpdir(), 'hermes-home-'));
    const child = spawn(process.execPath, [bin, 'worker'], {
      env: { PATH: process.env.PATH, HOME: home, DATABASE_URL: rt.config.DATABASE_URL, REDIS_URL: rt.config.REDIS_URL, HERMES_QUEUE_PREFIX: rt.config.HERMES_QUEUE_PREFIX, HERMES_LOG_LEVEL: 'warn', HERMES_WORKER_PORT: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    await rm(home, { recursive: true, force: true });
    expect(code).toBe(2);
    expect(stderr).toMatch(/HERMES_SECRETS_SOURCE=kubernetes \(the default of this command\) needs a cluster to read Secrets from: run in a Pod with a ServiceAccount, set KUBECONFIG, or on one machine set HERMES_SECRETS_SOURCE=files/);
  });
});
