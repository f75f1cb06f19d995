// Node pinning: once a session's workspace (a ReadWriteOnce volume) was used on a Node, its later
// Pods go there although another Node is free; when that Node is gone, the next Pod goes anywhere
// and the new Node is recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, Watch, type V1Pod } from '@kubernetes/client-node';
import { nodeAnnotation } from '../../../services/core/index.js';
import { kubernetesSandbox, type Sandbox } from '../../../services/sandbox/index.js';
import { workspacePvcName } from '../../../services/sandbox/kubernetes/names.js';
import { startControlPlane, startKubelet, type ControlPlane, type TestKubelet } from '../../support/kube/index.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';

describe('kubernetes sandbox backend, node pinning', () => {
  let cp: ControlPlane;
  let a: TestKubelet;
  let b: TestKubelet | undefined;
  let core: CoreV1Api;
  let sandbox: Sandbox;
  let ns: string;
  /** The Node each sandbox Pod was bound to, in creation order. */
  const boundTo = new Map<string, string>();
  let stopWatch: (() => void) | undefined;

  beforeAll(async () => {
    cp = await startControlPlane();
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
    ns = await cp.createNamespace('pin');
    a = await startKubelet(cp, { namespaces: [ns], nodeName: 'node-a' });
    sandbox = kubernetesSandbox({ kubeConfig: cp.kubeConfig(), settings: { image: 'test/sandbox:1', pollMs: 300 } });
    const ctl = await new Watch(cp.kubeConfig()).watch(`/api/v1/namespaces/${ns}/pods`, {},
      (_type: string, pod: V1Pod) => { if (pod.spec?.nodeName) boundTo.set(pod.metadata?.name ?? '', pod.spec.nodeName); }, () => undefined);
    stopWatch = () => ctl.abort();
  });

  afterAll(async () => {
    stopWatch?.();
    await sandbox?.close();
    await b?.stop();
    await a?.stop();
    await cp?.stop();
  });

  const annotatedNode = async (sessionId: string) =>
    (await core.readNamespacedPersistentVolumeClaim({ name: workspacePvcName(sessionId), namespace: ns })).metadata?.annotations?.[nodeAnnotation];

  it('sends the session\'s later Pods to the Node holding its volume, and moves on when that Node is gone', async () => {
    const session = testSession(ns);
    expect(await sandbox.exec(execRequest(session, 'echo one > /workspace/f'))).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(await annotatedNode(session.sessionId)).toBe('node-a');

    // A second, free Node: without the pin about half of these Pods would land there.
    b = await startKubelet(cp, { namespaces: [ns], nodeName: 'node-b' });
    const before = boundTo.size;
    for (let i = 0; i < 6; i++) {
      expect(await sandbox.exec(execRequest(session, 'cat /workspace/f'))).toMatchObject({ status: 'ok', output: 'one\n' });
    }
    const later = [...boundTo.values()].slice(before);
    expect(later).toHaveLength(6);
    expect(new Set(later)).toEqual(new Set(['node-a']));

    // The Node holding the volume goes away: the pin is dropped, not waited on.
    await a.stop(); // deletes Node node-a
    a = undefined as unknown as TestKubelet;
    const moved = await sandbox.exec(execRequest(session, 'echo moved'));
    expect(moved).toMatchObject({ status: 'ok', output: 'moved\n' });
    expect([...boundTo.values()].at(-1)).toBe('node-b');
    expect(await annotatedNode(session.sessionId)).toBe('node-b');
  });
});
