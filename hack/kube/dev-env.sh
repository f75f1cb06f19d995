#!/usr/bin/env bash
# A long-lived local kube-apiserver + etcd for `make dev K8S=1` (state in .hermes/kube/).
#
#   hack/kube/dev-env.sh up     start what is not running (idempotent), print `export KUBECONFIG=…`
#   hack/kube/dev-env.sh down   stop it
#   hack/kube/dev-env.sh env    print the `export` line only
#
# Ports: HERMES_KUBE_PORT (56443), HERMES_ETCD_PORT (52379, and +1 for etcd peers).
# Progress goes to stderr so `eval "$(hack/kube/dev-env.sh)"` works. See docs/kube-test-plane.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
exec node --import tsx test/support/kube/devControlPlane.ts "${1:-up}"
