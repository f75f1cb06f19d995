#!/usr/bin/env bash
# Builds the kubernetes-sigs/agent-sandbox controller from the Go module proxy into
# .cache/agent-sandbox/<version>/ of this checkout, copies the CRDs it ships (k8s/crds:
# Sandbox, SandboxTemplate, SandboxClaim, SandboxWarmPool) into <bin dir>/crds/ and its generated
# ClusterRoles (k8s/rbac.generated.yaml, k8s/extensions-rbac.generated.yaml) into <bin dir>/rbac/.
# Idempotent; progress on stderr, stdout carries only the bin dir. See docs/kube-test-plane.md.
#   --print-dir   print the bin dir without building anything
# AGENT_SANDBOX_BIN_DIR overrides the bin dir.
set -euo pipefail

version="v1.0.1" # the one place the agent-sandbox version is pinned
module="sigs.k8s.io/agent-sandbox"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin_dir="${AGENT_SANDBOX_BIN_DIR:-$root/.cache/agent-sandbox/$version}"

log() { echo "[hack/kube/agent-sandbox] $*" >&2; }

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$bin_dir"
  exit 0
fi

built() { [[ -x "$bin_dir/agent-sandbox-controller" && -f "$bin_dir/crds/agents.x-k8s.io_sandboxes.yaml" && -f "$bin_dir/rbac/extensions-rbac.generated.yaml" ]]; }
if built; then echo "$bin_dir"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  log "error: Go is not installed (no \`go\` on PATH), so the agent-sandbox controller $version cannot be built into $bin_dir."
  log "Install Go >= 1.26 (https://go.dev/dl/; the Go module proxy must be reachable)."
  exit 3
fi

mkdir -p "$bin_dir"
exec 9>"$bin_dir/.build.lock"
flock 9
if built; then echo "$bin_dir"; exit 0; fi

log "Downloading $module@$version from the Go module proxy..."
if ! dir="$(go mod download -json "$module@$version" | awk -F'"' '$2 == "Dir" { print $4 }')" || [[ -z "$dir" ]]; then
  log "error: $module@$version could not be downloaded (is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))."
  exit 3
fi

if [[ ! -x "$bin_dir/agent-sandbox-controller" ]]; then
  start=$SECONDS
  log "Building agent-sandbox-controller ($module/cmd/agent-sandbox-controller @ $version); cold: several minutes on 2 cores..."
  (cd "$dir" && GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    go build -trimpath -ldflags "-s -w" -o "$bin_dir/agent-sandbox-controller.tmp" ./cmd/agent-sandbox-controller >&2) || {
    log "error: building the agent-sandbox controller failed (see above; the module proxy must serve its dependencies)."
    exit 3
  }
  mv "$bin_dir/agent-sandbox-controller.tmp" "$bin_dir/agent-sandbox-controller"
  log "Built agent-sandbox-controller in $((SECONDS - start))s -> $bin_dir/agent-sandbox-controller"
fi

mkdir -p "$bin_dir/crds.tmp"
cp "$dir"/k8s/crds/*.yaml "$bin_dir/crds.tmp/"
chmod u+w "$bin_dir"/crds.tmp/*.yaml
rm -rf "$bin_dir/crds" && mv "$bin_dir/crds.tmp" "$bin_dir/crds"
mkdir -p "$bin_dir/rbac.tmp"
cp "$dir"/k8s/rbac.generated.yaml "$dir"/k8s/extensions-rbac.generated.yaml "$bin_dir/rbac.tmp/"
chmod u+w "$bin_dir"/rbac.tmp/*.yaml
rm -rf "$bin_dir/rbac" && mv "$bin_dir/rbac.tmp" "$bin_dir/rbac"
echo "$bin_dir"
