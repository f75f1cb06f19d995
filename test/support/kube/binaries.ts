import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in test/support/kube/). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const hackDir = join(repoRoot, 'hack/kube');

/** Paths of the binaries the test control plane runs. */
export interface KubeBinaries {
  kubeApiserver: string;
  /** Run with only its garbage collector (controllerManager.ts). */
  kubeControllerManager: string;
  etcd: string;
  kubectl: string;
  helm: string;
}

function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** What this machine lacks to run the test plane at all, or undefined. */
function machineProblem(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `it needs linux/x64 (kubectl/helm come as linux-x64 binaries); this is ${process.platform}/${process.arch}`;
  }
  const missing = ['bash', 'openssl', 'flock'].filter((c) => !hasCommand(c));
  if (missing.length > 0) return `missing commands: ${missing.join(', ')} (Debian: apt-get install -y ${missing.map((c) => (c === 'flock' ? 'util-linux' : c)).join(' ')})`;
  return undefined;
}

function printDir(script: string): string {
  const result = spawnSync('bash', [join(hackDir, script), '--print-dir'], { cwd: repoRoot, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`bash hack/kube/${script} --print-dir failed: ${result.stderr.trim()}`);
  return result.stdout.trim();
}

/**
 * Where kube-apiserver, etcd, kubectl and helm are. Never builds anything (a cold build takes
 * minutes: `make test`, `make kube`, `make dev K8S=1` and the vitest global setup run
 * hack/kube/build.sh first); throws, saying why and what to run, when they are not there — a
 * suite that needs them fails, it is never skipped.
 */
export function kubeBinaries(): KubeBinaries {
  const problem = machineProblem();
  if (problem) throw new Error(`The kube test plane cannot run here: ${problem}. See docs/kube-test-plane.md.`);
  const bin = printDir('build.sh');
  const tools = printDir('tools.sh');
  const binaries: KubeBinaries = {
    kubeApiserver: join(bin, 'kube-apiserver'), kubeControllerManager: join(bin, 'kube-controller-manager'), etcd: join(bin, 'etcd'),
    kubectl: join(tools, 'kubectl'), helm: join(tools, 'helm'),
  };
  const missing = Object.values(binaries).filter((path) => !existsSync(path));
  if (missing.length > 0) {
    throw new Error(`The kube test plane is not built: missing ${missing.join(', ')}. Run \`make kube\` (bash hack/kube/build.sh; ` +
      'it needs Go >= 1.26, and a cold build takes ~6-8 min on 2 cores). See docs/kube-test-plane.md.');
  }
  return binaries;
}

/** Where the kubernetes-sigs/agent-sandbox controller, its CRDs and its ClusterRoles are (hack/kube/agent-sandbox.sh). */
export interface AgentSandboxBinaries {
  controller: string;
  /** Folder of the 4 CRD manifests. */
  crdDir: string;
  /** Folder of the ClusterRoles the release ships (rbac.generated.yaml, extensions-rbac.generated.yaml). */
  rbacDir: string;
}

/**
 * Where the agent-sandbox controller is. Never builds (hack/kube/build.sh, run before any kube
 * suite, builds it); throws, saying what to run, when it is not there.
 */
export function agentSandboxBinaries(): AgentSandboxBinaries {
  const dir = printDir('agent-sandbox.sh');
  const found: AgentSandboxBinaries = { controller: join(dir, 'agent-sandbox-controller'), crdDir: join(dir, 'crds'), rbacDir: join(dir, 'rbac') };
  const missing = Object.values(found).filter((path) => !existsSync(path));
  if (missing.length > 0) {
    throw new Error(`The agent-sandbox controller is not built: missing ${missing.join(', ')}. Run \`make kube\` ` +
      '(bash hack/kube/build.sh, which runs hack/kube/agent-sandbox.sh; it needs Go and the Go module proxy). See docs/kube-test-plane.md.');
  }
  return found;
}

/** Paths to kubectl and helm (see {@link kubeBinaries}). */
export function kubeTools(): { kubectl: string; helm: string } {
  const { kubectl, helm } = kubeBinaries();
  return { kubectl, helm };
}

/** Throws, saying what to install, unless bubblewrap (which the test kubelet runs pods in) is here. */
export function requireBubblewrap(): void {
  if (!hasCommand('bwrap')) throw new Error('The test kubelet needs bubblewrap (bwrap): apt-get install -y bubblewrap (`make system-deps` does it).');
}

/**
 * Runs hack/kube/build.sh (builds or reuses kube-apiserver + etcd and the agent-sandbox
 * controller, unpacks kubectl + helm),
 * streaming its progress to our stderr; rejects with the cause and the last lines of its output.
 */
export async function buildKubeBinaries(): Promise<void> {
  const problem = machineProblem();
  if (problem) throw new Error(`The kube test plane cannot run here: ${problem}. See docs/kube-test-plane.md.`);
  const child = spawn('bash', [join(hackDir, 'build.sh')], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    output = (output + chunk.toString()).slice(-4_000);
  });
  const code = await new Promise<number | string>((resolveExit) => {
    child.on('error', (err) => resolveExit(err.message));
    child.on('exit', (exitCode, signal) => resolveExit(exitCode ?? signal ?? 'unknown'));
  });
  if (code !== 0) {
    const tail = output.trimEnd().split('\n').slice(-15).join('\n');
    throw new Error(`bash hack/kube/build.sh failed (exit ${code}), so the kube test plane cannot start:\n${tail}`);
  }
}
