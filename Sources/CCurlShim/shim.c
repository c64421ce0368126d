#include "CCurlShim.h"
#include <CLazyLibraries.h>

CURLcode ccurl_easy_set_long(CURL *easy, CURLoption option, long value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, option, value);
}

CURLcode ccurl_easy_set_offset(CURL *easy, CURLoption option, curl_off_t value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, option, value);
}

CURLcode ccurl_easy_set_string(CURL *easy, CURLoption option, const char *value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, option, value);
}

CURLcode ccurl_easy_set_pointer(CURL *easy, CURLoption option, void *value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, option, value);
}

CURLcode ccurl_easy_set_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, option, value);
}

/// Sets a callback's data option once its function option is set (`set`, curl's result for it).
static CURLcode with_data(CURLcode set, CURL *easy, CURLoption data, void *context) {
    return set != CURLE_OK ? set : IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, data, context);
}

CURLcode ccurl_easy_set_write(CURL *easy, ccurl_data_callback callback, void *context) {
    return with_data(IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, CURLOPT_WRITEFUNCTION, callback), easy, CURLOPT_WRITEDATA, context);
}

CURLcode ccurl_easy_set_header(CURL *easy, ccurl_data_callback callback, void *context) {
    return with_data(IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, CURLOPT_HEADERFUNCTION, callback), easy, CURLOPT_HEADERDATA, context);
}

CURLcode ccurl_easy_set_opensocket(CURL *easy, curl_opensocket_callback callback, void *context) {
    return with_data(IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, CURLOPT_OPENSOCKETFUNCTION, callback), easy, CURLOPT_OPENSOCKETDATA, context);
}

CURLcode ccurl_easy_set_prereq(CURL *easy, curl_prereq_callback callback, void *context) {
    return with_data(IMGPIPE_LAZY_VARIADIC(curl_easy_setopt)(easy, CURLOPT_PREREQFUNCTION, callback), easy, CURLOPT_PREREQDATA, context);
}

CURLcode ccurl_easy_get_long(CURL *easy, CURLINFO info, long *value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_getinfo)(easy, info, value);
}

CURLcode ccurl_easy_get_offset(CURL *easy, CURLINFO info, curl_off_t *value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_getinfo)(easy, info, value);
}

CURLcode ccurl_easy_get_string(CURL *easy, CURLINFO info, const char **value) {
    return IMGPIPE_LAZY_VARIADIC(curl_easy_getinfo)(easy, info, value);
}

CURLMcode ccurl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return IMGPIPE_LAZY_VARIADIC(curl_multi_setopt)(multi, option, value);
}

curl_socket_t ccurl_socket_bad(void) { return CURL_SOCKET_BAD; }

int ccurl_prereq_ok(void) { return CURL_PREREQFUNC_OK; }

int ccurl_prereq_abort(void) { return CURL_PREREQFUNC_ABORT; }

long ccurl_pipe_multiplex(void) { return CURLPIPE_MULTIPLEX; }

CURLcode ccurl_message_result(const CURLMsg *message) { return message->data.result; }
