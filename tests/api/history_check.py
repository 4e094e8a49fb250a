"""What the tests of a history migration share (test_history_migration.py,
test_history_two_parts.py): the audit views they compare, docs/audit.md's ten questions, a
SQLite file's size once vacuumed, the rows a server's own start adds to the views, and the
comparison of every answer before and after the migration."""
import os
import re
import sqlite3

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
VIEWS = ["audit_decisions", "audit_vertex_decisions", "audit_scalings", "audit_events",
         "audit_plugin_calls", "audit_policy_revisions", "audit_config_changes",
         "audit_decision_options"]


def questions(pg=False):
    """docs/audit.md's ten questions: the sqlite3 shell's form (its quotes unescaped), or the
    portable one that the page runs on PostgreSQL."""
    text = open(os.path.join(ROOT, "docs", "audit.md")).read()
    section = text[re.search(r"(?m)^#+ Ten audit questions", text).start():]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    if pg:
        return re.findall(r'^q "([^"]*)"\s*$', section, re.M)
    return [q.replace('\\"', '"') for q in
            re.findall(r'^sqlite3 -readonly (?:governor|audit)\.db "(.*)"$', section, re.M)]


def vacuumed_size(db, tmp, name):
    """The bytes of SQLite file db vacuumed into tmp/name, and its decisions."""
    path = os.path.join(tmp, name)
    if os.path.exists(path):
        os.remove(path)
    c = sqlite3.connect(db)
    c.execute("VACUUM INTO ?", (path,))
    n = c.execute("SELECT count(*) FROM decisions").fetchone()[0]
    c.close()
    return os.path.getsize(path), n


def without_start(before, after):
    """after without what the server's start added: it logs its policy load as an event, and
    loads the shipped policies, a revision of its own when they changed since the fixture was
    written (loaded_at, the second column, after the fixture's last load)."""
    last = max(r[0] for r in before["audit_events"][1])
    after["audit_events"] = (after["audit_events"][0],
                             [r for r in after["audit_events"][1] if r[0] <= last])
    loaded = max(r[1] for r in before["audit_policy_revisions"][1])
    after["audit_policy_revisions"] = (
        after["audit_policy_revisions"][0],
        [r for r in after["audit_policy_revisions"][1] if r[1] <= loaded])
    return after


def compare(ck, before, after):
    """One check per view and question: the same answer after the migration as before (an
    answer is rows, or (columns, rows))."""
    for k in before:
        same = before[k] == after[k]
        detail = ""
        if not same:
            b, a = before[k], after[k]
            (bc, br), (ac, ar) = (b, a) if isinstance(b, tuple) else ((None, b), (None, a))
            diff = [(x, y) for x, y in zip(br, ar) if x != y][:1]
            detail = "columns %s -> %s, rows %d -> %d, first difference %r" % (
                bc, ac, len(br), len(ar), diff)
        ck.check(same, "%s answers as before the migration %s" % (k, detail))
