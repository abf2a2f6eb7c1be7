#!/usr/bin/env bash
# The random differential tester's long run (issue 6: at least a million seeds of 120 ops):
# SEEDS seeds from 0 in chunks of CHUNK, each chunk's report in OUT/chunks/START.txt. Resumable:
# run it again with the same OUT and it goes on after the last finished chunk, with the
# binaries copied to OUT/bin on the first call (a later build cannot change a run half done;
# OUT/commit says which commit they are). Then `scripts/random-long.sh OUT report` adds up
# the chunks. Needs root (the host side), a release build, and hours: run it under nohup.
#
# Several runners may share one OUT (on a machine with spare cores, or to start a second one at
# FROM=500000): each claims a chunk by creating its OUT/chunks/START.txt.part, and a chunk that
# has one is skipped. A killed runner leaves its .part behind: delete those before resuming.
#
# A seed reported as diverged is replayed by `confirm` (after the run, nothing else running):
# three times, alone, with the run's binaries; it is confirmed if a replay diverges again, and
# listed as "did not replay" otherwise (the host's answer then depended on the moment: an
# RCU walk that `RESOLVE_CACHED` turns into EAGAIN when another mount changes the machine-wide
# mount_lock mid-walk, a mount ID another process took). The report shows both kinds.
#
# Usage: [FROM=S] scripts/random-long.sh OUT [SEEDS [CHUNK [WORKERS]]]   (defaults 1000000 20000 3)
#        scripts/random-long.sh OUT report
#        scripts/random-long.sh OUT confirm
set -eu
OUT=${1:?usage: scripts/random-long.sh OUT [SEEDS [CHUNK [WORKERS]]] | OUT report}
top=$(cd "$(dirname "$0")/.." && pwd)

if [ "${2:-}" = confirm ]; then
  : > "$OUT/confirm.txt.part"
  for seed in $(cat "$OUT"/chunks/*.txt | sed -n 's/^DIVERGED seed \([0-9]*\) .*/\1/p' | sort -un); do
    again=0
    for _ in 1 2 3; do
      if ! "$OUT/bin/uvfs-conformance-random" --start "$seed" --seeds 1 --minimise 0 \
        > "$OUT/confirm-$seed.txt" 2>&1; then
        again=$((again + 1))
      fi
    done
    echo "$seed $again" >> "$OUT/confirm.txt.part"
  done
  mv "$OUT/confirm.txt.part" "$OUT/confirm.txt"
  exec "$0" "$OUT" report
fi

if [ "${2:-}" = report ]; then
  exec python3 - "$OUT" <<'PY'
import glob, os, re, sys
out = sys.argv[1]
tot = dict(seeds=0, ops=0, calls=0, ticked=0, matched=0, diverged=0, secs=0.0)
classes, chunks, divs = {}, 0, []
for f in sorted(glob.glob(os.path.join(out, "chunks", "*.txt")), key=lambda p: int(os.path.basename(p)[:-4])):
    text = open(f).read()
    m = re.search(r"random: (\d+) seeds from \d+ \(\d+ ops each, (\d+) ticked\), (\d+) ops on each side, (\d+) of them calls .* in ([\d.]+) s", text)
    n = re.search(r"random: (\d+) matched, \d+ (?:stopped at|met) an expected divergence \(([^)]*)\), (\d+) diverged", text)
    if not (m and n):
        print(f"{f}: unfinished or unreadable")
        continue
    chunks += 1
    tot["seeds"] += int(m[1]); tot["ticked"] += int(m[2]); tot["ops"] += int(m[3])
    tot["calls"] += int(m[4]); tot["secs"] += float(m[5])
    tot["matched"] += int(n[1]); tot["diverged"] += int(n[3])
    for c in n[2].split(", "):
        if c and c != "none":
            name, k = c.rsplit(" ", 1)
            classes[name] = classes.get(name, 0) + int(k)
    divs += [l for l in text.splitlines() if l.startswith("DIVERGED")]
commit = open(os.path.join(out, "commit")).read().strip() if os.path.exists(os.path.join(out, "commit")) else "?"
print(f"commit {commit}: {chunks} chunks, {tot['seeds']} seeds ({tot['ticked']} ticked), "
      f"{tot['ops']} ops on each side, {tot['calls']} of them calls, {tot['secs']/3600:.1f} h of chunk time")
print(f"{tot['matched']} matched, {sum(classes.values())} stopped or went on at an expected divergence "
      f"({', '.join(f'{k} {v}' for k, v in sorted(classes.items())) or 'none'}), {tot['diverged']} diverged")
confirm = {}
cpath = os.path.join(out, "confirm.txt")
if os.path.exists(cpath):
    for line in open(cpath):
        seed, again = line.split()
        confirm[seed] = int(again)
for d in divs:
    seed = re.match(r"DIVERGED seed (\d+)", d)[1]
    if seed in confirm:
        verdict = (f"CONFIRMED: diverged again in {confirm[seed]} of 3 replays" if confirm[seed]
                   else "did not replay: 3 of 3 replays matched")
    else:
        verdict = "not replayed yet (`confirm`)"
    print(f"{d}\n  -> {verdict}")
if confirm:
    firm = sum(1 for v in confirm.values() if v)
    print(f"confirmed divergences: {firm}; reported but not replaying: {len(confirm) - firm}")
PY
fi

SEEDS=${2:-1000000}
CHUNK=${3:-20000}
WORKERS=${4:-3}
mkdir -p "$OUT/chunks"
if [ ! -x "$OUT/bin/uvfs-conformance-random" ]; then
  (cd "$top" && cargo build --release -p uvfs-conformance)
  mkdir -p "$OUT/bin"
  cp "$top/target/release/uvfs-conformance-random" "$top/target/release/uvfs-conformance-host" "$OUT/bin/"
  git -C "$top" rev-parse HEAD > "$OUT/commit"
  git -C "$top" status --porcelain --untracked-files=no > "$OUT/uncommitted"
fi
for ((start = ${FROM:-0}; start < SEEDS; start += CHUNK)); do
  f="$OUT/chunks/$start.txt"
  if [ -f "$f" ]; then continue; fi
  # The claim: creating the .part fails if another runner made it first (noclobber is O_EXCL).
  if ! (set -o noclobber; : > "$f.part") 2>/dev/null; then continue; fi
  n=$((SEEDS - start < CHUNK ? SEEDS - start : CHUNK))
  echo "$(date +%T) seeds $start..$((start + n))"
  # Exit status 1 means divergences: they are in the chunk's report; go on.
  "$OUT/bin/uvfs-conformance-random" --start "$start" --seeds "$n" --workers "$WORKERS" \
    --minimise 2 >> "$f.part" 2>&1 || true
  mv "$f.part" "$f"
done
"$0" "$OUT" report
