// A kube-apiserver, the test kubelet and the kubernetes sandbox backend on them: the fixture of
// the tests that run sandbox calls as Pods. `stop()` closes the backend, then the kubelet, then
// the control plane (each only if it started).
import { CoreV1Api } from '@kubernetes/client-node';
import { kubernetesSandbox, type KubernetesSandboxSettings, type Sandbox } from '../../../services/sandbox/index.js';
import { componentLabel } from '../../../services/core/index.js';
import { startControlPlane, type ControlPlane } from './controlPlane.js';
import { startKubelet, type TestKubelet } from './kubelet.js';

export interface SandboxPlane {
  cp: ControlPlane;
  kubelet: TestKubelet;
  core: CoreV1Api;
  sandbox: Sandbox;
  /** How many sandbox Pods `namespace` holds now. */
  sandboxPods(namespace: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startSandboxPlane(settings: Partial<KubernetesSandboxSettings> = { image: 'test/sandbox:1', pollMs: 500 }): Promise<SandboxPlane> {
  const cp = await startControlPlane();
  let kubelet: TestKubelet | undefined;
  try {
    kubelet = await startKubelet(cp);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const sandbox = kubernetesSandbox({ kubeConfig: cp.kubeConfig(), settings });
  const started = kubelet;
  return {
    cp, kubelet, core, sandbox,
    sandboxPods: async (namespace) => (await core.listNamespacedPod({ namespace, labelSelector: `${componentLabel}=sandbox` })).items.length,
    async stop() {
      await sandbox.close();
      await started.stop();
      await cp.stop();
    },
  };
}
