// The operator's watched caches survive a path to the apiserver that goes silent without closing
// (a vanished load balancer or node): the watch is restarted on its timeout however quiet it is,
// and the cache sees what changed meanwhile. Real kube-apiserver behind a TCP proxy whose
// `strand()` leaves every open connection half-open for good.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { createLogger } from '../../../services/core/index.js';
import { WatchedCache } from '../../../operator/runtime/informer.js';
import { kubeConfigVia, startControlPlane, type ControlPlane } from '../../support/kube/index.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { eventually } from '../../support/services.js';

let cp: ControlPlane;
let proxy: TcpProxy;
let ns: string;
const caches: WatchedCache<V1ConfigMap>[] = [];

beforeAll(async () => {
  cp = await startControlPlane();
  ns = await cp.createNamespace('silence');
  proxy = await startTcpProxy({ port: Number(new URL(cp.server).port) });
}, 120_000);
afterAll(async () => {
  for (const c of caches) await c.stop();
  await proxy?.close();
  await cp?.stop();
});

function configMapCache(watchTimeoutMs: number, direct = false): WatchedCache<V1ConfigMap> {
  const kc = direct ? cp.kubeConfig() : kubeConfigVia(cp.kubeConfig(), proxy.port);
  const core = kc.makeApiClient(CoreV1Api);
  const cache = new WatchedCache<V1ConfigMap>({
    kc, path: `/api/v1/namespaces/${ns}/configmaps`, list: () => core.listNamespacedConfigMap({ namespace: ns }),
    onChange: () => undefined, log: createLogger('test', 'silent'), what: 'configmaps', resyncMs: 0, watchTimeoutMs,
  });
  caches.push(cache);
  return cache;
}

describe('a watched cache on a silent path', () => {
  it('restarts its quiet watch and sees what changed while the old one heard nothing; without the timeout it stays stale', async () => {
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const renewing = configMapCache(1_000);
    const forever = configMapCache(0);
    await renewing.start();
    await forever.start();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'before' }, data: { a: '1' } } });
    await eventually(() => renewing.get('before', ns) && forever.get('before', ns), 'both caches seeing the first ConfigMap');
    proxy.strand();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after' }, data: { b: '2' } } });
    const renewals = renewing.renewals;
    await eventually(() => renewing.get('after', ns), 'the renewing cache seeing the ConfigMap created after the strand', 30_000);
    expect(renewing.renewals).toBeGreaterThan(renewals);
    // The same silence with no watch timeout: still stale after the other one caught up.
    expect(forever.get('after', ns)).toBeUndefined();
    expect(forever.renewals).toBe(0);
  }, 60_000);
});

describe('a watched cache on a healthy path', () => {
  // The renewal stops the old watch, whose abort the informer reports as an error: counted as a
  // broken watch, it restarted the new one, whose abort did the same, every 30 s for good — the
  // operator's log said 'Watch broke' for every resource and /readyz (hasSynced) stayed false.
  it('renews its watch on the timeout without counting it as broken: still synced, still seeing changes', async () => {
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const cache = configMapCache(300, true);
    await cache.start();
    expect(cache.hasSynced()).toBe(true);
    await eventually(() => cache.renewals >= 3, 'three renewals of the watch', 15_000);
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'healthy' }, data: { c: '3' } } });
    await eventually(() => cache.get('healthy', ns), 'the cache seeing a ConfigMap created after the renewals');
    await eventually(() => cache.renewals >= 5, 'two more renewals', 15_000);
    expect(cache.restarts).toBe(0);
    expect(cache.hasSynced()).toBe(true);
  }, 60_000);
});
