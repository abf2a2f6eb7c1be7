#!/usr/bin/env bash
# Mutation testing of uvfs's walk, permission, attribute, read/write, rename and advisory-lock
# code with cargo-mutants (`cargo install cargo-mutants`); docs/testing.md explains the scope
# and the results. Not run by CI: the five parts take hours on two cores.
#
#   scripts/mutants.sh [list] [part1 part2 part3 part4 part5]
#
# Runs the named parts (default: all five, one after the other) on the checkout this script
# is in; `list` only prints what each part would test. Output: $OUT/partN-NAME/mutants.out/
# ({caught,missed,timeout,unviable}.txt, outcomes.json, log/, diff/) and $OUT/partN-NAME.log
# (default OUT: /tmp/uvfs-mutants, outside the tree, which cargo-mutants copies). Needs root
# for the differential suite. Check once, without this script, that the unmutated tree passes
# `cargo test -p uvfs -p uvfs-conformance --lib --tests`: the parts skip cargo-mutants' baseline.
# MUTANTS_TIMEOUT (seconds, default 240) bounds one mutant's tests; ITERATE=1 passes --iterate,
# which skips mutants caught in an earlier run into the same OUT (to re-test survivors after
# adding tests). SHARD=K/N runs only shard K (0-based) of N of each part, mutant i on shard
# i mod N (cargo-mutants' round-robin sharding), so that a pass too long for one sitting can
# be split: give each shard its own OUT; together the N shards test every mutant once.
#
# cargo-mutants runs this script as cargo ($CARGO, with UVFS_MUTANTS_AS_CARGO set): it passes
# every call to cargo unchanged except the test run, which it splits in two so that a mutant
# the quick suites catch is not first put through the slow concurrency stress test (cargo runs
# test targets in alphabetical order and stops at the first that fails): first the unit tests
# and every integration test of both crates but the slow ones, then the slow ones
# ($SLOW_TESTS, default "concurrency concurrency_files"). The tests run are the same as `--lib --tests`.
set -u

if [ -n "${UVFS_MUTANTS_AS_CARGO:-}" ]; then
  if [ "${1:-}" = test ] && [[ " $* " != *" --no-run "* ]] && [[ " $* " == *" --tests "* ]]; then
    args=()
    for a in "$@"; do
      case $a in --lib | --tests) ;; *) args+=("$a") ;; esac
    done
    slow=" ${SLOW_TESTS:-concurrency concurrency_files} "
    first=() last=()
    for f in crates/uvfs/tests/*.rs crates/uvfs-conformance/tests/*.rs; do
      t=$(basename "$f" .rs)
      if [[ $slow == *" $t "* ]]; then last+=(--test "$t"); else first+=(--test "$t"); fi
    done
    cargo "${args[@]}" --lib --bins "${first[@]}" || exit $?
    [ "${#last[@]}" -eq 0 ] && exit 0
    exec cargo "${args[@]}" "${last[@]}"
  fi
  exec cargo "$@"
fi

self=$(realpath "$0")
cd "$(dirname "$self")/.."
OUT=${OUT:-/tmp/uvfs-mutants}
# Smaller test binaries link faster and copy faster into cargo-mutants' scratch trees.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
export CARGO=$self UVFS_MUTANTS_AS_CARGO=1
# -j 2: two scratch trees; --timeout: a missed mutant's tests take 20 s on an idle machine and
# over a minute when other builds share the two cores.
COMMON=(-p uvfs --test-package uvfs --test-package uvfs-conformance -j 2 --copy-target true
  --timeout ${MUTANTS_TIMEOUT:-240} --baseline skip ${ITERATE:+--iterate}
  ${SHARD:+--shard "$SHARD" --sharding round-robin})

TMPFS_RW='RegData::resize|copy_small|zeroed_page|<impl FileOps for RegFile>::(read|write)'
RENAME='Task::renameat2|rename|<impl InodeOps for Node>::(rename|setattr)'
# Functions are chosen with --re on the mutant's name. cargo-mutants 27.1.0 ignores --re and
# --exclude-re for struct-field deletions, so part 4 also tests the five field deletions of
# `Tmpfs::statfs`'s `StatFs` (out of scope; leave them out of the score).
filters() {
  case $1 in
  part1-walk-perm) echo "-f crates/uvfs/src/vfs/namei/*.rs -f crates/uvfs/src/vfs/permission.rs" ;;
  part2-rw) echo "-f crates/uvfs/src/sys/rw.rs -f crates/uvfs/src/fs/tmpfs/file.rs" ;;
  part3-attr) echo "-f crates/uvfs/src/sys/attr.rs -f crates/uvfs/src/vfs/inode.rs" ;;
  part4-rename) echo "-f crates/uvfs/src/sys/namespace.rs -f crates/uvfs/src/fs/tmpfs/dir.rs -f crates/uvfs/src/fs/tmpfs/mod.rs" ;;
  part5-locks) echo "-f crates/uvfs/src/vfs/locks/*.rs" ;;
  esac
}
regex() {
  case $1 in
  part2-rw) echo "^crates/uvfs/src/sys/rw\.rs:|^crates/uvfs/src/fs/tmpfs/file\.rs:[0-9]+:[0-9]+: (replace ($TMPFS_RW) |.* in ($TMPFS_RW)\$)" ;;
  part4-rename) echo "^[^:]+:[0-9]+:[0-9]+: (replace ($RENAME) |.* in ($RENAME)\$)" ;;
  esac
}

list=
parts=()
for a in "$@"; do
  case $a in
  list) list=1 ;;
  part1 | part1-*) parts+=(part1-walk-perm) ;;
  part2 | part2-*) parts+=(part2-rw) ;;
  part3 | part3-*) parts+=(part3-attr) ;;
  part4 | part4-*) parts+=(part4-rename) ;;
  part5 | part5-*) parts+=(part5-locks) ;;
  *) echo "usage: $0 [list] [part1 part2 part3 part4 part5]" >&2 && exit 2 ;;
  esac
done
[ "${#parts[@]}" -eq 0 ] && parts=(part1-walk-perm part2-rw part3-attr part4-rename part5-locks)

mkdir -p "$OUT"
for p in "${parts[@]}"; do
  # shellcheck disable=SC2046 # the globs are cargo-mutants' own, quoted by set -f
  set -f
  f=($(filters "$p"))
  set +f
  sel=("${f[@]}")
  re=$(regex "$p")
  [ -n "$re" ] && sel+=(--re "$re")
  [ "$p" = part3-attr ] && sel+=(-E '<impl std::fmt::Debug for Inode>::fmt')
  if [ -n "$list" ]; then
    cargo-mutants mutants -p uvfs --list "${sel[@]}" ${SHARD:+--shard "$SHARD" --sharding round-robin} | sed "s/^/$p /"
    continue
  fi
  echo "== $(date +%T) $p: $(cargo-mutants mutants -p uvfs --list "${sel[@]}" ${SHARD:+--shard "$SHARD" --sharding round-robin} | wc -l) mutants"
  cargo-mutants mutants "${COMMON[@]}" -o "$OUT/$p" "${sel[@]}" -- --lib --tests \
    >"$OUT/$p.log" 2>&1
  echo "== $(date +%T) $p done (exit $?): $(wc -l <"$OUT/$p/mutants.out/missed.txt") missed"
done
