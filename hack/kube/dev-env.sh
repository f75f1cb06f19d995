#!/usr/bin/env bash
# A long-lived local kube-apiserver + etcd for `make dev K8S=1` (state in .hermes/kube/).
#
#   hack/kube/dev-env.sh up     build/reuse the binaries, start what is not running (idempotent),
#                               print `export KUBECONFIG=…`
#   hack/kube/dev-env.sh down   stop it
#   hack/kube/dev-env.sh env    print the `export` line only
#
# Ports: this checkout's HERMES_KUBE_PORT and HERMES_ETCD_PORT (+1 for etcd peers) from
# hack/ports.sh; set them to override. Progress goes to stderr so
# `kube_env=$(hack/kube/dev-env.sh up) && eval "$kube_env"` works; a failure exits non-zero and
# says why (a port held by another process, a process's log tail). See docs/kube-test-plane.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
# shellcheck source=hack/ports.sh
. "$root/hack/ports.sh"
cd "$root"
if [ "${1:-up}" = up ]; then "$root/hack/kube/build.sh" >/dev/null; fi
exec node --import tsx test/support/kube/devControlPlane.ts "${1:-up}"
