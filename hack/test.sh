#!/usr/bin/env bash
# Runs the test suite (vitest) and ends with a plain summary line that any CI can read:
#   tests: N passed, F failed, S skipped
# It fails (non-zero) when a test failed, when any test was skipped or left todo (a test that
# cannot run must fail with its cause, never skip), when a file could not be collected, or when no
# test ran at all. The run has an id (HERMES_TEST_RUN) that every test-plane process carries; on
# exit — however the run ends — those still running are killed. Works from any folder.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$root"
mkdir -p .hermes
# Always a new id: one inherited from an outer run would make this run reap that one's processes.
export HERMES_TEST_RUN="$(date +%s)-$$"
reap() { node --import tsx test/support/kube/reap.ts "$HERMES_TEST_RUN" || echo "[test.sh] warning: the test-plane reaper failed" >&2; }
trap reap EXIT
results="${HERMES_TEST_RESULTS:-.hermes/test-results.json}"
rm -f "$results"
# In the background, so that a SIGTERM/SIGINT to this script is handled at once: vitest is told
# to stop, and the EXIT trap reaps whatever its test plane left.
node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@" &
vitest=$!
trap 'kill -TERM "$vitest" 2>/dev/null; wait "$vitest"; exit 143' TERM
trap 'kill -TERM "$vitest" 2>/dev/null; wait "$vitest"; exit 130' INT # (a background job ignores SIGINT)
wait "$vitest"
status=$?
if [ ! -f "$results" ]; then
  echo "tests: vitest wrote no results (exit $status)" >&2
  exit $((status == 0 ? 1 : status))
fi
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
  const problems = [];
  if (skipped > 0) {
    const names = r.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === "pending" || a.status === "skipped" || a.status === "todo")
      .map((a) => `  ${f.name.replace(process.cwd() + "/", "")}: ${a.fullName}`));
    problems.push(`${skipped} tests were skipped or todo; a test that cannot run must fail with its cause:\n${names.slice(0, 20).join("\n")}`);
  }
  const broken = r.testResults.filter((f) => f.status === "failed" && !f.assertionResults.some((a) => a.status === "failed"));
  if (broken.length > 0) problems.push(`${broken.length} test files failed outside any test (collection, a hook, the global setup; see above)`);
  if (r.numFailedTests > 0) problems.push(`${r.numFailedTests} tests failed (see above)`);
  if (r.numTotalTests === 0) problems.push("no test ran");
  for (const p of problems) console.error(`tests: FAILED: ${p}`);
  process.exit(problems.length > 0 ? 1 : 0);
' "$results"
summary=$?
exit $((status != 0 ? status : summary))
