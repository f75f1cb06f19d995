import { execFile } from 'node:child_process';

/** The outcome of one kubectl run; a non-zero `code` is returned, not thrown. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options for {@link runKubectl}. */
export interface KubectlOptions {
  /** Written to kubectl's stdin (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** @defaultValue 60_000 */
  timeoutMs?: number;
  /** Run as someone else (e.g. a minted ServiceAccount kubeconfig). @defaultValue the admin kubeconfig */
  kubeconfig?: string;
}

/** Runs `kubectl --kubeconfig <kubeconfig> ...args`. */
export function runKubectl(kubectlPath: string, kubeconfig: string, args: string[], opts: KubectlOptions = {}): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(kubectlPath, ['--kubeconfig', opts.kubeconfig ?? kubeconfig, ...args], {
      timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8',
    }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(opts.input ?? '');
  });
}
