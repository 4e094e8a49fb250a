/*
 * sample_text.h - a decide request's body read straight into the sample (prefix sample_text_),
 * without a JSON tree: the server's fast path for the plain bodies clients send sample after
 * sample, which parsing into jansson's tree and reading the tree cost some 210,000
 * instructions a 1 KB body (tests/bench/README.md, The profile of a decision).
 *
 * It reads the body once, left to right, and takes only what it can take exactly as
 * jsn_parse_sample takes it from the tree: every member jsn_parse_sample reads, each of the
 * type and in the range it accepts, strings of plain ASCII, numbers as JSON writes them, and
 * the members governor knows and does not read (a trace line's "job", a vertex's "name") when
 * their value is a number, a boolean or a plain string. Anything else - a member governor does
 * not know (the tree's path lists it in the answer's warnings, or refuses it under
 * strict-samples), options of its own (config), null, a duplicate key, an
 * escaped or non-ASCII string, an object or array it does not read, a value jsn_parse_sample
 * would refuse or must check itself (an RFC 3339 time, a sample in batch mode), malformed
 * JSON - it leaves to the tree: the
 * caller then parses the body as before, which gives the same sample or the same refusal. So
 * a sample it reads is the sample jsn_parse_sample reads, number for number
 * (tests/unit/test_sample_text.c checks both on every body of the tests' traces and on
 * bodies made to differ in each way).
 *
 * May call: json (the vertex rules it shares with jsn_parse_sample), core, libc.
 */
#ifndef GOVERNOR_SAMPLE_TEXT_H
#define GOVERNOR_SAMPLE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "decision/jsn.h"

/* What the sample read points into: grown as needed, kept between samples. Zeroed storage
 * is empty; sample_text_deinit releases it. */
struct sample_text {
    struct core_vertex_in *v;
    struct core_input *in;
    int cap_v, cap_in;
    char *str;
    size_t cap_str;
    int *in_of;                         /* [vertex] its first input's index, while reading */
    size_t *id_of, *group_of, *from_of; /* string offsets, while reading */
    int cap_in_of, cap_from;
};

void sample_text_deinit(struct sample_text *st);

/*
 * Reads text (len bytes, borrowed; need not end in a NUL) into js->s, held to js->limits, its
 * strings and arrays in st (valid until st's next read or deinit). now_ms is the `at` of a
 * body without one. 0: js->s is the sample; 1: the body is not one it reads (js->s is then
 * unspecified): parse it as a tree (jsn_parse_sample).
 */
int sample_text_read(const char *text, size_t len, int64_t now_ms, struct jsn_sample *js,
                     struct sample_text *st);

#endif
