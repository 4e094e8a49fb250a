# pg.cmake - the tests that need PostgreSQL (and HAProxy): the throwaway cluster helper
# (tests/pg/pgtmp.py), POST /v1/sql on PostgreSQL, the replicas behind HAProxy. Label `pg`;
# each exits 77 (skipped) with the reason when pg_ctl, haproxy or the binary's PostgreSQL
# support is missing, so a machine without them stays green.
find_program(PYTHON3 python3)
if(PYTHON3)
  file(GLOB PG_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/pg/test_*.py)
  foreach(t ${PG_TESTS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME pg.${name} COMMAND ${PYTHON3} ${t} $<TARGET_FILE:governor>)
    set_tests_properties(pg.${name} PROPERTIES TIMEOUT 300 LABELS pg SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
endif()

# Replicas behind HAProxy on one PostgreSQL (tests/replicas/), and the replica benchmark's
# smoke run (tests/bench/replicas.py prints the figures when run by hand).
if(PYTHON3)
  foreach(t failover same_job)
    add_test(NAME pg.replicas.${t}
             COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/replicas/${t}.py $<TARGET_FILE:governor>)
    set_tests_properties(pg.replicas.${t} PROPERTIES TIMEOUT 300 LABELS pg SKIP_RETURN_CODE 77
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endforeach()
  add_test(NAME pg.bench.replicas
           COMMAND ${PYTHON3} ${CMAKE_SOURCE_DIR}/tests/bench/replicas.py --smoke
                   $<TARGET_FILE:governor>)
  set_tests_properties(pg.bench.replicas PROPERTIES TIMEOUT 300 LABELS pg SKIP_RETURN_CODE 77
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()
