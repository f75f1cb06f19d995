#!/usr/bin/env bash
# This checkout's loopback ports for its project-local servers, so that two checkouts on one
# machine never meet on the same Postgres, Redis, etcd or kube-apiserver by default.
#
#   hack/ports.sh          print `export HERMES_…_PORT=…` lines
#   . hack/ports.sh        (sourced) set and export them
#
# The ports come from a hash of the checkout's real path: one block of five in 20000–29999
# (below Linux's ephemeral range, so a client socket never holds one of them for a moment):
#   HERMES_PG_PORT     base      Postgres          (hack/services.sh)
#   HERMES_REDIS_PORT  base + 1  Redis             (hack/services.sh)
#   HERMES_KUBE_PORT   base + 2  kube-apiserver    (hack/kube/dev-env.sh, `make dev K8S=1`)
#   HERMES_ETCD_PORT   base + 3  etcd; peers on HERMES_ETCD_PORT + 1
# A variable already set in the environment wins. Two checkouts whose hashes collide (1 in 2000)
# are told so by hack/services.sh, which refuses a port that answers but is not this checkout's.
hermes_ports() {
  local here root slot base
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
  root="$(cd "$here/.." && pwd -P)"
  slot=$(( 16#$(printf '%s' "$root" | sha256sum | cut -c1-8) % 2000 ))
  base=$(( 20000 + slot * 5 ))
  export HERMES_PG_PORT="${HERMES_PG_PORT:-$base}"
  export HERMES_REDIS_PORT="${HERMES_REDIS_PORT:-$((base + 1))}"
  export HERMES_KUBE_PORT="${HERMES_KUBE_PORT:-$((base + 2))}"
  export HERMES_ETCD_PORT="${HERMES_ETCD_PORT:-$((base + 3))}"
  local name
  for name in HERMES_PG_PORT HERMES_REDIS_PORT HERMES_KUBE_PORT HERMES_ETCD_PORT; do
    if ! [[ "${!name}" =~ ^[0-9]+$ ]] || (( ${!name} < 1 || ${!name} > 65534 )); then
      echo "[ports] error: $name=${!name} is not a TCP port (1–65534)" >&2
      return 1
    fi
  done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  hermes_ports
  for name in HERMES_PG_PORT HERMES_REDIS_PORT HERMES_KUBE_PORT HERMES_ETCD_PORT; do
    echo "export $name=${!name}"
  done
else
  hermes_ports
fi
