#!/bin/sh
# PostgreSQL of deploy/compose.yaml (run as root in the container): on first start a new
# cluster in the volume, whose user orderchaos is trusted from the compose network's subnet
# ($SUBNET, the one the network was made with: only the site's containers are on it) and nowhere else, then the
# server as Debian's postgres user on port 5432 of that network.
set -eu
data=/var/lib/postgresql/data
bin=/usr/lib/postgresql/15/bin
chown postgres:postgres "$data"
if [ ! -f "$data/PG_VERSION" ]; then
    runuser -u postgres -- "$bin/initdb" -D "$data" -U orderchaos -A trust -E UTF8 --locale=C
    echo "host all orderchaos ${SUBNET:?set SUBNET to the compose network's subnet} trust" >> "$data/pg_hba.conf"
fi
exec runuser -u postgres -- "$bin/postgres" -D "$data" -c listen_addresses='*' -p 5432 -k /tmp
