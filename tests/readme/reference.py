#!/usr/bin/env python3
"""reference.py BUILD_DIR - docs/api.md's reason codes, constraint codes, vertex fields and
evaluated figures (between <!-- reference:begin --> and <!-- reference:end -->) are what
`governor reference` prints from the core's own tables: fails when they differ, or when the
command names a code or field without a description. With UPDATE=1 in the environment it
rewrites the page's copy instead. Also: `governor reference` takes no flag (an unknown one exits 2)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN, END = "<!-- reference:begin -->\n", "<!-- reference:end -->\n"


def main():
    governor = os.path.join(sys.argv[1], "governor")
    p = subprocess.run([governor, "reference"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print(p.stderr)
        print("FAIL: governor reference exited %d" % p.returncode)
        return 1
    bad = subprocess.run([governor, "reference", "--bogus"], capture_output=True, text=True,
                         timeout=60)
    if bad.returncode != 2 or "unknown option" not in bad.stderr:
        print("FAIL: governor reference --bogus: exit %d, %r (2 and 'unknown option' expected)"
              % (bad.returncode, bad.stderr[:200]))
        return 1
    path = os.path.join(ROOT, "docs", "api.md")
    text = open(path).read()
    if BEGIN not in text or END not in text:
        print("FAIL: docs/api.md has no %s ... %s section" % (BEGIN.strip(), END.strip()))
        return 1
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END, start)
    if text[start:end] == p.stdout:
        print("docs/api.md's reference is what governor reference prints")
        return 0
    if os.environ.get("UPDATE"):
        open(path, "w").write(text[:start] + p.stdout + text[end:])
        print("docs/api.md's reference rewritten")
        return 0
    old, new = text[start:end].splitlines(), p.stdout.splitlines()
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else "(nothing)"
        b = new[i] if i < len(new) else "(nothing)"
        if a != b:
            print("first difference, line %d of the section:\n  the page:  %s\n  governor:  %s"
                  % (i + 1, a, b))
            break
    print("FAIL: docs/api.md's reference differs from `governor reference` "
          "(UPDATE=1 python3 tests/readme/reference.py BUILD_DIR rewrites it)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
