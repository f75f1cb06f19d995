// The test plane of the mode-session benchmark: etcd + kube-apiserver, the test kubelet, the
// real kubernetes-sigs/agent-sandbox controller and the garbage collector, with one namespace
// holding two Profiles' SandboxTemplate + SandboxWarmPool as the operator writes them
// (`sessionTemplate` / `sessionWarmPool`, the same builders its session-pool controller applies):
// `warm` keeps one sandbox ready, `cold` keeps none (Profile `warmPool.size: 0`), so every claim
// on it cold-starts a Sandbox from the template.
import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import type { CompiledSandbox } from '../services/core/index.js';
import {
  AGENT_SANDBOX_VERSION, agentSandboxPlural, defaultKubernetesSandboxSettings, EXTENSIONS_GROUP, SANDBOX_GROUP,
  sessionTemplate, sessionWarmPool, type KubeObject, type KubernetesSandboxSettings,
} from '../services/sandbox/index.js';
import {
  startAgentSandboxController, startControlPlane, startGarbageCollector, startKubelet, waitFor,
  type AgentSandboxController, type ControlPlane, type GarbageCollector, type TestKubelet,
} from '../test/support/kube/index.js';

/** The image the test kubelet is told to run (it runs the command with the host's /usr). */
export const BENCH_IMAGE = 'test/sandbox:1';

export const WARM_PROFILE = 'warm';
export const COLD_PROFILE = 'cold';

export const benchSettings: KubernetesSandboxSettings = { ...defaultKubernetesSandboxSettings, image: BENCH_IMAGE };

export interface SessionPlane {
  cp: ControlPlane;
  namespace: string;
  /** Waits until nothing is starting or stopping: the warm pool full and Ready, every Pod Running and Ready. */
  quiet(): Promise<void>;
  stop(): Promise<void>;
}

interface Owned { kind?: string; controller?: boolean }
interface SandboxObj { metadata?: { ownerReferences?: Owned[] }; status?: { conditions?: { type?: string; status?: string }[] } }

/** A Profile's compiled sandbox block in mode session, as the operator's compile step produces it. */
export function sessionSandbox(warmPoolSize: number): CompiledSandbox {
  return {
    backend: 'kubernetes', mode: 'session', image: BENCH_IMAGE, timeoutSeconds: 180,
    workspace: { size: '1Gi', ttlSeconds: 7 * 24 * 3_600 }, network: { egress: 'none', allow: [] }, warmPool: { size: warmPoolSize },
  };
}

async function applyPool(custom: CustomObjectsApi, namespace: string, profile: string, warmPoolSize: number): Promise<void> {
  const input = { profile, profileNamespace: namespace, namespace, sandbox: sessionSandbox(warmPoolSize), settings: benchSettings };
  const create = (plural: string, body: KubeObject) =>
    custom.createNamespacedCustomObject({ group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace, plural, body });
  await create(agentSandboxPlural.templates, sessionTemplate(input));
  await create(agentSandboxPlural.warmPools, sessionWarmPool(input));
}

const ready = (o: { status?: { conditions?: { type?: string; status?: string }[] | null } | undefined }): boolean =>
  o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Unclaimed warm sandboxes: still controlled by their SandboxWarmPool (a claim takes the controller reference over). */
const inPool = (s: SandboxObj): boolean => s.metadata?.ownerReferences?.some((r) => r.controller && r.kind === 'SandboxWarmPool') === true;

const settled = (p: V1Pod): boolean => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running' && ready(p);

export async function startSessionPlane(progress: (s: string) => void): Promise<SessionPlane> {
  progress('starting etcd, kube-apiserver, the test kubelet, the agent-sandbox controller and the garbage collector…');
  const cp = await startControlPlane();
  let kubelet: TestKubelet | undefined;
  let controller: AgentSandboxController | undefined;
  let gc: GarbageCollector | undefined;
  const stop = async (): Promise<void> => {
    await controller?.stop();
    await gc?.stop();
    await kubelet?.stop();
    await cp.stop();
  };
  try {
    kubelet = await startKubelet(cp);
    controller = await startAgentSandboxController(cp);
    gc = await startGarbageCollector(cp); // after the CRDs: it discovers resources at start
    const kc = cp.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const namespace = await cp.createNamespace('bench-session');
    // What the operator creates first: agent-sandbox makes the warm Pods at once.
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: benchSettings.serviceAccountName }, automountServiceAccountToken: false } });
    await applyPool(custom, namespace, WARM_PROFILE, 1);
    await applyPool(custom, namespace, COLD_PROFILE, 0);
    const quietNow = async (): Promise<boolean> => {
      const sandboxes = (await custom.listNamespacedCustomObject({ group: SANDBOX_GROUP, version: AGENT_SANDBOX_VERSION, namespace, plural: agentSandboxPlural.sandboxes }) as { items: SandboxObj[] }).items;
      const warm = sandboxes.filter(inPool);
      if (warm.length !== 1 || !warm.every(ready) || !sandboxes.every(ready)) return false;
      return (await core.listNamespacedPod({ namespace })).items.every(settled);
    };
    const quiet = async (): Promise<void> => {
      await waitFor(quietNow, { what: 'the warm pool to be full and every Pod Running', timeoutMs: 120_000, intervalMs: 50 });
    };
    progress('waiting for the warm pool to fill…');
    await quiet();
    return { cp, namespace, quiet, stop };
  } catch (err) {
    if (controller) process.stderr.write(`--- agent-sandbox-controller ---\n${controller.tail(40)}\n`);
    await stop();
    throw err;
  }
}
