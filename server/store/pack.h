/*
 * pack.h - the compact forms of stored history (prefix pack_), schema/009_compact_history.sql:
 *
 * - a decision's request (decisions.input): the body's JSON text without the whitespace
 *   outside strings, with the request's frequent member names and fragments replaced by one
 *   byte each (bytes 0x01-0x1f other than \t \n \r, which valid JSON text never holds raw),
 *   after a first byte that names the form (1). A text that holds such a byte is kept as it
 *   is after a 0 byte. The dictionary is part of the format: entries are only ever appended.
 *   Unpacked, the text is the body as sent but for its whitespace: the same JSON value,
 *   member for member, number for number (each number keeps its text).
 * - a vertex's evaluated figures (vertex_decisions.figures): the object
 *   {"load":0.47,"lag":null,...} that jsn_evaluated_text prints, as the array of its values
 *   in the order of pack_figure_names ([0.47,...,null]), each value's text kept, `false` for
 *   a figure left out (a diagnosis not made), the trailing ones dropped. The audit view
 *   audit_vertex_decisions rebuilds the object in SQL from the same list.
 *
 * - a hash of a row's columns (pack_hash_*): FNV-1a 64 over each value's text and a 0 byte,
 *   NULL a byte of its own, for the lookup of a decision's outcome or an event's texts stored
 *   before (schema/012_history_two_parts.sql); the SQL function gov_hash (sqlite.c) is the same
 *   hash, so that rows converted by a migration are found again.
 * - a sample kept in the samples' chunks, as the JSON text of a decide request
 *   (pack_sample_text): the fields the server reads, with the values it read.
 *
 * Pure functions over text; no SQLite. May call: xmem, the core's types.
 */
#ifndef GOVERNOR_PACK_H
#define GOVERNOR_PACK_H

#include <jansson.h>

#include <stddef.h>
#include <stdint.h>

#include "base/text.h"
#include "core/core.h"
#include "store/db.h"

/* The figure names of vertex_decisions.figures, in their order (schema 009); NULL-terminated. */
extern const char *const pack_figure_names[];

/* new (malloc'd) in *out, *out_len: the packed form of the JSON text (len bytes). */
void pack_input(const char *text, size_t len, unsigned char **out, size_t *out_len);
/* new (malloc'd, NUL-terminated): the text of a packed request; NULL when blob is not one. */
char *pack_input_text(const void *blob, size_t len);

/*
 * new: the figures array of an evaluated object's text, or NULL when the text is not one this
 * form holds exactly (a name outside the list or out of its order, a value that is not a
 * number or null, any spacing): pack_figures_text of the result is the text, byte for byte.
 */
char *pack_figures(const char *evaluated_json);
/* new: the evaluated object's text of a figures array; NULL when it is not one. */
char *pack_figures_text(const char *figures);

/* The hash of no value yet; then one value at a time (NULL: SQL NULL). */
#define PACK_HASH_INIT 0xcbf29ce484222325ULL
uint64_t pack_hash_text(uint64_t h, const char *s);
uint64_t pack_hash_int(uint64_t h, int64_t v);
/* The hash as SQL stores it (a signed 64-bit integer). */
static inline int64_t pack_hash_sql(uint64_t h)
{
    return (int64_t)h;
}

/*
 * new (malloc'd, NUL-terminated): sm (a streaming sample) as the JSON text of a decide request
 * that jsn_parse_sample reads back to the same sample: at, running_since, status ("RUNNING",
 * or "NOT_RUNNING" for any other), the job metrics present, and each vertex's id,
 * parallelism, max_parallelism, partitions (when not 0), slot_sharing_group, finished (when
 * true), inputs (when any) and the metrics present, busy time as one number when min, avg
 * and max are equal. Every number in the shortest text that reads back as the same double.
 */
char *pack_sample_text(const struct core_sample *sm);

/*
 * new: the vertex rows of a decision as decision_outcomes.vertices (schema 012): a JSON array
 * of one array per vertex, [vertex, current, raw_target, target, reason, constraints (text),
 * message, flags, figures (pack_figures' array, or null), evaluated_json (its text when
 * figures cannot hold it exactly, else null)].
 */
char *pack_vertices(const struct db_vrow *v, int n);

/* s, and v in decimal, appended to t (base/text.h). */
void pack_text_str(struct text *t, const char *s);
void pack_text_int(struct text *t, int64_t v);

#endif
