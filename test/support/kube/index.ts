// The test Kubernetes control plane (real etcd + kube-apiserver) and test kubelet.
// See docs/kube-test-plane.md.
export { startAgentSandboxController, type AgentSandboxController, type AgentSandboxControllerOptions } from './agentSandbox.js';
export { agentSandboxBinaries, buildKubeBinaries, kubeBinaries, kubeTools, requireBubblewrap, type AgentSandboxBinaries, type KubeBinaries } from './binaries.js';
export { startGarbageCollector, type GarbageCollector, type GarbageCollectorOptions } from './controllerManager.js';
export { startControlPlane, type ControlPlane, type ControlPlaneOptions } from './controlPlane.js';
export { pidsWithArg } from './hostProcesses.js';
export { startKubelet, type KubeletOptions, type TestKubelet } from './kubelet.js';
export { startSandboxPlane, type SandboxPlane } from './sandbox-plane.js';
export type { ImageCommand } from './podProcess.js';
export { kubeConfigVia, loadKubeConfig } from './kubeconfig.js';
export type { KubectlOptions, KubectlResult } from './kubectl.js';
export { NETWORK_ANNOTATION } from './podProcess.js';
export { markedProcesses, reapTestPlane, type MarkedProcess } from './reaper.js';
export type { MintedKubeconfig } from './serviceAccount.js';
export { waitFor, type WaitOptions } from './wait.js';
