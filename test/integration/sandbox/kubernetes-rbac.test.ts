// The backend runs as a ServiceAccount granted exactly sandboxNamespacedRules (a Role in the
// sandbox namespace) and sandboxClusterRules (a ClusterRole): the RBAC the Helm chart must give
// the workers is enough, and the real authorizer refuses anything beyond it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import {
  AGENT_SANDBOX_VERSION, agentSandboxPlural, defaultKubernetesSandboxSettings, EXTENSIONS_GROUP, kubernetesSandbox, sandboxClusterRules,
  sandboxNamespaceProblems, sandboxNamespacedRules, sessionKubernetesSandbox, sessionTemplate, sessionWarmPool, type SessionSandboxMetrics,
} from '../../../services/sandbox/index.js';
import { startAgentSandboxController, startControlPlane, startKubelet, waitFor, type ControlPlane, type TestKubelet } from '../../support/kube/index.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';

describe('kubernetes sandbox backend as a least-privilege worker', () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;

  beforeAll(async () => {
    cp = await startControlPlane();
    kubelet = await startKubelet(cp);
  });

  afterAll(async () => {
    await kubelet?.stop();
    await cp?.stop();
  });

  it('runs calls with only the documented rules, and may do nothing else', async () => {
    const ns = await cp.createNamespace('rbac');
    const workerNs = await cp.createNamespace('hermes');
    const rbac = cp.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const subject = { kind: 'ServiceAccount', name: 'worker', namespace: workerNs };
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'hermes-sandbox-worker' }, rules: [...sandboxNamespacedRules] } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'worker' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'hermes-sandbox-worker' }, subjects: [subject] } });
    await rbac.createClusterRole({ body: { metadata: { name: `hermes-sandbox-nodes-${ns}` }, rules: [...sandboxClusterRules] } });
    await rbac.createClusterRoleBinding({ body: { metadata: { name: `worker-${ns}` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `hermes-sandbox-nodes-${ns}` }, subjects: [subject] } });
    const minted = await cp.mintServiceAccountKubeconfig(workerNs, 'worker');
    const sandbox = kubernetesSandbox({ kubeConfig: minted.kubeConfig, settings: { image: 'test/sandbox:1', pollMs: 300 } });
    const session = testSession(ns);
    // RoleBindings reach the authorizer's cache after a moment: the first allowed call is polled.
    const first = await waitFor(async () => {
      const r = await sandbox.exec(execRequest(session, 'echo hi > /workspace/f; cat /workspace/f', { network: { egress: 'allowlist', allow: ['203.0.113.0/24:443'] } }));
      return r.status === 'ok' ? r : undefined;
    }, { what: 'a call to be allowed', timeoutMs: 20_000 });
    expect(first.output).toBe('hi\n');
    // The second call patches the workspace, reads the pinned Node, passes stdin.
    const second = await sandbox.exec(execRequest(session, 'cat; cat /workspace/f', { stdin: 'in\n' }));
    expect(second).toMatchObject({ status: 'ok', exitCode: 0, output: 'in\nhi\n' });
    await sandbox.close();
    // Nothing beyond: no Secrets, no Pod listing, nothing in another namespace.
    const asWorker = minted.kubeConfig.makeApiClient(CoreV1Api);
    await expect(asWorker.readNamespacedSecret({ name: 'x', namespace: ns })).rejects.toMatchObject({ code: 403 });
    await expect(asWorker.listNamespacedPod({ namespace: ns })).rejects.toMatchObject({ code: 403 });
    await expect(asWorker.createNamespacedPod({ namespace: workerNs, body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i' }] } } })).rejects.toMatchObject({ code: 403 });
  });

  it('runs a mode-session command with only the documented rules: the claim created and watched, the Sandbox leased, the exec', async () => {
    const controller = await startAgentSandboxController(cp);
    try {
      const ns = await cp.createNamespace('rbac-session');
      const workerNs = await cp.createNamespace('hermes');
      const rbac = cp.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'hermes-sandbox-worker' }, rules: [...sandboxNamespacedRules] } });
      await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'worker' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'hermes-sandbox-worker' }, subjects: [{ kind: 'ServiceAccount', name: 'worker', namespace: workerNs }] } });
      // A pool of none, as the operator writes it: every claim cold-starts a Sandbox.
      const settings = { ...defaultKubernetesSandboxSettings, image: 'test/sandbox:1' };
      const input = { profile: 'coder', profileNamespace: ns, namespace: ns, settings, sandbox: {
        backend: 'kubernetes' as const, mode: 'session' as const, image: 'test/sandbox:1', timeoutSeconds: 60,
        workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none' as const, allow: [] }, warmPool: { size: 0 },
      } };
      const custom = cp.kubeConfig().makeApiClient(CustomObjectsApi);
      for (const [plural, body] of [[agentSandboxPlural.templates, sessionTemplate(input)], [agentSandboxPlural.warmPools, sessionWarmPool(input)]] as const) {
        await custom.createNamespacedCustomObject({ group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace: ns, plural, body });
      }
      const minted = await cp.mintServiceAccountKubeconfig(workerNs, 'worker');
      const launches: string[] = [];
      const metrics: SessionSandboxMetrics = { claimSeconds: (launch) => { launches.push(launch); }, poolClaim: () => undefined };
      // No re-read of the claim within this test: only its watch (verb `watch`) can end the wait.
      const backend = sessionKubernetesSandbox({
        kubeConfig: minted.kubeConfig, settings: { image: 'test/sandbox:1', pollMs: 300, startTimeoutMs: 120_000 }, claimRereadMs: 600_000, metrics,
        perCall: kubernetesSandbox({ kubeConfig: minted.kubeConfig, settings: { image: 'test/sandbox:1', pollMs: 300 } }),
      });
      try {
        const request = { pod: { session: { profile: 'coder', idleSeconds: 3_600 } } };
        // RoleBindings reach the authorizer's cache after a moment: the first allowed call is polled.
        const first = await waitFor(async () => {
          const r = await backend.exec(execRequest(testSession(ns), 'echo hi > /workspace/f; cat /workspace/f', request));
          return r.status === 'ok' ? r : undefined;
        }, { what: 'a session command to be allowed', timeoutMs: 40_000 });
        expect(first.output).toBe('hi\n');
        expect(launches).toContain('cold');
        expect(controller.forbidden()).toEqual([]);
      } finally {
        await backend.close();
      }
    } finally {
      await controller.stop();
    }
  }, 90_000);

  it('answers degraded when the ServiceAccount is missing and the worker may not create it; readiness says so', async () => {
    const ns = await cp.createNamespace('nosa');
    const workerNs = await cp.createNamespace('hermes');
    const rbac = cp.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const rules = sandboxNamespacedRules.map((r) => (r.resources?.includes('serviceaccounts') ? { ...r, verbs: ['get'] } : r));
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'no-sa-create' }, rules } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'worker' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-sa-create' }, subjects: [{ kind: 'ServiceAccount', name: 'worker', namespace: workerNs }] } });
    const minted = await cp.mintServiceAccountKubeconfig(workerNs, 'worker');
    const sandbox = kubernetesSandbox({ kubeConfig: minted.kubeConfig, settings: { image: 'test/sandbox:1' } });
    const result = await waitFor(async () => {
      const r = await sandbox.exec(execRequest(testSession(ns), 'true'));
      return r.reason?.includes('creating the missing sandbox ServiceAccount') ? r : undefined;
    }, { what: 'the ServiceAccount create to be refused (not the read)', timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1 });
    expect(result.reason).toMatch(/The cluster refused creating the missing sandbox ServiceAccount .*\(403\)/);
    const admin = cp.kubeConfig().makeApiClient(CoreV1Api);
    const problems = await sandboxNamespaceProblems(admin, ns);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('does not enforce Pod Security "restricted"');
    expect(problems[1]).toContain(`ServiceAccount ${ns}/hermes-sandbox is missing`);
    await admin.patchNamespace({ name: ns, body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await admin.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'hermes-sandbox' }, automountServiceAccountToken: false } });
    expect(await sandboxNamespaceProblems(admin, ns)).toEqual([]);
  });
});
