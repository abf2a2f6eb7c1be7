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
# Usage: [FROM=S] scripts/random-long.sh OUT [SEEDS [CHUNK [WORKERS]]]   (defaults 1000000 20000 3)
#        scripts/random-long.sh OUT report
set -eu
OUT=${1:?usage: scripts/random-long.sh OUT [SEEDS [CHUNK [WORKERS]]] | OUT report}
top=$(cd "$(dirname "$0")/.." && pwd)

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
for d in divs:
    print(d)
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
