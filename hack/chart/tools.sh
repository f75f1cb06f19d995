#!/usr/bin/env bash
# Tools the chart tests need, from the Go module proxy only, cached in .cache/chart-tools/:
#   promrules   Prometheus' own rule parser (hack/chart/promrules: model/rulefmt + the PromQL
#               parser, what `promtool check rules` runs), built with -mod=readonly from its go.sum
#   crds/       the real CRDs of the third-party kinds the chart renders behind values, so that
#               `kubectl apply --dry-run=server` validates them too: ServiceMonitor, PrometheusRule
#               (prometheus-operator), ScaledObject, TriggerAuthentication (KEDA), HTTPRoute
#               (Gateway API), copied from those Go modules
# Prints the folder on stdout; progress on stderr. --print-dir prints it without building.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
PROM_OPERATOR=github.com/prometheus-operator/prometheus-operator@v0.86.1
KEDA=github.com/kedacore/keda/v2@v2.18.0
GATEWAY_API=sigs.k8s.io/gateway-api@v1.4.0
stamp="$(cat "$here/promrules/go.sum" "$here/promrules/main.go" "$0" | sha256sum | cut -c1-12)"
dir="${CHART_TOOLS_DIR:-$root/.cache/chart-tools/$stamp}"
log() { echo "[hack/chart] $*" >&2; }
if [[ "${1:-}" == "--print-dir" ]]; then echo "$dir"; exit 0; fi
ready() { [[ -x "$dir/promrules" && -f "$dir/crds/.complete" ]]; }
if ready; then echo "$dir"; exit 0; fi
command -v go >/dev/null 2>&1 || { log "error: Go is not installed; it builds promrules and fetches the CRDs (Go module proxy)"; exit 3; }
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if ready; then echo "$dir"; exit 0; fi
if [[ ! -x "$dir/promrules" ]]; then
  log "building promrules (github.com/prometheus/prometheus/model/rulefmt; cold ≈ 1-2 min)…"
  (cd "$here/promrules" && GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 go build -trimpath -o "$dir/promrules.tmp" . >&2)
  mv "$dir/promrules.tmp" "$dir/promrules"
fi
mod_dir() { (cd "$dir" && go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'); }
rm -rf "$dir/crds" && mkdir -p "$dir/crds"
log "fetching CRDs: $PROM_OPERATOR, $KEDA, $GATEWAY_API…"
po="$(mod_dir "$PROM_OPERATOR")"; keda="$(mod_dir "$KEDA")"; gw="$(mod_dir "$GATEWAY_API")"
cp "$po/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
   "$po/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" \
   "$keda/config/crd/bases/keda.sh_scaledobjects.yaml" \
   "$keda/config/crd/bases/keda.sh_triggerauthentications.yaml" \
   "$gw/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml" "$dir/crds/"
chmod -R u+w "$dir/crds"
touch "$dir/crds/.complete"
echo "$dir"
