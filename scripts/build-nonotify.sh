#!/bin/sh
# Builds the two `uvfs` binaries that `uvfs bench`'s uvfs and uvfs-nonotify columns compare:
# the usual release build (target/release/uvfs), then the same sources with the `notify`
# feature off (`--no-default-features`: every notification hook compiled out) into a target
# directory of its own (target/uvfs-nonotify/release/uvfs), since cargo features unify within
# one build. The column skips, saying why, while the second binary is missing or older than
# the first; run this again after changing the code.
#
#   scripts/build-nonotify.sh && target/release/uvfs bench write1 messaging \
#       --columns host,uvfs,uvfs-nonotify,uvfs-vanilla-notify
set -eu
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -p uvfs-cli
cargo build --release -p uvfs-cli --no-default-features --target-dir "$target/uvfs-nonotify"
# Built from the sources the first binary was built from, even when cargo found it fresh.
touch "$target/uvfs-nonotify/release/uvfs"
echo "built $target/release/uvfs and $target/uvfs-nonotify/release/uvfs (notification compiled out)"
