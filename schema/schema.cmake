# schema.cmake - embeds schema/NNN_name.sql into the binary, so `governor serve` migrates its
# database from any working directory. Generates ${CMAKE_BINARY_DIR}/schema_sql.c (the
# table migrate.c reads: struct db_migration db_migrations[]) and adds it to gov_store.
include_guard(GLOBAL)

file(GLOB GOVERNOR_SCHEMA_SQL CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/schema/[0-9][0-9][0-9]_*.sql)
list(SORT GOVERNOR_SCHEMA_SQL)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/schema_sql.c
  COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_BINARY_DIR}/schema_sql.c
          "-DFILES=${GOVERNOR_SCHEMA_SQL}" -P ${CMAKE_SOURCE_DIR}/schema/embed.cmake
  DEPENDS ${GOVERNOR_SCHEMA_SQL} ${CMAKE_SOURCE_DIR}/schema/embed.cmake
  COMMENT "Embedding schema/*.sql"
  VERBATIM)
target_sources(gov_store PRIVATE ${CMAKE_BINARY_DIR}/schema_sql.c)

# The PostgreSQL schema, schema/pg/NNN_name.sql, the same way: pg_migrations[] (store/pg.c).
file(GLOB GOVERNOR_SCHEMA_PG CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/schema/pg/[0-9][0-9][0-9]_*.sql)
list(SORT GOVERNOR_SCHEMA_PG)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/schema_pg_sql.c
  COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_BINARY_DIR}/schema_pg_sql.c -DVAR=pg_migrations
          "-DFILES=${GOVERNOR_SCHEMA_PG}" -P ${CMAKE_SOURCE_DIR}/schema/embed.cmake
  DEPENDS ${GOVERNOR_SCHEMA_PG} ${CMAKE_SOURCE_DIR}/schema/embed.cmake
  COMMENT "Embedding schema/pg/*.sql"
  VERBATIM)
target_sources(gov_store PRIVATE ${CMAKE_BINARY_DIR}/schema_pg_sql.c)
