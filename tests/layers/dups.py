#!/usr/bin/env python3
"""Lists the runs of lines that server/ holds twice: identical runs of at least six lines,
compared without their whitespace, blank lines, lone braces and #include lines, in any two
places (two files, or two places of one file). Each maximal run shared by two places is one
pair; a run found in three places is three pairs.

    tests/layers/dups.py [--min N] [--max PAIRS] [DIR ...]

Prints each pair (file:first-last of both places, and the run's length), then the count.
Exit 1 when --max is given and the count is above it."""
import argparse
import os
import re
import sys

SKIP = re.compile(r"^(#include.*|[{}]|\};?|\)?;?)$")


def lines_of(path):
    """The file's lines that count, as (normalized text, line number)."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            t = re.sub(r"\s+", "", line)
            if not t or SKIP.match(t):
                continue
            out.append((t, n))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=int, default=6)
    ap.add_argument("--max", type=int, default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    dirs = a.dirs or [os.path.join(root, "server")]
    files = []
    for d in dirs:
        for dp, _, fs in os.walk(d):
            for f in sorted(fs):
                if f.endswith((".c", ".h")):
                    files.append(os.path.join(dp, f))
    files.sort()
    text = [lines_of(p) for p in files]
    k = a.min
    win = {}
    for fi, ls in enumerate(text):
        for i in range(len(ls) - k + 1):
            key = tuple(t for t, _ in ls[i:i + k])
            win.setdefault(key, []).append((fi, i))
    pairs = []
    for key, locs in win.items():
        if len(locs) < 2:
            continue
        for x in range(len(locs)):
            for y in range(x + 1, len(locs)):
                (fa, ia), (fb, ib) = locs[x], locs[y]
                ta, tb = text[fa], text[fb]
                # Only the start of a maximal run.
                if ia > 0 and ib > 0 and ta[ia - 1][0] == tb[ib - 1][0]:
                    continue
                n = k
                while (ia + n < len(ta) and ib + n < len(tb) and ta[ia + n][0] == tb[ib + n][0]):
                    n += 1
                if fa == fb and ib < ia + n:
                    continue  # a run overlapping itself (repeated lines)
                pairs.append((n, fa, ia, fb, ib))
    pairs.sort(key=lambda p: (-p[0], files[p[1]], p[2]))
    rel = lambda fi: os.path.relpath(files[fi], root)
    if not a.quiet:
        for n, fa, ia, fb, ib in pairs:
            ta, tb = text[fa], text[fb]
            print("%3d  %s:%d-%d  %s:%d-%d" % (n, rel(fa), ta[ia][1], ta[ia + n - 1][1], rel(fb),
                                                tb[ib][1], tb[ib + n - 1][1]))
    print("%d duplicated pairs of %d or more lines" % (len(pairs), k))
    if a.max is not None and len(pairs) > a.max:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
