// hack/test.sh (what `make test` and .ci/run run) fails when any test was skipped or left todo,
// and a kube suite whose binaries cannot be built fails the run with the cause: a test that
// cannot run must fail, never skip. Run for real (a fixture suite; a kube suite without Go).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/kube/binaries.js';
import { cleanEnv, run } from './run.js';

const scratch = mkdtempSync(join(tmpdir(), 'hermes-test-sh-'));
afterAll(() => { rmSync(scratch, { recursive: true, force: true }); });

describe('hack/test.sh', () => {
  it('fails, naming them, when tests were skipped or todo', async () => {
    const env = cleanEnv({ HERMES_TEST_RESULTS: join(scratch, 'results.json') });
    const result = await run('bash', [join(repoRoot, 'hack/test.sh'), '--config', 'test/integration/harness/fixtures/skips/vitest.config.ts'],
      { cwd: scratch, env });
    expect(result.stdout).toContain('tests: 1 passed, 0 failed, 2 skipped');
    expect(result.stderr).toContain('tests: FAILED: 2 tests were skipped or todo');
    expect(result.stderr).toContain('skips.fixture.ts: is skipped');
    expect(result.stderr).toContain('skips.fixture.ts: is todo');
    expect(result.code).toBe(1);
  }, 60_000);

  it('fails with the cause when the kube test plane cannot be built for the selected suites', async () => {
    const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => !/\bgo\b/.test(dir)).join(delimiter);
    const env = cleanEnv({ PATH: path, KUBE_TEST_BIN_DIR: join(scratch, 'no-kube-binaries'), HERMES_TEST_RESULTS: join(scratch, 'kube.json') });
    const result = await run('bash', [join(repoRoot, 'hack/test.sh'), 'test/integration/kube/informer.test.ts'], { cwd: scratch, env });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('Go is not installed');
    expect(result.stderr).toContain('bash hack/kube/build.sh failed (exit 3), so the kube test plane cannot start');
    expect(result.stdout + result.stderr).not.toMatch(/[1-9]\d* passed/);
  }, 60_000);
});
