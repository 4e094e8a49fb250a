"""with_pg.py CMD [ARG ...] - runs CMD with GOVERNOR_TEST_PG_URL set to a fresh database of a
throwaway PostgreSQL cluster (pgtmp.py), stopped after; exits with CMD's status."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pgtmp  # noqa: E402

url = pgtmp.createdb("unit")
env = dict(os.environ, GOVERNOR_TEST_PG_URL=url)
rc = subprocess.call(sys.argv[1:], env=env)
pgtmp.cluster().stop()
sys.exit(rc)
