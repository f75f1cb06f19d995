// The dev plane's node, for `make dev K8S=1`: a long-lived process that devControlPlane.ts starts
// (detached) beside its etcd and kube-apiserver, so sandbox Pods really run on a laptop:
//   node --import tsx test/support/kube/devNode.ts <state dir> <apiserver URL>
// It runs, against that apiserver, the test kubelet (Node `hermes-dev-node`; pods in bubblewrap,
// logs and exec through the apiserver; PVC stand-ins kept in <state dir>/kubelet across runs),
// kube-controller-manager with the garbage collector, PVC protection, the ServiceAccount and the
// namespace controllers, and the
// kubernetes-sigs/agent-sandbox controller (Profiles in `spec.sandbox.mode: session`), each
// as the test plane runs them. The controllers are children that die with this process.
// Ready when it has written <state dir>/node.ready; SIGTERM stops the pods (the API keeps them
// Running: the next start of the node reports them lost, never runs them again), the
// controllers, and deletes the Node.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { startAgentSandboxController, type AgentSandboxPlane } from './agentSandbox.js';
import { kubeBinaries } from './binaries.js';
import { startGarbageCollector } from './controllerManager.js';
import { DEV_NODE_NAME, DEV_NODE_READY } from './devPlane.js';
import { loadKubeConfig } from './kubeconfig.js';
import { runKubectl } from './kubectl.js';
import { startKubelet, type KubeletPlane } from './kubelet.js';
import { pkiPaths } from './pki.js';
import { mintServiceAccountKubeconfig } from './serviceAccount.js';
import { waitFor } from './wait.js';


const log = (message: string): void => { process.stderr.write(`[dev-node] ${new Date().toISOString()} ${message}\n`); };

async function main(state: string, server: string): Promise<void> {
  const bin = kubeBinaries();
  const adminKubeconfig = join(state, 'admin.kubeconfig');
  const pki = pkiPaths(join(state, 'pki'));
  const plane: KubeletPlane & AgentSandboxPlane & { binaries: typeof bin } = {
    dir: state, adminKubeconfig, pki, binaries: bin,
    kubeConfig: () => loadKubeConfig(adminKubeconfig),
    kubectl: (args, opts) => runKubectl(bin.kubectl, adminKubeconfig, args, opts),
    mintServiceAccountKubeconfig: (namespace, name) =>
      mintServiceAccountKubeconfig(loadKubeConfig(adminKubeconfig), { namespace, name, server, caFile: pki.ca.cert, dir: state }),
  };
  const ready = join(state, DEV_NODE_READY);
  rmSync(ready, { force: true });
  // Logs of pods from earlier runs have no process behind them any more; their PVCs stay.
  rmSync(join(state, 'kubelet', 'pods'), { recursive: true, force: true });
  const kubelet = await startKubelet(plane, { nodeName: DEV_NODE_NAME, stateDir: join(state, 'kubelet') });
  log(`kubelet: Node ${kubelet.nodeName} Ready, serving logs and exec on 127.0.0.1:${kubelet.port}`);
  // As in a cluster: every namespace gets its `default` ServiceAccount, and a deleted one is emptied.
  const gc = await startGarbageCollector(plane, { extraControllers: ['serviceaccount-controller', 'namespace-controller'] });
  const core = plane.kubeConfig().makeApiClient(CoreV1Api);
  await waitFor(async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }).catch(() => undefined)) !== undefined,
    { what: 'ServiceAccount default/default (the ServiceAccount controller)', timeoutMs: 60_000 });
  log(`kube-controller-manager (garbage collector, PVC protection, ServiceAccounts, namespaces): running (log ${gc.logFile})`);
  // As the admin: a ServiceAccount token expires after an hour, and the dev plane lives longer.
  const sandboxes = await startAgentSandboxController(plane, { identity: 'admin' });
  log(`agent-sandbox controller: running (log ${sandboxes.logFile})`);

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    rmSync(ready, { force: true });
    await sandboxes.stop();
    await gc.stop();
    await kubelet.stop();
    log('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  writeFileSync(ready, String(process.pid));
}

const [state, server] = process.argv.slice(2);
if (!state || !server) {
  process.stderr.write('usage: devNode.ts <state dir> <apiserver URL> (started by hack/kube/dev-env.sh up)\n');
  process.exit(2);
}
main(state, server).catch((err: unknown) => {
  log(`error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
