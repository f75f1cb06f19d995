// A real kube-apiserver with the hermes.dev CRDs applied, a fresh Postgres database, and helpers
// to run the operator in-process and wait on the state of objects.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { createLogger, openDb, type Db } from '../../../services/core/index.js';
import { startOperator, type OperatorHandle, type OperatorOptions } from '../../../operator/manager.js';
import type { Condition } from '../../../operator/index.js';
import { startControlPlane, waitFor, type ControlPlane } from '../../support/kube/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';

export const crdsDir = new URL('../../../crds/', import.meta.url).pathname;
export const examplesDir = new URL('../../../examples/', import.meta.url).pathname;

export interface Plane {
  cp: ControlPlane;
  testDb: TestDatabase;
  db: Db;
  operators: OperatorHandle[];
  start(opts?: Partial<OperatorOptions>): Promise<OperatorHandle>;
  stop(): Promise<void>;
}

export async function startPlane(): Promise<Plane> {
  const cp = await startControlPlane();
  const applied = await cp.kubectl(['apply', '-f', crdsDir]);
  if (applied.code !== 0) throw new Error(applied.stderr);
  const est = await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=hermes']);
  if (est.code !== 0) throw new Error(est.stderr);
  const testDb = await createTestDatabase();
  const db = openDb(testDb.url, { applicationName: 'operator-test' });
  const operators: OperatorHandle[] = [];
  return {
    cp, testDb, db, operators,
    async start(opts = {}) {
      const h = await startOperator({ kc: opts.kc ?? cp.kubeConfig(), db, log: createLogger('operator', process.env.HERMES_TEST_LOG_LEVEL ?? 'silent'),
        gatewayUrl: 'http://gateway.test:8080', leaderElection: false, retryBaseMs: 50, ...opts });
      operators.push(h);
      return h;
    },
    async stop() {
      for (const o of operators) await o.stop().catch(() => undefined);
      await db.close();
      await testDb.drop();
      await cp.stop();
    },
  };
}

export interface HermesObject {
  metadata: { name: string; namespace: string; generation?: number; resourceVersion?: string; finalizers?: string[] };
  spec: Record<string, unknown>;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
}

export async function getObject(kc: KubeConfig, plural: string, namespace: string, name: string): Promise<HermesObject | undefined> {
  try {
    return await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'hermes.dev', version: 'v1alpha1', plural, namespace, name }) as HermesObject;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

export const conditionOf = (o: HermesObject | undefined, type: string): Condition | undefined => o?.status?.conditions?.find((c) => c.type === type);

/** Waits until condition `type` of the object has `status` (and `reason`, when given); returns the object. */
export function waitForCondition(kc: KubeConfig, plural: string, namespace: string, name: string, want: { type: string; status: string; reason?: string }, timeoutMs = 30_000): Promise<HermesObject> {
  return waitFor(async () => {
    const o = await getObject(kc, plural, namespace, name);
    const c = conditionOf(o, want.type);
    return c && c.status === want.status && (!want.reason || c.reason === want.reason) ? o : undefined;
  }, { what: `${plural} ${namespace}/${name} ${want.type}=${want.status}${want.reason ? ` (${want.reason})` : ''}`, timeoutMs });
}

export async function eventsFor(kc: KubeConfig, namespace: string, name: string): Promise<{ type?: string; reason?: string; message?: string }[]> {
  const list = await kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.map((e) => ({ type: e.type, reason: e.reason, message: e.message }));
}

export async function kubectlOk(cp: ControlPlane, args: string[], input?: string): Promise<string> {
  const r = await cp.kubectl(args, input === undefined ? {} : { input });
  expect(r.code, `kubectl ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
}
