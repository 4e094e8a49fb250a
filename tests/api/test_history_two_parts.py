"""The history in two parts: a history written by the version before it answers exactly as
before once migrated (SQLite's migration 012; PostgreSQL's 004 when run
with GOVERNOR_TEST_PG=1), and decisions written after it read back as they were sent.

The fixture (tests/api/data/history_v11.json.xz, written by make_history_v11.py with that
version's binary) holds, for each store, the history audit_sim.py's 1,000 steps left (three
jobs, a config change, a deletion, plugin calls of the `freeze` executor) and what that version
answered about it: GET /v1/jobs/{job}/decisions, /events, /timeline (two steps) and /advice,
GET /v1/decisions/{id} of every decision, POST /v1/replay and `governor replay --db` of each job
(as recorded and with a candidate option). The test loads the old rows into a store at the old
schema, reads every audit view and docs/audit.md's ten audit questions from it, starts the server
under test on it (which migrates), and compares: every view's rows, the ten answers, every
GET's text byte for byte (the timeline included; an advice's replays decide the history again,
so of them only what they read is compared), and what the replays read of the history (the
candidate's side is the binary under test's own: it may change by design). Then it
posts new decisions, each retried (a retry of a sample now kept in the job's chunks of samples
is a repeat), and checks that they read back as they were answered, in the API and the views,
and that GET /v1/decisions/{id} gives the sample as the server read it. On SQLite it prints the
bytes a decision before and after (both files vacuumed).

Run against the previous version, it fails: no migration 012 (004), so nothing logs it."""
import json
import lzma
import os
import re
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import audit_sim  # noqa: E402
from gov import BINARY, PG, Server, Checks  # noqa: E402
from history_check import VIEWS, compare, questions, vacuumed_size, without_start  # noqa: E402

if PG:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pg"))
    import pgtmp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
FIXTURE = os.path.join(HERE, "data", "history_v11.json.xz")
POLICIES = os.path.join(ROOT, "policies")
# what replay reads from the store, compared exactly; the candidate's decisions are the binary
# under test's (compared by count only)
RECORDED = ("job", "from", "to", "replayed", "warmup", "decisions", "errors",
            "scalings_recorded", "subtask_minutes_recorded")


def advice_read(text):
    """An advice answer without what its replays decide again: each replay's recorded side."""
    a = json.loads(text)
    for x in a.get("advice", []):
        r = x.pop("replay", None)
        if isinstance(r, dict):
            x["replay_recorded"] = {k: r.get(k) for k in ("decisions", "scalings_recorded")}
    return a


def rows_of(db, sql):
    if PG:
        return [list(r) for r in pgtmp.rows(db, sql)]
    c = sqlite3.connect(db)
    try:
        return [list(r) for r in c.execute(sql).fetchall()]
    finally:
        c.close()


def columns_of(db, view):
    if PG:
        return [r[0] for r in pgtmp.rows(
            db, "SELECT column_name FROM information_schema.columns WHERE table_name = '%s' "
                "ORDER BY ordinal_position" % view)]
    c = sqlite3.connect(db)
    try:
        return [d[0] for d in c.execute("SELECT * FROM %s LIMIT 0" % view).description]
    finally:
        c.close()


def answers(db, qs):
    """Every view's columns and rows (in a total order) and each question's rows."""
    out = {}
    for v in VIEWS:
        cols = columns_of(db, v)
        order = ", ".join(str(i + 1) for i in range(len(cols)))
        out[v] = (cols, rows_of(db, "SELECT * FROM %s ORDER BY %s" % (v, order)))
    for i, q in enumerate(qs, 1):
        out["question %d" % i] = rows_of(db, q)
    return out


def old_store(fx, tmp):
    """The old rows in a store at the old schema: its --db."""
    if not PG:
        db = os.path.join(tmp, "old.db")
        c = sqlite3.connect(db)
        c.executescript(";\n".join(fx["sql"]) + ";")
        c.execute("PRAGMA user_version = %d" % fx["user_version"])
        c.commit()
        c.close()
        return db
    url = pgtmp.createdb("twoparts")
    pg = pgtmp.cluster()
    schema = sorted(f for f in os.listdir(os.path.join(ROOT, "schema", "pg"))
                    if re.match(r"^\d{3}_.*\.sql$", f) and int(f[:3]) <= fx["version"])
    for f in schema:
        pg.psql(url, open(os.path.join(ROOT, "schema", "pg", f)).read(), "-1")
    pg.psql(url, "CREATE TABLE schema_version (version BIGINT NOT NULL); "
                 "INSERT INTO schema_version VALUES (%d);" % fx["version"])
    for t, d in fx["tables"].items():
        p = subprocess.run([os.path.join(pg.bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                            "-d", url, "-c", "\\copy %s (%s) FROM STDIN WITH (FORMAT csv)"
                            % (t, ", ".join(d["columns"]))],
                           input=d["csv"], capture_output=True, text=True, timeout=120,
                           env=pg.proc_env)
        if p.returncode != 0:
            raise RuntimeError("copy of %s: %s" % (t, p.stderr))
    pg.psql(url, "".join(
        "SELECT setval(pg_get_serial_sequence('%s', 'id'), coalesce(max(id), 0) + 1, false) "
        "FROM %s;" % (t, t) for t in ("decision_configs", "decisions", "events",
                                      "config_changes")))
    return url


def text_of(s, method, path, body=None):
    c = s.conn(timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Content-Type": "application/json"} if body is not None else {})
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, text


def replay_summary(text):
    """The summary of a replay's answer: the last line of `replay --db`, or POST's member."""
    if not text.strip():
        return {}
    try:
        d = json.loads(text)
        return d.get("summary", {})
    except ValueError:
        return json.loads(text.strip().splitlines()[-1]).get("summary", {})


def main():
    ck = Checks()
    t0 = time.time()
    with lzma.open(FIXTURE, "rt") as f:
        fx = json.load(f)["pg" if PG else "sqlite"]
    qs = questions(PG)
    ck.check(len(qs) == 10, "the README has ten questions: %d" % len(qs))

    s0 = Server()  # only for its temporary directory
    s0.stop()
    db = old_store(fx, s0.tmp)
    before = answers(db, qs)
    if not PG:
        size_before, n_before = vacuumed_size(db, s0.tmp, "before.db")

    print("%.1f s: the server migrates" % (time.time() - t0), flush=True)
    s = Server(db=db, tmp=s0.tmp, args=["--policies", POLICIES], start_timeout=120)
    ck.check(re.search(r"msg=\"migrated\" migration=(pg/)?(012|004)_", s.logs()) is not None,
             "the migration ran: %s" % [ln for ln in s.logs().splitlines() if "migrat" in ln])
    after = answers(db, qs)
    compare(ck, before, without_start(before, after))

    print("%.1f s: every GET" % (time.time() - t0), flush=True)
    for n, (path, want) in enumerate(sorted(fx["get"].items())):
        if path.startswith("POST /v1/replay"):
            job = path.split()[2]
            body = {"job": job}
            if path.endswith("candidate"):
                body["config"] = {"job.autoscaler.utilization.target": "0.9"}
            st, got = text_of(s, "POST", "/v1/replay", body)
            g, w = replay_summary(got), replay_summary(want)
            ck.check(st == 200 and {k: g.get(k) for k in RECORDED} ==
                     {k: w.get(k) for k in RECORDED},
                     "%s reads the history as before:\n  got  %s\n  want %s" % (path, g, w))
            continue
        # every list, timeline and advice, and every fourth single decision (the time it takes)
        if path.startswith("/v1/decisions/") and n % 4:
            continue
        st, got = text_of(s, "GET", path)
        if "/advice" in path and st == 200 and got != want:
            # an advice's replay decides the history again: its candidate's side is the
            # binary under test's own (it may change by design); the rest is read as before
            g, w = advice_read(got), advice_read(want)
            ck.check(g == w, "GET %s reads the history as before:\n  got  %s\n  want %s" % (
                path, json.dumps(g)[:300], json.dumps(w)[:300]))
            continue
        ck.check(st == 200 and got == want, "GET %s is byte-identical:\n  got  %s\n  want %s" % (
            path, got[:300], want[:300]))

    print("%.1f s: replay --db" % (time.time() - t0), flush=True)
    runs = []
    for key, want in sorted(fx["replay"].items()):
        job, cand = key.split(" ", 1)
        if cand and job != "orders":  # each job as recorded, one candidate (the time it takes)
            continue
        args = [BINARY, "replay", "--db", db, "--job", job, "--policies", POLICIES]
        if cand:
            args += ["--set", cand]
        runs.append((key, want, subprocess.Popen(args, stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, text=True)))
    for key, want, p in runs:
        out, err = p.communicate(timeout=300)
        g, w = replay_summary(out), replay_summary(want)
        ck.check(p.returncode == 0 and {k: g.get(k) for k in RECORDED} ==
                 {k: w.get(k) for k in RECORDED},
                 "replay --db %s reads the history as before: rc %d %s\n  got  %s\n  want %s" % (
                     key, p.returncode, err[:200], g, w))

    # New decisions on the migrated store read back as they were sent; their samples go to the
    # jobs' chunks of samples (but the one with its own options).
    print("%.1f s: new decisions" % (time.time() - t0), flush=True)
    sent, replies = {}, {}
    conn = s.conn()
    jobs = audit_sim.jobs()
    for step in range(1000, 1012):
        for j in jobs:
            smp = j.sample(step)
            if step == 1005 and j.name == "orders":
                smp["config"] = {"job.autoscaler.utilization.target": "0.6"}
            st, d = audit_sim.request(conn, "POST", "/v1/jobs/%s/metrics" % j.name, smp)
            ck.check(st == 200, "a new decision on the migrated store: %d %s" % (st, d))
            if st != 200:
                continue
            sent[d["decision_id"]] = d
            replies[d["decision_id"]] = (d, smp)
            # a retry gets the same reply; the same at with another sample is a 409
            st2, d2 = audit_sim.request(conn, "POST", "/v1/jobs/%s/metrics" % j.name, smp)
            ck.check(st2 == 200 and d2.pop("repeat", None) is True and d2 == d,
                     "a retry repeats the reply: %d %s" % (st2, d2))
            other = json.loads(json.dumps(smp))
            other["vertices"][0]["parallelism"] += 1
            st3, d3 = audit_sim.request(conn, "POST", "/v1/jobs/%s/metrics" % j.name, other)
            ck.check(st3 == 409, "another sample at the same at: %d %s" % (st3, d3))
    conn.close()
    for job in ("orders", "clicks", "payments"):
        st, body = text_of(s, "GET", "/v1/jobs/%s/decisions?limit=12" % job)
        for d in json.loads(body)["decisions"]:
            if d["decision_id"] in sent:
                ck.check(d == sent.pop(d["decision_id"]),
                         "decision %d reads back as sent" % d["decision_id"])
    ck.check(not sent, "every new decision listed: %s" % sorted(sent))
    chunked = 0
    for i, (d, smp) in sorted(replies.items()):
        st, body = text_of(s, "GET", "/v1/decisions/%d" % i)
        rec = json.loads(body)
        inp = rec.get("input") or {}
        ck.check(inp.get("at") == smp["at"] and
                 [v["id"] for v in inp.get("vertices", [])] == [v["id"] for v in smp["vertices"]] and
                 [v["metrics"].get("records_in") for v in inp.get("vertices", [])] ==
                 [v["metrics"].get("records_in") for v in smp["vertices"]],
                 "decision %d: its sample as the server read it: %s" % (i, body[:300]))
        chunked += "config" not in inp
        row = rows_of(db, "SELECT message, parallelism, action, execute FROM audit_decisions "
                          "WHERE id = %d" % i)
        ck.check(len(row) == 1 and row[0][0] == d["message"] and
                 json.loads(row[0][1]) == d["parallelism"] and row[0][2] == d["action"] and
                 row[0][3] == d["execute"], "audit_decisions %d as replied: %r" % (i, row))
        vs = rows_of(db, "SELECT vertex, current, target, reason, message, evaluated_json FROM "
                         "audit_vertex_decisions WHERE decision_id = %d ORDER BY ord" % i)
        want = [[v["id"], v["current"], v["target"], v["reason"], v.get("message"),
                 v["evaluated"]] for v in d["vertices"]]
        got = [r[:5] + [json.loads(r[5])] for r in vs]
        ck.check(got == want, "audit_vertex_decisions %d as replied:\n  got  %s\n  want %s" % (
            i, got, want))
        evs = rows_of(db, "SELECT type, reason, message, count, suppressed FROM audit_events "
                          "WHERE decision_id = %d ORDER BY id" % i)
        want = [[e["type"], e["reason"], e["message"], e["count"], int(e["suppressed"])]
                for e in d["events"]]
        ck.check(evs == want, "audit_events %d as replied: %r / %r" % (i, evs, want))
    ck.check(chunked == len(replies) - 1,
             "every new sample but the one with its own options kept as read: %d of %d" % (
                 chunked, len(replies)))
    ck.check(s.stop() == 0, "clean stop")

    if not PG:
        size_after, n_after = vacuumed_size(db, s0.tmp, "after.db")
        print("bytes per decision (vacuumed): %.0f before, %.0f after" % (
            size_before / n_before, size_after / n_after))
    ck.done()


if __name__ == "__main__":
    main()
