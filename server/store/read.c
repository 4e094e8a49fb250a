/*
 * read.c - the store's reads (see db.h), above its backends as db.c is: a job's rows and
 * window at its load (the most recently sampled jobs at start), the job list, the history of
 * the HTTP API (a page of decisions bounded by its rows, one decision, the newest executed
 * one, the decision of a retried sample, the events), replay's walk over a job's history in
 * pages of short read transactions, and the one rebuild of a response from its rows that all
 * of them take. Each statement's SQL written once, its rows read through the store's cursor
 * (query.h).
 */
#include <limits.h>
#include <string.h>

#include "base/jarena.h"
#include "base/text.h"
#include "base/xmem.h"
#include "core/core.h"
#include "store/pack.h"
#include "store/query.h"

static const struct db_sql SQL_WINDOW_READ = {
    "SELECT seq, sample FROM job_window WHERE job = ?1 AND seq >= ?2 ORDER BY seq", NULL,
    "read window samples", 0};

int db_window_each(struct db *db, const char *job, int64_t from_seq,
                   int (*fn)(void *ud, int64_t seq, const void *blob, size_t len), void *ud,
                   char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_WINDOW_READ, DB_ARGS(DB_TEXT(job), DB_INT(from_seq)), &c, errp);
    bool more = rc == 0;
    while (more && (more = db_next(&c))) {
        size_t n;
        const void *b = db_blob(&c, 1, &n);
        if ((rc = fn(ud, db_int(&c, 0), b, n)) != 0)
            break;
    }
    return db_finish(&c, rc, errp);
}

#define JOB_ROWS                                                                                   \
    "SELECT job, created_at, config_json, last_at, state_bin, version, generation FROM jobs "
/* COLLATE "C" on PostgreSQL: the order of SQLite's BINARY collation whatever the locale. */
#define JOBS_RECENT(collate)                                                                       \
    JOB_ROWS "ORDER BY coalesce(last_at, created_at) DESC, job" collate " LIMIT ?1"
static const struct db_sql SQL_JOBS_RECENT = {JOBS_RECENT(""), JOBS_RECENT(" COLLATE \"C\""),
                                              "read jobs", 0};
static const struct db_sql SQL_JOBS_ONE = {JOB_ROWS "WHERE job = ?1", NULL, "read jobs", 0};

int db_jobs_each(struct db *db, const char *job, int limit,
                 int (*fn)(void *ud, const char *job, int64_t created_at, const char *config_json,
                           const void *state_bin, size_t state_bin_len, int64_t last_at,
                           int64_t version, int64_t generation),
                 void *ud, char **errp)
{
    struct db_cur c;
    struct db_param key = job ? DB_TEXT(job) : DB_INT(limit);
    int n = 0;
    if (db_query(db, job ? &SQL_JOBS_ONE : &SQL_JOBS_RECENT, &key, 1, &c, errp) < 0) {
        db_end(&c);
        return -1;
    }
    while (db_next(&c)) {
        size_t len;
        const void *state = db_blob(&c, 4, &len);
        int64_t last = db_null(&c, 3) ? INT64_MIN : db_int(&c, 3);
        if (fn(ud, db_text(&c, 0), db_int(&c, 1), db_text(&c, 2), state, len, last, db_int(&c, 5),
               db_int(&c, 6)) != 0) {
            *errp = xasprintf("job \"%s\": bad stored row", db_text(&c, 0));
            n = -1;
            break;
        }
        n++;
    }
    if (n >= 0 && db_done(&c, errp) < 0)
        n = -1;
    db_end(&c);
    return n;
}

/* new: column i parsed as JSON, or null when it is NULL or does not parse. */
static json_t *col_json(const struct db_cur *c, int i)
{
    const char *s = db_text(c, i);
    json_t *j = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

static json_t *col_text(const struct db_cur *c, int i)
{
    const char *s = db_text(c, i);
    return s ? json_string(s) : json_null();
}

/* new: a vertex row's evaluated figures as an object (columns fig: figures, fig + 1:
 * evaluated_json). */
static json_t *col_evaluated(const struct db_cur *c, int fig)
{
    const char *f = db_text(c, fig);
    if (!f)
        return col_json(c, fig + 1);
    char *text = pack_figures_text(f);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j ? j : json_null();
}

/* new: the request's text of column i, a packed one (pack.h): "" when it is not one. */
static char *col_input_text(struct db_cur *c, int i)
{
    size_t n;
    const void *b = db_blob(c, i, &n);
    char *text = pack_input_text(b, n);
    return text ? text : xstrdup("");
}

/* new: column i (a packed request) parsed as JSON, or null. */
static json_t *col_input(struct db_cur *c, int i)
{
    char *text = col_input_text(c, i);
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    free(text);
    return j ? j : json_null();
}

/*
 * The response of a decision, rebuilt from its rows (migration 009): the decision row, its
 * vertex rows in order, its events, and `response` (the members no row holds), member for
 * member in the order jsn_render_decision writes them. A row converted from an older form
 * whose rows do not give its response back exactly kept it in decisions.decision_json.
 */
static const struct db_sql SQL_RESPONSE_VERTICES = {
    "SELECT vertex, current, target, raw_target, reason, constraints, flags, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = ?1 ORDER BY ord",
    NULL, "read vertex_decisions", 0};
static const struct db_sql SQL_DECISION_EVENTS = {
    "SELECT type, reason, message, count, suppressed FROM events WHERE decision_id = ?1 "
    "ORDER BY id",
    NULL, "read events", 0};

/* The column of DB_DEC_COLS of each member of the response the store keeps in a column
 * (core_dfields, CORE_DS_COLUMN), by name. */
static const struct {
    const char *name;
    int col;
} rb_columns[] = {
    {"job", DC_JOB},
    {"at", DC_AT},
    {"action", DC_ACTION},
    {"execute", DC_EXECUTE},
    {"reason", DC_REASON},
    {"message", DC_MESSAGE},
    {"policy_revision", DC_REVISION},
    {"config_hash", DC_HASH},
};

static int rb_column(const char *name)
{
    for (size_t i = 0; i < sizeof rb_columns / sizeof rb_columns[0]; i++)
        if (strcmp(rb_columns[i].name, name) == 0)
            return rb_columns[i].col;
    return -1;
}

/* Whether key is a member of the response kept in its rest (CORE_DS_REST). */
static bool rb_rest(const char *key)
{
    for (int i = 0; i < core_n_dfields; i++)
        if (core_dfields[i].store == CORE_DS_REST && strcmp(core_dfields[i].name, key) == 0)
            return true;
    return false;
}

/* new: member f of the response from column k of row, as the response shows it. */
static json_t *rb_value(const struct core_dfield *f, const struct db_cur *row, int k)
{
    const char *s;
    switch (f->type) {
    case CORE_DF_ARG:
        return text_json_string(db_text(row, k));
    case CORE_DF_TEXT:
        s = db_text(row, k);
        return text_json_string(s ? s : "");
    case CORE_DF_INT64:
        return json_integer(db_int(row, k));
    case CORE_DF_BOOL:
        return json_boolean(db_int(row, k));
    case CORE_DF_ACTION:
    case CORE_DF_REASON:
        return col_text(row, k);
    default: /* not a column's (core_dfields) */
        return json_null();
    }
}

/* new: one vertex of the response from a row of SQL_RESPONSE_VERTICES, its members in the
 * order of the core's table (core_vfields). */
static json_t *response_vertex(const struct db_cur *c)
{
    json_t *o = json_object();
    bool flags = !db_null(c, 6);
    int64_t bits = db_int(c, 6);
    for (int i = 0; i < core_n_vfields; i++) {
        const char *name = core_vfields[i].name;
        json_t *x = NULL;
        if (strcmp(name, "id") == 0)
            x = text_json_string(db_text(c, 0));
        else if (strcmp(name, "current") == 0)
            x = json_integer(db_int(c, 1));
        else if (strcmp(name, "target") == 0)
            x = json_integer(db_int(c, 2));
        else if (strcmp(name, "raw_target") == 0)
            x = json_integer(db_int(c, 3));
        else if (strcmp(name, "reason") == 0)
            x = col_text(c, 4);
        else if (strcmp(name, "constraints") == 0)
            x = col_json(c, 5);
        else if (strcmp(name, "excluded") == 0)
            x = flags ? json_boolean(bits & 1) : NULL;
        else if (strcmp(name, "outside_bounds") == 0)
            x = flags ? json_boolean(bits & 2) : NULL;
        else if (strcmp(name, "message") == 0)
            x = db_null(c, 7) ? NULL : text_json_string(db_text(c, 7));
        else if (strcmp(name, "evaluated") == 0)
            x = col_evaluated(c, 8);
        if (x)
            json_object_set_new(o, name, x);
    }
    return o;
}

/* The vertices of the decision at row into o's parallelism and vertices, and its message's
 * end (message_parts): the messages of the vertices of its bitmask. -1 + *errp. */
static int rebuild_vertices(struct db *db, const struct db_cur *row, int col, json_t *o,
                            char **errp)
{
    json_t *par = json_object_get(o, "parallelism"), *vs = json_object_get(o, "vertices");
    const char *msg = db_text(row, col + DC_MESSAGE);
    int64_t parts = db_int(row, col + DC_PARTS);
    char *full = NULL;
    size_t len = 0;
    struct db_cur c;
    int rc =
        db_query(db, &SQL_RESPONSE_VERTICES, DB_ARGS(DB_INT(db_int(row, col + DC_ID))), &c, errp);
    for (int ord = 0; rc == 0 && db_next(&c); ord++) {
        json_t *v = response_vertex(&c);
        json_object_set(par, json_string_value(json_object_get(v, "id")),
                        json_object_get(v, "target"));
        json_array_append_new(vs, v);
        const char *vm = db_text(&c, 7);
        if (ord >= 62 || !((parts >> ord) & 1) || !vm)
            continue;
        size_t n = strlen(vm);
        if (!full) {
            len = strlen(msg ? msg : "");
            full = xmalloc(len + n + 1);
            memcpy(full, msg ? msg : "", len);
        } else {
            full = xrealloc(full, len + 2 + n + 1);
            memcpy(full + len, "; ", 2);
            len += 2;
        }
        memcpy(full + len, vm, n);
        full[len += n] = '\0';
    }
    if (full)
        json_object_set_new(o, "message", text_json_string(full));
    free(full);
    return db_finish(&c, rc, errp);
}

/* The events of decision id into evs, each member from its column (SQL_DECISION_EVENTS selects
 * them in the order of core_efields). -1 + *errp. */
static int rebuild_events(struct db *db, int64_t id, json_t *evs, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_DECISION_EVENTS, DB_ARGS(DB_INT(id)), &c, errp);
    while (rc == 0 && db_next(&c)) {
        json_t *e = json_object();
        for (int i = 0; i < core_n_efields; i++) {
            const char *s = NULL;
            json_t *x = NULL;
            switch (core_efields[i].type) {
            case CORE_EF_TEXT:
                x = text_json_string(db_text(&c, i));
                break;
            case CORE_EF_TEXT0:
                s = db_text(&c, i);
                x = text_json_string(s ? s : "");
                break;
            case CORE_EF_INT:
                x = json_integer(db_int(&c, i));
                break;
            case CORE_EF_BOOL:
                x = json_boolean(db_int(&c, i));
                break;
            }
            json_object_set_new(e, core_efields[i].name, x);
        }
        json_array_append_new(evs, e);
    }
    return db_finish(&c, rc, errp);
}

int db_response_rebuild(struct db *db, struct db_cur *row, int col, json_t **out, char **errp)
{
    json_t *o = json_object(), *extra = col_json(row, col + DC_RESPONSE), *v;
    const char *key;
    *out = NULL;
    for (int i = 0; i < core_n_dfields; i++) {
        const struct core_dfield *f = &core_dfields[i];
        switch (f->store) {
        case CORE_DS_COLUMN:
            json_object_set_new(o, f->name, rb_value(f, row, col + rb_column(f->name)));
            break;
        case CORE_DS_ROWS: /* filled from the rows below */
            json_object_set_new(o, f->name,
                                f->type == CORE_DF_TARGETS ? json_object() : json_array());
            break;
        case CORE_DS_REST: /* in its place when the rest has it */
            if ((v = json_object_get(extra, f->name)))
                json_object_set(o, f->name, v);
            break;
        }
    }
    json_object_foreach(extra, key, v)
    {
        if (!rb_rest(key))
            json_object_set(o, key, v);
    }
    json_decref(extra);
    if (rebuild_vertices(db, row, col, o, errp) < 0 ||
        rebuild_events(db, db_int(row, col + DC_ID), json_object_get(o, "events"), errp) < 0) {
        json_decref(o);
        return -1;
    }
    *out = o;
    return 0;
}

/* new in *out: the response of the decision at row (DB_DEC_COLS from `col`): the text kept
 * from before 009, or the rebuild. -1 + *errp. */
static int response_of(struct db *db, struct db_cur *row, int col, json_t **out, char **errp)
{
    if (!db_null(row, col + DC_DECISION_JSON)) {
        *out = col_json(row, col + DC_DECISION_JSON);
        return 0;
    }
    return db_response_rebuild(db, row, col, out, errp);
}

/* {key: [one value per row]} in *out (new), each from row(); -1 + *errp. */
static int list(struct db *db, const struct db_sql *s, const struct db_param *p, int n,
                const char *key,
                int (*row)(struct db *db, struct db_cur *c, json_t **v, char **errp), json_t **out,
                char **errp)
{
    struct db_cur c;
    json_t *arr = json_array(), *v;
    int rc = db_query(db, s, p, n, &c, errp);
    *out = NULL;
    while (rc == 0 && db_next(&c) && (rc = row(db, &c, &v, errp)) == 0)
        json_array_append_new(arr, v);
    rc = db_finish(&c, rc, errp);
    if (rc == 0)
        *out = json_pack("{s:o}", key, arr);
    else
        json_decref(arr);
    return rc;
}

#define JOBS_LIST(collate)                                                                         \
    "SELECT job, created_at, last_at, config_json FROM jobs ORDER BY job" collate
static const struct db_sql SQL_JOBS_LIST = {JOBS_LIST(""), JOBS_LIST(" COLLATE \"C\""), "read jobs",
                                            0};

static int jobs_row(struct db *db, struct db_cur *c, json_t **v, char **errp)
{
    (void)db;
    (void)errp;
    json_t *config = col_json(c, 3);
    if (!json_is_object(config)) {
        json_decref(config);
        config = json_object();
    }
    *v = json_pack("{s:o,s:I,s:o,s:o}", "job", text_json_string(db_text(c, 0)), "created_at",
                   (json_int_t)db_int(c, 1), "last_at",
                   db_null(c, 2) ? json_null() : json_integer(db_int(c, 2)), "config", config);
    return 0;
}

int db_jobs_list(struct db *db, json_t **out, char **errp)
{
    return list(db, &SQL_JOBS_LIST, NULL, 0, "jobs", jobs_row, out, errp);
}

#define DEC_FROM " FROM decisions d LEFT JOIN decision_configs c ON c.id = d.config_id "
/* A page (db_page), with each decision's count of vertex rows after DB_DEC_COLS: one seek of
 * the index of vertex_decisions, before the decision is read. */
static const struct db_sql SQL_DECISIONS = {
    "SELECT " DB_DEC_COLS ", (SELECT coalesce(max(ord) + 1, 0) FROM vertex_decisions v "
    "WHERE v.decision_id = d.id)" DEC_FROM
    "WHERE d.job = ?1 AND d.at >= ?2 AND (d.at < ?3 OR (d.at = ?3 AND d.id < ?5)) "
    "ORDER BY d.at DESC, d.id DESC LIMIT ?4",
    NULL, "read decisions", 0};

int db_response_rows(const json_t *response)
{
    size_t n = json_array_size(json_object_get(response, "vertices")) +
               json_array_size(json_object_get(response, "splits")) +
               json_array_size(json_object_get(response, "unsplittable"));
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

/* A stored response with its decision_id first, as in the decide response. */
static int decisions_row(struct db *db, struct db_cur *c, json_t **v, char **errp)
{
    if (response_of(db, c, 0, v, errp) < 0)
        return -1;
    if (json_is_object(*v)) {
        json_t *o = json_pack("{s:I}", "decision_id", (json_int_t)db_int(c, DC_ID));
        json_object_update(o, *v);
        json_decref(*v);
        *v = o;
    }
    return 0;
}

int db_decisions_list(struct db *db, const char *job, struct db_page *page, json_t **out,
                      char **errp)
{
    struct db_cur c;
    json_t *arr = json_array(), *v;
    int64_t rows = 0;
    int rc = db_query(db, &SQL_DECISIONS,
                      DB_ARGS(DB_TEXT(job), DB_INT(page->since), DB_INT(page->until),
                              DB_INT(page->limit), DB_INT(page->before)),
                      &c, errp);
    *out = NULL;
    page->more = false;
    while (rc == 0 && db_next(&c)) {
        /* Past the first, a decision that would take the page past its budget of rows is
         * left for the next page. */
        int64_t will = db_int(&c, DC__N);
        if (rows > 0 && (rows >= page->max_rows || rows + will > page->max_rows)) {
            page->more = true;
            break;
        }
        if ((rc = decisions_row(db, &c, &v, errp)) < 0)
            break;
        rows += db_response_rows(v);
        page->next_at = db_int(&c, DC_AT);
        page->next_id = db_int(&c, DC_ID);
        json_array_append_new(arr, v);
    }
    if (page->more)
        db_end(&c); /* rows left behind: not an error */
    else
        rc = db_finish(&c, rc, errp);
    if (rc == 0)
        *out = json_pack("{s:o}", "decisions", arr);
    else
        json_decref(arr);
    return rc;
}

/* The partial index decisions_scalings holds exactly these rows (execute = 1 implies a change). */
static const struct db_sql SQL_DECISION_EXECUTED = {
    "SELECT " DB_DEC_COLS DEC_FROM "WHERE d.job = ?1 AND d.execute = 1 AND d.action <> 'NO_CHANGE' "
    "ORDER BY d.id DESC LIMIT 1",
    NULL, "read decisions", 0};

int db_decision_executed(struct db *db, const char *job, json_t **out, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_DECISION_EXECUTED, DB_ARGS(DB_TEXT(job)), &c, errp);
    *out = NULL;
    if (rc == 0 && db_next(&c)) {
        if ((rc = decisions_row(db, &c, out, errp)) == 0 && !json_is_object(*out)) {
            json_decref(*out); /* a response that is no object: its id alone */
            *out = json_pack("{s:I}", "decision_id", (json_int_t)db_int(&c, DC_ID));
        }
        db_end(&c);
        return rc;
    }
    return db_finish(&c, rc, errp);
}

/* The record's own columns follow DB_DEC_COLS. */
static const struct db_sql SQL_DECISION_ONE = {
    "SELECT " DB_DEC_COLS ", d.input, c.config_json, d.created_at" DEC_FROM "WHERE d.id = ?1", NULL,
    "read decision", 0};
static const struct db_sql SQL_DECISION_VERTICES = {
    "SELECT vertex AS id, current, raw_target, target, reason, constraints, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = ?1 ORDER BY ord",
    NULL, "read decision", 0};
static const struct db_sql SQL_DECISION_PLUGINS = {
    "SELECT plugin, hook, outcome, duration_us, error FROM plugin_calls WHERE decision_id = ?1",
    NULL, "read decision", 0};

/* Appends to arr one object per row of s for decision id, a member per column by its name. */
static int rows(struct db *db, const struct db_sql *s, int64_t id, json_t *arr, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, s, DB_ARGS(DB_INT(id)), &c, errp);
    while (rc == 0 && db_next(&c)) {
        json_t *o = json_object();
        for (int k = 0; k < db_ncols(&c); k++) {
            const char *name = db_colname(&c, k);
            json_t *v;
            if (strcmp(name, "figures") == 0) {
                name = "evaluated";
                v = col_evaluated(&c, k++); /* and evaluated_json */
            } else if (strcmp(name, "constraints") == 0) {
                v = col_json(&c, k);
            } else if (strcmp(name, "suppressed") == 0) {
                v = json_boolean(db_int(&c, k));
            } else if (db_kind(&c, k) == DB_KINT) {
                v = json_integer(db_int(&c, k));
            } else {
                v = col_text(&c, k);
            }
            json_object_set_new(o, name, v);
        }
        json_array_append_new(arr, o);
    }
    return db_finish(&c, rc, errp);
}

int db_decision_get(struct db *db, int64_t id, json_t **out, char **errp)
{
    struct db_cur c;
    json_t *rec = NULL, *vs = json_array(), *evs = json_array(), *pcs = json_array();
    int ret = db_query(db, &SQL_DECISION_ONE, DB_ARGS(DB_INT(id)), &c, errp);
    *out = NULL;
    if (ret < 0)
        goto out;
    if (!db_next(&c)) {
        ret = db_done(&c, errp); /* 0: not found */
        goto out;
    }
    if ((ret = response_of(db, &c, 0, &rec, errp)) < 0)
        goto out;
    if (!json_is_object(rec)) {
        json_decref(rec);
        rec = json_object();
    }
    json_object_set_new(rec, "decision_id", json_integer(db_int(&c, DC_ID)));
    json_object_set_new(rec, "job", col_text(&c, DC_JOB));
    json_object_set_new(rec, "at", json_integer(db_int(&c, DC_AT)));
    json_object_set_new(rec, "input", col_input(&c, DC__N));
    json_object_set_new(rec, "config", col_json(&c, DC__N + 1));
    json_object_set_new(rec, "policy_revision", col_text(&c, DC_REVISION));
    json_object_set_new(rec, "config_hash", col_text(&c, DC_HASH));
    json_object_set_new(rec, "created_at", json_integer(db_int(&c, DC__N + 2)));
    db_end(&c);
    /* The stored rows are the full record: they carry raw targets the response lacks. */
    if ((ret = rows(db, &SQL_DECISION_VERTICES, id, vs, errp)) < 0 ||
        (ret = rows(db, &SQL_DECISION_EVENTS, id, evs, errp)) < 0 ||
        (ret = rows(db, &SQL_DECISION_PLUGINS, id, pcs, errp)) < 0)
        goto out;
    json_object_set(rec, "vertices", vs);
    json_object_set(rec, "events", evs);
    json_object_set(rec, "plugin_calls", pcs);
    *out = rec;
    rec = NULL;
out:
    db_end(&c);
    json_decref(pcs);
    json_decref(evs);
    json_decref(vs);
    json_decref(rec);
    return ret;
}

static const struct db_sql SQL_DECISION_AT = {"SELECT " DB_DEC_COLS ", d.input" DEC_FROM
                                              "WHERE d.job = ?1 AND d.at = ?2 "
                                              "ORDER BY d.id DESC LIMIT 1",
                                              NULL, "read decision", 0};

int db_decision_find(struct db *db, const char *job, int64_t at, int64_t *id, char **input_json,
                     char **decision_json, char **errp)
{
    struct db_cur c;
    int found = db_query(db, &SQL_DECISION_AT, DB_ARGS(DB_TEXT(job), DB_INT(at)), &c, errp);
    *input_json = *decision_json = NULL;
    if (found == 0 && db_next(&c)) {
        const char *dj = db_text(&c, DC_DECISION_JSON);
        json_t *d = NULL;
        *id = db_int(&c, DC_ID);
        *input_json = col_input_text(&c, DC__N);
        if (dj) {
            *decision_json = xstrdup(dj); /* the stored text as it was sent */
            found = 1;
        } else if (db_response_rebuild(db, &c, 0, &d, errp) == 0) {
            *decision_json = jarena_dump(d); /* the text as the reply sent it */
            json_decref(d);
            found = 1;
        } else {
            free(*input_json);
            *input_json = NULL;
            found = -1;
        }
    } else if (found == 0) {
        found = db_done(&c, errp);
    }
    db_end(&c);
    return found;
}

/* ------------------------------------------------------------ history reads -- */

/* A page of a job's history: at most ?5 decisions with at <= ?2 and ?3 < id <= ?4. */
static const struct db_sql SQL_HISTORY = {"SELECT " DB_DEC_COLS ", d.input, c.config_json" DEC_FROM
                                          "WHERE d.job = ?1 AND d.at <= ?2 AND d.id > ?3 "
                                          "AND d.id <= ?4 ORDER BY d.id LIMIT ?5",
                                          NULL, "read decisions", DB_SQL_ONCE};
/* Before SQLite's migration 009: the same, from the columns of then. */
static const struct db_sql SQL_HISTORY_008 = {
    "SELECT id, at, input_json, config_json, decision_json FROM decisions "
    "WHERE job = ?1 AND at <= ?2 AND id > ?3 AND id <= ?4 ORDER BY id LIMIT ?5",
    NULL, "read decisions", DB_SQL_ONCE};
static const struct db_sql SQL_HISTORY_LAST = {
    "SELECT coalesce(max(id), 0) FROM decisions WHERE job = ?1", NULL, "read decisions",
    DB_SQL_ONCE};

int db_history_last_id(struct db *db, const char *job, int64_t *id, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_HISTORY_LAST, DB_ARGS(DB_TEXT(job)), &c, errp);
    *id = 0;
    if (rc == 0 && db_next(&c)) {
        *id = db_int(&c, 0);
        db_end(&c); /* its one row */
        return 0;
    }
    return db_finish(&c, rc, errp);
}

/* One page of db_history_each: at most limit decisions with after_id < id <= max_id. */
static int history_page(struct db *db, const char *job, int64_t to, int64_t after_id,
                        int64_t max_id, int limit,
                        int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                                  const char *config, json_t *decision),
                        void *ud, char **errp)
{
    /* The reader's connection may be on either schema (replay --db of an older file). */
    bool old = db_precompact(db);
    struct db_cur c;
    int rc =
        db_query(db, old ? &SQL_HISTORY_008 : &SQL_HISTORY,
                 DB_ARGS(DB_TEXT(job), DB_INT(to), DB_INT(after_id), DB_INT(max_id), DB_INT(limit)),
                 &c, errp);
    bool more = rc == 0;
    while (more && (more = db_next(&c))) {
        char *input;
        const char *config;
        json_t *dec = NULL;
        if (old) {
            const char *in = db_text(&c, 2);
            input = xstrdup(in ? in : "");
            config = db_text(&c, 3);
            dec = col_json(&c, 4);
        } else {
            input = col_input_text(&c, DC__N);
            config = db_text(&c, DC__N + 1);
            if ((rc = response_of(db, &c, 0, &dec, errp)) < 0) {
                free(input);
                break;
            }
        }
        rc = fn(ud, db_int(&c, old ? 0 : DC_ID), db_int(&c, old ? 1 : DC_AT), input,
                config ? config : "{}", dec);
        free(input);
        json_decref(dec);
        if (rc)
            break;
    }
    return db_finish(&c, rc, errp);
}

/* A page of decisions held between its read transaction and the caller's callbacks. */
struct hpage {
    struct hrow {
        int64_t id, at;
        char *input, *config;
        json_t *dec;
    } v[DB_HISTORY_PAGE];
    int n;
};

static int hpage_add(void *ud, int64_t id, int64_t at, const char *input, const char *config,
                     json_t *dec)
{
    struct hpage *pg = ud;
    struct hrow *r = &pg->v[pg->n++];
    r->id = id;
    r->at = at;
    r->input = xstrdup(input);
    r->config = xstrdup(config);
    r->dec = json_incref(dec);
    return 0;
}

static void hpage_clear(struct hpage *pg)
{
    for (int i = 0; i < pg->n; i++) {
        free(pg->v[i].input);
        free(pg->v[i].config);
        json_decref(pg->v[i].dec);
    }
    pg->n = 0;
}

int db_history_each(struct db *db, const char *job, int64_t to, int64_t max_id,
                    int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                              const char *config, json_t *decision),
                    void *ud, char **errp)
{
    struct hpage *pg = xcalloc(1, sizeof *pg);
    int64_t after = 0;
    int rc = 0;
    for (;;) {
        if (db_read_begin(db, errp) < 0) {
            rc = -1;
            break;
        }
        rc = history_page(db, job, to, after, max_id, DB_HISTORY_PAGE, hpage_add, pg, errp);
        db_read_end(db);
        for (int i = 0; i < pg->n && rc == 0; i++) {
            struct hrow *r = &pg->v[i];
            rc = fn(ud, r->id, r->at, r->input, r->config, r->dec);
        }
        int n = pg->n;
        if (n > 0)
            after = pg->v[n - 1].id;
        hpage_clear(pg);
        if (rc || n < DB_HISTORY_PAGE)
            break;
    }
    free(pg);
    return rc;
}

static const struct db_sql SQL_DELETIONS = {
    "SELECT coalesce(after_decision, (SELECT max(id) FROM decisions d WHERE d.created_at <= c.at), "
    "0) AS after FROM config_changes c WHERE job = ?1 AND config_json IS NULL ORDER BY after",
    NULL, "read config_changes", DB_SQL_ONCE};

int db_job_deletions(struct db *db, const char *job, int64_t **ids, int *n, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_DELETIONS, DB_ARGS(DB_TEXT(job)), &c, errp);
    *ids = NULL;
    *n = 0;
    while (rc == 0 && db_next(&c)) {
        *ids = xrealloc(*ids, (size_t)(*n + 1) * sizeof **ids);
        (*ids)[(*n)++] = db_int(&c, 0);
    }
    rc = db_finish(&c, rc, errp);
    if (rc < 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

static const struct db_sql SQL_EVENTS = {
    "SELECT id, decision_id, at, type, reason, message, count, suppressed FROM events "
    "WHERE job = ?1 ORDER BY at DESC, id DESC LIMIT ?2",
    NULL, "read events", 0};

static int events_row(struct db *db, struct db_cur *c, json_t **v, char **errp)
{
    (void)db;
    (void)errp;
    *v = json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:i,s:b}", "id", (json_int_t)db_int(c, 0),
                   "decision_id", (json_int_t)db_int(c, 1), "at", (json_int_t)db_int(c, 2), "type",
                   col_text(c, 3), "reason", col_text(c, 4), "message", col_text(c, 5), "count",
                   (int)db_int(c, 6), "suppressed", (int)db_int(c, 7));
    return 0;
}

int db_events_list(struct db *db, const char *job, int limit, json_t **out, char **errp)
{
    return list(db, &SQL_EVENTS, DB_ARGS(DB_TEXT(job), DB_INT(limit)), "events", events_row, out,
                errp);
}
