/* One HTTP call's request and response (executor_http.c runs the calls): the request headers
 * (content type, the task's own, Idempotency-Key, the Standard Webhooks signature), the SSRF guard
 * on every socket libcurl opens, and the response body snippet and headers kept for the Result. */
#include "executor_http_impl.h"

/* ---- a call's request ------------------------------------------------------------ */

/* Keeps the first --executor-snippet-bytes of the response body, for the
 * call's Result or Attempt; the rest is read, counted and dropped. */
size_t http_on_body(char *data, size_t size, size_t n, void *arg)
{
    call *c = arg;
    mc_call *j = c->call;
    size_t len = size * n, max = (size_t)c->hc->cfg->executor_snippet_bytes;
    j->body_bytes += (int64_t)len;
    if (j->snippet_len < max) {
        if (!j->snippet && !(j->snippet = malloc(max)))
            return len; /* no snippet then; the call itself goes on */
        size_t take = len < max - j->snippet_len ? len : max - j->snippet_len;
        memcpy(j->snippet + j->snippet_len, data, take);
        j->snippet_len += take;
    }
    return len;
}

/* Whether name (len bytes, any case) is in the lower-case comma list. */
static bool listed(const char *list, const char *name, size_t len)
{
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncasecmp(p, name, len) == 0)
            return true;
        p += n + (end != NULL);
    }
    return false;
}

/* Keeps a response header named in --executor-response-headers, its name
 * lower-cased and its value trimmed and cut at MC_CALL_RESPONSE_HEADER_MAX;
 * a repeated one is joined with ", " (so the list refuses Set-Cookie, whose
 * values cannot be joined). */
static void keep_header(mc_call *j, const char *list, const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line || !listed(list, line, (size_t)(colon - line)))
        return;
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vlen = len - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    size_t at = 0;
    while (at < j->n_response_headers && (strlen(j->response_headers[at].key) != nlen ||
                                          strncasecmp(j->response_headers[at].key, line, nlen)))
        at++;
    const char *old = at < j->n_response_headers ? j->response_headers[at].value : "";
    size_t olen = strlen(old), sep = olen ? 2 : 0;
    /* Full (a hostile server may repeat a header without end): the rest is dropped. */
    if (at == MC_CALL_RESPONSE_HEADERS_MAX || olen + sep >= MC_CALL_RESPONSE_HEADER_MAX)
        return;
    if (olen + sep + vlen > MC_CALL_RESPONSE_HEADER_MAX)
        vlen = MC_CALL_RESPONSE_HEADER_MAX - olen - sep;
    char *block = malloc(nlen + 1 + olen + sep + vlen + 1);
    if (!block)
        return; /* the header is left out; the call goes on */
    for (size_t i = 0; i < nlen; i++)
        block[i] = (char)tolower((unsigned char)line[i]);
    block[nlen] = '\0';
    char *value = block + nlen + 1;
    memcpy(value, old, olen);
    memcpy(value + olen, ", ", sep);
    memcpy(value + olen + sep, v, vlen);
    value[olen + sep + vlen] = '\0';
    if (at < j->n_response_headers)
        free((char *)j->response_headers[at].key);
    else
        j->n_response_headers++;
    j->response_headers[at] = (mc_kv){block, value};
}

size_t http_on_header(char *line, size_t size, size_t n, void *arg)
{
    call *c = arg;
    mc_call *j = c->call;
    size_t len = size * n;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (after a 1xx): what came before was not the answer. */
        j->retry_after[0] = '\0';
        mc_call_forget_response_headers(j);
        return len;
    }
    keep_header(j, c->hc->cfg->executor_response_headers, line, len);
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(line, name, sizeof name - 1) == 0) {
        const char *v = line + sizeof name - 1;
        size_t vlen = len - (sizeof name - 1);
        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen >= sizeof j->retry_after)
            vlen = sizeof j->retry_after - 1;
        memcpy(j->retry_after, v, vlen);
        j->retry_after[vlen] = '\0';
    }
    return len;
}

/* The SSRF guard. curl asks us for every socket it opens, with the address
 * it resolved, so a name that resolves to a private address is refused
 * however the URL spelt it (and a DNS answer that changes between check and
 * use cannot slip through). A reused connection was checked when opened. */
curl_socket_t http_on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    call *c = arg;
    if (!mc_ssrf_check(c->hc->ssrf, &a->addr, a->addrlen, c->refused_why, sizeof c->refused_why)) {
        c->refused = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int add_header(struct curl_slist **l, const char *name, const char *value)
{
    if (strpbrk(value, "\r\n"))
        return 0; /* would split the request: dropped */
    char line[8192];
    int n = snprintf(line, sizeof line, "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof line)
        return 0;
    struct curl_slist *x = curl_slist_append(*l, line);
    if (!x)
        return -1;
    *l = x;
    return 0;
}

int http_build_headers(http_caller *hc, call *c)
{
    const mc_call *j = c->call;
    const mc_task *t = &j->task;
    const mc_callback *cb = &t->callback;
    bool content_type = false;
    for (size_t i = 0; i < cb->n_headers; i++) {
        if (!mc_header_name_ok(cb->headers[i].key) || mc_header_reserved(cb->headers[i].key))
            continue;
        if (add_header(&c->headers, cb->headers[i].key, cb->headers[i].value) != 0)
            return -1;
        content_type |= strcasecmp(cb->headers[i].key, "content-type") == 0;
    }
    char v[MC_CALL_KEY_MAX + 32], ts[32];
    snprintf(v, sizeof v, "%s:%" PRId32, j->key, t->attempt);
    snprintf(ts, sizeof ts, "%" PRId64, j->started_at / 1000);
    if (add_header(&c->headers, "Idempotency-Key", v) ||
        add_header(&c->headers, "webhook-id", j->key) ||
        add_header(&c->headers, "webhook-timestamp", ts))
        return -1;
    /* No "Expect: 100-continue" round trip before large bodies, and no
     * Content-Type the task did not ask for (curl would send a form type
     * with every body, which a JSON endpoint may then misread). */
    struct curl_slist *x = curl_slist_append(c->headers, "Expect:");
    if (!x)
        return -1;
    c->headers = x;
    if (!content_type) {
        if (!(x = curl_slist_append(c->headers, "Content-Type:")))
            return -1;
        c->headers = x;
    }
    size_t nsec = mc_app_secrets_count(hc->secrets, t->app_id);
    if (nsec) {
        size_t cap = nsec * MC_WEBHOOK_SIGNATURE_LEN + 1;
        char *sig = malloc(cap);
        if (!sig)
            return -1;
        size_t n = mc_webhook_signature(hc->secrets, t->app_id, j->key, j->started_at / 1000,
                                        cb->body, cb->body_len, sig, cap);
        int rc = n ? add_header(&c->headers, "webhook-signature", sig) : 0;
        free(sig);
        if (rc)
            return -1;
    }
    return 0;
}
