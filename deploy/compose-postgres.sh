#!/bin/sh
# PostgreSQL of deploy/compose.yaml (run as root in the container): on first start a new
# cluster in the volume (user orderchaos, trusted on 127.0.0.1 only, which the host network
# keeps to this machine), then the server as Debian's postgres user, on 127.0.0.1:${PGPORT:-5433}.
set -eu
data=/var/lib/postgresql/data
bin=/usr/lib/postgresql/15/bin
chown postgres:postgres "$data"
if [ ! -f "$data/PG_VERSION" ]; then
    runuser -u postgres -- "$bin/initdb" -D "$data" -U orderchaos -A trust -E UTF8 --locale=C
fi
exec runuser -u postgres -- "$bin/postgres" -D "$data" -c listen_addresses=127.0.0.1 -p "${PGPORT:-5433}" -k /tmp
