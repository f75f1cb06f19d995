// `helm install` of the chart into the test plane, run for real: the real helm binary, a real
// kube-apiserver, a kube-controller-manager running the Deployment, ReplicaSet, Job and garbage
// collector controllers, and the test kubelet running the chart's runtime image as
// `node <checkout>/bin/hermes.js <args>` (its image → local command mapping), with each Pod's
// env (Secret references included) and its ServiceAccount token, so the operator, gateway and
// workers talk to the apiserver as their own ServiceAccounts under the chart's RBAC. Postgres and
// Redis are the test's, given to the chart by Secret (the production path); the migrations hook
// Job creates the schema. A Profile whose model key exists only in its Secret and an Agent with
// Slack are applied; a signed Slack event posted to the gateway Pod gets its reply at the fake
// Slack; the key is rotated and the next turn uses the new one without a worker restart; `helm
// upgrade` with changed values keeps the conversation; `helm uninstall` leaves the CRDs, the Agent
// and the data, and ends every process.
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import pg from 'pg';
import { startControlPlane, startGarbageCollector, startKubelet, waitFor, type ControlPlane, type GarbageCollector, type TestKubelet } from '../../support/kube/index.js';
import { repoRoot } from '../../support/kube/binaries.js';
import { freePort } from '../../support/ports.js';
import { chartDir, parseManifests, run, type K8sObject } from '../../support/chart.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { slackEvent, slackSignedHeaders, startFakeSlack, type FakeSlack } from '../../support/fake-slack.js';
import { createTestDatabase, serverUrls, type TestDatabase } from '../../support/services.js';

const BOT_TOKEN = 'xoxb-install-bot';
const SIGNING_SECRET = 'install-signing-secret-0123456789';
const ALICE = 'UALICE';
const appVersion = (parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { appVersion: string }).appVersion;
const runtimeImage = `ghcr.io/hermes-operator/hermes:${appVersion}`;

let cp: ControlPlane;
let gc: GarbageCollector;
let kubelet: TestKubelet;
let database: TestDatabase;
let db: pg.Pool;
let model: FakeOpenAI;
let slack: FakeSlack;
let work: string;
let releaseNs: string;
let teamNs: string;
let gatewayPort: number;
/** Host PIDs of every pod sandbox the kubelet ran, to check they are all gone at the end. */
const seenPids = new Set<number>();

const helm = (...args: string[]) => run(cp.binaries.helm, [...args, '--kubeconfig', cp.adminKubeconfig, '--namespace', releaseNs], { timeoutMs: 300_000 });

async function kubectlOk(args: string[], input?: string): Promise<string> {
  const out = await cp.kubectl(args, input === undefined ? {} : { input });
  expect(out.code, `kubectl ${args.join(' ')}: ${out.stderr}`).toBe(0);
  return out.stdout;
}

/** The last lines of every pod log the kubelet wrote (for failure messages). */
function podLogs(): string {
  const root = join(kubelet.stateDir, 'pods');
  if (!existsSync(root)) return '';
  const out: string[] = [];
  for (const ns of readdirSync(root)) {
    for (const uid of readdirSync(join(root, ns))) {
      for (const f of readdirSync(join(root, ns, uid)).filter((n) => n.endsWith('.log'))) {
        out.push(`--- ${ns}/${uid}/${f}\n${readFileSync(join(root, ns, uid, f), 'utf8').split('\n').slice(-15).join('\n')}`);
      }
    }
  }
  return out.join('\n');
}

/** Values of this install: one replica each on free host ports (the Pods share the host network), external stores by Secret. */
async function valuesFile(name: string, worker: Record<string, unknown> = {}): Promise<{ path: string; ports: { operator: number; gateway: number; worker: number } }> {
  const ports = { operator: await freePort(), gateway: await freePort(), worker: await freePort() };
  const env = [{ name: 'HERMES_SLACK_API_URL', value: slack.apiUrl }, { name: 'HERMES_LOG_LEVEL', value: 'info' }];
  const values = {
    redis: { queuePrefix: `hermes-install-${releaseNs}` },
    operator: { replicas: 1, port: ports.operator },
    gateway: { replicas: 1, port: ports.gateway, autoscaling: { enabled: false }, extraEnv: env },
    // A short Secret cache so the rotation below is followed within the test.
    worker: { replicas: 1, port: ports.worker, autoscaling: { enabled: false }, extraEnv: [...env, { name: 'HERMES_SECRETS_CACHE_SECONDS', value: '1' }], ...worker },
    rbac: { agentNamespaces: [teamNs], workerNodes: false },
    sandbox: { namespace: { create: true, name: `${releaseNs}-sandbox` } },
  };
  const path = join(work, `${name}.yaml`);
  writeFileSync(path, stringify(values));
  return { path, ports };
}

async function podsOf(ns: string): Promise<{ name: string; phase: string; component: string }[]> {
  const out = await kubectlOk(['-n', ns, 'get', 'pods', '-o', 'json']);
  return (JSON.parse(out) as { items: { metadata: { name: string; labels?: Record<string, string> }; status?: { phase?: string } }[] }).items
    .map((p) => ({ name: p.metadata.name, phase: p.status?.phase ?? '', component: p.metadata.labels?.['app.kubernetes.io/component'] ?? '' }));
}

function recordPids(): void {
  for (const r of kubelet.running()) seenPids.add(r.pid);
}

/** Waits until the gateway on `port` answers /readyz, and one Running Pod of each component runs. */
async function waitForRelease(port: number): Promise<void> {
  await waitFor(async () => {
    const pods = (await podsOf(releaseNs)).filter((p) => p.phase === 'Running');
    return ['operator', 'gateway', 'worker'].every((c) => pods.some((p) => p.component === c)) || undefined;
  }, { what: `the operator, gateway and worker Pods to run\n${podLogs()}`, timeoutMs: 120_000 });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok).catch(() => false)) || undefined,
    { what: `the gateway on port ${port} to be ready\n${podLogs()}`, timeoutMs: 90_000 });
  recordPids();
}

let seq = 0;
/** A signed DM from Alice posted to the gateway Pod; resolves the reply text the fake Slack got. */
async function ask(text: string): Promise<string> {
  const before = slack.posts().length;
  const ev = slackEvent({ user: ALICE, text, channel: 'D0ALICE', channelType: 'im', ts: `1800000${++seq}.000100` });
  const body = JSON.stringify(ev.body);
  const res = await fetch(`http://127.0.0.1:${gatewayPort}/hooks/slack/${teamNs}/assistant`, { method: 'POST', headers: slackSignedHeaders(SIGNING_SECRET, body), body });
  expect(res.status, await res.clone().text()).toBe(200);
  const post = await waitFor(() => slack.posts().slice(before).find((p) => p.args.channel === 'D0ALICE'),
    { what: `a Slack reply to "${text}"\n${podLogs()}`, timeoutMs: 60_000 });
  expect(post.token).toBe(BOT_TOKEN);
  return post.args.text ?? '';
}

/** The Profile and Agent manifests of README "Install on Kubernetes" (the heredoc after `kubectl -n team apply`). */
function readmeManifests(): K8sObject[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const block = /kubectl -n team apply -f - <<'YAML'\n([\s\S]*?)\nYAML\n/.exec(readme);
  expect(block, 'README "Install on Kubernetes" applies a Profile and an Agent').not.toBeNull();
  const objects = parseManifests(block![1]!);
  expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['Profile/assistant', 'Agent/assistant']);
  return objects;
}

const modelKeysSeen = () => model.requests.map((r) => r.headers.authorization);

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'hermes-install-'));
  cp = await startControlPlane();
  gc = await startGarbageCollector(cp, { extraControllers: ['deployment-controller', 'replicaset-controller', 'job-controller'] });
  kubelet = await startKubelet(cp, {
    serviceAccountTokens: true,
    images: {
      [runtimeImage]: {
        entrypoint: [process.execPath, join(repoRoot, 'bin/hermes.js')],
        // The checkout, and where its node_modules link points (worktrees share one).
        readOnlyPaths: [...new Set([repoRoot, realpathSync(join(repoRoot, 'node_modules'))])],
        hostNetwork: true,
      },
    },
  });
  releaseNs = await cp.createNamespace('hermes');
  teamNs = await cp.createNamespace('team');
  database = await createTestDatabase({ migrate: false });
  db = new pg.Pool({ connectionString: database.url, max: 2 });
  model = await startFakeOpenAI((body) => ({ text: `answer to: ${lastUser(body)} (history ${body.messages.filter((m) => m.role === 'user').length})` }));
  slack = await startFakeSlack(BOT_TOKEN);
  // The production path: Postgres and Redis outside the release, their URLs in a Secret.
  await kubectlOk(['-n', releaseNs, 'create', 'secret', 'generic', 'hermes-runtime', `--from-literal=DATABASE_URL=${database.url}`, `--from-literal=REDIS_URL=${serverUrls().redisUrl}`]);
}, 300_000);

afterAll(async () => {
  await kubelet?.stop();
  await gc?.stop();
  await cp?.stop();
  await db?.end();
  await database?.drop();
  await model?.close();
  await slack?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('helm install on the test plane, run by the test kubelet', () => {
  it('installs, answers on Slack with the Profile Secret\'s key, follows its rotation, upgrades keeping the data, uninstalls keeping CRDs and data', async () => {
    const first = await valuesFile('install');
    gatewayPort = first.ports.gateway;
    // --wait: Helm waits for the Deployments, whose Pods are Ready only once their /readyz
    // readiness probe passes (the test kubelet runs httpGet probes of host-network Pods).
    const installed = await helm('install', 'hermes', chartDir, '-f', first.path, '--wait', '--timeout', '4m');
    expect(installed.code, `${installed.stderr}\n${podLogs()}`).toBe(0);
    // The pre-install hook Job migrated the empty database before any Pod started.
    const { rows: migrations } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL`);
    expect(migrations[0]!.n).toBeGreaterThan(0);
    // Ready by its probe when helm returned: the gateway Pod answers /readyz.
    expect((await fetch(`http://127.0.0.1:${gatewayPort}/readyz`)).status).toBe(200);
    await waitForRelease(gatewayPort);

    // A tenant: the model key only in the Profile's Secret (no Pod has it in its environment).
    await kubectlOk(['-n', teamNs, 'create', 'secret', 'generic', 'model-key', '--from-literal=OPENAI_API_KEY=sk-install-one']);
    await kubectlOk(['-n', teamNs, 'create', 'secret', 'generic', 'slack', `--from-literal=SLACK_BOT_TOKEN=${BOT_TOKEN}`, `--from-literal=SLACK_SIGNING_SECRET=${SIGNING_SECRET}`]);
    // The Profile and Agent of README "Install on Kubernetes", as written there, pointed at the fake model and our Slack user.
    const [profile, agent] = readmeManifests();
    expect(profile!.spec.model.apiKey).toEqual({ secretKeyRef: { name: 'model-key', key: 'OPENAI_API_KEY' } });
    profile!.spec.model.baseURL = model.baseURL;
    agent!.spec.platforms[0].allowlist = [ALICE];
    await kubectlOk(['-n', teamNs, 'apply', '-f', '-'], [profile, agent].map((o) => stringify(o)).join('---\n'));
    const ready = await cp.kubectl(['-n', teamNs, 'wait', '--for=condition=Ready', '--timeout=90s', 'agent/assistant']);
    expect(ready.code, `${ready.stderr}\n${podLogs()}`).toBe(0);

    // Point 6's RBAC, asked of the real authorizer: get on Secrets in the Agent's namespace only — no list or watch, no other namespace.
    const canI = async (sa: string, verb: string, ns: string) => (await cp.kubectl(['auth', 'can-i', verb, 'secrets', '-n', ns, '--as', `system:serviceaccount:${releaseNs}:hermes-${sa}`])).stdout.trim();
    for (const sa of ['gateway', 'worker']) {
      expect([await canI(sa, 'get', teamNs), await canI(sa, 'list', teamNs), await canI(sa, 'watch', teamNs), await canI(sa, 'get', 'default')], sa).toEqual(['yes', 'no', 'no', 'no']);
    }
    // No runtime Pod carries a model key: the worker has it only from the Profile's Secret.
    const envNames = (await kubectlOk(['-n', releaseNs, 'get', 'pods', '-o', 'jsonpath={.items[*].spec.containers[*].env[*].name}'])).split(' ');
    expect(envNames).toContain('DATABASE_URL');
    expect(envNames.filter((n) => /OPENAI|API_KEY/.test(n))).toEqual([]);

    expect(await ask('first question')).toBe('answer to: first question (history 1)');
    expect(modelKeysSeen()).toEqual(['Bearer sk-install-one']);
    const workerPod = (await podsOf(releaseNs)).find((p) => p.component === 'worker' && p.phase === 'Running')!.name;

    // Rotation: the Secret changes, the same worker Pod (no restart) sends the new key once its
    // 1 s cache (HERMES_SECRETS_CACHE_SECONDS) has lapsed.
    await kubectlOk(['-n', teamNs, 'apply', '-f', '-'], stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'model-key' }, stringData: { OPENAI_API_KEY: 'sk-install-two' } }));
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await ask('second question')).toBe('answer to: second question (history 2)');
    expect(modelKeysSeen().at(-1)).toBe('Bearer sk-install-two');
    expect((await podsOf(releaseNs)).filter((p) => p.component === 'worker').map((p) => p.name)).toEqual([workerPod]);

    // helm upgrade with changed values (every component on new ports, so every Pod is replaced);
    // the pre-upgrade hook migrates again (nothing to do) and the conversation goes on.
    const second = await valuesFile('upgrade', { turnConcurrency: 4 });
    const upgraded = await helm('upgrade', 'hermes', chartDir, '-f', second.path, '--wait', '--timeout', '4m');
    expect(upgraded.code, `${upgraded.stderr}\n${podLogs()}`).toBe(0);
    expect((await helm('history', 'hermes')).stdout).toMatch(/\n2\s+.*deployed/);
    gatewayPort = second.ports.gateway;
    await waitFor(async () => {
      const pods = await podsOf(releaseNs);
      return (!pods.some((p) => p.name === workerPod) && pods.filter((p) => p.phase === 'Running').length === 3) || undefined;
    }, { what: `the upgrade to replace every Pod\n${podLogs()}`, timeoutMs: 120_000 });
    await waitForRelease(gatewayPort);
    const worker = JSON.parse(await kubectlOk(['-n', releaseNs, 'get', 'deployment', 'hermes-worker', '-o', 'json'])) as { spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } };
    expect(worker.spec.template.spec.containers[0]!.env.find((e) => e.name === 'HERMES_TURN_CONCURRENCY')?.value).toBe('4');
    expect(await ask('third question')).toBe('answer to: third question (history 3)');
    const { rows: sessions } = await db.query<{ n: number }>(`SELECT count(DISTINCT session_id)::int AS n FROM admissions`);
    expect(sessions[0]!.n).toBe(1);

    // helm uninstall: the release's objects and Pods go; the CRDs, the Agent and the ledger stay.
    const uninstalled = await helm('uninstall', 'hermes', '--wait');
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    await waitFor(async () => ((await podsOf(releaseNs)).length === 0 && kubelet.running().length === 0) || undefined,
      { what: 'every Pod of the release to be gone', timeoutMs: 60_000 });
    for (const pid of seenPids) expect(() => process.kill(pid, 0), `pod sandbox ${pid} still runs`).toThrow();
    await kubectlOk(['get', 'crd', 'agents.hermes.dev', 'profiles.hermes.dev']);
    await kubectlOk(['-n', teamNs, 'get', 'agent/assistant', 'profile/assistant']);
    const { rows: admissions } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions`);
    expect(admissions[0]!.n).toBe(3);
  }, 480_000);
});
