#!/bin/sh
# Instructions per 1-byte write of uvfs (the write1 loop: pwrite of 1 byte at offset 0 of a
# tmpfs file, nothing watched), counted by callgrind in the default build and in the build
# with notification compiled out (`--no-default-features`). Seeds 000 and 001 want the two
# equal within 1%: the unwatched hooks cost nothing.
#
# Each binary runs its hidden `uvfs bench serve-uvfs` (the uvfs column of one configuration)
# under callgrind twice, for N and 2N writes; the difference of the two totals divided by N is
# the count per write, without process start-up and setup.
#
# valgrind cannot run rustix's vDSO lookup (rustix issue 1559: it faults in
# `check_elf_base`), so both binaries are built here with rustix's libc backend
# (`--cfg rustix_use_libc`), into target/callgrind/ (one dependency build for both; the two
# binaries are copied out of it as uvfs-notify and uvfs-nonotify).
#
#   scripts/callgrind-notify.sh [N]     (default 100000; needs valgrind: apt-get install valgrind)
set -eu
cd "$(dirname "$0")/.."
n="${1:-100000}"
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
dir="${CARGO_TARGET_DIR:-target}/callgrind"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg rustix_use_libc"
cargo build --release -p uvfs-cli --target-dir "$dir"
cp "$dir/release/uvfs" "$dir/uvfs-notify"
cargo build --release -p uvfs-cli --no-default-features --target-dir "$dir"
cp "$dir/release/uvfs" "$dir/uvfs-nonotify"

params='{"workload":"write1","threads":1,"depth":1,"sharing":"shared","tree":null,"messaging":null,"watch":"none"}'
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# Instructions callgrind counted for binary $1 doing $2 writes; checks the child's ready line
# says notification is compiled in ($3: true or false).
count() {
    echo "$2" | valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" \
        "$1" bench serve-uvfs --params "$params" >"$out/stdout" 2>"$out/stderr" || {
        cat "$out/stderr" >&2; exit 1; }
    grep -q "\"notify\":$3" "$out/stdout" || {
        echo "$1: not the build expected (notify $3):" >&2; cat "$out/stdout" "$out/stderr" >&2; exit 1; }
    grep -q '"elapsed_ns"' "$out/stdout" || { cat "$out/stdout" "$out/stderr" >&2; exit 1; }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/stderr" | tail -n 1
}

# Instructions per write of binary $1 (notification compiled in: $2).
per_write() {
    a="$(count "$1" "$n" "$2")"
    b="$(count "$1" "$((2 * n))" "$2")"
    echo "$(( (b - a) / n ))"
}

w="$(per_write "$dir/uvfs-notify" true)"
wo="$(per_write "$dir/uvfs-nonotify" false)"
echo "instructions per 1-byte write, nothing watched (callgrind; $n and $((2 * n)) writes, the difference):"
echo "  uvfs (notify on):             $w"
echo "  uvfs-nonotify (compiled out): $wo"
awk -v a="$w" -v b="$wo" 'BEGIN {
    d = (a - b) / b * 100;
    printf "  difference: %+.2f%% (%s)\n", d, (d <= 1 && d >= -1) ? "within 1%" : "NOT within 1%";
}'
