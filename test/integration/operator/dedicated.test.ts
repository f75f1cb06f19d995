// runtime: dedicated — the Agent's own gateway and worker Deployments, Service and ServiceAccount,
// owned by the Agent, secure by default, drift corrected, removed when switching back to shared.
import { AppsV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { loadConfig } from '../../../services/core/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { waitFor } from '../../support/kube/index.js';
import { conditionOf, getObject, kubectlOk, startPlane, waitForCondition, type Plane } from './harness.js';

describe('runtime: dedicated', () => {
  let plane: Plane;
  beforeAll(async () => {
    plane = await startPlane();
    await plane.start({ runtime: { image: 'registry.example/hermes:test', envSecret: 'hermes-runtime' } });
  });
  afterAll(async () => { await plane?.stop(); });

  it('applies owned, hardened Deployments, Service and ServiceAccount; corrects drift; deletes them when switched to shared', async () => {
    const kc = plane.cp.kubeConfig();
    const ns = await plane.cp.createNamespace('dedicated');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=k=v']);
    const manifest = (mode: string) => [
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } } } },
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'solo' }, spec: { profileRef: { name: 'p' }, runtime: { mode } } },
    ].map((o) => stringify(o)).join('---\n');
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifest('dedicated'));
    const agent = await waitForCondition(kc, 'agents', ns, 'solo', { type: 'Ready', status: 'True' });
    expect(agent.status?.url).toBe(`http://hermes-solo.${ns}.svc:8080/v1/agents/${ns}/solo/messages`);
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const uid = (JSON.parse(await kubectlOk(plane.cp, ['-n', ns, 'get', 'agents.hermes.dev', 'solo', '-o', 'json'])) as { metadata: { uid: string } }).metadata.uid;
    for (const part of ['gateway', 'worker']) {
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: `hermes-solo-${part}` });
      expect(d.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Agent', name: 'solo', uid, controller: true })]);
      const c = d.spec!.template.spec!.containers[0]!;
      expect(c.image).toBe('registry.example/hermes:test');
      expect(c.command).toEqual(['node', 'bin/hermes.js', part]);
      expect(c.securityContext).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });
      expect(d.spec!.template.spec!.serviceAccountName).toBe('hermes-solo');
      // Only the worker gets a token: it reads its Profile's Secrets from the API (HERMES_SECRETS_SOURCE=kubernetes).
      expect(d.spec!.template.spec!.automountServiceAccountToken).toBe(part === 'worker');
      // Both answer probes on their http port (gateway 8080, worker 8081: HERMES_WORKER_PORT's default).
      expect(c.ports).toEqual([{ name: 'http', containerPort: part === 'gateway' ? 8080 : 8081, protocol: 'TCP' }]);
      expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
      expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
      // What the pod sets must start the process: every HERMES_* name is a known setting.
      const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? '']));
      expect(() => loadConfig({ ...env, DATABASE_URL: 'postgres://db/hermes', REDIS_URL: 'redis://redis:6379' })).not.toThrow();
    }
    const svc = await core.readNamespacedService({ namespace: ns, name: 'hermes-solo' });
    expect(svc.spec?.selector).toEqual({ 'hermes.dev/agent': 'solo', 'app.kubernetes.io/component': 'gateway' });
    expect((await core.readNamespacedServiceAccount({ namespace: ns, name: 'hermes-solo' })).metadata?.ownerReferences?.[0]?.name).toBe('solo');
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const binding = await rbac.readNamespacedRoleBinding({ namespace: ns, name: 'hermes-solo-secrets' });
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'hermes-worker' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'hermes-solo', namespace: ns }]);
    expect(binding.metadata?.ownerReferences?.[0]?.name).toBe('solo');

    // Drift: someone scales the worker to 0 and swaps the image; the operator puts them back.
    await kubectlOk(plane.cp, ['-n', ns, 'patch', 'deployment', 'hermes-solo-worker', '--type=merge', '-p',
      '{"spec":{"replicas":0,"template":{"spec":{"containers":[{"name":"worker","image":"evil:latest"}]}}}}']);
    await waitFor(async () => {
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'hermes-solo-worker' });
      return d.spec?.replicas === 1 && d.spec.template.spec!.containers[0]!.image === 'registry.example/hermes:test';
    }, { what: 'the drift to be corrected' });

    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifest('shared'));
    await waitFor(async () => (await apps.listNamespacedDeployment({ namespace: ns })).items.length === 0, { what: 'the dedicated Deployments to be deleted' });
    await waitFor(async () => (await core.listNamespacedService({ namespace: ns })).items.length === 0, { what: 'the Service to be deleted' });
    await waitFor(async () => (await rbac.listNamespacedRoleBinding({ namespace: ns })).items.length === 0, { what: 'the RoleBinding to be deleted' });
    // Ready was already True while dedicated: wait for the status of the shared runtime itself.
    const sharedUrl = `http://gateway.test:8080/v1/agents/${ns}/solo/messages`;
    const shared = await waitFor(async () => {
      const o = await getObject(kc, 'agents', ns, 'solo');
      return o?.status?.url === sharedUrl ? o : undefined;
    }, { what: 'the Agent status to show the shared gateway URL' });
    expect(conditionOf(shared, 'Ready')?.status).toBe('True');
  });

  it('gives Agents with long names children of their own: gateway, worker and Service apart, two Agents with a common prefix apart', async () => {
    const kc = plane.cp.kubeConfig();
    const ns = await plane.cp.createNamespace('longnames');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=k=v']);
    // hermes-<name>-gateway cut to 63 was hermes-<name>, the worker's and the Service's name too.
    const names = [`long-${'x'.repeat(51)}`, `long-${'x'.repeat(51)}-two`];
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], [
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } } } },
      ...names.map((name) => ({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name }, spec: { profileRef: { name: 'p' }, runtime: { mode: 'dedicated' } } })),
    ].map((o) => stringify(o)).join('---\n'));
    for (const name of names) await waitForCondition(kc, 'agents', ns, name, { type: 'Ready', status: 'True' });
    const apps = kc.makeApiClient(AppsV1Api);
    const deployments = (await apps.listNamespacedDeployment({ namespace: ns })).items;
    expect(deployments).toHaveLength(4);
    for (const name of names) {
      for (const part of ['gateway', 'worker']) {
        const mine = deployments.filter((d) => d.metadata?.ownerReferences?.[0]?.name === name && d.spec?.selector.matchLabels?.['app.kubernetes.io/component'] === part);
        expect(mine).toHaveLength(1);
        expect(mine[0]!.metadata!.name!.length).toBeLessThanOrEqual(63);
      }
    }
    const services = (await kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace: ns })).items;
    expect(services.map((x) => x.spec?.selector?.['hermes.dev/agent']).sort()).toEqual([...names].sort());
    expect(new Set(deployments.map((d) => d.metadata!.name)).size).toBe(4);
  });

  it('says in one line why the runtime could not be applied', async () => {
    const kc = plane.cp.kubeConfig();
    const ns = await plane.cp.createNamespace('clash');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=k=v']);
    // A Deployment of that name already exists with another selector (immutable): the apply is refused.
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'deployment', 'hermes-clash-worker', '--image=unused']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], [
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } } } },
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'clash' }, spec: { profileRef: { name: 'p' }, runtime: { mode: 'dedicated' } } },
    ].map((o) => stringify(o)).join('---\n'));
    const agent = await waitForCondition(kc, 'agents', ns, 'clash', { type: 'Ready', status: 'False', reason: 'PublishFailed' });
    const message = conditionOf(agent, 'Ready')!.message;
    expect(message).toMatch(/^Could not publish the revision to Postgres or apply the runtime: the kube-apiserver answered 422 \(Invalid\): Deployment\.apps "hermes-clash-worker" is invalid: spec\.selector/);
    expect(message).not.toMatch(/\n|Headers|audit-id|HTTP-Code/);
  });

  it('leaves the children to the garbage collector when the Agent goes, and never recreates them', async () => {
    const kc = plane.cp.kubeConfig();
    const ns = await plane.cp.createNamespace('dedicated-gone');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=k=v']);
    const manifest = (name: string) => [
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } } } },
      { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name }, spec: { profileRef: { name: 'p' }, runtime: { mode: 'dedicated' } } },
    ].map((o) => stringify(o)).join('---\n');
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifest('gone'));
    await waitForCondition(kc, 'agents', ns, 'gone', { type: 'Ready', status: 'True' });
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const children = async () => ({
      deployments: (await apps.listNamespacedDeployment({ namespace: ns })).items.filter((d) => d.metadata?.name?.startsWith('hermes-gone-')).length,
      services: (await core.listNamespacedService({ namespace: ns })).items.filter((x) => x.metadata?.name === 'hermes-gone').length,
      accounts: (await core.listNamespacedServiceAccount({ namespace: ns })).items.filter((x) => x.metadata?.name === 'hermes-gone').length,
    });
    expect(await children()).toEqual({ deployments: 2, services: 1, accounts: 1 });

    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'agents.hermes.dev', 'gone', '--wait=true', '--timeout=60s']);
    // There is no garbage collector in this control plane: delete the owned children as it would.
    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'deployment', 'hermes-gone-gateway', 'hermes-gone-worker']);
    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'service', 'hermes-gone']);
    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'serviceaccount', 'hermes-gone']);
    // A later Agent reconciled to Ready proves the operator kept working after the deletion.
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifest('after'));
    await waitForCondition(kc, 'agents', ns, 'after', { type: 'Ready', status: 'True' });
    expect(await children()).toEqual({ deployments: 0, services: 0, accounts: 0 });
  });
});
