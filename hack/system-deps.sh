#!/usr/bin/env bash
# Debian packages the tests and `make dev` use, installed when missing (needs root, as on the
# project's machines and CI): redis-server (project-local Redis), bubblewrap (the test kubelet's
# and the local sandbox's isolation), openssl (test PKI). Postgres comes with the machine.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "[system-deps] missing Debian packages: ${missing[*]} — install them (apt-get install -y ${missing[*]})" >&2
  exit 1
fi
echo "[system-deps] installing ${missing[*]} (apt-get)…" >&2
apt-get install -y "${missing[@]}" >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y "${missing[@]}" >/dev/null; }
