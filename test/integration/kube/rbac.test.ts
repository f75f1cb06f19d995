// Must precede @kubernetes/client-node: it does not load on Node 20 without these patches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import {
  startControlPlane, waitFor, type ControlPlane, type MintedKubeconfig,
} from '../../support/kube/index.js';

describe('ServiceAccount kubeconfigs under real RBAC', () => {
  let cp: ControlPlane;
  let ns: string;
  let other: string;
  let reader: MintedKubeconfig;

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace('rbac');
    other = await cp.createNamespace('rbac-other');
    const admin = cp.kubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings' }, data: { a: '1' } } });
    await core.createNamespacedConfigMap({ namespace: other, body: { metadata: { name: 'settings' }, data: { a: '1' } } });
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'creds' }, stringData: { p: 'x' } } });
    reader = await cp.mintServiceAccountKubeconfig(ns, 'reader');
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns, body: {
      metadata: { name: 'configmap-reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
    } });
  });

  afterAll(async () => {
    await cp?.stop();
  });

  it('authenticates with the minted token as the ServiceAccount', async () => {
    const whoami = await cp.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], { kubeconfig: reader.path });
    expect(whoami.stdout).toBe(`system:serviceaccount:${ns}:reader`);
    expect(reader.username).toBe(whoami.stdout);
  });

  it('allows what the Role grants', async () => {
    const core = reader.kubeConfig.makeApiClient(CoreV1Api);
    // The RBAC authorizer reads bindings from an informer: allow a moment for it to see ours.
    const list = await waitFor(() => core.listNamespacedConfigMap({ namespace: ns }), { what: 'the RoleBinding to take effect' });
    expect(list.items.map((c) => c.metadata?.name)).toContain('settings');
    const got = await core.readNamespacedConfigMap({ name: 'settings', namespace: ns });
    expect(got.data).toEqual({ a: '1' });
  });

  it('forbids (403) what the Role does not grant', async () => {
    const core = reader.kubeConfig.makeApiClient(CoreV1Api);
    await waitFor(() => core.listNamespacedConfigMap({ namespace: ns }), { what: 'the RoleBinding to take effect' });
    await expect(core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'new' } } })).rejects.toMatchObject({ code: 403 });
    await expect(core.readNamespacedSecret({ name: 'creds', namespace: ns })).rejects.toMatchObject({ code: 403 });
    await expect(core.listNamespacedConfigMap({ namespace: other })).rejects.toMatchObject({ code: 403 });
    await expect(core.listNamespace()).rejects.toMatchObject({ code: 403 });
  });

  it('gives kubectl the same answers', async () => {
    const as = { kubeconfig: reader.path };
    const canList = await cp.kubectl(['auth', 'can-i', 'list', 'configmaps', '-n', ns], as);
    expect(canList.stdout.trim()).toBe('yes');
    const canCreate = await cp.kubectl(['auth', 'can-i', 'create', 'configmaps', '-n', ns], as);
    expect(canCreate.stdout.trim()).toBe('no');
    const secrets = await cp.kubectl(['get', 'secrets', '-n', ns], as);
    expect(secrets.code).not.toBe(0);
    expect(secrets.stderr).toContain('Forbidden');
    expect(secrets.stderr).toContain(`system:serviceaccount:${ns}:reader`);
  });
});
