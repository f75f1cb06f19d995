// A long-lived control plane for `make dev K8S=1`, started by hack/kube/dev-env.sh:
//   node --import tsx test/support/kube/devControlPlane.ts up|down|env
// Same binaries, certificates and flags as the test control plane, but on fixed ports with its
// state in .hermes/kube/ (git-ignored), so it survives the script and keeps its data.
// stdout carries only `export` lines (for eval); progress goes to stderr.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiserverArgs } from './apiserverArgs.js';
import { kubeAvailable, repoRoot } from './binaries.js';
import { writeKubeconfig } from './kubeconfig.js';
import { generatePki, pkiPaths } from './pki.js';
import { httpsStatus } from './probe.js';
import { startLogged, waitReady } from './process.js';
import { waitFor } from './wait.js';

const state = join(repoRoot, '.hermes/kube');
const apiPort = Number(process.env.HERMES_KUBE_PORT ?? 56443);
const etcdPort = Number(process.env.HERMES_ETCD_PORT ?? 52379);
const etcdUrl = `http://127.0.0.1:${etcdPort}`;
const server = `https://127.0.0.1:${apiPort}`;
const kubeconfig = join(state, 'admin.kubeconfig');
const pid = (name: string): string => join(state, `${name}.pid`);
const log = (message: string): void => { process.stderr.write(`[kube] ${message}\n`); };

async function etcdHealthy(): Promise<boolean> {
  const res = await fetch(`${etcdUrl}/health`).catch(() => undefined);
  return res?.ok === true;
}

function start(name: string, command: string, args: string[]) {
  const proc = startLogged(name, command, args, join(state, `${name}.log`), true);
  writeFileSync(pid(name), String(proc.child.pid));
  return proc;
}

async function up(): Promise<void> {
  const availability = kubeAvailable();
  if (!availability.ok) throw new Error(`Cannot start a kube-apiserver: ${availability.reason}`);
  const bin = availability.binaries;
  mkdirSync(join(state, 'pki'), { recursive: true });
  const pki = existsSync(pkiPaths(join(state, 'pki')).serviceAccount.cert)
    ? pkiPaths(join(state, 'pki'))
    : generatePki(join(state, 'pki'), 365);
  if (!(await etcdHealthy())) {
    log(`etcd: starting on ${etcdUrl}`);
    const etcd = start('etcd', bin.etcd, [`--data-dir=${join(state, 'etcd')}`, `--listen-client-url=${etcdUrl}`,
      `--listen-peer-url=http://127.0.0.1:${etcdPort + 1}`]);
    await waitReady(etcd, etcdHealthy, 60_000);
  }
  if ((await httpsStatus(`${server}/readyz`, pki)) !== 200) {
    log(`kube-apiserver: starting on ${server}`);
    const api = start('kube-apiserver', bin.kubeApiserver,
      apiserverArgs({ dir: state, port: apiPort, etcdUrl, pki, extraFlags: [] }));
    await waitReady(api, async () => (await httpsStatus(`${server}/readyz`, pki)) === 200, 90_000);
  }
  writeKubeconfig(kubeconfig, server, pki.ca.cert, 'admin', { kind: 'cert', certFile: pki.admin.cert, keyFile: pki.admin.key });
  log(`kubectl: ${bin.kubectl}   helm: ${bin.helm}`);
  // On a line of its own, unprefixed, so a person or a script can pick it up.
  process.stderr.write(`kubeconfig: ${kubeconfig}\n`);
}

const alive = (id: number): boolean => {
  try {
    process.kill(id, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stops the apiserver first and waits for it (it needs etcd to shut down cleanly), then etcd. */
async function down(): Promise<void> {
  for (const name of ['kube-apiserver', 'etcd']) {
    if (!existsSync(pid(name))) continue;
    const id = Number(readFileSync(pid(name), 'utf8'));
    if (!alive(id)) continue;
    process.kill(id, 'SIGTERM');
    await waitFor(() => !alive(id), { what: `${name} to stop`, timeoutMs: 20_000 }).catch(() => process.kill(id, 'SIGKILL'));
    log(`${name}: stopped`);
  }
}

const command = process.argv[2] ?? 'up';
if (command === 'up') await up();
else if (command === 'down') await down();
else if (command !== 'env') throw new Error(`usage: devControlPlane.ts up|down|env (got ${command})`);
if (command !== 'down') process.stdout.write(`export KUBECONFIG=${kubeconfig}\n`);
