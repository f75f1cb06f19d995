// `hermes dev -m <folder>` runs what the folder declares, on a database an earlier run used with
// another folder: the agents and CronJobs that run published and this folder does not declare
// are off (the agents' sessions kept, back when a folder declares them again), and an agent the
// operator published is never touched. Spawns the real CLI three times on one database.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, publishRevision, sha256, type Db } from '../../../services/core/index.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { repoRoot } from '../../support/kube/binaries.js';
import { messageApi } from '../../support/message-api.js';
import { freePort } from '../../support/ports.js';
import { createTestDatabase, eventually, serverUrls, type TestDatabase } from '../../support/services.js';
import { testAgent } from '../../support/system.js';

const KEY = 'hk-devfolder';
const profile = `apiVersion: hermes.dev/v1alpha1
kind: Profile
metadata: { name: default }
spec:
  model: { provider: openai, model: gpt-test, apiKey: { secretKeyRef: { name: openai, key: OPENAI_API_KEY } } }
`;
const agent = (name: string) => `apiVersion: hermes.dev/v1alpha1
kind: Agent
metadata: { name: ${name} }
spec:
  profileRef: { name: default }
  api: { enabled: true, keys: [{ secretKeyRef: { name: hermes-api, key: HERMES_DEV_API_KEY } }] }
`;
const cronJob = (name: string, agentName: string) => `apiVersion: hermes.dev/v1alpha1
kind: CronJob
metadata: { name: ${name} }
spec:
  agentRef: { name: ${agentName} }
  schedule: "@every 1h"
  prompt: Say the time.
  deliver: local
`;

let dir: string;
let database: TestDatabase;
let db: Db;
let model: FakeOpenAI;

function folder(name: string, docs: string[]): string {
  const path = join(dir, name);
  mkdirSync(path);
  writeFileSync(join(path, 'all.yaml'), docs.join('---\n'));
  return path;
}

/** `hermes dev -m manifests` on this test's database: the process, what it printed so far, and its exit. */
async function spawnDev(manifests: string) {
  const port = await freePort();
  const dev = spawn(process.execPath, [join(repoRoot, 'bin/hermes.js'), 'dev', '-m', manifests, '-p', String(port)], {
    cwd: dir,
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: database.url, REDIS_URL: serverUrls().redisUrl, HERMES_QUEUE_PREFIX: `devfolder-${port}`,
      OPENAI_BASE_URL: model.baseURL, HERMES_DEV_API_KEY: KEY, HERMES_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const out = { stderr: '' };
  dev.stderr.on('data', (chunk: Buffer) => { out.stderr += chunk.toString(); });
  const exited = new Promise<number | null>((resolve) => dev.once('exit', resolve));
  return { dev, out, exited, url: `http://127.0.0.1:${port}` };
}

/** Runs `hermes dev -m folder` until `use` settles; returns what it printed. */
async function devRun(manifests: string, use: (url: string) => Promise<void>): Promise<string> {
  const { dev, out, exited, url } = await spawnDev(manifests);
  try {
    await eventually(() => out.stderr.includes('Press Ctrl-C to stop.') || dev.exitCode !== null, `hermes dev to start (stderr so far: ${out.stderr.slice(-2_000)})`, 60_000, 100);
    expect(dev.exitCode, out.stderr).toBeNull();
    await use(url);
  } finally {
    dev.kill('SIGTERM');
    await exited;
  }
  return out.stderr;
}

const models = async (url: string) => {
  const res = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
  return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id).sort();
};
const schedules = async () => (await db.pool.query<{ key: string }>(`SELECT namespace || '/' || name AS key FROM cron_schedules ORDER BY 1`)).rows.map((r) => r.key);
const sessionsOf = async (name: string) => (await db.pool.query<{ n: number }>(
  `SELECT count(*)::int AS n FROM sessions s JOIN agents a ON a.id = s.agent_id WHERE a.namespace = 'default' AND a.name = $1`, [name])).rows[0]!.n;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hermes-devfolder-'));
  database = await createTestDatabase();
  db = openDb(database.url);
  model = await startFakeOpenAI((b: ChatRequestBody) => ({ text: `echo: ${lastUser(b)}` }));
});

afterAll(async () => {
  await model?.close();
  await db?.close();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('hermes dev on a database an earlier run used with another folder', () => {
  it('runs only what the folder declares; the earlier agents are off with their data kept, the operator\'s are left alone', async () => {
    const first = folder('first', [profile, agent('alpha'), cronJob('alpha-hourly', 'alpha')]);
    const second = folder('second', [profile, agent('beta')]);
    // An agent the operator published (a cluster sharing this database): hermes dev is not its publisher.
    await publishRevision(db, { ...testAgent(model.baseURL, { agent: { namespace: 'default', name: 'gamma' } }), api: { enabled: true, keySha256: [sha256(KEY)] } });

    await devRun(first, async (url) => {
      expect(await models(url)).toEqual(['default/alpha', 'default/gamma']);
      const api = messageApi(() => url, { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' });
      expect(await api.replyOf(await api.post('alpha', 'remember me'))).toBe('echo: remember me');
    });
    expect(await schedules()).toEqual(['default/alpha-hourly']);
    expect(await sessionsOf('alpha')).toBe(1);

    const printed = await devRun(second, async (url) => {
      expect(await models(url)).toEqual(['default/beta', 'default/gamma']);
      const refused = await fetch(`${url}/v1/agents/default/alpha/messages`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ content: 'still there?' }) });
      expect(refused.status).toBe(404);
      const api = messageApi(() => url, { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' });
      expect(await api.replyOf(await api.post('gamma', 'and you?'))).toBe('echo: and you?');
    });
    expect(printed).toContain(`turned off agents an earlier run published that ${second} does not declare (their sessions and memory are kept): default/alpha`);
    expect(printed).toContain(`deleted CronJobs an earlier run stored that ${second} does not declare: default/alpha-hourly`);
    expect(await schedules()).toEqual([]);
    expect(await sessionsOf('alpha')).toBe(1);

    // Declared again, alpha is back with its sessions; beta is now the one turned off.
    const again = await devRun(first, async (url) => {
      expect(await models(url)).toEqual(['default/alpha', 'default/gamma']);
      const api = messageApi(() => url, { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' });
      expect(await api.replyOf(await api.post('alpha', 'back?'))).toBe('echo: back?');
    });
    expect(again).toContain('default/beta');
    expect(again).not.toContain('deleted CronJobs');
    expect(await schedules()).toEqual(['default/alpha-hourly']);
    expect(await sessionsOf('alpha')).toBe(1);
  }, 180_000);

  it('a folder that fails to load turns nothing off, and says why without a stack trace', async () => {
    // What an earlier hermes dev run published: a run with a good folder would turn it off.
    await publishRevision(db, testAgent(model.baseURL, { agent: { namespace: 'default', name: 'epsilon' } }), 'hermes-dev');
    const failing = async (manifests: string) => {
      const { out, exited } = await spawnDev(manifests);
      const code = await exited;
      expect(out.stderr).not.toMatch(/^\s+at /m);
      return { code, stderr: out.stderr };
    };
    expect(await failing(folder('no-profile', [agent('delta')]))).toMatchObject({ code: 2, stderr: expect.stringContaining('Profile "default" not found') });
    const twice = folder('twice', [profile, agent('delta'), agent('delta')]);
    expect(await failing(twice)).toMatchObject({ code: 2, stderr: expect.stringContaining(`${join(twice, 'all.yaml')} (document 3): Agent default/delta is declared twice`) });
    // Numbers without a bound were loaded up to int64 (a maxOutputTokens of 9e15 went to the provider); the apiserver's bounds hold here too.
    const hugeOutput = profile.replace('model: gpt-test,', 'model: gpt-test, maxOutputTokens: 9000000000000000,');
    expect(await failing(folder('huge-output', [hugeOutput, agent('delta')]))).toMatchObject({ code: 2, stderr: expect.stringMatching(/spec\.model\.maxOutputTokens[^\n]*1000000/) });
    const lateCron = cronJob('late', 'delta').replace('deliver: local', 'deliver: local\n  startingDeadlineSeconds: 9000000000');
    expect(await failing(folder('huge-deadline', [profile, agent('delta'), lateCron]))).toMatchObject({ code: 2, stderr: expect.stringMatching(/spec\.startingDeadlineSeconds[^\n]*604800/) });
    expect(await failing(join(dir, 'no-such-folder'))).toMatchObject({ code: 2, stderr: expect.stringContaining('no such folder or file of manifests') });
    const { rows } = await db.pool.query(`SELECT current_revision_id FROM agents WHERE name = 'epsilon'`);
    expect(rows[0].current_revision_id).not.toBeNull();
  }, 120_000);
});
