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
 * Pure functions over text; no SQLite. May call: xmem.
 */
#ifndef GOVERNOR_PACK_H
#define GOVERNOR_PACK_H

#include <jansson.h>

#include <stddef.h>

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

#endif
