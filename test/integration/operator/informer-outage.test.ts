// The operator's watched caches while the kube-apiserver is down: each watch is retried with a
// growing backoff. The informer reports the refused connection to its error handler and still
// resolves start(), which counted as a good start and reset the backoff — every watch restarted
// every 200 ms and logged "Watch broke" each time (≈ 50 warnings a second for the operator's ten
// caches) for as long as the apiserver was away. And a cache stayed synced (so the operator's /readyz
// answered 200) however long its watch was broken. Real kube-apiserver behind a TCP proxy.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from '../../../services/core/index.js';
import { WatchedCache } from '../../../operator/runtime/informer.js';
import { kubeConfigVia, startControlPlane, type ControlPlane } from '../../support/kube/index.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { eventually } from '../../support/services.js';

let cp: ControlPlane;
let proxy: TcpProxy;
let cache: WatchedCache<V1ConfigMap> | undefined;

beforeAll(async () => {
  cp = await startControlPlane();
  proxy = await startTcpProxy({ port: Number(new URL(cp.server).port) });
}, 120_000);
afterAll(async () => {
  await cache?.stop();
  await proxy?.close().catch(() => undefined);
  await cp?.stop();
});

describe('a watched cache while the apiserver cannot be reached', () => {
  it('is not synced from a broken watch until it watches again', async () => {
    const path = await startTcpProxy({ port: Number(new URL(cp.server).port) });
    const kc = kubeConfigVia(cp.kubeConfig(), path.port);
    const core = kc.makeApiClient(CoreV1Api);
    const c = new WatchedCache<V1ConfigMap>({
      kc, path: '/api/v1/namespaces/default/configmaps', list: () => core.listNamespacedConfigMap({ namespace: 'default' }),
      onChange: () => undefined, log: pino({ level: 'silent' }) as unknown as Logger, what: 'configmaps', resyncMs: 0, watchTimeoutMs: 0,
    });
    try {
      await c.start();
      expect(c.hasSynced()).toBe(true);
      path.mode = 'reset'; // the open watch is cut and every new connection refused
      await eventually(() => !c.hasSynced(), 'the cache unsynced while its watch is broken', 20_000);
      path.mode = 'forward';
      await eventually(() => c.hasSynced(), 'the cache synced again once it watches', 20_000);
    } finally {
      await c.stop();
      await path.close();
    }
  }, 60_000);

  it('retries its watch with a growing backoff, not every 200 ms', async () => {
    const kc = kubeConfigVia(cp.kubeConfig(), proxy.port);
    const retries: number[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) {
          const l = JSON.parse(line) as { msg: string; retryMs?: number };
          if (l.msg === 'Watch broke; relisting after backoff' && l.retryMs !== undefined) retries.push(l.retryMs);
        }
        done();
      },
    });
    const core = kc.makeApiClient(CoreV1Api);
    cache = new WatchedCache<V1ConfigMap>({
      kc, path: '/api/v1/namespaces/default/configmaps', list: () => core.listNamespacedConfigMap({ namespace: 'default' }),
      onChange: () => undefined, log: pino({ level: 'warn' }, sink) as unknown as Logger, what: 'configmaps', resyncMs: 0, watchTimeoutMs: 0,
    });
    await cache.start();
    await proxy.close(); // the apiserver is gone: its port refuses, the open watch ends
    await eventually(() => retries.length >= 5, 'five failed restarts of the watch', 30_000);
    // 200, 400, 800, 1600, 3200 ms: each wait longer than the one before.
    expect(retries.slice(0, 5)).toEqual([200, 400, 800, 1600, 3200]);
  }, 60_000);
});
