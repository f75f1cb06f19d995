// Mode session end to end on the test plane: the real kube-apiserver, the test kubelet (which
// serves pods/exec), the real kubernetes-sigs/agent-sandbox controller, a garbage collector, the
// operator in-process and the worker's backend. A Profile with `spec.sandbox.mode: session`
// gets its SandboxTemplate and SandboxWarmPool from the operator; a new session claims the warm
// sandbox (a pool hit), later commands of the session run in the same sandbox and keep their
// working directory, another session gets its own; an idle session's sandbox is suspended and
// the next command resumes it on the same workspace, in the same working directory; a claim past its workspace TTL goes with
// its Sandbox. A cluster without agent-sandbox says so in the status and runs a Pod per call.
import { randomUUID } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { stringify } from 'yaml';
import { componentLabel, createLogger, lastUsedAtAnnotation, sandboxComponent } from '../../../services/core/index.js';
import {
  kubernetesSandbox, sessionClaimName, sessionKubernetesSandbox, sessionPoolName,
  type ExecRequest, type RunningCommand, type Sandbox, type SandboxSession, type SessionSandboxMetrics,
} from '../../../services/sandbox/index.js';
import type { OperatorHandle } from '../../../operator/manager.js';
import { suspendIdle, type Claim as SweptClaim, type Sandbox as SweptSandbox } from '../../../operator/controllers/session-sweep.js';
import {
  pidsWithArg, startAgentSandboxController, startGarbageCollector, startKubelet, waitFor,
  type AgentSandboxController, type GarbageCollector, type TestKubelet,
} from '../../support/kube/index.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';
import { conditionOf, kubectlOk, startPlane, waitForCondition, type Plane } from '../operator/harness.js';

const AGENTS = { group: 'agents.x-k8s.io', version: 'v1beta1' };
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const doc = (o: Record<string, unknown>) => stringify({ apiVersion: 'hermes.dev/v1alpha1', ...o });

function profile(name: string, sandbox: Record<string, unknown>): string {
  return doc({ kind: 'Profile', metadata: { name }, spec: {
    model: { provider: 'openai', model: 'gpt-4o-mini', apiKey: { secretKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } } },
    toolsets: ['terminal', 'file'], sandbox,
  } });
}
const agent = (name: string, profileName: string) => doc({ kind: 'Agent', metadata: { name }, spec: { profileRef: { name: profileName } } });

/** Records what the backend reports, as the worker's Prometheus metrics would. */
class Recorded implements SessionSandboxMetrics {
  readonly claims: string[] = [];
  readonly pool: string[] = [];
  claimSeconds(launch: string): void { this.claims.push(launch); }
  poolClaim(result: 'hit' | 'miss'): void { this.pool.push(result); }
}

interface Obj { metadata: { name: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string }; spec?: Record<string, unknown>; status?: { conditions?: { type: string; status: string; reason?: string }[]; sandbox?: { name?: string }; readyReplicas?: number } }

describe('mode session on agent-sandbox', () => {
  let plane: Plane;
  let kubelet: TestKubelet;
  let controller: AgentSandboxController;
  let gc: GarbageCollector;
  let op: OperatorHandle;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let backend: Sandbox;
  const metrics = new Recorded();
  let ns: string;

  beforeAll(async () => {
    plane = await startPlane();
    kubelet = await startKubelet(plane.cp);
    controller = await startAgentSandboxController(plane.cp);
    gc = await startGarbageCollector(plane.cp);
    op = await plane.start({ sandbox: { resyncMs: 500 } });
    custom = plane.cp.kubeConfig().makeApiClient(CustomObjectsApi);
    core = plane.cp.kubeConfig().makeApiClient(CoreV1Api);
    const kc = plane.cp.kubeConfig();
    backend = sessionKubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 }, perCall: kubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 } }), metrics });
  }, 240_000);

  afterAll(async () => {
    await backend?.close();
    await op?.stop();
    await controller?.stop();
    await gc?.stop();
    await kubelet?.stop();
    await plane?.stop();
  }, 60_000);

  const printLogs = (): void => onTestFailed(() => {
    console.error(`--- agent-sandbox-controller ---\n${controller.tail(60)}`);
    if (kubelet.errors.length) console.error(`--- test kubelet ---\n${kubelet.errors.join('\n')}`);
  });
  const get = (api: typeof AGENTS, plural: string, name: string): Promise<Obj | undefined> =>
    custom.getNamespacedCustomObject({ ...api, namespace: ns, plural, name }).then((o) => o as Obj, (err: unknown) => {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    });
  const session = (): SandboxSession => testSession(ns, 'coder', randomUUID());
  const inSession = (s: SandboxSession, command: string, over: Partial<ExecRequest> = {}): ExecRequest =>
    execRequest(s, command, { pod: { session: { profile: 'coder', idleSeconds: 3_600 } }, ...over });
  const claimOf = (s: SandboxSession) => get(EXT, 'sandboxclaims', sessionClaimName(s));
  const sandboxOf = async (s: SandboxSession) => {
    const name = (await claimOf(s))?.status?.sandbox?.name;
    return name ? get(AGENTS, 'sandboxes', name) : undefined;
  };
  const podOf = (name: string): Promise<V1Pod | undefined> => core.readNamespacedPod({ namespace: ns, name }).catch(() => undefined);

  it('the operator writes the Profile\'s template and warm pool; the Profile and Agent say so', async () => {
    printLogs();
    ns = await plane.cp.createNamespace('session');
    await kubectlOk(plane.cp, ['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted']);
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'openai', '--from-literal=OPENAI_API_KEY=sk']);
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], `${profile('coder', { mode: 'session', warmPool: { size: 1 } })}---\n${agent('coder', 'coder')}`);
    const p = await waitForCondition(plane.cp.kubeConfig(), 'profiles', ns, 'coder', { type: 'SandboxPool', status: 'True', reason: 'Ready' }, 90_000);
    expect(conditionOf(p, 'SandboxPool')?.message).toContain('1/1 warm sandboxes ready');
    const template = await get(EXT, 'sandboxtemplates', sessionPoolName('coder'));
    expect(template?.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('hermes');
    const pool = await get(EXT, 'sandboxwarmpools', sessionPoolName('coder'));
    expect(pool?.spec).toMatchObject({ replicas: 1, sandboxTemplateRef: { name: sessionPoolName('coder') } });
    // The warm Pod passed the namespace's PodSecurity "restricted" and is not a per-call sandbox.
    const warmPods = (await core.listNamespacedPod({ namespace: ns })).items;
    expect(warmPods).toHaveLength(1);
    expect(warmPods[0]?.metadata?.labels?.[componentLabel]).toBe('session-sandbox');
    const a = await waitForCondition(plane.cp.kubeConfig(), 'agents', ns, 'coder', { type: 'SandboxReady', status: 'True', reason: 'SessionSandboxes' });
    expect(conditionOf(a, 'SandboxReady')?.message).toContain('warm pool');
  }, 120_000);

  // Made in the first test that needs it: `ns` exists only once the first test ran.
  let first: SandboxSession;

  it('a new session claims the warm sandbox; its commands share it and keep their working directory', async () => {
    printLogs();
    first = session();
    const r1 = await backend.exec(inSession(first, 'pwd; echo oops >&2'));
    expect(r1).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(r1.output).toContain('/workspace\n');
    expect(r1.output).toContain('oops\n');
    expect(metrics.pool).toEqual(['hit']);
    expect(metrics.claims).toEqual(['warm']);
    const sandbox = await sandboxOf(first);
    expect(sandbox?.metadata.labels?.['agents.x-k8s.io/launch-type']).toBe('warm');

    expect((await backend.exec(inSession(first, 'mkdir -p proj && cd proj && echo kept > note'))).exitCode).toBe(0);
    const r3 = await backend.exec(inSession(first, 'pwd; cat note'));
    expect(r3.output).toBe('/workspace/proj\nkept\n');
    expect(metrics.claims.slice(1)).toEqual(['running', 'running']);
    // An explicit cwd runs there, and does not move the session's directory.
    expect((await backend.exec(inSession(first, 'pwd', { cwd: '/workspace' }))).output).toBe('/workspace\n');
    expect((await backend.exec(inSession(first, 'pwd'))).output).toBe('/workspace/proj\n');
    // stdin, exit codes, environment.
    expect((await backend.exec(inSession(first, 'cat; exit 7', { stdin: 'from stdin' })))).toMatchObject({ exitCode: 7, output: 'from stdin' });
    const env = await backend.exec(inSession(first, 'echo "$HOME $EXTRA"', { env: { EXTRA: 'x1' } }));
    expect(env.output).toBe('/workspace x1\n');
  }, 120_000);

  it('a command past its timeout is killed with its children; an interrupt kills at once', async () => {
    printLogs();
    const t = await backend.exec(inSession(first, 'sleep 41.25 & sleep 41.5', { timeoutMs: 1_500 }));
    expect(t).toMatchObject({ status: 'timeout', exitCode: 137 });
    await waitFor(() => (pidsWithArg('41.25').length + pidsWithArg('41.5').length === 0 ? true : undefined), { what: 'the timed-out commands to be gone', timeoutMs: 10_000 });

    const abort = new AbortController();
    const running = await backend.start(inSession(first, 'echo started; sleep 42.5', { signal: abort.signal }));
    await waitFor(() => (pidsWithArg('42.5').length > 0 ? true : undefined), { what: 'the command to run', timeoutMs: 20_000 });
    abort.abort();
    const r = await running.done;
    expect(r.status).toBe('interrupted');
    expect(r.output).toContain('started');
    await waitFor(() => (pidsWithArg('42.5').length === 0 ? true : undefined), { what: 'the interrupted command to be gone', timeoutMs: 10_000 });
    // The sandbox is still there for the next command.
    expect((await backend.exec(inSession(first, 'cat /workspace/proj/note'))).output).toBe('kept\n');
  }, 120_000);

  it('a channel process (execute_code\'s) runs in the session\'s sandbox, in its directory, with lines both ways; its timeout kills it', async () => {
    printLogs();
    const lines: string[] = [];
    const channel = await backend.open!({ ...inSession(first, 'read -r l; echo "got $l $(cat note)"; pwd >&2'), onLine: (l) => lines.push(l) });
    channel.send('ping');
    expect(await channel.done).toMatchObject({ status: 'ok', exitCode: 0, output: '/workspace/proj\n' });
    expect(lines).toEqual(['got ping kept']);
    const slow = await backend.open!({ ...inSession(first, 'sleep 43.5', { timeoutMs: 1_500 }), onLine: () => undefined });
    expect(await slow.done).toMatchObject({ status: 'timeout', exitCode: 137 });
    await waitFor(() => (pidsWithArg('43.5').length === 0 ? true : undefined), { what: 'the timed-out process to be gone', timeoutMs: 10_000 });
  }, 120_000);

  it('another session gets a sandbox of its own, with its own workspace', async () => {
    printLogs();
    const second = session();
    const r = await backend.exec(inSession(second, 'pwd; ls /workspace'));
    expect(r.output).toBe('/workspace\n');
    expect(metrics.pool.length).toBe(2);
    expect((await sandboxOf(second))?.metadata.name).not.toBe((await sandboxOf(first))?.metadata.name);
  }, 120_000);

  it('the wait for a new claim follows the claim\'s watch: with no re-read in between, a cold start answers', async () => {
    printLogs();
    // A pool of none: agent-sandbox binds the claim to a new Sandbox, whose Pod must start before
    // the claim turns Ready — never in time for the first look. Without re-reads (the fallback is
    // past this test's timeout) only the claim's events can wake the wait.
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], profile('cold', { mode: 'session', warmPool: { size: 0 } }));
    await waitFor(async () => (await get(EXT, 'sandboxwarmpools', sessionPoolName('cold'))) ? true : undefined, { what: 'the cold Profile\'s pool' });
    const kc = plane.cp.kubeConfig();
    const coldMetrics = new Recorded();
    const watching = sessionKubernetesSandbox({
      kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200, startTimeoutMs: 120_000 }, claimRereadMs: 600_000, metrics: coldMetrics,
      perCall: kubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 } }),
    });
    try {
      const s = testSession(ns, 'cold', randomUUID());
      const r = await watching.exec(execRequest(s, 'pwd', { pod: { session: { profile: 'cold', idleSeconds: 3_600 } } }));
      expect(r).toMatchObject({ status: 'ok', exitCode: 0, output: '/workspace\n' });
      expect(coldMetrics.claims).toEqual(['cold']);
      expect(coldMetrics.pool).toEqual(['miss']);
    } finally {
      await watching.close();
    }
  }, 45_000);

  it('an idle sandbox is suspended (its Pod goes, its workspace stays) and the next command resumes it where the last one left off', async () => {
    printLogs();
    const idle = session();
    // It ends in a folder of its own: the working directory must outlive the Pod.
    expect((await backend.exec(inSession(idle, 'mkdir -p /workspace/deep/er && cd /workspace/deep/er && echo data > /workspace/f', { pod: { session: { profile: 'coder', idleSeconds: 1 } } }))).exitCode).toBe(0);
    const sandbox = await sandboxOf(idle);
    const podName = sandbox!.metadata.name;
    const firstUid = (await podOf(podName))?.metadata?.uid;
    await waitFor(async () => ((await get(AGENTS, 'sandboxes', podName))?.spec?.operatingMode === 'Suspended' ? true : undefined), { what: 'the idle sandbox to be suspended', timeoutMs: 30_000 });
    await waitFor(async () => ((await podOf(podName))?.metadata?.uid === firstUid ? undefined : true), { what: 'the suspended sandbox\'s Pod to go', timeoutMs: 30_000 });

    const r = await backend.exec(inSession(idle, 'cat /workspace/f; pwd', { pod: { session: { profile: 'coder', idleSeconds: 3_600 } } }));
    expect(r).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(r.output).toBe('data\n/workspace/deep/er\n');
    expect(metrics.claims.at(-1)).toBe('resumed');
    expect((await podOf(podName))?.metadata?.uid).not.toBe(firstUid);
  }, 120_000);

  // The sweep's suspend and a command's lease race; each order is played out step by step.
  // Sessions idle after a minute; the sweep is asked ten minutes on (idle, still within the 1 h workspace TTL).
  const inIdling = (s: SandboxSession, command: string, over: Partial<ExecRequest> = {}): ExecRequest =>
    inSession(s, command, { pod: { session: { profile: 'coder', idleSeconds: 60 } }, ...over });
  const later = () => Date.now() + 600_000;
  const sweepLog = createLogger('sweep', 'silent');

  it('a command leased between the sweep\'s decision and its suspend wins: the suspend is refused, the command runs on', async () => {
    printLogs();
    const busy = session();
    expect((await backend.exec(inIdling(busy, 'mkdir -p /workspace/busy'))).exitCode).toBe(0);
    // What the sweep read: the claim, idle two hours from now, and its Sandbox.
    const claim = (await claimOf(busy))!;
    const sandbox = (await sandboxOf(busy))!;
    let running: RunningCommand | undefined;
    const suspended = await suspendIdle({ api: custom, log: sweepLog, beforeSuspend: async () => {
      // The command starts (its lease written) after the decision, before the write: it waits for a file.
      running = await backend.start(inIdling(busy, 'while [ ! -e /workspace/busy/go ]; do sleep 0.05; done; echo ran on', { timeoutMs: 60_000 }));
    } }, claim as SweptClaim, sandbox as SweptSandbox, later());
    expect(suspended).toBe(false);
    expect((await sandboxOf(busy))?.spec?.operatingMode).toBe('Running');
    expect((await backend.exec(inIdling(busy, 'touch /workspace/busy/go'))).exitCode).toBe(0);
    expect(await running!.done).toMatchObject({ status: 'ok', exitCode: 0, output: 'ran on\n' });
  }, 120_000);

  it('a suspend between finding the sandbox Ready and leasing it is seen: the command resumes the sandbox and runs there', async () => {
    printLogs();
    const raced = session();
    expect((await backend.exec(inIdling(raced, 'mkdir -p /workspace/here && cd /workspace/here'))).exitCode).toBe(0);
    const podName = (await sandboxOf(raced))!.metadata.name;
    const firstUid = (await podOf(podName))?.metadata?.uid;
    const kc = plane.cp.kubeConfig();
    const seen = new Recorded();
    let once = true;
    const racing = sessionKubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 }, metrics: seen,
      perCall: kubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 } }),
      beforeLease: async () => {
        if (!once) return;
        once = false;
        // The sweep suspends it now, and its Pod goes before the worker goes on.
        expect(await suspendIdle({ api: custom, log: sweepLog }, (await claimOf(raced)) as SweptClaim, (await sandboxOf(raced)) as SweptSandbox, later())).toBe(true);
        await waitFor(async () => ((await podOf(podName))?.metadata?.uid === firstUid ? undefined : true), { what: 'the suspended sandbox\'s Pod to go', timeoutMs: 30_000 });
      } });
    try {
      const r = await racing.exec(inIdling(raced, 'pwd'));
      expect(r).toMatchObject({ status: 'ok', exitCode: 0, output: '/workspace/here\n' });
      expect(once).toBe(false);
      expect(seen.claims).toEqual(['resumed']);
    } finally {
      await racing.close();
    }
  }, 120_000);

  it('a claim unused past its workspace TTL is deleted with its Sandbox', async () => {
    printLogs();
    const old = session();
    expect((await backend.exec(inSession(old, 'true', { workspace: { size: '1Gi', ttlSeconds: 3_600 } }))).exitCode).toBe(0);
    const name = (await sandboxOf(old))!.metadata.name;
    // Stamped as used two hours ago (past its 1 h TTL).
    await custom.patchNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', name: sessionClaimName(old),
      body: { metadata: { annotations: { [lastUsedAtAnnotation]: new Date(Date.now() - 7_200_000).toISOString() } } } }, merge);
    await waitFor(async () => (await claimOf(old) ? undefined : true), { what: 'the expired claim to be deleted', timeoutMs: 30_000 });
    await waitFor(async () => (await get(AGENTS, 'sandboxes', name) ? undefined : true), { what: 'its Sandbox to be deleted', timeoutMs: 30_000 });
  }, 120_000);

  it('a Profile whose sandbox namespace changes leaves no template or pool behind, nor once it is deleted', async () => {
    printLogs();
    const first = await plane.cp.createNamespace('pool-a');
    const second = await plane.cp.createNamespace('pool-b');
    const has = (namespace: string, plural: string) => custom.getNamespacedCustomObject({ ...EXT, namespace, plural, name: sessionPoolName('mover') })
      .then(() => true, (err: unknown) => { if ((err as { code?: number }).code === 404) return false; throw err; });
    const both = async (namespace: string) => [await has(namespace, 'sandboxtemplates'), await has(namespace, 'sandboxwarmpools')];
    const mover = (namespace: string) => profile('mover', { mode: 'session', namespace, warmPool: { size: 0 } });
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], mover(first));
    // Another namespace takes the sandboxes of this one only once a cluster admin labels it so: until then nothing is written there.
    const refused = await waitForCondition(plane.cp.kubeConfig(), 'profiles', ns, 'mover', { type: 'SandboxPool', status: 'False', reason: 'SandboxNamespaceNotAllowed' });
    expect(conditionOf(refused, 'Ready')).toMatchObject({ status: 'False', reason: 'SandboxNamespaceNotAllowed' });
    expect(conditionOf(refused, 'SandboxPool')?.message).toContain(`kubectl label namespace ${first} hermes.dev/sandbox-namespace=true`);
    expect(await both(first)).toEqual([false, false]);
    for (const target of [first, second]) await kubectlOk(plane.cp, ['label', 'namespace', target, 'hermes.dev/sandbox-namespace=true']);
    // Namespaces are not watched: the refused Profile looks again every 15 s.
    await waitFor(async () => ((await both(first)).every(Boolean) ? true : undefined), { what: `the template and pool in ${first}`, timeoutMs: 45_000 });
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], mover(second));
    await waitFor(async () => ((await both(second)).every(Boolean) ? true : undefined), { what: `the template and pool in ${second}`, timeoutMs: 30_000 });
    await waitFor(async () => ((await both(first)).some(Boolean) ? undefined : true), { what: `the template and pool in ${first} to be deleted`, timeoutMs: 30_000 });
    // In another namespace than the Profile's, no owner reference takes them with it: the operator must.
    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'profiles.hermes.dev', 'mover']);
    await waitFor(async () => ((await both(second)).some(Boolean) ? undefined : true), { what: `the template and pool in ${second} to be deleted`, timeoutMs: 30_000 });
  }, 120_000);

  it('a Profile that leaves mode session has its template and pool deleted', async () => {
    printLogs();
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], profile('coder', { mode: 'call' }));
    await waitFor(async () => (await get(EXT, 'sandboxwarmpools', sessionPoolName('coder')) ? undefined : true), { what: 'the warm pool to be deleted', timeoutMs: 30_000 });
    // The operator deletes the pool, then lists and deletes the template (session-pool-cleanup.ts).
    await waitFor(async () => (await get(EXT, 'sandboxtemplates', sessionPoolName('coder')) ? undefined : true), { what: 'the template to be deleted', timeoutMs: 30_000 });
    await waitForCondition(plane.cp.kubeConfig(), 'profiles', ns, 'coder', { type: 'SandboxPool', status: 'True', reason: 'NotUsed' });
  }, 60_000);
});

describe('mode session without agent-sandbox installed', () => {
  let plane: Plane;
  let kubelet: TestKubelet;
  beforeAll(async () => {
    plane = await startPlane();
    kubelet = await startKubelet(plane.cp);
    // Hygiene off: it would delete the per-call Pods of this test's made-up admissions (not in Postgres).
    await plane.start({ sandbox: false });
  }, 120_000);
  afterAll(async () => {
    await kubelet?.stop();
    await plane?.stop();
  }, 60_000);

  it('the Profile and Agent say agent-sandbox is missing, and commands run in a Pod per call', async () => {
    const ns = await plane.cp.createNamespace('nosession');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'openai', '--from-literal=OPENAI_API_KEY=sk']);
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], `${profile('coder', { mode: 'session' })}---\n${agent('coder', 'coder')}`);
    const p = await waitForCondition(plane.cp.kubeConfig(), 'profiles', ns, 'coder', { type: 'SandboxPool', status: 'False', reason: 'AgentSandboxMissing' });
    expect(conditionOf(p, 'SandboxPool')?.message).toContain('one Pod per call');
    const a = await waitForCondition(plane.cp.kubeConfig(), 'agents', ns, 'coder', { type: 'SandboxReady', status: 'False' });
    expect(conditionOf(a, 'SandboxReady')?.message).toContain('agent-sandbox');

    const kc = plane.cp.kubeConfig();
    const missing: string[] = [];
    const backend = sessionKubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 },
      perCall: kubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', pollMs: 200 } }), onMissing: (n) => missing.push(n) });
    const core = kc.makeApiClient(CoreV1Api);
    const s = testSession(ns, 'coder', randomUUID());
    const seenPods = new Set<string>();
    const watching = setInterval(() => {
      void core.listNamespacedPod({ namespace: ns, labelSelector: `${componentLabel}=${sandboxComponent}` }).then((l) => { for (const pod of l.items) seenPods.add(pod.metadata?.name ?? ''); }, () => undefined);
    }, 100);
    try {
      const r = await backend.exec(execRequest(s, 'echo per-call', { pod: { session: { profile: 'coder', idleSeconds: 60 } } }));
      expect(r).toMatchObject({ status: 'ok', exitCode: 0, output: 'per-call\n' });
      expect(missing).toEqual([ns]);
      // A per-call sandbox Pod ran it (deleted when the call ended).
      const again = await backend.exec(execRequest(s, 'sleep 1; echo again', { pod: { session: { profile: 'coder', idleSeconds: 60 } } }));
      expect(again.output).toBe('again\n');
      expect(seenPods.size).toBeGreaterThan(0);
    } finally {
      clearInterval(watching);
      await backend.close();
    }
  }, 120_000);
});
