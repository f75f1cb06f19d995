import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { apiserverArgs } from './apiserverArgs.js';
import { kubeBinaries, type KubeBinaries } from './binaries.js';
import { loadKubeConfig, writeKubeconfig } from './kubeconfig.js';
import { runKubectl, type KubectlOptions, type KubectlResult } from './kubectl.js';
import { generatePki, type Pki } from './pki.js';
import { ExitedBeforeReady, startLogged, waitReady, type LoggedProcess } from './process.js';
import { freePort } from '../ports.js';
import { httpsStatus } from './probe.js';
import { OWNER_FILE, ownerId } from './reaper.js';
import { mintServiceAccountKubeconfig, type MintedKubeconfig } from './serviceAccount.js';

/** Options for {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /** Extra kube-apiserver flags, appended last. @defaultValue [] */
  apiserverFlags?: string[];
  /** How long etcd and kube-apiserver each get to become ready. @defaultValue 90_000 */
  startTimeoutMs?: number;
}

/** A running etcd + kube-apiserver pair with an admin kubeconfig. */
export interface ControlPlane {
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** Temp dir holding certs, etcd data, logs and kubeconfigs; removed by `stop()`. */
  dir: string;
  pki: Pki;
  binaries: KubeBinaries;
  /** Kubeconfig of CN=admin in system:masters. */
  adminKubeconfig: string;
  /** A fresh client-node KubeConfig for the admin. */
  kubeConfig(): KubeConfig;
  /** Runs kubectl with the admin kubeconfig. */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** Creates `<prefix>-<random>` with its `default` ServiceAccount (no controller-manager makes it). */
  createNamespace(prefix?: string): Promise<string>;
  /** Creates ServiceAccount `name` (if absent) and writes a kubeconfig with a TokenRequest token for it. */
  mintServiceAccountKubeconfig(namespace: string, name: string): Promise<MintedKubeconfig>;
  /** Stops kube-apiserver only (etcd keeps the data); open watches break. */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port and etcd, waiting for /readyz. */
  startApiServer(): Promise<void>;
  /** Stops both processes and removes `dir`. */
  stop(): Promise<void>;
}

/**
 * Runs `start` again, on new ports, when its process exited before it was ready: a port found
 * free can be taken before the process binds it (any outgoing connection on this machine may get
 * it as its ephemeral port, and the test plane runs beside suites that open thousands). At most
 * three attempts; the last error has every attempt's log tail.
 */
async function onFreshPorts<T>(start: () => Promise<T>): Promise<T> {
  const failures: string[] = [];
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (!(err instanceof ExitedBeforeReady) || attempt === 3) {
        if (failures.length) (err as Error).message += `\n--- earlier attempts ---\n${failures.join('\n---\n')}`;
        throw err;
      }
      failures.push(err.message);
    }
  }
}

async function startEtcd(bin: KubeBinaries, dir: string, timeoutMs: number): Promise<{ proc: LoggedProcess; url: string }> {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  rmSync(join(dir, 'etcd'), { recursive: true, force: true }); // a failed attempt's data dir
  const proc = startLogged('etcd', bin.etcd, [`--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-url=${url}`, `--listen-peer-url=http://127.0.0.1:${peerPort}`], join(dir, 'etcd.log'));
  await waitReady(proc, async () => {
    const res = await fetch(`${url}/health`).catch(() => undefined);
    return res?.ok === true;
  }, timeoutMs);
  return { proc, url };
}

/**
 * Starts etcd and kube-apiserver on free loopback ports with a generated CA, waits for
 * /readyz and returns handles. Throws with the cause — binaries not built (see
 * {@link kubeBinaries}), or the failing process's log tail — when it cannot start.
 * Both processes die with this process however it ends (see process.ts and reaper.ts).
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const bin = kubeBinaries();
  const timeoutMs = opts.startTimeoutMs ?? 90_000;
  const dir = mkdtempSync(join(tmpdir(), 'hermes-kube-'));
  writeFileSync(join(dir, OWNER_FILE), ownerId()); // the reaper removes it if we die before stop()
  const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir); // also when a hook times out before stop() could be called
  const pki = generatePki(dir);
  let port = 0;
  let server = '';
  let etcd: { proc: LoggedProcess; url: string } | undefined;
  let apiserver: LoggedProcess | undefined;

  const startApiServer = async (): Promise<void> => {
    if (!etcd) throw new Error('etcd is not running');
    const args = apiserverArgs({ dir, port, etcdUrl: etcd.url, pki, extraFlags: opts.apiserverFlags ?? [] });
    apiserver = startLogged('kube-apiserver', bin.kubeApiserver, args, join(dir, 'kube-apiserver.log'));
    await waitReady(apiserver, async () => (await httpsStatus(`${server}/readyz`, pki)) === 200, timeoutMs);
  };
  const stop = async (): Promise<void> => {
    await apiserver?.stop();
    await etcd?.proc.stop();
    removeDir();
    process.off('exit', removeDir);
  };

  try {
    etcd = await onFreshPorts(() => startEtcd(bin, dir, timeoutMs));
    await onFreshPorts(async () => {
      port = await freePort();
      server = `https://127.0.0.1:${port}`;
      await startApiServer();
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const adminKubeconfig = writeKubeconfig(join(dir, 'admin.kubeconfig'), server, pki.ca.cert, 'admin',
    { kind: 'cert', certFile: pki.admin.cert, keyFile: pki.admin.key });
  const kubeConfig = (): KubeConfig => loadKubeConfig(adminKubeconfig);

  return {
    server, dir, pki, binaries: bin, adminKubeconfig, kubeConfig,
    kubectl: (args, kopts) => runKubectl(bin.kubectl, adminKubeconfig, args, kopts),
    createNamespace: async (prefix = 'test') => {
      const name = `${prefix}-${randomBytes(4).toString('hex')}`;
      const core = kubeConfig().makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name } } });
      await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: 'default' } } });
      return name;
    },
    mintServiceAccountKubeconfig: (namespace, name) =>
      mintServiceAccountKubeconfig(kubeConfig(), { namespace, name, server, caFile: pki.ca.cert, dir }),
    stopApiServer: async () => { await apiserver?.stop(); },
    startApiServer,
    stop,
  };
}
