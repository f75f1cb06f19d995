// Finding H1 of the spine review, end to end on a real kube-apiserver: a tenant who may create a
// Secret, a Profile and an Agent in their own namespace names the worker's own variable
// (DATABASE_URL) as the key of their API-key Secret and points baseURL at a server they run. The
// `hermes worker` process — as a cluster runs it: its ServiceAccount bound to the chart's
// hermes-worker ClusterRole, DATABASE_URL and REDIS_URL in its environment — must send the value
// of the tenant's Secret, never its own environment; a Secret of another namespace never resolves.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { admit, enqueueTurn, findAgent, getAdmission, getObligationForAdmission, publishRevision, type Admission } from '../../../services/core/index.js';
import { waitFor, type MintedKubeconfig } from '../../support/kube/index.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { testConfig } from '../../support/services.js';
import { openTestRuntime, testAgent, type TestRuntime } from '../../support/system.js';
import { kubectlOk, startPlane, waitForCondition, type Plane } from './harness.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
const rbacFile = new URL('../../../charts/hermes/templates/worker-rbac.yaml', import.meta.url);

describe('worker secrets on a real kube-apiserver', () => {
  let plane: Plane;
  let rt: TestRuntime;
  let capture: FakeOpenAI;
  let worker: ChildProcess | undefined;
  let sa: MintedKubeconfig;
  let workerNs: string;
  let logs = '';

  beforeAll(async () => {
    plane = await startPlane();
    rt = await openTestRuntime(testConfig(plane.testDb.url));
    // The attacker's server: answers like a model and records every Authorization header.
    capture = await startFakeOpenAI(() => ({ text: 'captured' }));
    const role = parseAllDocuments(readFileSync(rbacFile, 'utf8')).map((d) => d.toJSON() as { kind: string }).find((d) => d.kind === 'ClusterRole');
    await kubectlOk(plane.cp, ['apply', '-f', '-'], stringify(role));
    workerNs = await plane.cp.createNamespace('hermes');
    sa = await plane.cp.mintServiceAccountKubeconfig(workerNs, 'hermes-worker');
    const c = rt.config;
    worker = spawn(process.execPath, [bin, 'worker'], {
      env: {
        PATH: process.env.PATH, DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, HERMES_QUEUE_PREFIX: c.HERMES_QUEUE_PREFIX,
        KUBECONFIG: sa.path, HERMES_LOG_LEVEL: 'warn', HERMES_WORKER_PORT: '0', HERMES_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    worker.stderr!.on('data', (d: Buffer) => { logs += d.toString(); });
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    await rt?.close();
    await capture?.close();
    await plane?.stop();
  });

  /** A tenant namespace whose Secrets the workers may read (a RoleBinding to hermes-worker). */
  async function tenant(prefix: string, bind = true): Promise<string> {
    const ns = await plane.cp.createNamespace(prefix);
    if (bind) {
      await kubectlOk(plane.cp, ['-n', ns, 'create', 'rolebinding', 'hermes-worker', '--clusterrole=hermes-worker', `--serviceaccount=${workerNs}:hermes-worker`]);
      await waitFor(async () => (await plane.cp.kubectl(['-n', ns, 'auth', 'can-i', 'get', 'secrets'], { kubeconfig: sa.path })).code === 0, { what: 'the RoleBinding to take effect' });
    }
    return ns;
  }

  async function turn(agentId: string, sessionKey: string): Promise<{ a: Admission; reply: string }> {
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey, user: { platformUserId: 'mallory' }, content: 'hello', replyTarget: { kind: 'api' } });
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const a = await waitFor(async () => {
      const row = await getAdmission(rt.db.pool, adm.admissionId);
      return row?.state === 'terminal' ? row : undefined;
    }, { what: `the turn to finish (worker log: ${logs.slice(-500)})`, timeoutMs: 60_000 });
    return { a, reply: (await getObligationForAdmission(rt.db.pool, adm.admissionId))!.content };
  }

  const authorizations = () => capture.requests.map((r) => r.headers.authorization);
  const findAgentNamespace = async (name: string) => (await rt.db.pool.query<{ namespace: string }>('SELECT namespace FROM agents WHERE name = $1', [name])).rows[0]?.namespace;

  it('sends the tenant Secret\'s own value, never the worker\'s DATABASE_URL, to a Profile-chosen baseURL', async () => {
    const ns = await tenant('tenant');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'x', '--from-literal=DATABASE_URL=tenant-own-value']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], [
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'exfil' }, spec: { model: { provider: 'openai-compatible', model: 'm', baseURL: capture.baseURL, apiKey: { secretKeyRef: { name: 'x', key: 'DATABASE_URL' } } } } },
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'exfil' }, spec: { profileRef: { name: 'exfil' } } },
    ].map((o) => stringify(o)).join('---\n'));
    await plane.start({ namespace: ns });
    await waitForCondition(plane.cp.kubeConfig(), 'agents', ns, 'exfil', { type: 'Ready', status: 'True' });
    const agent = await findAgent(rt.db.pool, ns, 'exfil');

    const { a, reply } = await turn(agent!.agentId, `agent:${ns}/exfil:api:dm:mallory`);
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('captured');
    expect(authorizations()).toEqual(['Bearer tenant-own-value']);
    for (const h of authorizations()) {
      expect(h).not.toContain(rt.config.DATABASE_URL);
      expect(h).not.toContain('postgres');
    }
  });

  it('re-reads a rotated Secret past its cache when the provider refuses the old value', async () => {
    const ns = (await findAgentNamespace('exfil'))!;
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'x', '--from-literal=DATABASE_URL=rotated-value', '--dry-run=client', '-o', 'yaml'])
      .then((yaml) => kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], yaml));
    capture.setScript((_b, req) => (req.headers.authorization === 'Bearer rotated-value' ? { text: 'rotated' } : { status: 401 }));
    const before = capture.requests.length;
    const agent = await findAgent(rt.db.pool, ns, 'exfil');
    const { a, reply } = await turn(agent!.agentId, `agent:${ns}/exfil:api:dm:mallory`);
    capture.setScript(() => ({ text: 'captured' }));
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('rotated');
    // The cached value first (the Secret was read seconds ago), then the fresh one after the 401.
    expect(capture.requests.slice(before).map((r) => r.headers.authorization)).toEqual(['Bearer tenant-own-value', 'Bearer rotated-value']);
  });

  it('never reads a Secret of another namespace, and says which Secret, key and namespace did not resolve', async () => {
    const mine = await tenant('mine');
    const theirs = await tenant('theirs'); // the worker may read it: only the namespace rule keeps it out
    await kubectlOk(plane.cp, ['-n', theirs, 'create', 'secret', 'generic', 'y', '--from-literal=TOKEN=theirs-value']);
    // Published directly: the operator would keep such an Agent out of service (no Secret y in `mine`).
    const { agentId } = await publishRevision(rt.db, testAgent(capture.baseURL, {
      agent: { namespace: mine, name: 'borrower' }, profile: { namespace: mine, name: 'borrower' },
      model: { provider: 'openai-compatible', model: 'm', baseURL: capture.baseURL, apiKeyRef: { name: 'y', key: 'TOKEN' } },
    }));
    const before = capture.requests.length;
    const { a, reply } = await turn(agentId, `agent:${mine}/borrower:api:dm:mallory`);
    expect(a.outcome).toBe('failed');
    expect(reply).toBe('This agent is misconfigured: an operator needs to fix its model settings.');
    expect(a.error).toBe(`The model's API key did not resolve: Secret "y" key "TOKEN" in namespace ${mine} was not found (read from Kubernetes Secrets).`);
    expect(capture.requests.length).toBe(before);
  });

  it('tells the operator to bind hermes-worker where the workers may not read Secrets', async () => {
    const unbound = await tenant('unbound', false);
    await kubectlOk(plane.cp, ['-n', unbound, 'create', 'secret', 'generic', 'model', '--from-literal=KEY=v']);
    const { agentId } = await publishRevision(rt.db, testAgent(capture.baseURL, {
      agent: { namespace: unbound, name: 'lonely' }, profile: { namespace: unbound, name: 'lonely' },
      model: { provider: 'openai-compatible', model: 'm', baseURL: capture.baseURL, apiKeyRef: { name: 'model', key: 'KEY' } },
    }));
    const before = capture.requests.length;
    const { a } = await turn(agentId, `agent:${unbound}/lonely:api:dm:mallory`);
    expect(a.outcome).toBe('failed');
    expect(a.error).toMatch(new RegExp(`Secret "model" key "KEY" in namespace ${unbound}\\) could not be read: The worker may not read Secret "model" in namespace ${unbound} \\(403\\): bind its ServiceAccount to the hermes-worker ClusterRole`));
    expect(capture.requests.length).toBe(before);
  });

  it('hashes no API key from the operator\'s own environment (no oracle on it), with one message for set and unset', async () => {
    const ns = await tenant('oracle', false);
    process.env.ORACLE_PROBE_SECRET = 'set-in-the-operator'; // set: must not resolve any more than the unset one
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=k=v']);
    const agent = (name: string, env: string) => ({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name }, spec: { profileRef: { name: 'p' }, api: { keys: [{ env }] } } });
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], [
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } } } },
      agent('dburl', 'DATABASE_URL'), agent('probe', 'ORACLE_PROBE_SECRET'), agent('unset', 'NOT_SET_ANYWHERE'),
    ].map((o) => stringify(o)).join('---\n'));
    await plane.start({ namespace: ns });
    for (const [name, env] of [['dburl', 'DATABASE_URL'], ['probe', 'ORACLE_PROBE_SECRET'], ['unset', 'NOT_SET_ANYWHERE']]) {
      const o = await waitForCondition(plane.cp.kubeConfig(), 'agents', ns, name!, { type: 'CredentialsResolved', status: 'False', reason: 'CredentialsMissing' });
      expect(o.status?.conditions?.find((c) => c.type === 'CredentialsResolved')?.message).toBe(`API key environment variable "${env}" (env:) is not available: only the variables in HERMES_SECRETS_ENV_ALLOW resolve, and only when set. Prefer a secretKeyRef.`);
      expect(await findAgent(rt.db.pool, ns, name!)).toBeUndefined();
    }
    delete process.env.ORACLE_PROBE_SECRET;
  });
});
