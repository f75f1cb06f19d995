// A long-lived control plane for `make dev K8S=1`, started by hack/kube/dev-env.sh:
//   node --import tsx test/support/kube/devControlPlane.ts up|down|env
// Same binaries, certificates and flags as the test control plane, but on this checkout's ports
// (HERMES_KUBE_PORT, HERMES_ETCD_PORT and HERMES_ETCD_PORT + 1, from hack/ports.sh) with its
// state in .hermes/kube/ (git-ignored; HERMES_KUBE_DEV_DIR overrides), so it survives the script
// and keeps its data. Beside etcd and kube-apiserver runs its node (devNode.ts: the test kubelet,
// the garbage collector and the agent-sandbox controller), so sandbox Pods run too.
// stdout carries only `export` lines (for eval); progress goes to stderr. Every failure exits 1
// with its cause: a port held by another process (and which), a process that died (its log).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiserverArgs } from './apiserverArgs.js';
import { kubeBinaries, repoRoot } from './binaries.js';
import { writeKubeconfig } from './kubeconfig.js';
import { DEV_NODE_READY } from './devPlane.js';
import { generatePki, pkiPaths, type Pki } from './pki.js';
import { httpsStatus } from './probe.js';
import { startLogged, waitReady } from './process.js';
import { processGone } from './reaper.js';
import { waitFor } from './wait.js';

const state = resolve(process.env.HERMES_KUBE_DEV_DIR || join(repoRoot, '.hermes/kube'));
// Run as TypeScript through tsx, as this script is.
const devNodeScript = fileURLToPath(new URL('./devNode.ts', import.meta.url));
const kubeconfig = join(state, 'admin.kubeconfig');
const pidFile = (name: string): string => join(state, `${name}.pid`);
const log = (message: string): void => { process.stderr.write(`[kube] ${message}\n`); };

function portFrom(name: string): number {
  const port = Number(process.env[name]);
  if (!Number.isInteger(port) || port < 1 || port > 65534) {
    throw new Error(`${name} is ${process.env[name] === undefined ? 'not set' : `'${process.env[name]}', not a port`}: run this through hack/kube/dev-env.sh (it takes this checkout's ports from hack/ports.sh)`);
  }
  return port;
}

const alive = (id: number): boolean => !processGone(id);

/** The argv of this checkout's `name` process if it runs (its pid file, and its argv names our state dir). */
function ours(name: string): string[] | undefined {
  if (!existsSync(pidFile(name))) return undefined;
  const id = Number(readFileSync(pidFile(name), 'utf8'));
  if (!Number.isInteger(id) || !alive(id)) return undefined;
  try {
    const argv = readFileSync(`/proc/${id}/cmdline`, 'utf8').split('\0');
    return argv.some((arg) => arg.includes(state)) ? argv : undefined;
  } catch {
    return undefined;
  }
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** " (users:((…)))" when ss may say who listens on the port. */
function holder(port: number): string {
  const out = spawnSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' }).stdout ?? '';
  const who = /users:\(\([^)]*\)\)/.exec(out)?.[0];
  return who ? ` ${who}` : '';
}

async function requireFree(port: number, variable: string, what: string): Promise<void> {
  if (await portFree(port)) return;
  throw new Error(`port ${port} (${variable}) is in use by another process${holder(port)}, not this checkout's ${what}. ` +
    `Stop that process, or give this checkout other ports: export ${variable}=<a free port>${variable === 'HERMES_ETCD_PORT' ? ' (etcd also takes the next one)' : ''}, then run the same command again.`);
}

function sameFlag(argv: string[], flag: string, name: string, variable: string): void {
  if (argv.includes(flag)) return;
  const actual = argv.find((arg) => arg.startsWith(flag.slice(0, flag.indexOf('=') + 1))) ?? '?';
  throw new Error(`this checkout's ${name} already runs with ${actual}, but ${variable} asks for ${flag}. ` +
    'Stop it first (hack/kube/dev-env.sh down, or make kube-down), or export the port it runs on.');
}

function start(name: string, command: string, args: string[]) {
  const proc = startLogged(name, command, args, join(state, `${name}.log`), true);
  writeFileSync(pidFile(name), String(proc.child.pid));
  return proc;
}

async function up(): Promise<void> {
  const apiPort = portFrom('HERMES_KUBE_PORT');
  const etcdPort = portFrom('HERMES_ETCD_PORT');
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const server = `https://127.0.0.1:${apiPort}`;
  const bin = kubeBinaries();
  const etcdArgv = ours('etcd');
  const apiArgv = ours('kube-apiserver');
  // Ports first, before anything is written or started.
  if (etcdArgv) sameFlag(etcdArgv, `--listen-client-url=${etcdUrl}`, 'etcd', 'HERMES_ETCD_PORT');
  else {
    await requireFree(etcdPort, 'HERMES_ETCD_PORT', 'etcd');
    await requireFree(etcdPort + 1, 'HERMES_ETCD_PORT', 'etcd (peers, HERMES_ETCD_PORT + 1)');
  }
  if (apiArgv) sameFlag(apiArgv, `--secure-port=${apiPort}`, 'kube-apiserver', 'HERMES_KUBE_PORT');
  else await requireFree(apiPort, 'HERMES_KUBE_PORT', 'kube-apiserver');

  mkdirSync(join(state, 'pki'), { recursive: true });
  const pki: Pki = existsSync(pkiPaths(join(state, 'pki')).serviceAccount.cert)
    ? pkiPaths(join(state, 'pki'))
    : generatePki(join(state, 'pki'), 365);
  const etcdHealthy = async (): Promise<boolean> => (await fetch(`${etcdUrl}/health`).catch(() => undefined))?.ok === true;
  if (!etcdArgv) {
    log(`etcd: starting on ${etcdUrl}`);
    const etcd = start('etcd', bin.etcd, [`--data-dir=${join(state, 'etcd')}`, `--listen-client-url=${etcdUrl}`,
      `--listen-peer-url=http://127.0.0.1:${etcdPort + 1}`]);
    await waitReady(etcd, etcdHealthy, 60_000);
  } else if (!(await etcdHealthy())) {
    throw new Error(`this checkout's etcd runs but ${etcdUrl}/health does not answer; see ${join(state, 'etcd.log')}, or restart it: hack/kube/dev-env.sh down`);
  }
  const ready = async (): Promise<boolean> => (await httpsStatus(`${server}/readyz`, pki)) === 200;
  if (!apiArgv) {
    log(`kube-apiserver: starting on ${server}`);
    const api = start('kube-apiserver', bin.kubeApiserver, apiserverArgs({ dir: state, port: apiPort, etcdUrl, pki, extraFlags: [] }));
    await waitReady(api, ready, 90_000);
  } else if (!(await waitFor(ready, { what: 'kube-apiserver /readyz', timeoutMs: 30_000 }).catch(() => false))) {
    throw new Error(`this checkout's kube-apiserver runs but ${server}/readyz is not 200; see ${join(state, 'kube-apiserver.log')}, or restart it: hack/kube/dev-env.sh down`);
  }
  writeKubeconfig(kubeconfig, server, pki.ca.cert, 'admin', { kind: 'cert', certFile: pki.admin.cert, keyFile: pki.admin.key });
  await upNode(server);
  log(`kubectl: ${bin.kubectl}   helm: ${bin.helm}`);
  // On a line of its own, unprefixed, so a person or a script can pick it up.
  process.stderr.write(`kubeconfig: ${kubeconfig}\n`);
}

/**
 * The node (devNode.ts): the test kubelet, the garbage collector and the agent-sandbox
 * controller. Started unless this checkout's runs; resolves once it has said it is ready.
 */
async function upNode(server: string): Promise<void> {
  const isReady = (): Promise<boolean> => Promise.resolve(existsSync(join(state, DEV_NODE_READY)));
  if (ours('node')) {
    if (!(await waitFor(isReady, { what: 'the dev node', timeoutMs: 120_000 }).catch(() => false))) {
      throw new Error(`this checkout's node (test kubelet and controllers) runs but is not ready; see ${join(state, 'node.log')}, or restart it: hack/kube/dev-env.sh down`);
    }
    return;
  }
  log(`node: starting the test kubelet (Node hermes-dev-node), the garbage collector and the agent-sandbox controller`);
  const node = start('node', process.execPath, ['--import', 'tsx', devNodeScript, state, server]);
  await waitReady(node, isReady, 180_000);
  log(`node: ready (log ${join(state, 'node.log')})`);
}

/**
 * Stops the node first (it deletes its Node and stops its pods through the apiserver), then the
 * apiserver, waiting for it (it needs etcd to shut down cleanly), then etcd.
 */
async function down(): Promise<void> {
  for (const name of ['node', 'kube-apiserver', 'etcd']) {
    if (!ours(name)) continue;
    const id = Number(readFileSync(pidFile(name), 'utf8'));
    process.kill(id, 'SIGTERM');
    await waitFor(() => !alive(id), { what: `${name} to stop`, timeoutMs: 20_000 }).catch(() => process.kill(id, 'SIGKILL'));
    log(`${name}: stopped`);
  }
}

const command = process.argv[2] ?? 'up';
try {
  if (command === 'up') await up();
  else if (command === 'down') await down();
  else if (command !== 'env') throw new Error(`usage: devControlPlane.ts up|down|env (got ${command})`);
} catch (err) {
  // waitReady's errors carry the process's log tail; ours say which port and what to do.
  log(`error: ${(err as Error).message}`);
  process.exit(1);
}
if (command !== 'down') process.stdout.write(`export KUBECONFIG=${kubeconfig}\n`);
