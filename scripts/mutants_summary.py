#!/usr/bin/env python3
"""Counts of a scripts/mutants.sh run, per file and per part, and the missed mutants.

Usage: scripts/mutants_summary.py OUT    (OUT as given to scripts/mutants.sh; works mid-run)
       scripts/mutants_summary.py OUT --tsv  (also prints every outcome as "part<TAB>kind<TAB>mutant",
                                              the form docs/mutants-after.tsv keeps)
       scripts/mutants_summary.py FILE.tsv   (counts from such a file, printed only; no logs, so no
                                              caught-by)
OUT may hold the parts themselves (OUT/partN-NAME/) or shards of them (OUT/shard-K/partN-NAME/,
from SHARD=K/N runs), which are counted together. Writes OUT/summary.txt, OUT/missed.txt (sorted by file and line), OUT/caught-by.txt (what
failed for each caught mutant) and OUT/suspect.txt (catches resting on a single conformance
case or on uvfs's per-case time limit, which load can trip: worth re-running alone).
"""
import collections
import glob
import os
import re
import sys

KINDS = ["caught", "missed", "timeout", "unviable"]
# cargo-mutants 27.1.0 ignores --re for struct-field deletions; these are outside the scope.
OUT_OF_SCOPE = re.compile(r" in <impl SuperOps for Tmpfs>::statfs$")


def log_of(outdir, mutant):
    """The log of one mutant: several share a position (NAME.log, NAME_001.log, ...)."""
    f, line, col = mutant.split(":")[:3]
    base = f.replace("/", "__") + f"_line_{line}_col_{col}"
    what = mutant.split(": ", 1)[1]
    for p in sorted(glob.glob(os.path.join(outdir, "log", base + "*.log"))):
        text = open(p, errors="replace").read()
        if what in text[:4000]:
            return text
    return None


def row(name, c):
    tested = c["caught"] + c["missed"] + c["timeout"]
    score = 100.0 * (c["caught"] + c["timeout"]) / tested if tested else 0.0
    total = sum(c[k] for k in KINDS)
    return (f"{name:<45} {total:>5} {c['caught']:>7} {c['missed']:>7} {c['timeout']:>8}"
            f" {c['unviable']:>9} {score:>6.1f}%")


def main():
    out = sys.argv[1]
    per_file = collections.defaultdict(collections.Counter)
    per_part = collections.defaultdict(collections.Counter)
    missed, ignored, caught_by, suspects, tsv = [], [], [], [], []
    outcomes = []  # (part, kind, mutant, mutants.out directory or None)
    if out.endswith(".tsv"):
        for line in filter(None, open(out).read().splitlines()):
            part, k, m = line.split("\t", 2)
            outcomes.append((part, k, m, None))
        out = None  # nothing is written beside a kept file
    else:
        dirs = glob.glob(os.path.join(out, "part*", "mutants.out"))
        dirs += glob.glob(os.path.join(out, "shard-*", "part*", "mutants.out"))
        for d in sorted(dirs):
            part = os.path.basename(os.path.dirname(d))
            for k in KINDS:
                path = os.path.join(d, k + ".txt")
                lines = open(path).read().splitlines() if os.path.exists(path) else []
                outcomes += [(part, k, m, d) for m in filter(None, lines)]
    for part, k, m, d in outcomes:
        tsv.append(f"{part}\t{k}\t{m}")
        if OUT_OF_SCOPE.search(m):
            ignored.append(f"{k}\t{m}")
            continue
        per_file[m.split(":")[0]][k] += 1
        per_part[part][k] += 1
        if k == "missed":
            missed.append(m)
        if k != "caught" or d is None:
            continue
        text = log_of(d, m)
        if text is None:
            caught_by.append(f"{m}\t?")
            continue
        tests = re.findall(r"^test (\S+) \.\.\. FAILED", text, re.M)
        cases = re.findall(r"^DIVERGED (\S+)", text, re.M)
        hang = "a hang?" in text
        what = tests + cases + (["uvfs-time-limit"] if hang else [])
        more = " ..." if len(what) > 6 else ""
        caught_by.append(f"{m}\t{' '.join(what[:6])}{more}")
        if not tests and "test result: FAILED" not in text and (len(cases) <= 1 or hang):
            suspects.append(f"{m}\t{' '.join(what)}")
    head = (f"{'':<45} {'done':>5} {'caught':>7} {'missed':>7} {'timeout':>8} {'unviable':>9}"
            f" {'score':>7}")
    total = collections.Counter()
    for c in per_part.values():
        total.update(c)
    text = (["per file", head] + [row(f, per_file[f]) for f in sorted(per_file)]
            + ["", "per part", head] + [row(p, per_part[p]) for p in sorted(per_part)]
            + [row("all", total), "",
               "score = (caught + timeout) / (caught + missed + timeout)",
               f"suspect catches (one conformance case or the uvfs time limit): {len(suspects)}"])
    if ignored:
        text += ["", "tested but out of scope:"] + ignored

    def key(m):
        f, line = m.split(":")[:2]
        return (f, int(line), m)

    for name, lines in [("summary.txt", text), ("missed.txt", sorted(missed, key=key)),
                        ("caught-by.txt", caught_by), ("suspect.txt", suspects)]:
        if out is None:
            break
        with open(os.path.join(out, name), "w") as f:
            f.write("".join(line + "\n" for line in lines))
    print("\n".join(text))
    if "--tsv" in sys.argv[2:]:
        print("\n".join(sorted(tsv)))


if __name__ == "__main__":
    main()
