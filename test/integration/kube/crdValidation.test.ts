// Must precede @kubernetes/client-node: it does not load on Node 20 without these patches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../../support/kube/index.js';

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.hermes.dev
spec:
  group: test.hermes.dev
  scope: Namespaced
  names: { plural: widgets, singular: widget, kind: Widget }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [replicas, maxReplicas]
              properties:
                replicas: { type: integer, minimum: 0 }
                maxReplicas: { type: integer, minimum: 0 }
              x-kubernetes-validations:
                - rule: self.replicas <= self.maxReplicas
                  message: replicas must not exceed maxReplicas
`;

const widget = (name: string, replicas: number, maxReplicas: number): string => `
apiVersion: test.hermes.dev/v1
kind: Widget
metadata: { name: ${name} }
spec: { replicas: ${replicas}, maxReplicas: ${maxReplicas} }
`;

describe('CRD with a CEL rule on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let ns: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace('crd');
    const applied = await cp.kubectl(['apply', '-f', '-'], { input: CRD });
    expect(applied.stderr).toBe('');
    const established = await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/widgets.test.hermes.dev']);
    expect(established.code, established.stderr).toBe(0);
  });

  afterAll(async () => {
    await cp?.stop();
  });

  it('accepts an object that satisfies the rule', async () => {
    const res = await cp.kubectl(['apply', '-n', ns, '-f', '-'], { input: widget('ok', 1, 3) });
    expect(res.code, res.stderr).toBe(0);
    const got = await cp.kubectl(['get', '-n', ns, 'widget', 'ok', '-o', 'jsonpath={.spec.replicas}/{.spec.maxReplicas}']);
    expect(got.stdout).toBe('1/3');
  });

  it('refuses, through kubectl, an object that passes the schema but breaks the CEL rule', async () => {
    const res = await cp.kubectl(['apply', '-n', ns, '-f', '-'], { input: widget('too-many', 5, 2) });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('replicas must not exceed maxReplicas');
    const got = await cp.kubectl(['get', '-n', ns, 'widget', 'too-many']);
    expect(got.stderr).toContain('NotFound');
  });

  it('refuses the same object through client-node with a 422 carrying the CEL message', async () => {
    const api = cp.kubeConfig().makeApiClient(CustomObjectsApi);
    const create = api.createNamespacedCustomObject({
      group: 'test.hermes.dev', version: 'v1', namespace: ns, plural: 'widgets',
      body: { apiVersion: 'test.hermes.dev/v1', kind: 'Widget', metadata: { name: 'too-many-2' }, spec: { replicas: 9, maxReplicas: 1 } },
    });
    await expect(create).rejects.toMatchObject({ code: 422 });
    await expect(create).rejects.toThrow(/replicas must not exceed maxReplicas/);
  });

  it('refuses an update that breaks the rule on an existing object', async () => {
    await cp.kubectl(['apply', '-n', ns, '-f', '-'], { input: widget('grow', 1, 1) });
    const res = await cp.kubectl(['patch', '-n', ns, 'widget', 'grow', '--type=merge', '-p', '{"spec":{"replicas":2}}']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('replicas must not exceed maxReplicas');
  });
});
