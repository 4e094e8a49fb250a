/*
 * pg.h - the store on PostgreSQL through libpq (prefix pg_), internal to server/store: db.c
 * hands each function of db.h to the one here of the same name when its struct db was opened
 * on a libpq URL (db_is_pg). Same rows, same JSON as the SQLite store; what differs is said at
 * each function of db.h only where it does.
 *
 * Schema: schema/pg/NNN_name.sql (embedded as pg_migrations[] by schema/schema.cmake), each
 * applied once, in order, in one transaction under pg_advisory_xact_lock(PG_LOCK_MIGRATE),
 * the version in the one-row table schema_version. Statements are prepared once per
 * connection (PQprepare, named after their place in a small cache keyed by the SQL text's
 * address) with $n placeholders. A lost connection is reset before the next transaction.
 * Failures are classed by SQLSTATE into db_last_errcode's own codes (DB_ERR_OWN | fault).
 *
 * One struct pg is one connection, used by one thread. May call: libpq, jansson, log, pack.
 */
#ifndef GOVERNOR_PG_H
#define GOVERNOR_PG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/db.h"

/* The advisory lock key that serializes migrations across processes. */
#define PG_LOCK_MIGRATE 0x676f7600
/* The retention leader's lock key (pg.c, a retention batch), as SQL text: 0x676f7601. */
#define PG_LOCK_RETENTION_S "1735357953"

extern const struct db_migration pg_migrations[];
extern const int pg_n_migrations;

struct pg;

/* new: connects to url; read_only: no migrations, every transaction read-only. NULL + *errp. */
struct pg *pg_open(const char *url, bool read_only, char **errp);
void pg_close(struct pg *p);
int pg_user_version(struct pg *p);
int pg_read_begin(struct pg *p, char **errp);
void pg_read_end(struct pg *p);

int pg_begin(struct pg *p, char **errp);
int pg_commit(struct pg *p, char **errp);
void pg_rollback(struct pg *p);
int pg_write_apply(struct pg *p, struct db_write *w, char **errp);
/* BEGIN, the units, COMMIT as one pipeline (libpq's pipeline mode; a group with a retention
 * unit: round trips), rolled back on a failure. -1 + *errp. */
int pg_write_group(struct pg *p, struct db_write **ws, int n, char **errp);
int pg_last_errcode(const struct pg *p);
int pg_probe(struct pg *p, int64_t now, int busy_ms, char **errp);

int pg_window_each(struct pg *p, const char *job, int64_t from_seq,
                   int (*fn)(void *ud, int64_t seq, const void *blob, size_t len), void *ud,
                   char **errp);
int pg_jobs_list(struct pg *p, json_t **out, char **errp);
int pg_jobs_each(struct pg *p, const char *job, int limit,
                 int (*fn)(void *ud, const char *job, int64_t created_at, const char *config_json,
                           const void *state_bin, size_t state_bin_len, int64_t last_at,
                           int64_t version, int64_t generation),
                 void *ud, char **errp);
int pg_decisions_list(struct pg *p, const char *job, struct db_page *page, json_t **out,
                      char **errp);
int pg_decision_get(struct pg *p, int64_t id, json_t **out, char **errp);
int pg_decision_executed(struct pg *p, const char *job, json_t **out, char **errp);
int pg_decision_find(struct pg *p, const char *job, int64_t at, int64_t *id, char **input_json,
                     char **decision_json, char **errp);
/* At most limit decisions of job with at <= to and after_id < id <= max_id, in id order (one
 * page of db_history_each). */
int pg_history_page(struct pg *p, const char *job, int64_t to, int64_t after_id, int64_t max_id,
                    int limit,
                    int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                              const char *config, json_t *decision),
                    void *ud, char **errp);
int pg_history_last_id(struct pg *p, const char *job, int64_t *id, char **errp);
int pg_job_deletions(struct pg *p, const char *job, int64_t **ids, int *n, char **errp);
int pg_events_list(struct pg *p, const char *job, int limit, json_t **out, char **errp);

#endif
