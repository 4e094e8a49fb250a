/*
 * bare.c - the baselines of the decide benchmark: a bare libevent HTTP server that reads a
 * POST body and answers, doing nothing else. Two modes:
 *   fixed  drains the body and answers a fixed 1 KB JSON object (no parsing): the cost of
 *          HTTP alone, the baseline every governor figure is a ratio of;
 *   parse  parses the body with jansson and answers a small JSON object (the first
 *          baseline, kept so that older figures can be compared).
 * The decide path is measured as a ratio against these on the same machine in the same run.
 *
 * usage: bench_bare PORT [fixed|parse]   (default parse)
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char fixed_reply[1024];

static void handle_parse(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    json_error_t je;
    json_t *body = json_loadb((const char *)evbuffer_pullup(in, (ssize_t)n), n, 0, &je);
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out, "{\"ok\": %s}", body ? "true" : "false");
    json_decref(body);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

static void handle_fixed(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    evbuffer_drain(in, evbuffer_get_length(in));
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_reference(out, fixed_reply, sizeof fixed_reply, NULL, NULL);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

/* A JSON object of exactly sizeof fixed_reply bytes, shaped like a decision's answer. */
static void fill_fixed(void)
{
    const char *head = "{\"decision_id\":1,\"job\":\"bench\",\"action\":\"NO_CHANGE\","
                       "\"execute\":false,\"reason\":\"WITHIN_TARGET\",\"message\":\"";
    const char *tail = "\"}\n";
    size_t h = strlen(head), t = strlen(tail);
    memcpy(fixed_reply, head, h);
    memset(fixed_reply + h, 'x', sizeof fixed_reply - h - t);
    memcpy(fixed_reply + sizeof fixed_reply - t, tail, t);
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc > 2 && strcmp(argv[2], "fixed") != 0 && strcmp(argv[2], "parse") != 0)) {
        fprintf(stderr, "usage: bench_bare PORT [fixed|parse]\n");
        return 2;
    }
    bool fixed = argc > 2 && strcmp(argv[2], "fixed") == 0;
    fill_fixed();
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    evhttp_set_gencb(http, fixed ? handle_fixed : handle_parse, NULL);
    if (evhttp_bind_socket(http, "127.0.0.1", (ev_uint16_t)atoi(argv[1])) < 0) {
        fprintf(stderr, "bench_bare: cannot bind port %s\n", argv[1]);
        return 1;
    }
    event_base_dispatch(base);
    evhttp_free(http);
    event_base_free(base);
    return 0;
}
