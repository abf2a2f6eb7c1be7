#!/bin/sh
# Instructions per 1-byte write of uvfs (the write1 loop: pwrite of 1 byte at offset 0 of a
# tmpfs file, nothing watched), counted by callgrind in the default build and in the build
# with notification compiled out (scripts/build-nonotify.sh builds both). Seeds 000 and 001
# want the two equal within 1%: the unwatched hooks cost nothing.
#
# Each binary runs its hidden `uvfs bench serve-uvfs` (the uvfs column of one configuration)
# under callgrind twice, for N and 2N writes; the difference of the two totals divided by N is
# the count per write, without process start-up and setup.
#
#   scripts/callgrind-notify.sh [N]     (default 100000; valgrind must be installed)
set -eu
cd "$(dirname "$0")/.."
n="${1:-100000}"
target="${CARGO_TARGET_DIR:-target}"
with="$target/release/uvfs"
without="$target/uvfs-nonotify/release/uvfs"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
for b in "$with" "$without"; do
    [ -x "$b" ] || { echo "no $b: run scripts/build-nonotify.sh first" >&2; exit 1; }
done
[ "$without" -nt "$with" ] || [ ! "$with" -nt "$without" ] || {
    echo "$without is older than $with: run scripts/build-nonotify.sh again" >&2; exit 1; }
params='{"workload":"write1","threads":1,"depth":1,"sharing":"shared","tree":null,"messaging":null,"watch":"none"}'
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# Instructions callgrind counted for binary $1 doing $2 writes.
count() {
    echo "$2" | valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" \
        "$1" bench serve-uvfs --params "$params" >"$out/stdout" 2>"$out/stderr" || {
        cat "$out/stderr" >&2; exit 1; }
    grep -q '"ready":true' "$out/stdout" || { cat "$out/stdout" "$out/stderr" >&2; exit 1; }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/stderr" | tail -n 1
}

per_write() {
    a="$(count "$1" "$n")"
    b="$(count "$1" "$((2 * n))")"
    echo "$(( (b - a) / n ))"
}

w="$(per_write "$with")"
wo="$(per_write "$without")"
echo "instructions per 1-byte write ($n and $((2 * n)) writes, the difference):"
echo "  uvfs (notify on):           $w"
echo "  uvfs-nonotify (compiled out): $wo"
awk -v a="$w" -v b="$wo" 'BEGIN {
    d = (a - b) / b * 100;
    printf "  difference: %+.2f%% (%s)\n", d, (d <= 1 && d >= -1) ? "within 1%" : "NOT within 1%";
}'
