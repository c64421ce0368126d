#include "CMicroHTTPDShim.h"
#include <CLazyLibraries.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static void forward_log(void *cls, const char *format, va_list arguments) {
    const struct cmhd_settings *settings = cls;
    char line[512];
    int length = vsnprintf(line, sizeof line, format, arguments);
    if (length < 0) return;
    size_t end = strnlen(line, sizeof line);
    while (end > 0 && (line[end - 1] == '\n' || line[end - 1] == '\r')) line[--end] = '\0';
    settings->log(settings->context, line);
}

// Leaves every URL and argument as it came: the image paths carry percent-encoded source URLs
// that the handler decodes itself.
static size_t keep_escaped(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
}

struct MHD_Daemon *cmhd_start(const struct cmhd_settings *settings, enum cmhd_start_error *error) {
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    const struct sockaddr *address;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    if (inet_pton(AF_INET, settings->host, &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(settings->port);
        address = (const struct sockaddr *)&v4;
    } else if (inet_pton(AF_INET6, settings->host, &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(settings->port);
        address = (const struct sockaddr *)&v6;
        flags |= MHD_USE_IPv6;
    } else {
        *error = CMHD_START_INVALID_HOST;
        return NULL;
    }
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)forward_log, (void *)settings},
        {MHD_OPTION_SOCK_ADDR, 0, (void *)address},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)settings->connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)settings->idle_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)settings->memory_limit, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)settings->completed, settings->context},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)settings->target, settings->context},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)keep_escaped, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    // The port is bound through MHD_OPTION_SOCK_ADDR; given here too, it names the port in
    // MHD's bind failure message.
    struct MHD_Daemon *daemon = IMGPIPE_LAZY_VARIADIC(MHD_start_daemon)(flags, settings->port, NULL, NULL, settings->access, settings->context,
                                                 MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    *error = daemon == NULL ? CMHD_START_FAILED : CMHD_START_OK;
    return daemon;
}

uint16_t cmhd_daemon_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = IMGPIPE_LAZY_VARIADIC(MHD_get_daemon_info)(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = IMGPIPE_LAZY_VARIADIC(MHD_get_connection_info)(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

int cmhd_connection_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    const union MHD_ConnectionInfo *info = IMGPIPE_LAZY_VARIADIC(MHD_get_connection_info)(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    const void *bytes;
    if (address->sa_family == AF_INET) {
        bytes = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        bytes = &((const struct sockaddr_in6 *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, bytes, buffer, (socklen_t)size) == NULL ? -1 : 0;
}

// Never called: MHD skips the body of a response to HEAD. Ends the response with an error if it
// ever were.
static ssize_t no_body(void *cls, uint64_t position, char *buffer, size_t size) {
    (void)cls;
    (void)position;
    (void)buffer;
    (void)size;
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

struct MHD_Response *cmhd_create_head_response(uint64_t size) {
    return MHD_create_response_from_callback(size, 1024, no_body, NULL, NULL);
}
