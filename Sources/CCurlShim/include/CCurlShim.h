// The parts of libcurl that Swift cannot call directly: the variadic curl_easy_setopt,
// curl_multi_setopt and curl_easy_getinfo, and a few macro constants. Each wrapper takes one
// argument of a fixed type and returns curl's error code; nothing here allocates or frees.
// libcurl is opened on first use (CLazyLibraries): the variadic functions are called through
// their addresses there (IMGPIPE_LAZY_VARIADIC), never through a `...` trampoline.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

/// A body or header callback (CURLOPT_WRITEFUNCTION / CURLOPT_HEADERFUNCTION).
typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);

CURLcode ccurl_easy_set_long(CURL *easy, CURLoption option, long value);
CURLcode ccurl_easy_set_offset(CURL *easy, CURLoption option, curl_off_t value);
CURLcode ccurl_easy_set_string(CURL *easy, CURLoption option, const char *value);
CURLcode ccurl_easy_set_pointer(CURL *easy, CURLoption option, void *value);
CURLcode ccurl_easy_set_slist(CURL *easy, CURLoption option, struct curl_slist *value);
CURLcode ccurl_easy_set_write(CURL *easy, ccurl_data_callback callback, void *context);
CURLcode ccurl_easy_set_header(CURL *easy, ccurl_data_callback callback, void *context);

/// CURLOPT_OPENSOCKETFUNCTION with its data: the callback opens each socket curl connects
/// (and so sees each address before the connection is made), or refuses it.
CURLcode ccurl_easy_set_opensocket(CURL *easy, curl_opensocket_callback callback, void *context);
/// CURLOPT_PREREQFUNCTION with its data: called once a connection is made or reused, before the
/// request is sent, with the address it goes to.
CURLcode ccurl_easy_set_prereq(CURL *easy, curl_prereq_callback callback, void *context);

CURLcode ccurl_easy_get_long(CURL *easy, CURLINFO info, long *value);
CURLcode ccurl_easy_get_offset(CURL *easy, CURLINFO info, curl_off_t *value);
CURLcode ccurl_easy_get_string(CURL *easy, CURLINFO info, const char **value);

CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value);

/// CURL_SOCKET_BAD, a macro.
curl_socket_t ccurl_socket_bad(void);
/// CURL_PREREQFUNC_OK and CURL_PREREQFUNC_ABORT, macros.
int ccurl_prereq_ok(void);
int ccurl_prereq_abort(void);
/// CURLPIPE_MULTIPLEX, a macro.
long ccurl_pipe_multiplex(void);
/// The CURLMsg's result for a CURLMSG_DONE message (a union member).
CURLcode ccurl_message_result(const CURLMsg *message);

#endif
