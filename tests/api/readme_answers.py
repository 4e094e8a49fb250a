#!/usr/bin/env python3
"""Rewrites the sample answers of docs/audit.md's "Ten audit questions" from a database filled by
audit_sim.py: each question's `sqlite3 -readonly audit.db "..."` command is run against
DB and its result replaces the table under "Sample answer". Check the result by hand before
committing (the answers are the documentation of what each query shows).

usage: python3 tests/api/readme_answers.py DB [docs/audit.md]
"""
import re
import sqlite3
import sys

MAX_ROWS = 10
# The page that holds the ten questions (relative to the repository's root).
PAGE = "docs/audit.md"


def cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        v = round(v, 3)
        if v == int(v):
            v = int(v)
    return str(v).replace("|", "\\|").replace("\n", " ")


def answer(db, sql):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    con.close()
    if not rows:
        return "Sample answer: no rows.\n"
    out = ["Sample answer:", "", "| " + " | ".join(cols) + " |",
           "|" + "---|" * len(cols)]
    for r in rows[:MAX_ROWS]:
        out.append("| " + " | ".join(cell(v) for v in r) + " |")
    if len(rows) > MAX_ROWS:
        out += ["", "(%d rows in all)" % len(rows)]
    return "\n".join(out) + "\n"


def main():
    rewrite(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else PAGE)


def rewrite(db, path):
    """Rewrites the sample answers of the page at path from the database db."""
    text = open(path).read()
    start = re.search(r"(?m)^#+ Ten audit questions", text).start()
    body = text.index("\n", start) + 1
    nxt = re.search(r"(?m)^#{1,2} ", text[body:])
    end = body + nxt.start() if nxt else len(text)
    section = text[start:end]
    blocks = re.split(r"(?m)^(?=\*\*\d+\. )", section)
    for i, b in enumerate(blocks):
        m = re.search(r'^sqlite3 -readonly audit\.db "(.*)"$', b, re.M)
        if not m:
            continue
        sql = m.group(1).replace('\\"', '"')
        head = b[:b.index("Sample answer")]
        # The old answer: its first line, then its table, blank lines and "(N rows in all)";
        # what follows it (text, a block) stays.
        rest = b[b.index("Sample answer"):].split("\n")
        k = 1
        while k < len(rest) and (not rest[k].strip() or rest[k].startswith(("|", "("))):
            k += 1
        tail = "\n".join(rest[k:])
        tail = tail.rstrip("\n") + "\n\n" if tail.strip() else ""
        blocks[i] = head + answer(db, sql) + "\n" + tail
    rest = text[end:].lstrip("\n")
    text = text[:start] + "".join(blocks).rstrip("\n") + ("\n\n" + rest if rest else "\n")
    open(path, "w").write(text)


if __name__ == "__main__":
    main()
