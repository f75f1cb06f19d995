#!/usr/bin/env bash
# This checkout's own Postgres and Redis, for `make dev` and `make test`.
#
#   hack/services.sh up      start what is not running (idempotent), print `export` lines
#   hack/services.sh env     print the `export` lines only
#   hack/services.sh status  ports, where the data lives, what runs
#   hack/services.sh down    stop this checkout's servers (whatever ports they were started on)
#   hack/services.sh purge   stop them and delete their data
#
# A service is started only when its URL (DATABASE_URL / REDIS_URL) is unset: a user who points
# at their own Postgres or Redis gets exactly that. Ports: hack/ports.sh (one block per checkout,
# from a hash of its path; HERMES_PG_PORT / HERMES_REDIS_PORT override). A port that answers but
# is not this checkout's server is refused, never used. State lives in .hermes/ (git-ignored);
# when we are root, Postgres runs as the `postgres` user, and if that user cannot reach .hermes/
# (a checkout under /root or in a 0700 folder) its data lives in ~postgres/hermes/<checkout key>/,
# recorded in .hermes/postgres.location. Progress and errors go to stderr, so
# `eval "$(hack/services.sh up)"` works; every failure exits non-zero and says why.
# Works from any folder. See docs/harness.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
state="$root/.hermes"
# shellcheck source=hack/ports.sh
. "$root/hack/ports.sh"
pg_port=$HERMES_PG_PORT
redis_port=$HERMES_REDIS_PORT
redis_dir="$state/redis"
location_file="$state/postgres.location"
export PGCONNECT_TIMEOUT=5 # a foreign listener may never answer

log() { printf '[services] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

# --- ports ---------------------------------------------------------------------------------------
port_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port_holder() { # " (users:((…)))" when ss may show who listens on the port
  command -v ss >/dev/null 2>&1 || return 0
  local who
  who=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'users:(([^)]*))' | head -n1 || true)
  if [ -n "$who" ]; then printf ' %s' "$who"; fi
}

port_taken() { # port_taken <port> <variable> <what> [<what answers there>]
  die "port $1 ($2) is in use by another process$(port_holder "$1")${4:+ — $4} — not this checkout's $3. \
Stop that process, or give this checkout another port: export $2=<a free port> and run the same command again."
}

# --- packages ------------------------------------------------------------------------------------
apt_install() { # apt_install <package> <why>
  if ! is_root; then
    die "$2 is missing: install the Debian package $1 (sudo apt-get install -y $1), or set the URL to a server of yours"
  fi
  mkdir -p "$state"
  log "installing $1 (apt-get)…"
  if ! apt-get install -y "$1" >"$state/apt.log" 2>&1; then
    apt-get update >>"$state/apt.log" 2>&1 || true
    apt-get install -y "$1" >>"$state/apt.log" 2>&1 || { tail -n 20 "$state/apt.log" >&2; die "apt-get install $1 failed (above; full log: $state/apt.log)"; }
  fi
}

pg_find_bin() { # Debian keeps initdb/pg_ctl in /usr/lib/postgresql/<major>/bin; elsewhere they are on PATH
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
  if [ -n "$d" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; fi
}

# --- Postgres ------------------------------------------------------------------------------------
# Postgres refuses to run as root: as root it runs as `postgres` (from / — our folder may be closed to it).
as_pg() { if is_root; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

pg_locate() { # sets pg_data: recorded choice, else .hermes/postgres if the server's user can reach it, else ~postgres/hermes/<key>
  if [ -f "$location_file" ]; then pg_data=$(cat "$location_file"); return; fi
  pg_data="$state/postgres"
  if [ -f "$pg_data/PG_VERSION" ] || ! is_root; then return; fi
  id -u postgres >/dev/null 2>&1 || die "Postgres refuses to run as root and there is no 'postgres' user to run it as: \
install Debian's postgresql package (it creates that user), or run this as a normal user"
  command -v runuser >/dev/null 2>&1 || die "runuser (util-linux) is missing: it runs Postgres as the postgres user when we are root"
  mkdir -p "$state"
  if as_pg test -x "$state"; then return; fi
  local home key
  home=$(getent passwd postgres | cut -d: -f6)
  [ -n "$home" ] && as_pg test -w "$home" || die "the postgres user cannot enter $state (a folder above it is closed to it) \
and cannot write its home '${home:-?}' either: open a path to the checkout (chmod o+x on each folder) or run as a normal user"
  key="$(basename "$root" | tr -c 'A-Za-z0-9._\n-' _)-$(printf '%s' "$root" | sha256sum | cut -c1-12)"
  pg_data="$home/hermes/$key/data"
  log "postgres: the postgres user cannot enter $state; its data goes to $pg_data"
}

pg_running_port() { # the port this checkout's Postgres runs on, if it runs
  as_pg "$pg_bin/pg_ctl" -D "$pg_data" status >/dev/null 2>&1 || return 1
  sed -n 4p "$pg_data/postmaster.pid" 2>/dev/null
}

pg_query() { "$pg_bin/psql" -X -Atq -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "$1" 2>&1; }

pg_init() {
  local parent out
  parent=$(dirname "$pg_data")
  if is_root; then
    if [ "$pg_data" = "$state/postgres" ]; then
      install -d -o postgres -g postgres -m 0700 "$pg_data"
    else # ~postgres/hermes/<key>/ — the checkout's path is written beside the data, for people
      as_pg install -d -m 0700 "$(dirname "$parent")" "$parent" "$pg_data"
      printf '%s\n' "$root" | as_pg tee "$parent/checkout" >/dev/null
    fi
  else
    install -d -m 0700 "$pg_data"
  fi
  log "postgres: initialising $pg_data"
  out=$(as_pg "$pg_bin/initdb" -D "$pg_data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 2>&1) \
    || { printf '%s\n' "$out" >&2; die "initdb -D $pg_data failed (its output is above)"; }
  printf '%s\n' "$pg_data" >"$location_file"
}

pg_start() {
  log "postgres: starting on 127.0.0.1:$pg_port"
  # No Unix socket: clients use TCP, and a socket path may be too long or in a folder closed to postgres.
  if ! as_pg "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_data/postgres.log" -w -t 60 \
      -o "-p $pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=400 -c shared_buffers=256MB" \
      start >/dev/null 2>&1 8>&-; then
    tail -n 20 "$pg_data/postgres.log" >&2 2>/dev/null || true
    die "postgres did not start on port $pg_port (HERMES_PG_PORT); its log is above ($pg_data/postgres.log)"
  fi
}

pg_check_identity() { # whatever answers on the port must be the Postgres of $pg_data
  local dir
  if ! dir=$(pg_query 'show data_directory'); then
    port_taken "$pg_port" HERMES_PG_PORT Postgres "it does not answer as this checkout's Postgres would: ${dir//$'\n'/ }"
  fi
  [ "$(realpath -m "$dir")" = "$(realpath -m "$pg_data")" ] \
    || port_taken "$pg_port" HERMES_PG_PORT Postgres "a Postgres with data directory $dir"
}

pg_up() {
  if [ -n "${DATABASE_URL:-}" ]; then log "postgres: using DATABASE_URL from the environment"; return; fi
  pg_bin=$(pg_find_bin)
  if [ -z "$pg_bin" ]; then apt_install postgresql "PostgreSQL (initdb, pg_ctl, psql)"; pg_bin=$(pg_find_bin); fi
  [ -n "$pg_bin" ] || die "PostgreSQL's initdb/pg_ctl are still not found after installing postgresql"
  pg_locate
  local running
  if running=$(pg_running_port) && [ "$running" != "$pg_port" ]; then
    die "this checkout's Postgres already runs on port $running, but port $pg_port is asked (HERMES_PG_PORT or hack/ports.sh). \
Use that port (export HERMES_PG_PORT=$running), or stop it first: hack/services.sh down"
  fi
  if ! port_answers "$pg_port"; then
    [ -f "$pg_data/PG_VERSION" ] || pg_init
    pg_start
  fi
  pg_check_identity
  local has
  has=$(pg_query "select 1 from pg_database where datname = 'hermes'") || die "cannot query postgres on port $pg_port: $has"
  if [ "$has" != 1 ]; then
    has=$(pg_query 'create database hermes') || die "cannot create database hermes on port $pg_port: $has"
  fi
}

pg_down() {
  pg_bin=$(pg_find_bin)
  [ -n "$pg_bin" ] || return 0
  pg_locate
  [ -f "$pg_data/PG_VERSION" ] || return 0
  if as_pg "$pg_bin/pg_ctl" -D "$pg_data" status >/dev/null 2>&1; then
    as_pg "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w -t 60 stop >/dev/null 2>&1 \
      || die "pg_ctl stop failed for $pg_data; see $pg_data/postgres.log"
    log "postgres: stopped"
  fi
}

# --- Redis ---------------------------------------------------------------------------------------
redis_pid() { # the pid of this checkout's redis-server, if it runs (its pidfile, its name, its folder)
  local pid
  pid=$(cat "$redis_dir/redis.pid" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = redis-server ] || return 1
  [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$redis_dir" ] || return 1
  echo "$pid"
}

redis_cli() { timeout 5 redis-cli -h 127.0.0.1 -p "$@"; } # a foreign listener may never answer

redis_dir_at() { # the dir of the Redis answering on a port ("" if it does not say)
  redis_cli "$1" config get dir 2>/dev/null | tail -n1 || true
}

redis_start() {
  log "redis: starting on 127.0.0.1:$redis_port"
  rm -f "$redis_dir/redis.pid"
  : >"$redis_dir/redis.log"
  # noeviction: BullMQ loses jobs under any evicting policy.
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$redis_dir" --daemonize yes \
    --pidfile "$redis_dir/redis.pid" --logfile "$redis_dir/redis.log" \
    --maxmemory-policy noeviction --save '' --appendonly no >/dev/null 8>&- \
    || die "redis-server refused its arguments (see $redis_dir/redis.log)"
  printf '%s\n' "$redis_port" >"$redis_dir/port"
  local deadline=$((SECONDS + 15))
  until redis_cli "$redis_port" ping >/dev/null 2>&1; do
    if ((SECONDS > deadline)) || { [ -s "$redis_dir/redis.pid" ] && ! redis_pid >/dev/null; } \
        || grep -q 'Failed listening\|Could not create server' "$redis_dir/redis.log" 2>/dev/null; then
      tail -n 20 "$redis_dir/redis.log" >&2 || true
      die "redis-server did not start on port $redis_port (HERMES_REDIS_PORT); its log is above ($redis_dir/redis.log)"
    fi
    sleep 0.1
  done
}

redis_up() {
  if [ -n "${REDIS_URL:-}" ]; then log "redis: using REDIS_URL from the environment"; return; fi
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 \
    || apt_install redis-server "Redis (redis-server, redis-cli)"
  mkdir -p "$redis_dir"
  local running
  if redis_pid >/dev/null && running=$(cat "$redis_dir/port" 2>/dev/null) && [ "$running" != "$redis_port" ]; then
    die "this checkout's Redis already runs on port $running, but port $redis_port is asked (HERMES_REDIS_PORT or hack/ports.sh). \
Use that port (export HERMES_REDIS_PORT=$running), or stop it first: hack/services.sh down"
  fi
  port_answers "$redis_port" || redis_start
  local dir
  dir=$(redis_dir_at "$redis_port")
  [ "$dir" = "$redis_dir" ] || port_taken "$redis_port" HERMES_REDIS_PORT Redis "${dir:+a Redis with dir $dir}"
}

redis_down() {
  local pid
  pid=$(redis_pid) || return 0
  kill -TERM "$pid"
  local deadline=$((SECONDS + 20))
  while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    if ((SECONDS > deadline)); then kill -KILL "$pid" 2>/dev/null || true; break; fi
    sleep 0.1
  done
  rm -f "$redis_dir/redis.pid"
  log "redis: stopped"
}

# --- commands ------------------------------------------------------------------------------------
print_env() {
  echo "export DATABASE_URL=${DATABASE_URL:-postgresql://postgres@127.0.0.1:$pg_port/hermes}"
  echo "export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:$redis_port}"
}

lock() { # one services.sh at a time per checkout (make dev and make test may start together);
  # the servers we start must not inherit fd 8 (`8>&-`), or they would hold the lock for ever
  mkdir -p "$state"
  exec 8>"$state/services.lock"
  flock -w 120 8 || die "another hack/services.sh of this checkout has held $state/services.lock for 2 minutes"
}

status() {
  local pg_bin pg_data running
  echo "checkout:  $root"
  echo "ports:     postgres $pg_port, redis $redis_port (hack/ports.sh; HERMES_PG_PORT / HERMES_REDIS_PORT override)"
  pg_bin=$(pg_find_bin)
  if [ -n "$pg_bin" ]; then
    pg_locate
    running=$(pg_running_port) && running="running on port $running" || running="not running"
    echo "postgres:  $pg_data ($running)"
  else
    echo "postgres:  not installed"
  fi
  running=$(redis_pid) && running="running on port $(cat "$redis_dir/port" 2>/dev/null), pid $running" || running="not running"
  echo "redis:     $redis_dir ($running)"
}

purge() {
  pg_down
  redis_down
  pg_bin=$(pg_find_bin)
  if [ -n "$pg_bin" ]; then
    pg_locate
    if [ "$pg_data" = "$state/postgres" ]; then rm -rf "$pg_data"
    else as_pg rm -rf "$(dirname "$pg_data")"; as_pg rmdir --ignore-fail-on-non-empty "$(dirname "$(dirname "$pg_data")")"; fi
    log "postgres: deleted $pg_data"
  fi
  rm -rf "$redis_dir" "$location_file"
  log "redis: deleted $redis_dir"
}

case "${1:-up}" in
  up) lock; pg_up; redis_up; print_env ;;
  env) print_env ;;
  status) status ;;
  down) lock; pg_down; redis_down ;;
  purge) lock; purge ;;
  *) echo "usage: $0 up|env|status|down|purge" >&2; exit 2 ;;
esac
