#!/usr/bin/env python3
"""The server's folders are layers, each using only those below it (server/README.md):

    core | base < time < options < plugin < store < decision < http < cli, sim < main.c

core includes no server header at all; a file may include its own folder's headers and those
of lower folders, never a higher one's (nor cli's from sim or sim's from cli). The link order
of the per-folder libraries (CMakeLists.txt) enforces the calls; this checks the includes,
which a header-only use would otherwise slip past. Prints each offending line; exit 1 if any."""
import os
import re
import sys

ORDER = ["base", "time", "options", "plugin", "store", "decision", "http", "cli"]
RANK = {d: i + 1 for i, d in enumerate(ORDER)}
RANK["sim"] = RANK["cli"]
RANK["core"] = 0
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path, root):
    rel = os.path.relpath(path, root)
    return rel.split(os.sep)[0] if os.sep in rel else None


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server")
    root = os.path.normpath(root)
    bad = 0
    seen = set()
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            mine = folder_of(path, root)
            if mine is not None and mine not in RANK:
                print("%s: folder %s has no place in the layers" % (path, mine))
                bad += 1
                continue
            seen.add(mine)
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                m = INC.match(line)
                if not m:
                    continue
                inc = m.group(1)
                theirs = inc.split("/")[0] if "/" in inc else None
                if theirs is None:
                    # A same-folder header by its bare name (the core's own files).
                    if mine == "core" and os.path.exists(os.path.join(dirpath, inc)):
                        continue
                    print("%s:%d: include \"%s\" without its folder" % (path, n, inc))
                    bad += 1
                    continue
                if theirs not in RANK:
                    print("%s:%d: include \"%s\" of no known folder" % (path, n, inc))
                    bad += 1
                    continue
                if mine is None:  # main.c wires everything
                    continue
                ok = theirs == mine or RANK[theirs] < RANK[mine]
                if mine == "core" and theirs != "core":
                    ok = False
                if ok is False or (theirs != mine and RANK[theirs] == RANK[mine]):
                    print("%s:%d: %s includes \"%s\", a layer not below it" % (path, n, mine, inc))
                    bad += 1
    for d in RANK:
        if d not in seen:
            print("layer %s has no source file" % d)
            bad += 1
    print("layers: %s" % ("%d offending includes" % bad if bad else "every include points down"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
