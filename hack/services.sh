#!/usr/bin/env bash
# Project-local Postgres and Redis for `make dev` and `make test`.
#
#   hack/services.sh up     start what is missing (idempotent), print `export` lines
#   hack/services.sh down   stop the project-local servers
#   hack/services.sh env    print the `export` lines only
#
# A service is started only when its URL (DATABASE_URL / REDIS_URL) is unset: a user who points
# at their own Postgres or Redis gets exactly that. State lives in .hermes/ (git-ignored).
# Progress goes to stderr so `eval "$(hack/services.sh up)"` works.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.hermes"
pg_port=${HERMES_PG_PORT:-55432}
redis_port=${HERMES_REDIS_PORT:-56379}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)

log() { printf '[services] %s\n' "$*" >&2; }

need_apt() {  # need_apt <command> <debian package>
  command -v "$1" >/dev/null 2>&1 && return 0
  log "installing $2 (apt-get)…"
  if [ "$(id -u)" != 0 ]; then log "error: $1 is missing and I am not root; install the $2 package"; exit 1; fi
  (apt-get install -y "$2" >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y "$2" >/dev/null; })
}

pg_up() {
  [ -n "${DATABASE_URL:-}" ] && { log "postgres: using DATABASE_URL from the environment"; return; }
  if [ -z "$pg_bin" ]; then need_apt psql postgresql; pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1); fi
  local data="$state/postgres" run="$state/postgres-run" as=()
  # Postgres refuses to run as root: run it as the `postgres` system user in that case.
  [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  mkdir -p "$state" "$run"
  [ "$(id -u)" = 0 ] && chown postgres: "$run"
  if [ ! -f "$data/PG_VERSION" ]; then
    log "postgres: initialising $data"
    mkdir -p "$data"; [ "$(id -u)" = 0 ] && chown postgres: "$data"
    "${as[@]}" "$pg_bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  if ! "${as[@]}" "$pg_bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    log "postgres: starting on 127.0.0.1:$pg_port"
    "${as[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$run/postgres.log" -w -t 60 \
      -o "-p $pg_port -k $run -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=256MB" start >/dev/null \
      || { log "postgres failed to start (port $pg_port taken? set HERMES_PG_PORT). Log tail:"; tail -n 5 "$run/postgres.log" >&2; exit 1; }
  fi
  if ! "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -Atc "select 1 from pg_database where datname='hermes'" | grep -q 1; then
    "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -qc 'create database hermes' >/dev/null
  fi
}

redis_up() {
  [ -n "${REDIS_URL:-}" ] && { log "redis: using REDIS_URL from the environment"; return; }
  need_apt redis-server redis-server
  mkdir -p "$state/redis"
  if ! redis-cli -p "$redis_port" ping >/dev/null 2>&1; then
    log "redis: starting on 127.0.0.1:$redis_port"
    # noeviction: BullMQ loses jobs under any evicting policy.
    redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$state/redis" --daemonize yes \
      --pidfile "$state/redis/redis.pid" --logfile "$state/redis/redis.log" \
      --maxmemory-policy noeviction --save '' --appendonly no >/dev/null
    for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  fi
}

print_env() {
  echo "export DATABASE_URL=${DATABASE_URL:-postgresql://postgres@127.0.0.1:$pg_port/hermes}"
  echo "export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:$redis_port}"
}

down() {
  local as=(); [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  [ -f "$state/postgres/PG_VERSION" ] && "${as[@]}" "$pg_bin/pg_ctl" -D "$state/postgres" -m fast stop >/dev/null 2>&1 && log "postgres: stopped"
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 && log "redis: stopped"
  true
}

case "${1:-up}" in
  up) pg_up; redis_up; print_env ;;
  env) print_env ;;
  down) down ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
