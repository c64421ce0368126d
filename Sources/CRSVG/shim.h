// The part of librsvg 2.54, cairo and GLib/GIO that CodecSVG calls, declared here instead of
// included: librsvg's headers include GLib's, which need -I paths that only pkg-config knows,
// and SwiftPM warns on every build about glib-2.0.pc ("prohibited flag(s): -pthread"). These
// are the libraries' stable C ABI, written as their headers declare it (Debian 12: librsvg
// 2.54.7, cairo 1.16, GLib 2.74). Tests/CodecSVGTests/DeclarationsTests compiles this file
// after the real headers, so a prototype that disagrees with them fails the build of the check.
//
// Each type is defined only when the real header has not been seen (their include guards).
#ifndef CRSVG_SHIM_H
#define CRSVG_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef __G_LIB_H__
typedef char gchar;
typedef int gint;
typedef int gboolean;
typedef unsigned int guint;
typedef uint32_t guint32;
typedef double gdouble;
typedef size_t gsize;
typedef ssize_t gssize;
typedef void *gpointer;
typedef guint32 GQuark;
typedef void (*GDestroyNotify)(gpointer data);

typedef struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
} GError;

typedef enum {
    G_LOG_FLAG_RECURSION = 1 << 0,
    G_LOG_FLAG_FATAL = 1 << 1,
    G_LOG_LEVEL_ERROR = 1 << 2,
    G_LOG_LEVEL_CRITICAL = 1 << 3,
    G_LOG_LEVEL_WARNING = 1 << 4,
    G_LOG_LEVEL_MESSAGE = 1 << 5,
    G_LOG_LEVEL_INFO = 1 << 6,
    G_LOG_LEVEL_DEBUG = 1 << 7,
} GLogLevelFlags;

typedef void (*GLogFunc)(const gchar *log_domain, GLogLevelFlags log_level, const gchar *message, gpointer user_data);
#endif

#ifndef __G_IO_H__
typedef struct _GInputStream GInputStream;
typedef struct _GFile GFile;
typedef struct _GCancellable GCancellable;
typedef struct _GConverter GConverter;
typedef struct _GZlibDecompressor GZlibDecompressor;

typedef enum {
    G_ZLIB_COMPRESSOR_FORMAT_ZLIB,
    G_ZLIB_COMPRESSOR_FORMAT_GZIP,
    G_ZLIB_COMPRESSOR_FORMAT_RAW,
} GZlibCompressorFormat;

typedef enum {
    G_CONVERTER_NO_FLAGS = 0,
    G_CONVERTER_INPUT_AT_END = 1 << 0,
    G_CONVERTER_FLUSH = 1 << 1,
} GConverterFlags;

typedef enum {
    G_CONVERTER_ERROR = 0,
    G_CONVERTER_CONVERTED = 1,
    G_CONVERTER_FINISHED = 2,
    G_CONVERTER_FLUSHED = 3,
} GConverterResult;
#endif

#ifndef CAIRO_H
typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

typedef enum _cairo_status {
    CAIRO_STATUS_SUCCESS = 0,
} cairo_status_t;

typedef enum _cairo_format {
    CAIRO_FORMAT_INVALID = -1,
    CAIRO_FORMAT_ARGB32 = 0,
} cairo_format_t;
#endif

#ifndef RSVG_H
typedef struct _RsvgHandle RsvgHandle;

typedef enum {
    RSVG_HANDLE_FLAGS_NONE = 0,
} RsvgHandleFlags;

typedef enum {
    RSVG_UNIT_PERCENT,
    RSVG_UNIT_PX,
    RSVG_UNIT_EM,
    RSVG_UNIT_EX,
    RSVG_UNIT_IN,
    RSVG_UNIT_CM,
    RSVG_UNIT_MM,
    RSVG_UNIT_PT,
    RSVG_UNIT_PC,
} RsvgUnit;

typedef struct {
    double length;
    RsvgUnit unit;
} RsvgLength;

typedef struct _RsvgRectangle {
    double x;
    double y;
    double width;
    double height;
} RsvgRectangle;
#endif

// GLib, GObject
void g_error_free(GError *error);
void g_object_unref(gpointer object);
guint g_log_set_handler(const gchar *log_domain, GLogLevelFlags log_levels, GLogFunc log_func, gpointer user_data);

// GIO
GInputStream *g_memory_input_stream_new_from_data(const void *data, gssize len, GDestroyNotify destroy);
GZlibDecompressor *g_zlib_decompressor_new(GZlibCompressorFormat format);
GConverterResult g_converter_convert(GConverter *converter, const void *inbuf, gsize inbuf_size, void *outbuf,
                                     gsize outbuf_size, GConverterFlags flags, gsize *bytes_read,
                                     gsize *bytes_written, GError **error);

// cairo
cairo_surface_t *cairo_image_surface_create(cairo_format_t format, int width, int height);
cairo_status_t cairo_surface_status(cairo_surface_t *surface);
const char *cairo_status_to_string(cairo_status_t status);
void cairo_surface_flush(cairo_surface_t *surface);
unsigned char *cairo_image_surface_get_data(cairo_surface_t *surface);
int cairo_image_surface_get_stride(cairo_surface_t *surface);
void cairo_surface_destroy(cairo_surface_t *surface);
cairo_t *cairo_create(cairo_surface_t *target);
void cairo_scale(cairo_t *cr, double sx, double sy);
void cairo_destroy(cairo_t *cr);

// librsvg
RsvgHandle *rsvg_handle_new_from_stream_sync(GInputStream *input_stream, GFile *base_file, RsvgHandleFlags flags,
                                             GCancellable *cancellable, GError **error);
void rsvg_handle_set_dpi(RsvgHandle *handle, double dpi);
gboolean rsvg_handle_get_intrinsic_size_in_pixels(RsvgHandle *handle, gdouble *out_width, gdouble *out_height);
void rsvg_handle_get_intrinsic_dimensions(RsvgHandle *handle, gboolean *out_has_width, RsvgLength *out_width,
                                          gboolean *out_has_height, RsvgLength *out_height,
                                          gboolean *out_has_viewbox, RsvgRectangle *out_viewbox);
gboolean rsvg_handle_render_document(RsvgHandle *handle, cairo_t *cr, const RsvgRectangle *viewport, GError **error);

#endif
