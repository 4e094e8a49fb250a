"""Audit retention (docs/storage.md): with --audit-retention 1s, audit history older than a
second on the server clock (decisions.created_at, not the sample's `at`) disappears in
batches, with its vertex rows and events, while decisions keep being answered; the job's
state is untouched (decisions go on from it). An effective-option set (decision_configs,
migration 009) goes with the last decision that used it, and stays while one does. With
--sample-retention shorter than --audit-retention, the samples go and the decisions stay: every
view answers as before, a decision reads back without its sample, and replay starts after the
samples it no longer has."""
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, connect, is_pg  # noqa: E402

c = Checks()
s = Server(args=["--audit-retention", "1s", "--synchronous", "NORMAL"])
st, body, _ = s.req("PUT", "/v1/jobs/orders/config",
                    {"config": {"job.autoscaler.utilization.target": "0.6"}})
assert st == 200, body
conn = s.conn()
# 1,200 decisions: more than two batches of 500. The samples' `at` is 2025 (long past the
# retention on any clock): only the server clock counts, so they are kept until a second
# after they were stored.
# The first 600 bring an option of their own: another effective-option set.
for i in range(1200):
    own = {"job.autoscaler.scale-down.interval": "2 h"} if i < 600 else None
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i, config=own), conn=conn)
    assert st == 200, body
t_stored = time.time()


def q(sql):
    db = connect(s.db) if is_pg(s.db) else sqlite3.connect("file:%s?mode=ro" % s.db, uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


kept_young = q("SELECT count(*) FROM decisions")[0][0]
c.check(kept_young > 0, "young decisions are kept at first: %d" % kept_young)
# Keep posting for 4 s: every answer is a 200, while the old rows go.
i = 1200
statuses = []
worst = 0.0
deadline = time.time() + 4
while time.time() < deadline:
    t = time.monotonic()
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i), conn=conn)
    worst = max(worst, time.monotonic() - t)
    statuses.append(st)
    i += 1
    time.sleep(0.01)
c.check(set(statuses) == {200}, "decisions answered during retention: %r" % set(statuses))
c.check(worst < 1.0, "no decision waited on retention: worst %.3f s" % worst)
now_ms = int(time.time() * 1000)
recent = q("SELECT count(*) FROM decisions WHERE created_at >= %d" % (now_ms - 900))[0][0]
old = q("SELECT count(*) FROM decisions WHERE created_at < %d" % (now_ms - 3000))[0][0]
c.check(old == 0, "no decision older than retention + a round is left: %d" % old)
c.check(q("SELECT count(*) FROM decisions WHERE id <= 1200")[0][0] == 0,
        "the first 1,200 decisions are gone")
c.check(recent > 0, "recent decisions are kept: %d" % recent)
c.check(q("SELECT count(*) FROM decision_outcomes o WHERE NOT EXISTS "
          "(SELECT 1 FROM decisions d WHERE d.outcome_id = o.id)")[0][0] == 0,
        "no outcome that no decision uses")
c.check(q("SELECT count(*) FROM events WHERE decision_id NOT IN (SELECT id FROM decisions)")[0][0]
        == 0, "no orphan events")
c.check(q("SELECT count(*) FROM config_changes")[0][0] == 0, "the old config change is gone")
c.check(q("SELECT count(*) FROM decision_configs WHERE id NOT IN "
          "(SELECT config_id FROM decision_outcomes)")[0][0] == 0,
        "no option set that no decision uses: %r" % q("SELECT id, hash FROM decision_configs"))
c.check(q("SELECT count(*) FROM decision_outcomes WHERE config_id NOT IN "
          "(SELECT id FROM decision_configs)")[0][0] == 0, "every decision's option set is kept")
c.check(q("SELECT count(*) FROM jobs WHERE job = 'orders' AND state_bin IS NOT NULL")[0][0] == 1,
        "the job's state is kept")
st, body, _ = s.req("GET", "/v1/jobs/orders/config")
c.check(st == 200 and "0.6" in str(body), "the job's stored config layer is kept: %r" % (body,))
c.check(s.stop() == 0, "clean stop")

# With retention 0 nothing is deleted.
k = Server(args=["--audit-retention", "0"])
for i in range(5):
    st, body, _ = k.req("POST", "/v1/jobs/orders/metrics", sample(i))
time.sleep(1.5)
db = connect(k.db)
c.check(db.execute("SELECT count(*) FROM decisions").fetchone()[0] == 5, "retention 0 keeps all")
db.close()
c.check(k.stop() == 0, "clean stop")

# A year of decisions and ten seconds of samples: the samples' chunks go, the decisions stay
# (ten seconds, so that a loaded machine posts the 400 samples and reads the first one back
# before it goes).
y = Server(args=["--audit-retention", "365 d", "--sample-retention", "10s",
                 "--synchronous", "NORMAL"])
conn = y.conn()
N = 400
for i in range(N):
    st, body, _ = y.req("POST", "/v1/jobs/orders/metrics", sample(i), conn=conn)
    assert st == 200, body
conn.close()


def views():
    db = connect(y.db)
    try:
        return [db.execute("SELECT * FROM %s ORDER BY 1, 2, 3" % v).fetchall() for v in
                ("audit_decisions", "audit_vertex_decisions", "audit_events",
                 "audit_decision_options")]
    finally:
        db.close()


def chunks():
    db = connect(y.db)
    try:
        return db.execute("SELECT count(*) FROM sample_chunks").fetchone()[0]
    finally:
        db.close()


before = views()
n0 = chunks()
c.check(n0 > 0, "%d samples were kept in %d closed chunks (and the one being filled)" % (N, n0))
st, rec0, _ = y.req("GET", "/v1/decisions/1")
c.check(st == 200 and rec0.get("input", {}).get("at") == sample(0)["at"],
        "a decision reads back with its sample while it is kept: %r" % (rec0.get("input"),))
deadline = time.time() + 40
while chunks() and time.time() < deadline:
    time.sleep(0.2)
c.check(chunks() == 0, "the closed chunks of samples are gone: %d left" % chunks())
c.check(views() == before, "every audit view answers as before")
db = connect(y.db)
c.check(db.execute("SELECT count(*) FROM decisions").fetchone()[0] == N, "every decision kept")
c.check(db.execute("SELECT count(*) FROM jobs WHERE samples IS NOT NULL").fetchone()[0] == 1,
        "the chunk being filled is kept with the job")
db.close()
st, rec, _ = y.req("GET", "/v1/decisions/1")
rec0.pop("input")
c.check(st == 200 and rec.pop("input", "absent") is None and rec == rec0,
        "the decision reads back as before, but without its sample")
st, rep, _ = y.req("POST", "/v1/replay", {"job": "orders"})
summ = rep.get("summary", {}) if st == 200 else {}
c.check(summ.get("without_sample", 0) > 0 and
        summ.get("without_sample", 0) + summ.get("replayed", 0) == N,
        "replay skips the decisions whose samples are gone: %r" % summ)
st, body, _ = y.req("POST", "/v1/jobs/orders/metrics", sample(N))
c.check(st == 200, "decisions go on: %d" % st)
c.check(y.stop() == 0, "clean stop")
c.done()
