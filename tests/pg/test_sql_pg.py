#!/usr/bin/env python3
"""POST /v1/sql on PostgreSQL (README, PostgreSQL): the same history in both stores answers the
same. audit_sim.py fills a SQLite store through a server; its tables are copied into a
throwaway PostgreSQL (schema/pg/001_tables.sql and 002_audit_views.sql); then the README's ten
audit questions, and every audit view read whole, answer with the same columns and rows
through a server whose `sql-db` is the PostgreSQL URL as through the SQLite one, and the ten
questions again through a hot standby of it (`sql-db` pointed at a replica). Hostile SQL
(writes, a base table, a sleep past the time limit, two statements, RESET ROLE and the other
ways back to governor's own role) is refused with a clear error, the limits hold, and nothing
of the database changed. Exits 77 (skipped) without PostgreSQL."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
import pgtmp  # noqa: E402

why = pgtmp.missing()
if why:
    print("SKIP: " + why)
    sys.exit(pgtmp.SKIP)

import audit_sim  # noqa: E402
import pgcopy  # noqa: E402
from gov import Server, Checks  # noqa: E402

c = Checks()
text = open(os.path.join(ROOT, "docs", "audit.md")).read()
m = re.search(r"^#+ Ten audit questions\n(.*)", text, re.S | re.M)
section = m.group(1) if m else ""
queries = re.findall(r'^q "([^"]*)"\s*$', section, re.M)
c.check(len(queries) == 10, "ten audit questions in the README: %d" % len(queries))

# every view whole, in an order that is total on both stores
VIEWS = [
    "SELECT * FROM audit_decisions ORDER BY id",
    "SELECT * FROM audit_vertex_decisions ORDER BY decision_id, ord",
    "SELECT * FROM audit_scalings ORDER BY decision_id",
    "SELECT * FROM audit_events ORDER BY id",
    "SELECT * FROM audit_plugin_calls ORDER BY decision_id, plugin, hook, outcome, duration_us",
    "SELECT * FROM audit_policy_revisions ORDER BY revision",
    "SELECT * FROM audit_config_changes ORDER BY id",
    "SELECT * FROM audit_decision_options WHERE decision_id % 97 = 1 ORDER BY decision_id, key",
]


def norm(rows):
    """Rows with reals rounded to 12 significant digits: the two engines parse and average
    decimal text each their own way, equal to the last bit or two."""
    def one(v):
        return float("%.12g" % v) if isinstance(v, float) else v
    return [[one(v) for v in r] for r in rows]


with pgtmp.Cluster() as pg:
    # as in production: governor's own user, not a superuser, with CREATEROLE
    pg.psql(pg.url(), "CREATE ROLE governor LOGIN CREATEROLE")
    pg.psql(pg.url(), "CREATE DATABASE audit OWNER governor")
    url = pg.url("audit", user="governor")
    # every migration, in order, as the server applies them (001 the tables, 002 the views)
    schema = [open(os.path.join(ROOT, "schema", "pg", f)).read()
              for f in sorted(os.listdir(os.path.join(ROOT, "schema", "pg")))
              if re.match(r"^\d{3}_.*\.sql$", f)]
    for sql in schema:
        pg.psql(url, sql, "-1")  # each file in one transaction, as the migrations run

    lite = Server(args=["--synchronous", "NORMAL", "--sql-max-rows", "100000",
                        "--sql-max-bytes", "64 mb"])
    audit_sim.run(lite.port, steps=1000)
    pgcopy.copy(lite.db, pg, url)
    onpg = Server(args=["--sql-db", url, "--sql-max-rows", "100000", "--sql-max-bytes", "64 mb",
                        "--sql-timeout", "5 s"])
    # a hot standby of it, for `sql-db` pointed at a replica
    sb = pg.standby()
    pg.wait_replayed(sb)
    onsb = Server(args=["--sql-db", sb.url("audit"), "--sql-max-rows", "100000",
                        "--sql-max-bytes", "64 mb", "--sql-timeout", "5 s"])
    st, r, _ = onsb.req("POST", "/v1/sql", {"sql": "SELECT pg_is_in_recovery()"})
    c.check(st == 200 and r["rows"] == [[1]], "sql-db reads the hot standby: %r" % (r,))

    for i, sql in enumerate(queries + VIEWS, 1):
        what = "question %d" % i if i <= 10 else VIEWS[i - 11][:60]
        st1, r1, _ = lite.req("POST", "/v1/sql", {"sql": sql})
        st2, r2, _ = onpg.req("POST", "/v1/sql", {"sql": sql})
        c.check(st1 == 200 and st2 == 200, "%s: 200 on both, got %d %d %r" % (
            what, st1, st2, r2 if st2 != 200 else ""))
        if st1 != 200 or st2 != 200:
            continue
        c.check(r1["columns"] == r2["columns"], "%s: the same columns %s / %s" % (
            what, r1["columns"], r2["columns"]))
        a, b = norm(r1["rows"]), norm(r2["rows"])
        if a != b:
            diff = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), None)
            detail = ("row %d: %r / %r" % (diff, a[diff], b[diff]) if diff is not None
                      else "%d / %d rows" % (len(a), len(b)))
            c.check(False, "%s: the same rows (%s)" % (what, detail))
        else:
            c.check(True, "%s: the same %d rows" % (what, len(a)))
        c.check(i == 8 or len(a) > 0, "%s: some rows" % what)
        if i <= 10:
            st3, r3, _ = onsb.req("POST", "/v1/sql", {"sql": sql})
            c.check(st3 == 200 and r3["columns"] == r1["columns"] and norm(r3["rows"]) == a,
                    "%s: the same answer from the hot standby" % what)

    # the values keep SQLite's types: integers, reals, text, 0/1, JSON text
    st, r, _ = onpg.req("POST", "/v1/sql", {"sql": "SELECT id, execute, parallelism, at_utc "
                                                   "FROM audit_decisions ORDER BY id LIMIT 1"})
    c.check(st == 200 and isinstance(r["rows"][0][0], int) and r["rows"][0][1] in (0, 1) and
            re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", r["rows"][0][3]),
            "types as on SQLite: %r" % (r,))

    before = pg.psql(url, "SELECT count(*) FROM decisions; SELECT count(*) FROM jobs; "
                          "SELECT count(*) FROM events")
    hostile = [
        ("INSERT INTO decision_configs (hash, config_json) VALUES ('x', '{}')", "only a query"),
        ("DELETE FROM decisions", "only a query"),
        ("UPDATE jobs SET version = version + 1", "only a query"),
        ("DROP TABLE jobs", "only a query"),
        ("CREATE TEMP TABLE t AS SELECT 1", "only a query"),
        ("WITH d AS (DELETE FROM decisions RETURNING id) SELECT count(*) FROM d", "read-only"),
        ("SELECT * FROM audit_decisions FOR UPDATE", None),
        ("SELECT * FROM jobs", "permission denied for table jobs"),
        ("SELECT count(*) FROM decisions", "permission denied for table decisions"),
        ("SELECT input FROM decisions LIMIT 1", "permission denied"),
        ("SELECT pg_sleep(10)", "time limit"),
        ("SELECT 1; SELECT 2", "only one statement"),
        ("SELECT 1; DELETE FROM decisions", "only one statement"),
        ("RESET ROLE", "only a query"),
        ("SET ROLE postgres", "only a query"),
        ("COMMIT", "only a query"),
        ("SELECT set_config('role', 'postgres', true), (SELECT count(*) FROM audit_decisions)",
         "set_config"),
        ('SELECT pg_catalog."SET_CONFIG"(\'role\', \'none\', true)', "set_config"),
        ("SELECT query_to_xml('select * from jobs', true, false, '')", "query_to_xml"),
        ("SELECT table_to_xml('jobs', true, false, '')", "table_to_xml"),
        ("SELECT pg_advisory_lock(1)", "advisory"),
        ('SELECT U&"\\0073et_config"(\'role\', \'none\', true)', "u&"),
        ("SELECT nextval('decisions_id_seq')", None),
        ("DO $$ BEGIN DELETE FROM decisions; END $$", "only a query"),
    ]
    for sql, want in hostile:
        st, r, _ = onpg.req("POST", "/v1/sql", {"sql": sql})
        msg = r.get("error", {}).get("message", "") if isinstance(r, dict) else ""
        c.check(st == 400 and (want is None or want in msg),
                "refused: %s -> %d %s" % (sql[:60], st, msg))
    after = pg.psql(url, "SELECT count(*) FROM decisions; SELECT count(*) FROM jobs; "
                         "SELECT count(*) FROM events")
    c.check(before == after, "nothing changed in the database")
    st, r, _ = onpg.req("POST", "/v1/sql", {"sql": "SELECT current_user"})
    c.check(st == 200 and r["rows"] == [["governor_audit"]], "queries run as governor_audit")

    # parameters ($1...), and their count
    st, r, _ = onpg.req("POST", "/v1/sql", {"sql": "SELECT id FROM audit_decisions WHERE job = $1 "
                                                   "AND execute = $2 ORDER BY id LIMIT 2",
                                            "params": ["orders", True]})
    c.check(st == 200 and len(r["rows"]) == 2, "params bind to $1, $2: %r" % (r,))
    st, r, _ = onpg.req("POST", "/v1/sql", {"sql": "SELECT $1::text", "params": []})
    c.check(st == 400 and r["error"]["field"] == "params", "a missing param is named: %r" % (r,))
    st, r, _ = onpg.req("POST", "/v1/sql", {"sql": "SELECT $1::text", "params": [{}]})
    c.check(st == 400 and r["error"]["field"] == "params[0]", "an object param: %r" % (r,))
    st, r, _ = onsb.req("POST", "/v1/sql", {"sql": "SELECT * FROM jobs"})
    c.check(st == 400 and "permission denied" in r["error"]["message"],
            "the standby's queries run as governor_audit too")
    c.check(lite.stop() == 0 and onpg.stop() == 0 and onsb.stop() == 0, "clean stops")
    sb.stop()

    # the limits: rows, bytes, one value
    small = Server(args=["--sql-db", url, "--sql-max-rows", "5", "--sql-max-bytes", "64 kb",
                         "--sql-max-value", "1 kb"])
    st, r, _ = small.req("POST", "/v1/sql", {"sql": "SELECT id FROM audit_decisions ORDER BY id"})
    c.check(st == 200 and len(r["rows"]) == 5 and r["truncated"], "the row limit truncates")
    st, r, _ = small.req("POST", "/v1/sql", {"sql": "SELECT repeat('x', 2000)"})
    c.check(st == 400 and r["error"]["code"] == "RESOURCE_EXHAUSTED" and
            "sql-max-value" in r["error"]["message"], "one value above its limit: %r" % (r,))
    # a value past sql-max-value from any function: 400 RESOURCE_EXHAUSTED naming the limit,
    # never null or a cut value (README, Request budget; the same table as tests/api/test_sql_hostile.py's)
    too_big = [
        "SELECT repeat('x', {n})",
        "SELECT lpad('', {n}, 'x')",
        "SELECT rpad('x', {n}, 'yz')",
        "SELECT format('%{n}s', 'x')",
        "SELECT format('%-*s|', {n}, 'x')",
        "SELECT format('%s%s', repeat('x', {h}), repeat('y', {h}))",
        "SELECT format('%L', repeat('''', {h}))",
        "SELECT concat(repeat('x', {h}), repeat('y', {h}))",
        "SELECT concat_ws(',', repeat('x', {h}), repeat('y', {h}))",
        "SELECT repeat('x', {h}) || repeat('y', {h})",
        "SELECT replace(repeat('x', {q}), 'x', 'xxxxx')",
        "SELECT overlay(repeat('x', {h}) placing repeat('y', {h}) from 2 for 0)",
        "SELECT string_agg(repeat('x', 100), ',') FROM generate_series(1, 20)",
        "SELECT array_to_string(array_fill('x'::text, ARRAY[{n}]), '')",
        "SELECT array_fill(7, ARRAY[{h}])::text",
        "SELECT json_agg(repeat('x', 100)) FROM generate_series(1, 20)",
        "SELECT jsonb_agg(g) FROM generate_series(1, 1000) g",
        "SELECT json_build_array(repeat('x', {h}), repeat('y', {h}))",
        "SELECT jsonb_build_object('a', repeat('x', {n}))",
        "SELECT to_json(repeat('\"', {h}))",
        "SELECT convert_to(repeat('x', {n}), 'UTF8')",
        "SELECT decode(repeat('00', {n}), 'hex')",
        "SELECT encode(convert_to(repeat('x', {n}), 'UTF8'), 'base64')",
        "SELECT CAST(repeat('x', {n}) AS bytea)",
        "SELECT upper(repeat('x', {n}))",
        "SELECT xmlelement(name a, repeat('x', {n}))",
        "WITH RECURSIVE c(s) AS (SELECT 'x'::text UNION ALL SELECT s || s FROM c "
        "WHERE length(s) < 5000) SELECT max(s) FROM c",
    ]
    for q in too_big:
        q = q.format(n=1025, h=513, q=206)
        st, r, _ = small.req("POST", "/v1/sql", {"sql": q})
        e = r.get("error", {}) if isinstance(r, dict) else {}
        c.check(st == 400 and e.get("code") == "RESOURCE_EXHAUSTED" and
                "sql-max-value" in e.get("message", "") and "1024" in e.get("message", ""),
                "%s: 400 RESOURCE_EXHAUSTED naming sql-max-value, got %d %.160r" % (q[:60], st, r))
    st, r, _ = small.req("POST", "/v1/sql", {"sql": "SELECT length(repeat('x', 1022)), "
                                                    "repeat('x', 1022)"})
    c.check(st == 200 and r["rows"] == [[1022, "x" * 1022]],
            "a value whose JSON is exactly the limit is answered whole: %.80r" % (r,))
    st, r, _ = small.req("POST", "/v1/sql", {"sql": "SELECT repeat('x', 900) FROM "
                                                    "generate_series(1, 1000)"})
    c.check(st == 200 and r["truncated"] and len(r["rows"]) == 5, "rows past the body: %r" % (
        r.get("truncated"),))
    small2 = Server(args=["--sql-db", url, "--sql-max-bytes", "64 kb"])
    st, r, _ = small2.req("POST", "/v1/sql", {"sql": "SELECT repeat('x', 900) FROM "
                                                     "generate_series(1, 1000)"})
    c.check(st == 200 and r["truncated"] and 0 < len(r["rows"]) < 1000,
            "the byte limit truncates: %d rows" % len(r.get("rows", [])))
    c.check(small.stop() == 0 and small2.stop() == 0, "clean stops")

    # a user without CREATEROLE: the migration stops at the role, naming it, until an
    # administrator creates it and grants it (README); then it goes through
    pg.psql(pg.url(), "CREATE ROLE plain LOGIN; CREATE DATABASE audit2 OWNER plain")
    url2 = pg.url("audit2", user="plain")
    pg.psql(url2, schema[0], "-1")
    try:
        pg.psql(url2, schema[1], "-1")
        c.check(False, "a user without CREATEROLE cannot grant itself governor_audit")
    except RuntimeError as e:
        c.check("governor_audit" in str(e) and "GRANT governor_audit TO plain" in str(e),
                "the refusal names the role and the fix: %s" % str(e)[:200])
    pg.psql(pg.url(), "GRANT governor_audit TO plain")
    pg.psql(url2, schema[1], "-1")
    plain = Server(args=["--sql-db", url2])
    st, r, _ = plain.req("POST", "/v1/sql", {"sql": "SELECT count(*) FROM audit_scalings"})
    c.check(st == 200 and r["rows"] == [[0]], "after the administrator's grant: %r" % (r,))
    c.check(plain.stop() == 0, "clean stop")

    # a wrong URL is refused at start, and says why
    try:
        Server(args=["--sql-db", pg.url("nosuchdb")])
        c.check(False, "a database that does not exist is refused at start")
    except RuntimeError as e:
        c.check("nosuchdb" in str(e), "a missing database is named at start")
c.done()
