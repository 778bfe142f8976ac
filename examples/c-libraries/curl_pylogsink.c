/*
 * curl_pylogsink.c: libcurl's verbose lines through pylogsink.
 *
 * libcurl hands its CURLOPT_DEBUGFUNCTION callback the text it would print
 * with CURLOPT_VERBOSE, from the thread that runs the transfer (a native
 * worker, often, with the GIL released). This callback never calls Python.
 * Records, by target:
 *   curl            curl's informational text ("Connected to ...")  DEBUG
 *   curl::header    each header line, "> " sent and "< " received    DEBUG
 *   curl::data      "N bytes received" / "N bytes sent"               TRACE
 * (TLS data counts as data too.) curl_pylogsink_setup turns CURLOPT_VERBOSE
 * on only if the filter lets "curl" debug lines through, so a handle set up
 * with them filtered out costs nothing; set the filter before.
 */
#include "curl_pylogsink.h"

#include <pylogsink_emit.h>

/* Header blocks come as several CRLF-ended lines: one record each. */
static void emit_lines(const char *target, const char *prefix, const char *data, size_t size) {
    while (size > 0) {
        size_t n = 0;
        while (n < size && data[n] != '\n') n++;
        size_t len = n;
        if (len > 0 && data[len - 1] == '\r') len--;
        if (len > 0) pylogsink_emitf(PYLOGSINK_DEBUG, target, NULL, 0, "%s%.*s", prefix, (int)len, data);
        if (n < size) n++; /* the '\n' */
        data += n;
        size -= n;
    }
}

int curl_pylogsink(CURL *handle, curl_infotype type, char *data, size_t size, void *userp) {
    (void)handle;
    (void)userp;
    switch (type) {
    case CURLINFO_TEXT:
        if (pylogsink_enabled(PYLOGSINK_DEBUG, "curl")) emit_lines("curl", "", data, size);
        break;
    case CURLINFO_HEADER_OUT:
    case CURLINFO_HEADER_IN:
        if (pylogsink_enabled(PYLOGSINK_DEBUG, "curl::header"))
            emit_lines("curl::header", type == CURLINFO_HEADER_OUT ? "> " : "< ", data, size);
        break;
    case CURLINFO_DATA_IN:
    case CURLINFO_SSL_DATA_IN:
        pylogsink_emitf(PYLOGSINK_TRACE, "curl::data", NULL, 0, "%zu bytes received", size);
        break;
    case CURLINFO_DATA_OUT:
    case CURLINFO_SSL_DATA_OUT:
        pylogsink_emitf(PYLOGSINK_TRACE, "curl::data", NULL, 0, "%zu bytes sent", size);
        break;
    default:
        break;
    }
    return 0;
}

CURLcode curl_pylogsink_setup(CURL *handle) {
    CURLcode rc = curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, curl_pylogsink);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(handle, CURLOPT_VERBOSE, pylogsink_enabled(PYLOGSINK_DEBUG, "curl") ? 1L : 0L);
    return rc;
}
