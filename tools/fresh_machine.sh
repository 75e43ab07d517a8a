#!/bin/sh
# fresh_machine.sh [ROOT]: runs the README's two commands on a fresh Debian machine made with
# Debian's own tools, the way a newcomer meets them: a minimal bookworm (debootstrap --variant=
# minbase) with Debian's reference BLAS (libblas-dev, whose cblas.h is not OpenBLAS's) and no
# compiler, CMake or OpenBLAS. A copy of this checkout (committed files only) is built there with
# `make run` and `make test` as root; everything else must be installed by those commands.
# Needs root, debootstrap and network access (apt and PyPI). ROOT defaults to a temporary
# directory, removed at the end; KEEP=1 keeps it. Logs: ROOT/wick.log. Exit status 0 = both passed.
set -eu
[ "$(id -u)" = 0 ] || { echo "fresh_machine: needs root (chroot)"; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh_machine: needs debootstrap (apt-get install debootstrap)"; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$(mktemp -d "${TMPDIR:-/tmp}/wick-fresh.XXXXXX")}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cleanup() {
    umount "$root/proc" 2>/dev/null || true
    umount "$root/dev" 2>/dev/null || true
    # never remove a tree with the host's /dev or /proc still mounted inside it
    if grep -q " $root/" /proc/mounts; then
        echo "fresh_machine: $root still has mounts; not removed"
    elif [ "${KEEP:-0}" != 1 ]; then
        rm -rf "$root" "$root.debootstrap.log"
    fi
}
trap cleanup EXIT INT TERM

t=$(date +%s)
if [ ! -x "$root/usr/bin/apt-get" ]; then
    echo "fresh_machine: debootstrap bookworm (minbase) into $root"
    debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
        tail -20 "$root.debootstrap.log"; exit 1; }
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
echo "fresh_machine: apt-get install libblas-dev (the look-alike cblas.h)"
chroot "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
    apt-get install -y -qq --no-install-recommends libblas-dev ca-certificates >/dev/null'
for p in gcc cmake make; do
    chroot "$root" sh -c "command -v $p" >/dev/null && { echo "fresh_machine: $p is already there"; exit 1; }
done
chroot "$root" sh -c 'dpkg -l "libopenblas*" 2>/dev/null | grep -q "^ii"' &&
    { echo "fresh_machine: OpenBLAS is already there"; exit 1; }

rm -rf "$root/wick"
mkdir -p "$root/wick"
git -C "$here" archive HEAD | tar -x -C "$root/wick"
echo "fresh_machine: make run && make test in a fresh copy (log: $root/wick.log)"
rc=0
chroot "$root" sh -c 'cd /wick && make run && make test' >"$root/wick.log" 2>&1 || rc=$?
grep -E "^deps:|pydeps:|summary|tests passed|tests failed" "$root/wick.log" || true
echo "fresh_machine: exit $rc after $(($(date +%s) - t)) s"
[ $rc = 0 ] || tail -40 "$root/wick.log"
exit $rc
