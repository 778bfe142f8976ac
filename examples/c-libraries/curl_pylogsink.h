/* libcurl's verbose lines through pylogsink: curl_pylogsink_setup(handle)
   on each easy handle. See curl_pylogsink.c. */
#ifndef CURL_PYLOGSINK_H
#define CURL_PYLOGSINK_H

#include <curl/curl.h>

int curl_pylogsink(CURL *handle, curl_infotype type, char *data, size_t size, void *userp);
CURLcode curl_pylogsink_setup(CURL *handle);

#endif
