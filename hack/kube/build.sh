#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager (tests run only its garbage collector) and etcd
# for the test control plane into .cache/kube/<k8s-version>/,
# reusing them when present, unpacks kubectl + helm (tools.sh) into .cache/kube-tools/ and
# builds the agent-sandbox controller (agent-sandbox.sh) into .cache/agent-sandbox/<version>/.
# Progress goes to stderr; stdout carries only the bin dir path.
#   --print-dir   print the bin dir without building anything
# KUBE_TEST_BIN_DIR overrides the bin dir. See docs/kube-test-plane.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$here/go.mod")"
minor="${version#v1.}"; minor="${minor%%.*}"
bin_dir="${KUBE_TEST_BIN_DIR:-$root/.cache/kube/$version}"

log() { echo "[hack/kube] $*" >&2; }

if [[ "${1:-}" == "--print-dir" ]]; then # where the binaries are (or will be), without building
  echo "$bin_dir"
  exit 0
fi

built() { [[ -x "$bin_dir/kube-apiserver" && -x "$bin_dir/kube-controller-manager" && -x "$bin_dir/etcd" ]]; }

"$here/tools.sh" >/dev/null || { log "error: kubectl/helm could not be unpacked (see above)"; exit 3; }
"$here/agent-sandbox.sh" >/dev/null || { log "error: the agent-sandbox controller could not be built (see above)"; exit 3; }

if built; then
  echo "$bin_dir"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "error: Go is not installed (no \`go\` on PATH), so kube-apiserver $version and etcd cannot be built into $bin_dir."
  log "Install Go >= 1.26 (https://go.dev/dl/; the Go module proxy must be reachable), or put prebuilt binaries there (KUBE_TEST_BIN_DIR)."
  exit 3
fi

mkdir -p "$bin_dir"
# Two test workers may ask at once: the second waits for the first build, then reuses it.
exec 9>"$bin_dir/.build.lock"
flock 9
if built; then
  echo "$bin_dir"
  exit 0
fi

cd "$here"
ldflags="-s -w \
  -X k8s.io/component-base/version.gitVersion=$version \
  -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=$minor \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

build() { # build <name> <package>
  local start=$SECONDS
  log "Building $1 ($2 @ $version); cold: ~1 min for etcd, ~5-8 min for kube-apiserver, ~3 min more for kube-controller-manager on 2 cores..."
  GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin_dir/$1.tmp" "$2" >&2
  mv "$bin_dir/$1.tmp" "$bin_dir/$1"
  log "Built $1 in $((SECONDS - start))s -> $bin_dir/$1"
}

[[ -x "$bin_dir/etcd" ]] || build etcd ./cmd/etcd
[[ -x "$bin_dir/kube-apiserver" ]] || build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
[[ -x "$bin_dir/kube-controller-manager" ]] || build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
echo "$bin_dir"
