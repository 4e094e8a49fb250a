# api.cmake - the schema embedded into the binary (schema/schema.cmake; the top-level
# CMakeLists.txt may include it directly, include_guard makes that harmless) and the API
# tests of `governor serve`: Python 3 (stdlib only) scripts that start the real binary on a
# free 127.0.0.1 port with a temporary database and speak HTTP to it.
include(${CMAKE_SOURCE_DIR}/schema/schema.cmake)

find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB API_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/api/test_*.py)
  foreach(t ${API_TESTS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME api.${name} COMMAND ${PYTHON3} ${t} $<TARGET_FILE:governor>)
    set_tests_properties(api.${name} PROPERTIES TIMEOUT 180
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()

# The same API tests against PostgreSQL (label pg): gov.py under GOVERNOR_TEST_PG=1 gives each
# server a fresh database in a throwaway cluster (tests/pg/pgtmp.py), when PostgreSQL's server
# binaries are installed. Not in the list: those of SQLite's own files and SQL (its migrations,
# its fault injection, the sqlite3 shell, its SQL dialect in /v1/sql: tests/pg/test_sql_pg.py
# is their PostgreSQL form), two processes on one SQLite file (tests/replicas/ on PostgreSQL),
# and those that store nothing (the CLI, the simulator, the hostile clients).
file(GLOB _pg_bins /usr/lib/postgresql/*/bin)
find_program(PG_CTL pg_ctl PATHS ${_pg_bins})
set(GOVERNOR_PG_API_TESTS
  test_bad_input test_durations test_head test_history_ids test_job_metrics test_job_names
  test_new_connections test_one_pipeline test_plugin_limits test_plugin_views test_policies
  test_readme_batch test_readme_quickstart test_refusals test_replay_policies test_retention
  test_retry test_routes test_replay_db test_batch test_applied_scalings test_timeline
  test_advice test_durability test_auth test_config_file test_token_file test_log_escaping
  test_out_of_descriptors test_dashboard test_target test_history_pages test_job_delete
  test_jobs_memory test_stored_answer test_history_two_parts)
if(PYTHON3 AND PG_CTL)
  foreach(name ${GOVERNOR_PG_API_TESTS})
    add_test(NAME pg.${name} COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/api/${name}.py
      $<TARGET_FILE:governor>)
    set_tests_properties(pg.${name} PROPERTIES TIMEOUT 240 LABELS pg
      ENVIRONMENT GOVERNOR_TEST_PG=1 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
  # The store's own unit test, on a database of its own (it is skipped as unit.test_pg_store).
  add_test(NAME pg.unit_pg_store COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/pg/with_pg.py
    $<TARGET_FILE:test_pg_store>)
  set_tests_properties(pg.unit_pg_store PROPERTIES TIMEOUT 120 LABELS pg
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()
