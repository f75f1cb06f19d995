// Must precede @kubernetes/client-node: it does not load on Node 20 without these patches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, makeInformer, type V1ConfigMap } from '@kubernetes/client-node';
import { startControlPlane, waitFor, type ControlPlane } from '../../support/kube/index.js';

interface Seen { verb: 'add' | 'update' | 'delete'; name: string; value?: string }

describe('client-node informer against a real kube-apiserver', () => {
  let cp: ControlPlane;

  beforeAll(async () => {
    cp = await startControlPlane();
  });

  afterAll(async () => {
    await cp?.stop();
  });

  it('sees add/update/delete, and after the apiserver restarts it relists and sees what changed meanwhile', async () => {
    const ns = await cp.createNamespace('informer');
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const cm = (name: string, value: string): V1ConfigMap => ({ metadata: { name }, data: { value } });
    let lists = 0;
    const informer = makeInformer<V1ConfigMap>(cp.kubeConfig(), `/api/v1/namespaces/${ns}/configmaps`, () => {
      lists++;
      return core.listNamespacedConfigMap({ namespace: ns });
    });
    const seen: Seen[] = [];
    const record = (verb: Seen['verb']) => (obj: V1ConfigMap) => seen.push({ verb, name: obj.metadata?.name ?? '', value: obj.data?.value });
    informer.on('add', record('add'));
    informer.on('update', record('update'));
    informer.on('delete', record('delete'));
    let errors = 0;
    informer.on('error', () => { errors++; });
    const saw = (verb: Seen['verb'], name: string, value?: string) => () =>
      seen.some((s) => s.verb === verb && s.name === name && (value === undefined || s.value === value));

    await informer.start();
    try {
      await core.createNamespacedConfigMap({ namespace: ns, body: cm('a', '1') });
      await core.createNamespacedConfigMap({ namespace: ns, body: cm('b', '1') });
      await waitFor(saw('add', 'a', '1'), { what: 'add of a' });
      await waitFor(saw('add', 'b', '1'), { what: 'add of b' });
      await core.replaceNamespacedConfigMap({ name: 'a', namespace: ns, body: cm('a', '2') });
      await waitFor(saw('update', 'a', '2'), { what: 'update of a' });
      await core.deleteNamespacedConfigMap({ name: 'b', namespace: ns });
      await waitFor(saw('delete', 'b'), { what: 'delete of b' });
      await core.createNamespacedConfigMap({ namespace: ns, body: cm('d', '1') });
      await waitFor(saw('add', 'd', '1'), { what: 'add of d' });
      const listsBefore = lists;

      // Break the watch: the apiserver goes away; the informer reports an error and stops.
      await cp.stopApiServer();
      await waitFor(() => errors > 0, { what: 'the informer to report the broken watch', timeoutMs: 60_000 });
      await cp.startApiServer();
      // Changed while nobody watched.
      await core.replaceNamespacedConfigMap({ name: 'a', namespace: ns, body: cm('a', '3') });
      await core.deleteNamespacedConfigMap({ name: 'd', namespace: ns });
      await core.createNamespacedConfigMap({ namespace: ns, body: cm('c', '1') });

      await informer.start();
      await waitFor(saw('update', 'a', '3'), { what: 'update of a made while disconnected', timeoutMs: 60_000 });
      await waitFor(saw('delete', 'd'), { what: 'delete of d made while disconnected' });
      await waitFor(saw('add', 'c', '1'), { what: 'add of c made while disconnected' });
      // The restarted apiserver's watch cache starts after our resourceVersion: 410 Gone, then a relist.
      expect(lists).toBeGreaterThan(listsBefore);
      const cached = informer.list(ns).map((o) => `${o.metadata?.name}=${o.data?.value}`).sort();
      expect(cached).toEqual(['a=3', 'c=1']);
    } finally {
      await informer.stop();
    }
  });
});
