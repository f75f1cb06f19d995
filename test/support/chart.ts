// Helpers of the chart tests (test/integration/chart/): the chart's folder, `helm` runs, the tools
// of hack/chart/tools.sh (built by the vitest global setup before any chart suite).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { runCommand, type CommandResult } from './command.js';
import { repoRoot } from './kube/binaries.js';

export const chartDir = join(repoRoot, 'charts/hermes');

/** A rendered Kubernetes object (loosely typed: the tests look into any kind). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rendered manifests of every kind, read by path
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string>; labels?: Record<string, string> }; spec?: any; data?: Record<string, string> };

export type RunResult = CommandResult;

/** Runs a command (helm, promrules) from the repository root; its input on stdin. */
export function run(cmd: string, args: string[], opts: { cwd?: string; input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return runCommand(cmd, args, { cwd: opts.cwd ?? repoRoot, input: opts.input, timeoutMs: opts.timeoutMs ?? 120_000 });
}

/** Parses a multi-document manifest, dropping empty documents. */
export function parseManifests(text: string): K8sObject[] {
  return parseAllDocuments(text).map((d) => d.toJSON() as K8sObject | null).filter((o): o is K8sObject => o !== null && typeof o === 'object' && 'kind' in o);
}

/** Where hack/chart/tools.sh keeps promrules and the third-party CRDs; throws, saying what to run, when they are missing. */
export function chartTools(): { promrules: string; crdDir: string } {
  const out = spawnSync('bash', [join(repoRoot, 'hack/chart/tools.sh'), '--print-dir'], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`hack/chart/tools.sh --print-dir failed: ${out.stderr}`);
  const dir = out.stdout.trim();
  const tools = { promrules: join(dir, 'promrules'), crdDir: join(dir, 'crds') };
  if (!existsSync(tools.promrules) || !existsSync(join(tools.crdDir, '.complete'))) {
    throw new Error(`The chart test tools are not built (${dir}): run \`bash hack/chart/tools.sh\` (needs Go and the Go module proxy; the vitest global setup runs it for test/integration/chart/).`);
  }
  return tools;
}
