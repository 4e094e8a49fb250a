/*
 * bare.c - the baseline of the decide benchmark: a bare libevent HTTP server that reads a
 * POST body, parses it with jansson and answers a small JSON object, doing nothing else. The
 * decide path is measured as a ratio against this on the same machine in the same run.
 *
 * usage: bench_bare PORT
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static void handle(struct evhttp_request *req, void *arg)
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_bare PORT\n");
        return 2;
    }
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    evhttp_set_gencb(http, handle, NULL);
    if (evhttp_bind_socket(http, "127.0.0.1", (ev_uint16_t)atoi(argv[1])) < 0) {
        fprintf(stderr, "bench_bare: cannot bind port %s\n", argv[1]);
        return 1;
    }
    event_base_dispatch(base);
    evhttp_free(http);
    event_base_free(base);
    return 0;
}
