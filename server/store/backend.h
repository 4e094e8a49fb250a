/*
 * backend.h - what a backend of the store implements (struct store_backend), internal to
 * server/store: a table of functions over one connection, as SQLite's sqlite3_io_methods are
 * over one file. db.c writes everything else once above it (the statements, the write units,
 * the reads, the rebuild of a response, fault injection, retention); a backend knows its
 * library and its dialect, and nothing of the rows.
 *
 * Two backends: store_sqlite (sqlite.c) and store_pg (pg.c, libpq). A statement is a struct
 * db_sql: its SQL written once with ?N placeholders, which PostgreSQL's backend turns into $N
 * when it prepares it, and a PostgreSQL form only where the dialects truly differ. Each
 * statement is prepared once per connection (cached by the struct's address) unless it says
 * DB_SQL_ONCE.
 *
 * Results: a write statement is sent (send) and gives at most one integer (its first row's
 * first column: RETURNING id or version) and its row count. A backend that pipelines
 * (PostgreSQL in a DB_TX_PIPE transaction) sends the statement ahead of its result, which it
 * reads at flush or commit; the others run it at once. A read is a query with a cursor (next,
 * then the columns of the current row). Failures are recorded on the connection: errcode gives
 * the code (SQLite's extended result code, or DB_ERR_OWN | enum db_fault) and fault_of its class.
 *
 * A backend calls nothing of db.h (it uses its types only) and includes no other file of the
 * store but pack.h (pure), so that the store has no import circle: migrate.c > db.c > backends.
 * May call: its library, log, xmem, pack.
 */
#ifndef GOVERNOR_BACKEND_H
#define GOVERNOR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/db.h"

/* One statement. */
struct db_sql {
    const char *sql;  /* ?N placeholders */
    const char *pg;   /* PostgreSQL's form where the dialects differ (?N too); NULL: sql */
    const char *what; /* what it does, for the error: "insert decision" */
    unsigned flags;   /* DB_SQL_* */
};
/* A fenced write of a jobs row that returns the new version (db.h, expect_version). SQLite's
 * writes no row when the version moved; PostgreSQL runs it as WITH u AS (sql) SELECT version
 * FROM u, plus governor_fenced($1) when u is empty, which raises SQLSTATE GV001: a statement
 * sent in a pipeline cannot be looked at before the next is sent, so the fence must abort. */
#define DB_SQL_FENCED 1u
/* ?1 is the id of the decision the unit has just inserted. PostgreSQL reads it from the
 * sequence of decisions instead (currval), since a pipeline sends the rows before that id
 * comes back. */
#define DB_SQL_ID1 2u
/* Prepared for this one use, not cached (a reader's schema may be an older one; a read run
 * once per connection). */
#define DB_SQL_ONCE 4u
/* An INSERT whose *out (send) receives the id of the row it inserted, when it inserted one:
 * SQLite's last_insert_rowid (a RETURNING clause costs SQLite far more), PostgreSQL's
 * RETURNING id. */
#define DB_SQL_NEW_ID 8u

/* A parameter's value. */
enum db_ptype { DB_PNULL, DB_PINT, DB_PTEXT, DB_PBLOB };
struct db_param {
    enum db_ptype type;
    int64_t i;     /* DB_PINT */
    const void *p; /* DB_PTEXT: NUL-terminated; DB_PBLOB: n bytes. NULL: SQL NULL */
    size_t n;
};
#define DB_INT(x)     ((struct db_param){.type = DB_PINT, .i = (x)})
#define DB_TEXT(s)    ((struct db_param){.type = DB_PTEXT, .p = (s)})
#define DB_BLOB(b, l) ((struct db_param){.type = DB_PBLOB, .p = (b), .n = (l)})
#define DB_NULL       ((struct db_param){.type = DB_PNULL})
/* The parameters of one statement, as the (array, count) pair send and query take. */
#define DB_ARGS(...)                                                                               \
    (const struct db_param[]){__VA_ARGS__},                                                        \
        (int)(sizeof((const struct db_param[]){__VA_ARGS__}) / sizeof(struct db_param))

/* The type of a column's value in the current row. */
enum db_kind { DB_KNULL, DB_KINT, DB_KREAL, DB_KTEXT, DB_KBLOB };

/* A cursor over the rows of one query; its fields are the backend's. */
struct db_cur {
    const struct store_backend *be;
    void *conn;
    const struct db_sql *s;
    void *h;    /* SQLite: the statement; PostgreSQL: the result */
    int row, n; /* PostgreSQL: the current row, the rows */
    int rc;     /* SQLite: the last step's result */
    void *buf;  /* PostgreSQL: the last blob read, unescaped */
};

/* How a transaction is begun. */
enum db_tx {
    DB_TX_READ,  /* one snapshot for the reads inside */
    DB_TX_WRITE, /* writes, each statement run at once */
    DB_TX_PIPE   /* writes whose statements a pipelining backend sends ahead of their results */
};

struct store_backend {
    const char *name;
    /* DB_TX_PIPE defers the results of send to flush and commit. */
    bool pipelines;
    /* Schema versions below this one hold decisions in their form before the compact history
     * (SQLite's migration 009); 0: none. */
    int compact_since;
    /* ... and below this one in the tables of 009 to 011, before the history in two parts
     * (SQLite's migration 012); 0: none. */
    int outcomes_since;

    /* new: a connection to target; read_only: no migration, no write. NULL + *errp. */
    void *(*open)(const char *target, bool read_only, const char *synchronous, char **errp);
    void (*close)(void *c);
    /* The schema's version (SQLite: PRAGMA user_version), -1 when it cannot be read. */
    int (*version)(void *c);
    /* Runs statements without parameters as they are (a migration's SQL). -1 + *errp. */
    int (*script)(void *c, const char *sql, char **errp);

    int (*begin)(void *c, enum db_tx tx, char **errp);
    /* Commits (DB_TX_PIPE: sends the commit, reads every result left). -1 + *errp. */
    int (*commit)(void *c, char **errp);
    /* Ends the transaction without its writes, whatever state it is in. Never fails loudly. */
    void (*rollback)(void *c);

    /*
     * Runs a write statement with its n parameters, or in a pipeline sends it. *out (when
     * not NULL) receives its first row's first column when it returns a row, once its result
     * is read. The rows it returned or changed (0 in a pipeline), or -1 + *errp.
     */
    int (*send)(void *c, const struct db_sql *s, const struct db_param *p, int n, int64_t *out,
                char **errp);
    /* Reads the results of what was sent so far (a no-op without a pipeline). -1 + *errp. */
    int (*flush)(void *c, char **errp);

    /* Runs a read; its rows through *cur. -1 + *errp. */
    int (*query)(void *c, const struct db_sql *s, const struct db_param *p, int n,
                 struct db_cur *cur, char **errp);
    bool (*next)(struct db_cur *cur);
    /* After the last next: 0 when the rows ended without an error, else -1 + *errp. */
    int (*done)(struct db_cur *cur, char **errp);
    void (*end)(struct db_cur *cur);
    int (*ncols)(const struct db_cur *cur);
    const char *(*colname)(const struct db_cur *cur, int i);
    enum db_kind (*kind)(const struct db_cur *cur, int i);
    int64_t (*i64)(const struct db_cur *cur, int i);      /* 0 when NULL */
    double (*f64)(const struct db_cur *cur, int i);       /* NaN when NULL */
    const char *(*text)(const struct db_cur *cur, int i); /* NULL when NULL */
    /* The bytes of a blob, valid until the next call of next (NULL when NULL). */
    const void *(*blob)(struct db_cur *cur, int i, size_t *n);

    /* The code of the connection's last failure (0: none since its last write begin). */
    int (*errcode)(const void *c);
    /* The class of a code of this backend (errcode's, or a code fault injection uses). */
    enum db_fault (*fault_of)(int code);
    /* A code's text, for an injected failure's message. */
    const char *(*errstr)(int code);
    /* How long the next write transaction's statements wait for another connection's lock:
     * ms (0: not at all), or the connection's own wait when ms < 0. */
    void (*lock_wait)(void *c, int ms);
    /* Whether this connection runs the store's maintenance now (retention): 1, or 0 when
     * another connection does (held until the transaction ends), or -1 + *errp. */
    int (*leader)(void *c, char **errp);

    /* The write-ahead log of a backend whose log is the store's own (SQLite; NULL on
     * PostgreSQL, whose log is the server's): db.h, db_wal_limit, db_wal_bytes and
     * db_wal_truncate, which do nothing where these are NULL. */
    int (*wal_limit)(void *c, int64_t bytes, char **errp);
    int64_t (*wal_bytes)(const void *c);
    int (*wal_truncate)(void *c, int busy_ms, char **errp);
};

extern const struct store_backend store_sqlite, store_pg;

/* SQLite's SQLITE_CONSTRAINT: fault injection takes SQLite's codes (db.h), and
 * db_fail_next_writes injects this one, a unit's fault. */
#define DB_SQLITE_CONSTRAINT 19

#endif
