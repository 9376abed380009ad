#!/bin/sh
# Make the base image of deploy/Containerfile, localhost/debian:bookworm, from Debian's own
# mirror: debootstrap unpacks a minimal Debian 12 into a folder, and `podman import` turns
# the folder into an image. No image registry is asked for anything. Run as root:
#
#   sh deploy/make-base-image.sh [MIRROR]     # MIRROR: default http://deb.debian.org/debian
#
# (apt-get install -y debootstrap podman first.) docs/deploy.md, "In containers".
set -eu
mirror=${1:-http://deb.debian.org/debian}
root=$(mktemp -d /var/tmp/orderchaos-bookworm.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror"
# apt inside the image uses the same mirror
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" > "$root/etc/apt/sources.list"
tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - localhost/debian:bookworm
