// The parts of libmicrohttpd that Swift cannot call directly: MHD_start_daemon (variadic
// options, built here into an MHD_OPTION_ARRAY), MHD_get_daemon_info and
// MHD_get_connection_info (variadic), the external logger (a va_list) and the identity
// unescape callback. Nothing here keeps state; every call returns a result or an error code.
// It also brings epoll and eventfd, which Glibc's Swift module leaves out, to the watcher of
// suspended connections. libmicrohttpd is opened on first use (CLazyLibraries): the variadic
// functions are called through their addresses there (IMGPIPE_LAZY_VARIADIC).
#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <microhttpd.h>

/// Receives one of MHD's error messages, formatted, without its trailing newline.
typedef void (*cmhd_log_sink)(void *context, const char *line);

/// Called with the request target exactly as it came on the request line (path and query, not
/// unescaped); its result becomes the request's context pointer (MHD_OPTION_URI_LOG_CALLBACK).
typedef void *(*cmhd_target_callback)(void *context, const char *target, struct MHD_Connection *connection);

/// What cmhd_start needs.
struct cmhd_settings {
    /// An IPv4 or IPv6 literal to bind to.
    const char *host;
    /// The port; 0 picks a free one.
    uint16_t port;
    /// MHD_OPTION_CONNECTION_LIMIT.
    unsigned int connection_limit;
    /// MHD_OPTION_CONNECTION_TIMEOUT, seconds; 0 keeps idle connections forever.
    unsigned int idle_timeout_seconds;
    /// MHD_OPTION_CONNECTION_MEMORY_LIMIT, bytes: bounds the request line and headers.
    size_t memory_limit;
    MHD_AccessHandlerCallback access;
    MHD_RequestCompletedCallback completed;
    cmhd_target_callback target;
    cmhd_log_sink log;
    /// Passed to every callback above.
    void *context;
};

/// Errors cmhd_start returns through `error`.
enum cmhd_start_error {
    CMHD_START_OK = 0,
    /// `host` is not an IPv4 or IPv6 literal.
    CMHD_START_INVALID_HOST = 1,
    /// MHD could not start (bind, listen or thread); its log says why.
    CMHD_START_FAILED = 2,
};

/// Starts a daemon with an internal epoll thread, suspend/resume, no unescaping of the URL and
/// MHD's messages sent to `settings->log`; NULL with `*error` set when it cannot. `settings`
/// must stay valid until MHD_stop_daemon returns (the logger reads it); `host` only during
/// the call.
struct MHD_Daemon *cmhd_start(const struct cmhd_settings *settings, enum cmhd_start_error *error);

/// The port the daemon listens on (MHD_DAEMON_INFO_BIND_PORT); 0 when MHD does not say.
uint16_t cmhd_daemon_port(struct MHD_Daemon *daemon);

/// The connection's socket (MHD_CONNECTION_INFO_CONNECTION_FD), or -1.
int cmhd_connection_fd(struct MHD_Connection *connection);

/// Writes the client's address (numeric, NUL-terminated) into `buffer`; 0 on success, -1 when
/// MHD does not know it or it is not IPv4 or IPv6.
int cmhd_connection_address(struct MHD_Connection *connection, char *buffer, size_t size);

/// A response to HEAD that announces `size` bytes of body (`Content-Length: size`) without
/// holding them: MHD never reads a HEAD response's body. NULL when MHD cannot allocate it.
struct MHD_Response *cmhd_create_head_response(uint64_t size);

#endif
