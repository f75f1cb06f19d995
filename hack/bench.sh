#!/usr/bin/env bash
# `make bench`: every benchmark, one after another, each printing its figures next to the raw
# baselines it measures in the same run:
#   run                 turns/s and message → reply latency (Postgres, Redis; the agent loop)
#   sandbox-bubblewrap  bubblewrap: an empty command vs raw spawn and raw bwrap
#   sandbox-kubernetes  a Pod per call vs the raw Pod create → Succeeded → delete
#   sandbox-session     mode session: warm vs cold session start vs a raw Pod and raw pods/exec
#   learning            the prompt with 200 skills; session_search over 100 000 messages vs raw SQL
#   slack               signed Slack events at increasing rates to one gateway vs the raw commit
#   kanban              the Kanban dispatcher's tick over 10 000 tasks vs a raw scan and a raw claim
#   cron                10 000 CronJobs: scheduler CPU per tick, dispatch lag p99 at the minute boundary vs raw Postgres
# Each is its own Node process and ends what it started (the test plane's etcd, kube-apiserver,
# controllers and sandbox processes die with it: test/support/kube/process.ts). A benchmark that
# fails does not stop the others; the script then exits non-zero naming it. Arguments: the
# benchmarks (names above) to run instead of all of them. `run`, `slack` and `cron` need DATABASE_URL and REDIS_URL
# (the Makefile starts this checkout's services), the kubernetes ones the kube build (`make kube`).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$root"
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(run sandbox-bubblewrap sandbox-kubernetes sandbox-session learning slack kanban cron)
failed=()
for b in "${benches[@]}"; do
  [ -f "bench/$b.ts" ] || { printf '[bench] no benchmark bench/%s.ts\n' "$b" >&2; exit 2; }
  printf '\n[bench] === bench/%s.ts ===\n' "$b" >&2
  started=$SECONDS
  if node --import tsx "bench/$b.ts"; then
    printf '[bench] %s done in %ss\n' "$b" $((SECONDS - started)) >&2
  else
    status=$?
    printf '[bench] %s FAILED (exit %s) after %ss\n' "$b" "$status" $((SECONDS - started)) >&2
    failed+=("$b")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  printf '[bench] failed: %s\n' "${failed[*]}" >&2
  exit 1
fi
