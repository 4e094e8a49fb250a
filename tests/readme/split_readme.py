#!/usr/bin/env python3
"""split_readme.py ONE_PAGE_README REPO [--head FILE] - one-off: the split of the one-page README
into README.md and the pages of docs/ (commit 71418ec), as a program, so that an edit another
branch made to a section of the one-page README is carried over to the page it moved to.

It moves each `## ` section of ONE_PAGE_README verbatim to its page (`pages` below), applies the
edits of EDITS (each must apply, or it stops naming it), and rewrites the links between
sections that now live on different pages. README.md is REPO's own (or --head FILE): the quick
start and the tour are not in the one-page README any more.

To carry a branch's README edits over (B the branch; 9d53d5f is main at the split's last merge):
    git show 241fffd:README.md > one.md      # the one-page README as the split left it
    git show 739377e:README.md > base.md; git show 9d53d5f:README.md > m.md
    git merge-file one.md base.md m.md       # with what main merged since (p22-*, p25, p28)
    git show $(git merge-base 9d53d5f B):README.md > base.md; git show B:README.md > b.md
    git merge-file one.md base.md b.md       # with B's edits
    python3 tests/readme/split_readme.py one.md .
then review `git diff docs/`. Remove this file once every branch has merged.
"""
import os
import re
import sys

old = open(sys.argv[1]).read()
repo = sys.argv[2]
head_path = (sys.argv[sys.argv.index("--head") + 1] if "--head" in sys.argv
             else os.path.join(repo, "README.md"))

# ---- the sections of the old README, by their `## ` heading ----
parts = re.split(r"(?m)^(?=## )", old)
head, sections = parts[0], {}
order = []
for p in parts[1:]:
    title = p.split("\n", 1)[0][3:].strip()
    sections[title] = p
    order.append(title)


def take(prefix):
    hits = [t for t in order if t.startswith(prefix)]
    if len(hits) != 1:
        raise SystemExit("section %r: %r" % (prefix, hits))
    t = hits[0]
    order.remove(t)
    return sections[t].rstrip("\n") + "\n"


def promote(text):
    """One section as a page of its own: its headings one level up, but those of code blocks
    and of generated blocks (what `governor reference` and `governor options` print)."""
    out, fence, gen = [], False, False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if re.match(r"<!-- (reference|options):begin -->", line):
            gen = True
        if re.match(r"<!-- (reference|options):end -->", line):
            gen = False
        if not fence and not gen and re.match(r"^##+ ", line):
            line = line[1:]
        out.append(line)
    return "\n".join(out)


def wrap(par):
    import textwrap
    return textwrap.fill(" ".join(par.split()), 96, break_on_hyphens=False,
                         break_long_words=False)


def intro_after_title(text, intro):
    first, rest = text.split("\n", 1)
    return first + "\n\n" + wrap(intro) + "\n" + rest


BACK = "[governor](../README.md)"

pages = {}
pages["docs/api.md"] = intro_after_title(promote(take("HTTP API")), """
Part of %s: every route of `governor serve`, its errors and limits, the client contract of
`POST /v1/jobs/{job}/metrics` (retries, names, sizes, timeouts), and every field of a sample and
of its answer. The commands talk to the quick start's server on port 8080.""" % BACK)
pages["docs/decisions.md"] = intro_after_title(promote(take("How a decision is made")), """
Part of %s: the algorithm that turns a sample into a decision, the reasons it gives, the hot-key
diagnosis, and where governor differs from the reference algorithm, with the figures of the
simulator that justify each difference.""" % BACK)
pages["docs/batch.md"] = intro_after_title(promote(take("Batch jobs and rebalancing")), """
Part of %s: the size of a batch job's worker pool, and split points for a stage's stragglers.
The commands talk to the quick start's server on port 8080.""" % BACK)
pages["docs/plugins.md"] = intro_after_title(promote(take("Plugins")), """
Part of %s: policy hooks in Lua, a plugin written, tested, tried on a history and hot-reloaded
in five minutes (on a server of its own, port 8090), the hooks, and the sandbox's limits.""" % BACK)
ops = take("Operations")
sec = take("Security")
pages["docs/operations.md"] = ("# Operations and security\n\n" + wrap(
    "Part of %s: health and readiness, Prometheus metrics and alert rules, logs, signals, and "
    "what governor protects." % BACK) + "\n\n") + ops + "\n" + sec
pages["docs/dashboard.md"] = intro_after_title(promote(take("Dashboard")), """
Part of %s: the page governor serves at `/`, the history over time behind it, and the tuning
advice it shows.""" % BACK)
pages["docs/storage.md"] = intro_after_title(promote(take("Storage")), """
Part of %s: the SQLite file and its tables, storage faults, several processes on one store,
history size and retention, and PostgreSQL (a throwaway cluster and a server on it, port
8092).""" % BACK)
pages["docs/replicas.md"] = intro_after_title(promote(take("Running several replicas")), """
Part of %s: several servers on one PostgreSQL store behind HAProxy (ports 8100 to 8103), and
what happens when a replica or PostgreSQL fails.""" % BACK)
pages["docs/audit.md"] = intro_after_title(promote(take("Audit with SQL")), """
Part of %s: `POST /v1/sql`, the audit views, and ten questions answered with SQL from a
history of its own (a server on port 8091).""" % BACK)
rt = take("Replay a trace")
rh = take("Replay against history")
pages["docs/replay.md"] = ("# Replay\n\n" + wrap(
    "Part of %s: samples decided again through the code the server uses, from a file of "
    "samples or from a job's stored history, with another config or other plugins; nothing is "
    "stored." % BACK) + "\n\n") + rt + "\n" + rh
pages["docs/simulate.md"] = intro_after_title(promote(take("Simulate before production")), """
Part of %s: policies compared on simulated jobs before any meets a real one: the figures, the
model, the scenario format and the shipped scenarios.""" % BACK)
pages["docs/development.md"] = intro_after_title(promote(take("Development")), """
Part of %s: the layout of the tree, the tests, and the performance and soak figures.""" % BACK)
nf = take("Next to a Flink job")
opts = take("Options")
if "Dataflow's knobs" not in nf:
    raise SystemExit("the Dataflow knobs' paragraph is gone from 'Next to a Flink job'")
pages["docs/options.md"] = intro_after_title(promote(opts), """
Part of %s: every option governor reads, its layers, its value syntax, and the tables generated
from the options table.""" % BACK)
take("Quick start")
if order:
    raise SystemExit("sections left over, give them a page: %r" % order)

# ---- edits to the moved text (each must apply once, or as many times as given) ----
EDITS = {
    "docs/operations.md": [
        ("(see Dashboard below)", "(see Dashboard)", 1),
    ],
    "docs/development.md": [
        ("no globals (see the table above);", "no globals (see the table of\n"
         "[How a decision is made](decisions.md));", 1),
        ("`governor options`, this README's tables |",
         "`governor options`, docs/options.md's tables |", 1),
        ("`run.py`: every block of this README run in order in a copy of the repository",
         "`run.py`: every block of README.md and of docs/*.md run in order in a copy of the "
         "repository, beside the quick start's server", 1),
    ],
    "docs/options.md": [
        ("\n<!-- options:begin -->",
         "\n" + "Dataflow's knobs (`governor.dataflow.max-num-workers`, `min-num-workers`,\n"
         "`worker-utilization-hint`, `max-backlog`, `autoscaling-algorithm`) are job options that "
         "set\nwhat they stand for, in the layer they are set in (an in-flight update is a\n"
         "`PUT /v1/jobs/{job}/config`, and `GET` shows each value a knob set with `\"via\"`).\n"
         "\n<!-- options:begin -->", 1),
        ("tables below are generated from it (`UPDATE_GOLDEN=1 build/test_options`, run from the\n"
         "repository root, rewrites them; the unit test fails when they are stale).",
         "tables below are generated from it (`UPDATE_GOLDEN=1 build/test_options`, run from the\n"
         "repository root, rewrites them; the unit test fails when they are stale). `governor\n"
         "options` prints the same rows as text.", 1),
    ],
    "docs/plugins.md": [
        ("--listen 127.0.0.1:8081", "--listen 127.0.0.1:8090", 1),
        ("localhost:8081", "localhost:8090", None),
        ("a server that loads the directory (here a second one, beside the\n   quick start's)",
         "a server that loads the directory (here a second one, beside the\n   quick start's, "
         "on port 8090)", 1),
        ("""   ```sh
   sed -i 's/"00:00-06:00"/"01:00-06:00"/' my-policies/nightly.lua
   curl -s -X POST localhost:8090/v1/policies/reload; echo    # the new revision
   kill $my_server
   ```""",
         """   Here the edit gives `nightly` priority 1 instead of 5 (executors run by ascending
   priority); the reload's answer is the new revision, and `nightly`'s entry in it shows the
   new priority and its file's new hash:

   ```sh
   curl -s localhost:8090/v1/policies | grep -o '"revision":"[0-9a-f]*"\\|"name":"nightly"[^}]*'
   sed -i 's/priority = 5, /priority = 1, /' my-policies/nightly.lua
   curl -s -X POST localhost:8090/v1/policies/reload |
       grep -o '"revision":"[0-9a-f]*"\\|"name":"nightly"[^}]*'
   kill $my_server
   ```""", 1),
    ],
    "docs/audit.md": [
        ("8082", "8091", None),
        ("fill `audit.db` through a server of its own, beside the quick start's (a\nfew seconds;",
         "fill `audit.db` through a server of its own, beside the quick start's (on port\n"
         "8091; a few seconds;", 1),
    ],
    "docs/dashboard.md": [
        ("""To see it with data, fill a running server with a day of history from the simulator's
scenarios (`daily` and `ramp`, under the `governor` and `flink` policies; about two minutes):

```sh
./build/governor serve --listen 127.0.0.1:8080 &    # unless one is running already
python3 demo/fill.py --server http://127.0.0.1:8080  # also --token TOKEN; then open it in a browser
```""", """To see it with data, fill the quick start's server with a day of history from the
simulator's scenarios (`daily` and `ramp`, under the `governor` and `flink` policies), then
open <http://127.0.0.1:8080/?job=ramp-flink>:

```sh
python3 demo/fill.py --server http://127.0.0.1:8080   # also --token TOKEN
```""", 1),
        ("Open `http://127.0.0.1:8080/` (the `--listen` address)",
         "Open <http://127.0.0.1:8080/> (the `--listen` address; the quick start's server)", 1),
    ],
    "docs/replicas.md": [
        ("""./build/governor serve --listen 127.0.0.1:8081 \\
    --db 'postgresql://governor:secret@db.example:5432/governor?sslmode=require'""",
         """./build/governor serve --listen 127.0.0.1:8101 \\
    --db 'postgresql://governor:secret@db.example:5432/governor?sslmode=require'""", 1),
        ("""<!-- readme-test: skip (starts HAProxy on port 8080; tests/replicas/failover.py runs this file) -->
```sh
haproxy -f docs/haproxy.cfg     # clients talk to 127.0.0.1:8080, replicas on 8081-8083
```""", """To try it on one machine, with the throwaway cluster of
[docs/storage.md](storage.md#postgresql) running (port 5433) and HAProxy installed (`bash
tests/install-deps.sh --test`, or `apt-get install -y haproxy`): three replicas on ports 8101
to 8103, each with its own log, HAProxy on port 8100 in front of them, and a job's samples
sent through it:

<!-- readme-test: only-if [ -S /tmp/.s.PGSQL.5433 ] && command -v haproxy (needs the PostgreSQL cluster of docs/storage.md and HAProxy: bash tests/install-deps.sh --test) -->
```sh
replicas=
for port in 8101 8102 8103; do
  ./build/governor serve --listen 127.0.0.1:$port \\
      --db postgresql://governor@127.0.0.1:5433/governor 2>replica-$port.log &
  replicas="$replicas $!"
done
haproxy -db -f docs/haproxy.cfg 2>haproxy.log &   # -db: in the foreground, here in the background
haproxy_pid=$!
until curl -sf localhost:8100/readyz >/dev/null; do kill -0 $haproxy_pid || break; sleep 0.2; done
now=$(date +%s%3N)
for i in 0 1 2; do
  curl -s -X POST localhost:8100/v1/jobs/replicated/metrics -H 'Content-Type: application/json' -d '{
    "at": '$((now - (2 - i) * 30000))', "running_since": '$((now - 600000))',
    "config": {"job.autoscaler.metrics.window": "1 min", "job.autoscaler.stabilization.interval": "0 ms"},
    "vertices": [{"id": "source", "parallelism": 2, "partitions": 8, "inputs": [],
                  "metrics": {"busy_ms_per_s": 950, "records_in": '$((i * 30000))', "records_out": '$((i * 30000))'}}]}' |
    grep -o '"decision_id":[0-9]*,"job":"replicated"[^[]*"reason":"[A-Z_]*"'
done
```

Each of the three answers came from the replica that HAProxy hashes the job to; the third
scales the source. Then stop the replicas and HAProxy, and the throwaway cluster:

<!-- readme-test: only-if [ -n "${haproxy_pid:-}" ] (the replicas above were started) -->
```sh
kill $haproxy_pid $replicas
(cd /tmp && runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D /tmp/govpg stop >/dev/null)
```

`tests/replicas/failover.py` runs the same file with a SIGKILL of a replica under load
(below).""", 1),
        ("[`docs/haproxy.cfg`](docs/haproxy.cfg)", "[`docs/haproxy.cfg`](haproxy.cfg)", 1),
    ],
    "docs/storage.md": [
        ("""To try it, a throwaway cluster (as a user other than root):

<!-- readme-test: skip (needs a PostgreSQL server and a user other than root; tests/pg/pgtmp.py does the same in the tests) -->
```sh
initdb -D /tmp/govpg -A trust -E UTF8 && pg_ctl -D /tmp/govpg -o "-p 5433 -k /tmp" -w start
createdb -h 127.0.0.1 -p 5433 governor
./build/governor serve --db postgresql://$USER@127.0.0.1:5433/governor
```""", """To try it on a fresh Debian 12 machine, as root: `bash tests/install-deps.sh --test` installs
PostgreSQL 15 (so does `apt-get install -y postgresql`). Its programs are in
`/usr/lib/postgresql/15/bin`, not on the `PATH`, and refuse to run as root, so each runs as the
`postgres` user (`runuser -u postgres --`). A throwaway cluster in `/tmp/govpg` on port 5433
(`-A trust`: any local user may connect without a password, fine for a throwaway), a user
`governor` that may log in and create the audit role, its database, and a server on it, on
port 8092:

<!-- readme-test: only-if [ "$(id -u)" = 0 ] && [ -x /usr/lib/postgresql/15/bin/initdb ] (needs root and PostgreSQL 15: bash tests/install-deps.sh --test) -->
```sh
pg=/usr/lib/postgresql/15/bin
as_postgres() { (cd /tmp && runuser -u postgres -- "$@"); }   # from a folder postgres may enter
as_postgres $pg/initdb -D /tmp/govpg -A trust -E UTF8 >/dev/null
as_postgres $pg/pg_ctl -D /tmp/govpg -o "-p 5433 -k /tmp" -l /tmp/govpg/server.log -w start
as_postgres $pg/psql -q -h 127.0.0.1 -p 5433 -d postgres \\
    -c 'CREATE ROLE governor LOGIN CREATEROLE' -c 'CREATE DATABASE governor OWNER governor'
./build/governor serve --listen 127.0.0.1:8092 \\
    --db postgresql://governor@127.0.0.1:5433/governor 2>pg-serve.log &
pg_server=$!
until curl -sf localhost:8092/readyz >/dev/null; do kill -0 $pg_server || break; sleep 0.2; done
curl -s localhost:8092/readyz; echo
kill $pg_server
```

As a user other than root, the same with `as_postgres() { "$@"; }`: the programs run as you,
the cluster's owner. The cluster stays up for [several replicas](replicas.md); stop it with
`(cd /tmp && runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D /tmp/govpg stop)`.""", 1),
    ],
}

EDITS["docs/storage.md"] += [
    ("stable audit schema (see\nAudit with SQL below).", "stable audit schema (see\n"
     "[Audit with SQL](audit.md)).", 1),
    ("every audit view, the ten audit questions below, every", "every audit view, the ten "
     "audit questions of [docs/audit.md](audit.md#ten-audit-questions), every", 1),
    ("as the role `governor_audit` (Running several replicas on\n  PostgreSQL, below).",
     "as the role `governor_audit` ([Running several replicas on\n  PostgreSQL]"
     "(replicas.md)).", 1),
]
for page, edits in EDITS.items():
    text = pages[page]
    for old_s, new_s, count in edits:
        n = text.count(old_s)
        if n == 0 or (count is not None and n != count):
            raise SystemExit("%s: edit applies %d times (want %s): %r" % (page, n, count,
                                                                           old_s[:120]))
        text = text.replace(old_s, new_s)
    pages[page] = text

readme = open(head_path).read()


# ---- links: an anchor on another page gets that page's path ----
def slug(title):
    t = title.strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def headings(text):
    out = set()
    fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and re.match(r"^#+ ", line):
            out.add(slug(line.lstrip("#")))
    return out


existing = {p: open(os.path.join(repo, p)).read() for p in ("docs/flink.md", "docs/keda.md")}
every = dict(pages)
every["README.md"] = readme
every.update(existing)
where = {}
for p, t in every.items():
    for h in headings(t):
        where.setdefault(h, p)


# Phrases of "see X" that name a section (or a paragraph) now on another page.
TITLES = {}
for p, t in every.items():
    fence = False
    for line in t.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = re.match(r"^#+ (.*)$", line)
        if m and not fence:
            TITLES.setdefault(m.group(1).strip(), (p, slug(m.group(1))))
SEE = {}
for phrase in ("Storage", "PostgreSQL", "Options", "Plugins", "Operations", "Dashboard",
               "Audit with SQL", "Batch jobs and rebalancing", "Replay against history",
               "Tuning advice", "The history over time", "Sandbox and limits",
               "Running several replicas on PostgreSQL", "Simulate before production"):
    if phrase in TITLES:
        SEE[phrase] = TITLES[phrase]
SEE["Retries"] = ("docs/api.md", "retries-the-client-contract-of-post-v1jobsjobmetrics")
SEE["Storage faults"] = ("docs/storage.md", "")
SEE["Several processes on one store"] = ("docs/storage.md", "")
SEE["History size"] = ("docs/storage.md", "")


def rel(src, dst):
    return os.path.relpath(dst, os.path.dirname(src) or ".")


def fix_links(page, text):
    own = headings(text)

    def anchor(m):
        a = m.group(1)
        if a in own:
            return m.group(0)
        if a not in where:
            raise SystemExit("%s: a link to #%s, which no page has" % (page, a))
        return "](%s#%s)" % (rel(page, where[a]), a)
    text = re.sub(r"\]\(#([^)]+)\)", anchor, text)

    def readme_anchor(m):
        a = m.group(1)
        if a in headings(readme):
            return m.group(0)
        return "](%s#%s)" % (rel(page, where[a]), a)
    text = re.sub(r"\]\(\.\./README\.md#([^)]+)\)", readme_anchor, text)
    # "see Storage faults": a link when the section is on another page (outside code).
    out, fence = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence:
            def see(m):
                phrase = m.group(1)
                dst, a = SEE[phrase]
                if dst == page:
                    return m.group(0)
                return "see [%s](%s%s)" % (phrase, rel(page, dst), "#" + a if a else "")
            line = re.sub(r"\bsee (%s)\b(?!\])" % "|".join(re.escape(k) for k in
                          sorted(SEE, key=len, reverse=True)), see, line)
        out.append(line)
    text = "\n".join(out)
    if page.startswith("docs/"):
        text = re.sub(r"\]\(docs/([^)]+)\)", r"](\1)", text)
    return text


for p in list(pages):
    pages[p] = fix_links(p, pages[p])
for p, t in existing.items():
    new = fix_links(p, t)
    if new != t:
        pages[p] = new
readme = fix_links("README.md", readme)

open(os.path.join(repo, "README.md"), "w").write(readme)
for p, t in pages.items():
    open(os.path.join(repo, p), "w").write(t.rstrip("\n") + "\n")
print("README.md: %d lines" % readme.count("\n"))
for p in sorted(pages):
    print("%s: %d lines" % (p, pages[p].count("\n")))
