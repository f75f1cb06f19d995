// vitest's global setup: runs once in vitest's main process, before any test file and before the
// forks start (they inherit its environment).
// - Gives the run an id, HERMES_TEST_RUN (hack/test.sh sets one first), that every test-plane
//   process carries (test/support/kube/reaper.ts).
// - Reaps test-plane processes that earlier runs left behind when their owners died.
// - When the selected files need the kube test plane (test/integration/kube/, …/operator/, …/chart/, …/sandbox/kubernetes*), builds
//   or reuses its binaries first, outside any test timeout; if that fails, the run fails with the
//   cause (never a skip).
// Its teardown reaps whatever this run's test plane left running. See docs/harness.md.
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { buildKubeBinaries, repoRoot } from './kube/binaries.js';
import { describeReaped, reapTestPlane, RUN_ENV } from './kube/reaper.js';

const KUBE_SUITES = /\/test\/integration\/(kube\/|operator\/|chart\/|sandbox\/kubernetes)/;

const say = (message: string): void => { process.stderr.write(`[test-plane] ${message}\n`); };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = process.env[RUN_ENV] || `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  process.env[RUN_ENV] = run;

  const leftovers = await reapTestPlane();
  if (leftovers.length > 0) say(`killed ${leftovers.length} processes left by earlier runs: ${describeReaped(leftovers)}`);

  // The CLI's file filters (internal to vitest; without them every file is selected).
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  const { testFiles } = await project.globTestFiles(filters);
  if (testFiles.some((file) => KUBE_SUITES.test(file))) await buildKubeBinaries();
  // The chart suites also need promrules and the third-party CRDs (hack/chart/tools.sh, cached).
  if (testFiles.some((file) => file.includes('/test/integration/chart/'))) {
    const built = spawnSync('bash', [join(repoRoot, 'hack/chart/tools.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (built.status !== 0) throw new Error(`bash hack/chart/tools.sh failed (exit ${built.status}): the chart suites cannot run (see above)`);
  }

  return async () => {
    const reaped = await reapTestPlane({ run });
    if (reaped.length > 0) say(`killed ${reaped.length} test-plane processes still running at the end of run ${run}: ${describeReaped(reaped)}`);
  };
}
