#!/usr/bin/env bash
# Runs the test suite (vitest) and ends with a plain summary line that any CI can read.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .hermes
results=.hermes/test-results.json
rm -f "$results"
npx vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@"
status=$?
if [ -f "$results" ]; then
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
  ' "$results"
fi
exit $status
