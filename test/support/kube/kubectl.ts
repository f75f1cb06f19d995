import { runCommand, type CommandResult } from '../command.js';

/** The outcome of one kubectl run; a non-zero `code` is returned, not thrown. */
export type KubectlResult = CommandResult;

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
  return runCommand(kubectlPath, ['--kubeconfig', opts.kubeconfig ?? kubeconfig, ...args], { input: opts.input, timeoutMs: opts.timeoutMs ?? 60_000 });
}
