/* Helpers of the server's API-layer unit tests (test_server_responses.c,
 * test_server_anthropic.c): decoding a body, comparing JSON with an expected text, and
 * splitting an SSE answer into its events. */
#ifndef LOOM_SERVER_TEST_JSON_H
#define LOOM_SERVER_TEST_JSON_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/request.h"
#include "server/util.h"
#include "test_util.h"

/* Parse and decode body for api into r (zeroed first); false with e set. */
static inline bool test_decode(srv_api api, const char *body, srv_gen_req *r, srv_err *e) {
    srv_limits lim = srv_limits_default();
    memset(e, 0, sizeof *e);
    memset(r, 0, sizeof *r);
    json_t *j = srv_json_parse(body, strlen(body), &lim, e);
    if (!j) return false;
    bool ok = srv_gen_req_decode(api, j, &lim, r, e);
    json_decref(j);
    return ok;
}

/* CHECK that got equals the JSON text want_text (what names the comparison). */
static inline void test_check_json(const json_t *got, const char *want_text, const char *what) {
    json_error_t je;
    json_t *want = json_loads(want_text, 0, &je);
    CHECK_MSG(want, "bad expected JSON for %s: %s", what, je.text);
    if (!(want && got && json_equal((json_t *)got, want))) {
        char *g = got ? json_dumps(got, JSON_COMPACT) : NULL;
        CHECK_MSG(false, "%s:\n got  %s\n want %s", what, g ? g : "(null)", want_text);
        free(g);
    }
    json_decref(want);
}

/* The events of an SSE answer ("event: TYPE\ndata: JSON\n\n" each), CHECKing that each
 * data is JSON whose "type" is TYPE. A new array. */
static inline json_t *test_parse_sse_events(const srv_buf *b) {
    json_t *evs = json_array();
    const char *p = b->data, *end = b->data + b->len;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        CHECK(!strncmp(p, "event: ", 7) && nl);
        if (!nl || strncmp(p, "event: ", 7)) break;
        char type[96];
        snprintf(type, sizeof type, "%.*s", (int)(nl - p - 7), p + 7);
        p = nl + 1;
        const char *stop = strstr(p, "\n\n");
        CHECK(!strncmp(p, "data: ", 6) && stop);
        if (!stop) break;
        json_error_t je;
        json_t *j = json_loadb(p + 6, (size_t)(stop - p - 6), 0, &je);
        CHECK_MSG(j, "event data is not JSON: %s", je.text);
        if (!j) break;
        CHECK_MSG(json_is_string(json_object_get(j, "type")) && !strcmp(json_string_value(json_object_get(j, "type")), type),
                  "event %s with data of another type", type);
        json_array_append_new(evs, j);
        p = stop + 2;
    }
    return evs;
}

#endif
