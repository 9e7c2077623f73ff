#!/usr/bin/env bash
# A PostgreSQL server for the test suite on 127.0.0.1:5432; prints the TEST_DATABASE_URL
# to use as its only line on stdout (messages go to stderr).
#
#   1. A server already answers and lets user postgres in without a password (the
#      project's machines and CI's start one, trust auth, database `test`): use it.
#   2. Otherwise, as root or with password-less sudo: install Debian's `postgresql` if its
#      server is missing, start its cluster, let user postgres in over 127.0.0.1 without a
#      password (a line in that cluster's pg_hba.conf), and create database `test`.
#
# Exits 0 with the URL, or 1 with the reason on stderr. It never asks for input, every
# step has a time limit, and running it again changes nothing.
set -euo pipefail

HOST=127.0.0.1
PORT=5432
DB_USER=postgres
DB_NAME="test"
URL="postgres://$DB_USER@$HOST:$PORT/$DB_NAME"
HBA_LINE="host all $DB_USER $HOST/32 trust  # added by reduction-lab scripts/ensure_postgres.sh"

log() { echo "ensure_postgres: $*" >&2; }
fail() { log "$*"; exit 1; }

answers() {
    if command -v pg_isready >/dev/null 2>&1; then
        pg_isready -q -h "$HOST" -p "$PORT" -t 5
    else
        timeout 5 bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null
    fi
}

# SQL as $DB_USER over TCP; -w: fail rather than prompt for a password.
sql() {
    PGCONNECT_TIMEOUT=5 timeout 30 psql -X -w -q -At -h "$HOST" -p "$PORT" -U "$DB_USER" \
        -d postgres -c "$1" </dev/null
}

logs_in() { sql 'select 1' >/dev/null 2>&1; }

# The server may exist and answer, yet the database `test` may not (a fresh install).
finish() {
    if ! command -v psql >/dev/null 2>&1; then
        log "a server answers on $HOST:$PORT (no psql here to check the login)"
        echo "$URL"
        exit 0
    fi
    logs_in || fail "a server answers on $HOST:$PORT, but user $DB_USER cannot log in" \
        "without a password; give the suite another server with TEST_DATABASE_URL=postgres://USER:PASS@HOST:PORT/NAME"
    [ "$(sql "select rolcreatedb or rolsuper from pg_roles where rolname = current_user")" = t ] \
        || fail "user $DB_USER may not create databases, which the test runner needs"
    if [ -z "$(sql "select 1 from pg_database where datname = '$DB_NAME'")" ]; then
        sql "create database $DB_NAME" || fail "could not create database $DB_NAME"
        log "created database $DB_NAME"
    fi
    log "PostgreSQL answers on $HOST:$PORT as user $DB_USER"
    echo "$URL"
    exit 0
}

if answers; then
    finish
fi

log "no PostgreSQL server answers on $HOST:$PORT; trying to start one"
if [ "$(id -u)" = 0 ]; then
    as_root() { "$@"; }
elif command -v sudo >/dev/null 2>&1 && timeout 5 sudo -n true 2>/dev/null; then
    as_root() { sudo -n "$@"; }
else
    fail "installing or starting PostgreSQL needs root (or password-less sudo), which this user lacks"
fi

if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || ! command -v pg_ctlcluster >/dev/null; then
    command -v apt-get >/dev/null 2>&1 || fail "no PostgreSQL server installed, and no apt-get to install one"
    log "installing PostgreSQL from Debian's packages (apt-get update && apt-get install -y postgresql)"
    # A failed update need not be the end: the package lists already there may do.
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 \
        apt-get -q -o DPkg::Lock::Timeout=120 update </dev/null >&2 \
        || log "apt-get update failed or timed out; trying the install all the same"
    as_root env DEBIAN_FRONTEND=noninteractive timeout 900 \
        apt-get -q -y -o DPkg::Lock::Timeout=120 install postgresql </dev/null >&2 \
        || fail "apt-get install postgresql failed or timed out"
fi

# Debian's layout: /etc/postgresql/<version>/<cluster>; the install makes cluster `main`.
version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
[ -n "$version" ] || fail "no PostgreSQL server under /usr/lib/postgresql after the install"
if [ ! -d "/etc/postgresql/$version/main" ]; then
    log "creating cluster $version/main on port $PORT"
    as_root timeout 120 pg_createcluster --port "$PORT" "$version" main >&2 </dev/null \
        || fail "pg_createcluster $version main failed"
fi
hba="/etc/postgresql/$version/main/pg_hba.conf"
# The first matching line wins, so ours goes on top.
if ! as_root grep -qF "$HBA_LINE" "$hba"; then
    as_root sed -i "1i $HBA_LINE" "$hba" || fail "could not edit $hba"
    log "let user $DB_USER in from $HOST without a password ($hba)"
    # A running cluster must reread the file; a stopped one reads it when it starts.
    as_root timeout 60 pg_ctlcluster --skip-systemctl-redirect "$version" main reload \
        </dev/null >/dev/null 2>&1 || true
fi
log "starting cluster $version/main"
# Already running is fine here; what counts is the probe below.
as_root timeout 120 pg_ctlcluster --skip-systemctl-redirect "$version" main start \
    >&2 </dev/null 2>&1 || true
for _ in $(seq 30); do
    answers && finish
    sleep 1
done
fail "cluster $version/main did not answer on $HOST:$PORT within 30 s ($(pg_lsclusters 2>&1 | tr '\n' ' '))"
