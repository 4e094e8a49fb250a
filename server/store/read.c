/*
 * read.c - the store's reads (see db.h), above its backends as db.c is: a job's rows and
 * window at its load (the most recently sampled jobs at start), the job list, the history of
 * the HTTP API (a page of decisions bounded by its rows, one decision, the newest executed
 * one, the decision of a retried sample, the events), replay's walk over a job's history in
 * pages of short read transactions, the one rebuild of a response from its rows that all of
 * them take, and a decision's sample read back from its job's chunks of samples. Each statement's
 * SQL written once, its rows read through the store's cursor (query.h).
 */
#include <limits.h>
#include <string.h>

#include "base/jarena.h"
#include "base/text.h"
#include "base/xmem.h"
#include "core/codec.h"
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
    "SELECT job, created_at, config_json, last_at, state_bin, version, generation, samples "       \
    "FROM jobs "
/* COLLATE "C" on PostgreSQL: the order of SQLite's BINARY collation whatever the locale. */
#define JOBS_RECENT(collate)                                                                       \
    JOB_ROWS "ORDER BY coalesce(last_at, created_at) DESC, job" collate " LIMIT ?1"
static const struct db_sql SQL_JOBS_RECENT = {JOBS_RECENT(""), JOBS_RECENT(" COLLATE \"C\""),
                                              "read jobs", 0};
static const struct db_sql SQL_JOBS_ONE = {JOB_ROWS "WHERE job = ?1", NULL, "read jobs", 0};

int db_jobs_each(struct db *db, const char *job, int limit,
                 int (*fn)(void *ud, const struct db_job_row *row), void *ud, char **errp)
{
    struct db_cur c;
    struct db_param key = job ? DB_TEXT(job) : DB_INT(limit);
    int n = 0;
    if (db_query(db, job ? &SQL_JOBS_ONE : &SQL_JOBS_RECENT, &key, 1, &c, errp) < 0) {
        db_end(&c);
        return -1;
    }
    while (db_next(&c)) {
        struct db_job_row r = {.job = db_text(&c, 0),
                               .created_at = db_int(&c, 1),
                               .config_json = db_text(&c, 2),
                               .last_at = db_null(&c, 3) ? INT64_MIN : db_int(&c, 3),
                               .version = db_int(&c, 5),
                               .generation = db_int(&c, 6)};
        /* a backend keeps one blob of a row at a time (PostgreSQL's unescaped bytes): the
         * samples copied first, then the state */
        const void *b = db_blob(&c, 7, &r.samples_len);
        void *samples = b ? xmalloc(r.samples_len ? r.samples_len : 1) : NULL;
        if (b)
            memcpy(samples, b, r.samples_len);
        r.samples = samples;
        r.state_bin = db_blob(&c, 4, &r.state_bin_len);
        int rc = fn(ud, &r);
        free(samples);
        if (rc != 0) {
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

/* new: the request's text of column i, a packed one (pack.h): "" when it is not one. */
static char *col_input_text(struct db_cur *c, int i)
{
    size_t n;
    const void *b = db_blob(c, i, &n);
    char *text = pack_input_text(b, n);
    return text ? text : xstrdup("");
}

/*
 * The response of a decision, rebuilt from its rows: the decision row, its outcome (its
 * vertices as one JSON array, schema 012), its events, and `response` (the members no row
 * holds), member for member in the order json_render_decision writes them. A row converted from
 * an older form whose rows do not give its response back exactly kept it in
 * decisions.decision_json.
 */
/* A vertex of a decision's outcome (schema 012): the elements of its array. */
enum {
    VX_VERTEX,
    VX_CURRENT,
    VX_RAW,
    VX_TARGET,
    VX_REASON,
    VX_CONSTRAINTS,
    VX_MESSAGE,
    VX_FLAGS,
    VX_FIGURES,
    VX_EVALUATED
};

/* new: element i of vertex array v as a string's JSON, null when it is not one. */
static json_t *vx_text(const json_t *v, int i)
{
    const char *s = json_string_value(json_array_get(v, (size_t)i));
    return s ? json_string(s) : json_null();
}

/* new: element i of v (a JSON text) parsed, null when it is null or does not parse. */
static json_t *vx_json(const json_t *v, int i)
{
    const char *s = json_string_value(json_array_get(v, (size_t)i));
    json_t *j = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

/* new: a vertex's evaluated figures as an object: from its figures array (each figure not
 * false, by name, pack_figure_names), or its evaluated_json text. */
static json_t *vx_evaluated(const json_t *v)
{
    const json_t *f = json_array_get(v, VX_FIGURES);
    if (!json_is_array(f))
        return vx_json(v, VX_EVALUATED);
    json_t *o = json_object();
    size_t k;
    json_t *x;
    json_array_foreach(f, k, x)
    {
        if (!pack_figure_names[k]) /* more than the names: not a figures array */
            break;
        if (!json_is_false(x))
            json_object_set(o, pack_figure_names[k], x);
    }
    return o;
}

static json_int_t vx_int(const json_t *v, int i)
{
    return json_integer_value(json_array_get(v, (size_t)i));
}

/* new: the vertices array of the decision at row (an empty one when it does not parse). */
static json_t *row_vertices(const struct db_cur *row, int col)
{
    const char *s = db_text(row, col + DC_VERTICES);
    json_t *a = s ? json_loads(s, 0, NULL) : NULL;
    if (!json_is_array(a)) {
        json_decref(a);
        a = json_array();
    }
    return a;
}

/* The events of decision id: their texts in its outcome (schema 012), or in the rows (before
 * it). */
static const struct db_sql SQL_DECISION_EVENTS = {
    "SELECT ord, count, suppressed FROM events WHERE decision_id = ?1 ORDER BY id", NULL,
    "read events", 0};
static const struct db_sql SQL_DECISION_EVENTS_011 = {
    "SELECT type, reason, message, count, suppressed FROM events WHERE decision_id = ?1 "
    "ORDER BY id",
    NULL, "read events", DB_SQL_ONCE};

/* new in *out ({"type", "reason", "message", "count", "suppressed"} each, in their order): the
 * events of the decision at row. -1 + *errp. */
static int decision_events(struct db *db, const struct db_cur *row, int col, bool old, json_t **out,
                           char **errp)
{
    struct db_cur c;
    int64_t id = db_int(row, col + DC_ID);
    const char *t = db_text(row, col + DC_EVENTS);
    json_t *texts = t ? json_loads(t, 0, NULL) : NULL;
    int rc = db_query(db, old ? &SQL_DECISION_EVENTS_011 : &SQL_DECISION_EVENTS,
                      DB_ARGS(DB_INT(id)), &c, errp);
    *out = json_array();
    while (rc == 0 && db_next(&c)) {
        const json_t *x = old ? NULL : json_array_get(texts, (size_t)db_int(&c, 0));
        const char *type = old ? db_text(&c, 0) : json_string_value(json_array_get(x, 0));
        const char *reason = old ? db_text(&c, 1) : json_string_value(json_array_get(x, 1));
        const char *m = old ? db_text(&c, 2) : json_string_value(json_array_get(x, 2));
        int k = old ? 3 : 1;
        json_t *e = json_object();
        json_object_set_new(e, "type", text_json_string(type));
        json_object_set_new(e, "reason", text_json_string(reason));
        json_object_set_new(e, "message", text_json_string(m ? m : ""));
        json_object_set_new(e, "count", json_integer(db_int(&c, k)));
        json_object_set_new(e, "suppressed", json_boolean(db_int(&c, k + 1)));
        json_array_append_new(*out, e);
    }
    json_decref(texts);
    rc = db_finish(&c, rc, errp);
    if (rc < 0) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

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

/* new: one vertex of the response from its outcome array, its members in the order of the
 * core's table (core_vfields). */
static json_t *response_vertex(const json_t *v)
{
    json_t *o = json_object();
    const json_t *fl = json_array_get(v, VX_FLAGS);
    bool flags = json_is_integer(fl);
    json_int_t bits = json_integer_value(fl);
    for (int i = 0; i < core_n_vfields; i++) {
        const char *name = core_vfields[i].name;
        json_t *x = NULL;
        if (strcmp(name, "id") == 0)
            x = text_json_string(json_string_value(json_array_get(v, VX_VERTEX)));
        else if (strcmp(name, "current") == 0)
            x = json_integer(vx_int(v, VX_CURRENT));
        else if (strcmp(name, "target") == 0)
            x = json_integer(vx_int(v, VX_TARGET));
        else if (strcmp(name, "raw_target") == 0)
            x = json_integer(vx_int(v, VX_RAW));
        else if (strcmp(name, "reason") == 0)
            x = vx_text(v, VX_REASON);
        else if (strcmp(name, "constraints") == 0)
            x = vx_json(v, VX_CONSTRAINTS);
        else if (strcmp(name, "excluded") == 0)
            x = flags ? json_boolean(bits & 1) : NULL;
        else if (strcmp(name, "outside_bounds") == 0)
            x = flags ? json_boolean(bits & 2) : NULL;
        else if (strcmp(name, "message") == 0)
            x = json_is_string(json_array_get(v, VX_MESSAGE))
                    ? text_json_string(json_string_value(json_array_get(v, VX_MESSAGE)))
                    : NULL;
        else if (strcmp(name, "evaluated") == 0)
            x = vx_evaluated(v);
        if (x)
            json_object_set_new(o, name, x);
    }
    return o;
}

/* The vertices of the decision at row into o's parallelism and vertices, and its message's
 * end (message_parts): the messages of the vertices of its bitmask. */
static void rebuild_vertices(const struct db_cur *row, int col, json_t *o)
{
    json_t *par = json_object_get(o, "parallelism"), *vs = json_object_get(o, "vertices");
    json_t *arr = row_vertices(row, col), *x;
    const char *msg = db_text(row, col + DC_MESSAGE);
    int64_t parts = db_int(row, col + DC_PARTS);
    char *full = NULL;
    size_t len = 0, ord;
    json_array_foreach(arr, ord, x)
    {
        json_t *v = response_vertex(x);
        json_object_set(par, json_string_value(json_object_get(v, "id")),
                        json_object_get(v, "target"));
        json_array_append_new(vs, v);
        const char *vm = json_string_value(json_array_get(x, VX_MESSAGE));
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
    json_decref(arr);
}

int db_response_rebuild(struct db *db, struct db_cur *row, int col, bool old, json_t **out,
                        char **errp)
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
    rebuild_vertices(row, col, o);
    json_t *evs;
    if (decision_events(db, row, col, old, &evs, errp) < 0) {
        json_decref(o);
        return -1;
    }
    json_object_set_new(o, "events", evs);
    *out = o;
    return 0;
}

/* new in *out: the response of the decision at row (DB_DEC_COLS from `col`; old: the columns
 * of DB_DEC_COLS_011): the text kept from before 009, or the rebuild. -1 + *errp. */
static int response_of(struct db *db, struct db_cur *row, int col, bool old, json_t **out,
                       char **errp)
{
    if (!db_null(row, col + DC_DECISION_JSON)) {
        *out = col_json(row, col + DC_DECISION_JSON);
        return 0;
    }
    return db_response_rebuild(db, row, col, old, out, errp);
}

/* ------------------------------------------------------------------ samples -- */

/*
 * The sample of a decision kept in its job's chunks of samples (schema 012): the row of its
 * `at` in the chunk whose first decision is the job's highest up to the decision's id, a
 * closed one (sample_chunks) or the one being filled (jobs.samples). A chunk is decoded once
 * and held while the decisions read fall in it (replay reads a job's decisions in order).
 */
struct chunk_rows {
    char *job;
    int64_t first, end; /* its first decision, and the next chunk's (INT64_MAX: none) */
    bool open;          /* the one being filled: it may have grown since it was read */
    int n, k;
    int64_t *at;
    double *rows;
    unsigned char *layout;
    size_t layout_len;
};

static void chunk_rows_clear(struct chunk_rows *cr)
{
    free(cr->job);
    free(cr->at);
    free(cr->rows);
    free(cr->layout);
    memset(cr, 0, sizeof *cr);
}

static const struct db_sql SQL_CHUNK_OF = {
    "SELECT first_id, chunk FROM sample_chunks WHERE job = ?1 AND first_id <= ?2 "
    "ORDER BY first_id DESC LIMIT 1",
    NULL, "read sample_chunks", 0};
static const struct db_sql SQL_CHUNK_NEXT = {
    "SELECT first_id FROM sample_chunks WHERE job = ?1 AND first_id > ?2 ORDER BY first_id "
    "LIMIT 1",
    NULL, "read sample_chunks", 0};
static const struct db_sql SQL_CHUNK_OPEN = {
    "SELECT samples_first_id, samples FROM jobs WHERE job = ?1", NULL, "read job samples", 0};

/* Decodes blob (a chunk of samples) into cr. -1 + *errp. */
static int chunk_decode(struct chunk_rows *cr, const void *blob, size_t len, char **errp)
{
    struct core_codec_reader r;
    char err[128];
    if (core_codec_blob_read(&r, blob, len, err, sizeof err) < 0) {
        *errp =
            xasprintf("job \"%s\": chunk of samples %lld: %s", cr->job, (long long)cr->first, err);
        core_codec_read_deinit(&r);
        return -1;
    }
    cr->n = r.n;
    cr->k = r.k;
    cr->at = xcalloc((size_t)(r.n ? r.n : 1), sizeof *cr->at);
    cr->rows = xcalloc((size_t)(r.n ? r.n : 1) * (size_t)(r.k ? r.k : 1), sizeof *cr->rows);
    cr->layout = xmalloc(r.layout_len ? r.layout_len : 1);
    memcpy(cr->layout, r.layout, r.layout_len);
    cr->layout_len = r.layout_len;
    for (int i = 0; i < r.n; i++)
        if (core_codec_read_row(&r, &cr->at[i], cr->rows + (size_t)i * (size_t)r.k) != 1) {
            cr->n = i; /* the rows that read */
            break;
        }
    core_codec_read_deinit(&r);
    return 0;
}

/* Reads into cr the chunk of job that holds decision id's sample, if any (cr->n 0: none). */
static int chunk_load(struct db *db, const char *job, int64_t id, struct chunk_rows *cr,
                      char **errp)
{
    struct db_cur c;
    int64_t first = INT64_MIN, open_first = INT64_MIN, next = INT64_MAX;
    void *blob = NULL;
    size_t len = 0, n;
    const void *b;
    int rc;
    chunk_rows_clear(cr);
    cr->job = xstrdup(job);
    /* Each query's one row, or none (db_finish: whether they ended on an error). */
    rc = db_query(db, &SQL_CHUNK_OF, DB_ARGS(DB_TEXT(job), DB_INT(id)), &c, errp);
    if (rc == 0 && db_next(&c)) {
        first = db_int(&c, 0);
        b = db_blob(&c, 1, &n);
        blob = xmalloc(n ? n : 1);
        memcpy(blob, b, n);
        len = n;
        db_end(&c);
    } else if (db_finish(&c, rc, errp) < 0) {
        goto fail;
    }
    rc = db_query(db, &SQL_CHUNK_OPEN, DB_ARGS(DB_TEXT(job)), &c, errp);
    if (rc == 0 && db_next(&c)) {
        open_first = db_null(&c, 0) ? INT64_MIN : db_int(&c, 0);
        if (open_first != INT64_MIN && open_first <= id && open_first > first) {
            first = open_first;
            b = db_blob(&c, 1, &n);
            free(blob);
            blob = xmalloc(n ? n : 1);
            memcpy(blob, b, n);
            len = n;
            cr->open = true;
        }
        db_end(&c);
    } else if (db_finish(&c, rc, errp) < 0) {
        goto fail;
    }
    if (first == INT64_MIN) {
        free(blob);
        return 0;
    }
    if (!cr->open) {
        rc = db_query(db, &SQL_CHUNK_NEXT, DB_ARGS(DB_TEXT(job), DB_INT(first)), &c, errp);
        if (rc == 0 && db_next(&c)) {
            next = db_int(&c, 0);
            db_end(&c);
        } else if (db_finish(&c, rc, errp) < 0) {
            goto fail;
        }
        if (open_first > first && open_first < next)
            next = open_first;
    }
    cr->first = first;
    cr->end = next;
    rc = chunk_decode(cr, blob, len, errp);
    free(blob);
    return rc;
fail:
    free(blob);
    return -1;
}

/* new in *text: the sample of decision id of job, taken at `at`, as pack_sample_text writes it;
 * NULL when the chunks no longer hold it. cr: the chunk held between calls. -1 + *errp. */
static int sample_text(struct db *db, const char *job, int64_t id, int64_t at,
                       struct chunk_rows *cr, char **text, char **errp)
{
    *text = NULL;
    for (int pass = 0; pass < 2; pass++) {
        bool held = cr->job && strcmp(cr->job, job) == 0 && cr->first <= id && id < cr->end;
        if ((!held || pass == 1) && chunk_load(db, job, id, cr, errp) < 0)
            return -1;
        for (int i = 0; i < cr->n; i++) {
            if (cr->at[i] != at)
                continue;
            struct core_sample sm;
            void *mem;
            char err[128];
            if (core_codec_sample_from(cr->layout, cr->layout_len, at,
                                       cr->rows + (size_t)i * (size_t)cr->k, cr->k, &sm, &mem, err,
                                       sizeof err) < 0) {
                *errp =
                    xasprintf("job \"%s\": decision %lld: its sample: %s", job, (long long)id, err);
                return -1;
            }
            *text = pack_sample_text(&sm);
            free(mem);
            return 0;
        }
        if (held && cr->open)
            continue; /* the chunk being filled may have grown since */
        break;
    }
    return 0;
}

/* new in *text: the request of the decision at c (DB_DEC_COLS, then its packed input at
 * column in): the packed request, or its sample from the chunks (*from_samples); "" when
 * neither is kept. -1 + *errp. */
static int decision_input(struct db *db, struct db_cur *c, int in, struct chunk_rows *cr,
                          char **text, bool *from_samples, char **errp)
{
    *from_samples = false;
    if (!db_null(c, in)) {
        *text = col_input_text(c, in);
        return 0;
    }
    if (sample_text(db, db_text(c, DC_JOB), db_int(c, DC_ID), db_int(c, DC_AT), cr, text, errp) < 0)
        return -1;
    *from_samples = *text != NULL;
    if (!*text)
        *text = xstrdup("");
    return 0;
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

/* A page (db_page), with each decision's count of vertex rows after DB_DEC_COLS (from its
 * outcome, before the decision is read). */
static const struct db_sql SQL_DECISIONS = {
    "SELECT " DB_DEC_COLS ", json_array_length(o.vertices)" DB_DEC_FROM
    "WHERE d.job = ?1 AND d.at >= ?2 AND (d.at < ?3 OR (d.at = ?3 AND d.id < ?5)) "
    "ORDER BY d.at DESC, d.id DESC LIMIT ?4",
    "SELECT " DB_DEC_COLS ", json_array_length(o.vertices::json)" DB_DEC_FROM
    "WHERE d.job = ?1 AND d.at >= ?2 AND (d.at < ?3 OR (d.at = ?3 AND d.id < ?5)) "
    "ORDER BY d.at DESC, d.id DESC LIMIT ?4",
    "read decisions", 0};

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
    if (response_of(db, c, 0, false, v, errp) < 0)
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
    "SELECT " DB_DEC_COLS DB_DEC_FROM "WHERE d.job = ?1 AND d.execute = 1 "
    "AND o.action <> 'NO_CHANGE' ORDER BY d.id DESC LIMIT 1",
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
    "SELECT " DB_DEC_COLS ", d.input, c.config_json, d.created_at" DB_DEC_FROM "WHERE d.id = ?1",
    NULL, "read decision", 0};
static const struct db_sql SQL_DECISION_PLUGINS = {
    "SELECT n.plugin, n.hook, n.outcome, d.calls -> 1 ->> p.key AS duration_us, "
    "d.calls -> 2 ->> p.key AS error FROM decisions d, json_each(d.calls, '$[0]') p "
    "JOIN plugin_names n ON n.id = p.value WHERE d.id = ?1 ORDER BY p.key",
    "SELECT n.plugin, n.hook, n.outcome, (d.calls::json -> 1 ->> (p.ord - 1)::int)::bigint "
    "AS duration_us, d.calls::json -> 2 ->> (p.ord - 1)::int AS error FROM decisions d "
    "CROSS JOIN LATERAL json_array_elements_text(d.calls::json -> 0) WITH ORDINALITY AS "
    "p(value, ord) JOIN plugin_names n ON n.id = p.value::bigint WHERE d.id = ?1 ORDER BY p.ord",
    "read decision", 0};

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
            if (db_kind(&c, k) == DB_KINT)
                v = json_integer(db_int(&c, k));
            else
                v = col_text(&c, k);
            json_object_set_new(o, name, v);
        }
        json_array_append_new(arr, o);
    }
    return db_finish(&c, rc, errp);
}

/* new: the record's vertex rows (they carry the raw targets the response lacks), from the
 * outcome's vertices at row. */
static json_t *record_vertices(const struct db_cur *row)
{
    json_t *arr = row_vertices(row, 0), *out = json_array(), *x;
    size_t i;
    json_array_foreach(arr, i, x)
    {
        json_t *o = json_object();
        json_object_set_new(o, "id", vx_text(x, VX_VERTEX));
        json_object_set_new(o, "current", json_integer(vx_int(x, VX_CURRENT)));
        json_object_set_new(o, "raw_target", json_integer(vx_int(x, VX_RAW)));
        json_object_set_new(o, "target", json_integer(vx_int(x, VX_TARGET)));
        json_object_set_new(o, "reason", vx_text(x, VX_REASON));
        json_object_set_new(o, "constraints", vx_json(x, VX_CONSTRAINTS));
        json_object_set_new(o, "message", vx_text(x, VX_MESSAGE));
        json_object_set_new(o, "evaluated", vx_evaluated(x));
        json_array_append_new(out, o);
    }
    json_decref(arr);
    return out;
}

int db_decision_get(struct db *db, int64_t id, json_t **out, char **errp)
{
    struct db_cur c;
    struct chunk_rows cr = {0};
    json_t *rec = NULL, *vs = NULL, *evs = json_array(), *pcs = json_array();
    char *input = NULL;
    bool from_samples;
    int ret = db_query(db, &SQL_DECISION_ONE, DB_ARGS(DB_INT(id)), &c, errp);
    *out = NULL;
    if (ret < 0)
        goto out;
    if (!db_next(&c)) {
        ret = db_done(&c, errp); /* 0: not found */
        goto out;
    }
    if ((ret = response_of(db, &c, 0, false, &rec, errp)) < 0 ||
        (ret = decision_input(db, &c, DC__N, &cr, &input, &from_samples, errp)) < 0)
        goto out;
    if (!json_is_object(rec)) {
        json_decref(rec);
        rec = json_object();
    }
    json_t *in = input[0] ? json_loads(input, JSON_DECODE_ANY, NULL) : NULL;
    json_object_set_new(rec, "decision_id", json_integer(db_int(&c, DC_ID)));
    json_object_set_new(rec, "job", col_text(&c, DC_JOB));
    json_object_set_new(rec, "at", json_integer(db_int(&c, DC_AT)));
    json_object_set_new(rec, "input", in ? in : json_null());
    json_object_set_new(rec, "config", col_json(&c, DC__N + 1));
    json_object_set_new(rec, "policy_revision", col_text(&c, DC_REVISION));
    json_object_set_new(rec, "config_hash", col_text(&c, DC_HASH));
    json_object_set_new(rec, "created_at", json_integer(db_int(&c, DC__N + 2)));
    vs = record_vertices(&c);
    json_decref(evs);
    if ((ret = decision_events(db, &c, 0, false, &evs, errp)) < 0)
        goto out;
    db_end(&c);
    if ((ret = rows(db, &SQL_DECISION_PLUGINS, id, pcs, errp)) < 0)
        goto out;
    json_object_set(rec, "vertices", vs);
    json_object_set(rec, "events", evs);
    json_object_set(rec, "plugin_calls", pcs);
    *out = rec;
    rec = NULL;
out:
    db_end(&c);
    chunk_rows_clear(&cr);
    free(input);
    json_decref(pcs);
    json_decref(evs);
    json_decref(vs);
    json_decref(rec);
    return ret;
}

static const struct db_sql SQL_DECISION_AT = {"SELECT " DB_DEC_COLS ", d.input" DB_DEC_FROM
                                              "WHERE d.job = ?1 AND d.at = ?2 "
                                              "ORDER BY d.id DESC LIMIT 1",
                                              NULL, "read decision", 0};

int db_decision_find(struct db *db, const char *job, int64_t at, int64_t *id, char **input_json,
                     bool *from_samples, char **decision_json, char **errp)
{
    struct db_cur c;
    struct chunk_rows cr = {0};
    int found = db_query(db, &SQL_DECISION_AT, DB_ARGS(DB_TEXT(job), DB_INT(at)), &c, errp);
    *input_json = *decision_json = NULL;
    *from_samples = false;
    if (found == 0 && db_next(&c)) {
        const char *dj = db_text(&c, DC_DECISION_JSON);
        json_t *d = NULL;
        *id = db_int(&c, DC_ID);
        if (decision_input(db, &c, DC__N, &cr, input_json, from_samples, errp) < 0) {
            found = -1;
        } else if (dj) {
            *decision_json = xstrdup(dj); /* the stored text as it was sent */
            found = 1;
        } else if (db_response_rebuild(db, &c, 0, false, &d, errp) == 0) {
            *decision_json = jarena_dump(d); /* the text as the reply sent it */
            json_decref(d);
            found = 1;
        } else {
            found = -1;
        }
        if (found < 0) {
            free(*input_json);
            *input_json = NULL;
        }
    } else if (found == 0) {
        found = db_done(&c, errp);
    }
    db_end(&c);
    chunk_rows_clear(&cr);
    return found;
}

/* ------------------------------------------------------------ history reads -- */

/* A page of a job's history: at most ?5 decisions with at <= ?2 and ?3 < id <= ?4. */
#define HISTORY_WHERE                                                                              \
    "WHERE d.job = ?1 AND d.at <= ?2 AND d.id > ?3 AND d.id <= ?4 ORDER BY d.id LIMIT ?5"
static const struct db_sql SQL_HISTORY = {"SELECT " DB_DEC_COLS
                                          ", d.input, c.config_json" DB_DEC_FROM HISTORY_WHERE,
                                          NULL, "read decisions", DB_SQL_ONCE};
/* From SQLite's migration 009 to 011: the same, from the tables of then. */
static const struct db_sql SQL_HISTORY_011 = {
    "SELECT " DB_DEC_COLS_011 ", d.input, c.config_json" DB_DEC_FROM_011 HISTORY_WHERE, NULL,
    "read decisions", DB_SQL_ONCE};
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

/* A page of decisions held between its read transaction and the caller's callbacks, and the
 * chunk of samples their samples were read from. */
struct hpage {
    struct hrow {
        int64_t id, at;
        char *input, *config;
        json_t *dec;
    } v[DB_HISTORY_PAGE];
    int n;
    struct chunk_rows cr;
};

/* One page of db_history_each into pg: at most limit decisions with after_id < id <= max_id. */
static int history_page(struct db *db, const char *job, int64_t to, int64_t after_id,
                        int64_t max_id, int limit, struct hpage *pg, char **errp)
{
    /* The reader's connection may be on any schema (replay --db of an older file). */
    bool old8 = db_precompact(db), old11 = !old8 && db_pre012(db);
    struct db_cur c;
    int rc =
        db_query(db,
                 old8    ? &SQL_HISTORY_008
                 : old11 ? &SQL_HISTORY_011
                         : &SQL_HISTORY,
                 DB_ARGS(DB_TEXT(job), DB_INT(to), DB_INT(after_id), DB_INT(max_id), DB_INT(limit)),
                 &c, errp);
    bool more = rc == 0;
    while (more && (more = db_next(&c))) {
        struct hrow *r = &pg->v[pg->n];
        const char *config;
        bool from_samples;
        r->dec = NULL;
        r->input = NULL;
        if (old8) {
            const char *in = db_text(&c, 2);
            r->input = xstrdup(in ? in : "");
            config = db_text(&c, 3);
            r->dec = col_json(&c, 4);
        } else {
            config = db_text(&c, DC__N + 1);
            if ((rc = decision_input(db, &c, DC__N, &pg->cr, &r->input, &from_samples, errp)) < 0 ||
                (rc = response_of(db, &c, 0, old11, &r->dec, errp)) < 0) {
                free(r->input);
                json_decref(r->dec);
                break;
            }
        }
        r->id = db_int(&c, old8 ? 0 : DC_ID);
        r->at = db_int(&c, old8 ? 1 : DC_AT);
        r->config = xstrdup(config ? config : "{}");
        pg->n++;
    }
    return db_finish(&c, rc, errp);
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
        rc = history_page(db, job, to, after, max_id, DB_HISTORY_PAGE, pg, errp);
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
    chunk_rows_clear(&pg->cr);
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

/* A decision's event has its texts in its outcome (ord), another one in its row. */
#define EVENT_TEXT(i, json) "CASE WHEN e.ord IS NULL THEN e." i " ELSE " json " END"
#define EVENTS(type, reason, message)                                                              \
    "SELECT e.id, e.decision_id, e.at, " type ", " reason ", " message ", e.count, e.suppressed "  \
    "FROM events e LEFT JOIN decisions d ON d.id = e.decision_id "                                 \
    "LEFT JOIN decision_outcomes o ON o.id = d.outcome_id "                                        \
    "WHERE e.job = ?1 ORDER BY e.at DESC, e.id DESC LIMIT ?2"
static const struct db_sql SQL_EVENTS = {
    EVENTS(EVENT_TEXT("type", "o.events -> e.ord ->> 0"),
           EVENT_TEXT("reason", "o.events -> e.ord ->> 1"),
           EVENT_TEXT("message", "o.events -> e.ord ->> 2")),
    EVENTS(EVENT_TEXT("type", "o.events::json -> e.ord::int ->> 0"),
           EVENT_TEXT("reason", "o.events::json -> e.ord::int ->> 1"),
           EVENT_TEXT("message", "o.events::json -> e.ord::int ->> 2")),
    "read events", 0};

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
