/*
 * jsn_int.h - what the files of the JSON codec share (jsn_get.c, jsn_sample.c, jsn_render.c,
 * jsn_batch.c, jsn_text.c), internal to them: the parsers' paths, error sink and typed getters,
 * the sample's buffers, and the renderers' number and string printers.
 */
#ifndef GOVERNOR_JSN_INT_H
#define GOVERNOR_JSN_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decision/jsn.h"

/* One step of a JSON path: `.key` when key is set, else `[index]`. */
struct path {
    const struct path *up;
    const char *key;
    int index;
};

/* Where an error goes: a message buffer and, for requests, a field buffer. */
struct sink {
    char *msg;
    size_t msg_len;
    char *field; /* NULL: the path only prefixes the message */
    size_t field_len;
};

struct sample_buf {
    struct core_vertex_in *v;
    int cap_v;
    struct core_input *in;
    int cap_in;
    struct core_batch_stage *st; /* "mode": "BATCH" */
    int cap_st;
};

size_t jsn__path_fmt(const struct path *p, char *buf, size_t len);
/* Fills the sink with "<path>: <message>" (and the path alone into field). Returns -1. */
__attribute__((format(printf, 3, 4))) int jsn__fail(const struct sink *k, const struct path *p,
                                                    const char *fmt, ...);
const char *jsn__type_name(const json_t *v);
int jsn__member(const struct sink *k, const json_t *obj, bool required, const struct path *p,
                const json_t **v);
int jsn__get_number(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                    double lo, double hi, double *out);
int jsn__get_int(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                 bool required, int lo, int *out);
int jsn__get_string(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                    bool required, const char **out);
int jsn__get_bool(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                  bool *out);
int jsn__get_typed(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                   json_type t, const char *tname, json_t **out);
int jsn__get_time(const struct sink *k, const json_t *obj, const char *key, int64_t *out);
void jsn__reserve(void *arr, int *cap, int need, size_t elem);
int jsn__over(struct jsn_err *e, const struct sink *k, const struct path *p, long long n,
              const char *what, long long limit, const char *option);
void jsn__init_err(struct jsn_err *e, struct sink *k);
int jsn__apply_config(json_t *cfg, struct opt_job *opts, const struct opt_limits *lim,
                      struct jsn_err *e, const struct sink *k);
int jsn__parse_batch(const struct sink *k, json_t *body, struct core_sample *s,
                     struct sample_buf *b, struct opt_job *opts, const struct opt_limits *lim,
                     struct jsn_err *e);

json_t *jsn__real_or_null(double x);
size_t jsn__int_text(char *p, long long v);
size_t jsn__evaluated_room(void);
size_t jsn__evaluated_print(char *t, const struct core_evaluated *ev);

#endif
