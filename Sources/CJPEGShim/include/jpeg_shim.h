// A thin layer over libjpeg's classic decompression API that keeps setjmp/longjmp inside C.
//
// libjpeg reports fatal errors by calling error_exit, which by default calls exit(). Every
// function here sets a jmp_buf first, so an error longjmps back into this file only, never
// through a Swift frame, and comes back as a non-zero return code plus libjpeg's message.
#ifndef JPEG_SHIM_H
#define JPEG_SHIM_H

#include <stddef.h>

/// Return codes of the jpegshim_* functions.
enum {
    JPEGSHIM_OK = 0,
    JPEGSHIM_ERROR = 1,        ///< libjpeg failed; see jpegshim_message.
    JPEGSHIM_UNSUPPORTED = 2,  ///< valid JPEG this build cannot decode (e.g. 12-bit); see jpegshim_message.
    JPEGSHIM_NO_MEMORY = 3,    ///< the decoder state could not be allocated.
};

/// Colour handling chosen for the output.
enum {
    JPEGSHIM_COLOR_RGB = 0,    ///< YCbCr, RGB or grayscale source, converted by libjpeg to RGBA.
    JPEGSHIM_COLOR_CMYK = 1,   ///< CMYK or YCCK source, converted to RGBA by this shim.
};

/// What the header says.
typedef struct {
    int width;
    int height;
    int components;       ///< colour components in the file (1, 3 or 4).
    int color_space;      ///< libjpeg's J_COLOR_SPACE of the file.
    int progressive;      ///< 1 for progressive (SOF2/SOF6/SOF10...) files.
    int arithmetic;       ///< 1 for arithmetic-coded files.
    int precision;        ///< bits per sample (8, or 12 for files this build rejects).
    int adobe_inverted;   ///< 1 when an Adobe APP14 marker says CMYK is stored inverted.
    size_t coefficient_bytes; ///< the whole-image DCT coefficient arrays a progressive decode keeps.
} jpegshim_info;

typedef struct jpegshim_decoder jpegshim_decoder;

/// A new decoder over `size` bytes at `data` (not copied: they must outlive the decoder), or
/// NULL when out of memory. Free it with jpegshim_destroy on every path.
jpegshim_decoder *jpegshim_create(const unsigned char *data, size_t size);

/// Frees everything the decoder holds. NULL is allowed.
void jpegshim_destroy(jpegshim_decoder *decoder);

/// Reads the markers up to the first scan and fills `info`. Allocates no pixel buffers and saves
/// no APP markers (the caller reads the ICC profile from the bytes itself).
int jpegshim_read_header(jpegshim_decoder *decoder, jpegshim_info *info);

/// A backstop for the scan limit the caller checks from its own marker walk: libjpeg fails once
/// it starts scan `max_scans + 1`. Default JPEGSHIM_DEFAULT_MAX_SCANS.
void jpegshim_set_max_scans(jpegshim_decoder *decoder, int max_scans);

/// The scan backstop until jpegshim_set_max_scans is called.
#define JPEGSHIM_DEFAULT_MAX_SCANS 1000

/// With `raw` non-zero, a CMYK/YCCK file's rows come out as CMYK bytes as stored (inverted when
/// `adobe_inverted`), 4 a pixel, for a colour-managed conversion; default 0: converted to RGBA.
/// Call before jpegshim_start.
void jpegshim_set_raw_cmyk(jpegshim_decoder *decoder, int raw);

/// Starts decompression at scale `scale_num`/8 with RGBA output; writes the output size.
/// Must follow jpegshim_read_header. Progressive files buffer their coefficients here.
int jpegshim_start(jpegshim_decoder *decoder, int scale_num, int *out_width, int *out_height);

/// Decodes every output row into `pixels` (rows `stride` bytes apart, RGBA8, alpha 255).
/// `rows_done` receives how many rows were written before any error.
int jpegshim_read_rgba(jpegshim_decoder *decoder, unsigned char *pixels, size_t stride, int *rows_done);

/// Finishes decompression (reads to EOI). Warnings it meets are recorded like the others.
int jpegshim_finish(jpegshim_decoder *decoder);

/// libjpeg's message for the last error (empty when none). Owned by the decoder.
const char *jpegshim_message(const jpegshim_decoder *decoder);

/// How many warnings (corrupt-but-decodable data) libjpeg reported so far.
int jpegshim_warning_count(const jpegshim_decoder *decoder);

/// The text of warning `index` (< min(count, JPEGSHIM_MAX_WARNINGS)). Owned by the decoder.
const char *jpegshim_warning(const jpegshim_decoder *decoder, int index);

/// Whether warning `index` says the data ended early (JWRN_JPEG_EOF: the source manager
/// inserted an EOI marker and the rest of the picture is grey).
int jpegshim_warning_truncates(const jpegshim_decoder *decoder, int index);

/// Whether the data ended early, whether or not that warning's text was kept.
int jpegshim_truncated(const jpegshim_decoder *decoder);

/// How many warning texts are kept; later ones are only counted.
#define JPEGSHIM_MAX_WARNINGS 8

/// Chroma subsampling of an encoded file.
enum {
    JPEGSHIM_SUBSAMPLING_420 = 0,
    JPEGSHIM_SUBSAMPLING_422 = 1,
    JPEGSHIM_SUBSAMPLING_444 = 2,
};

/// How jpegshim_encode_rgba writes.
typedef struct {
    int quality;          ///< 1–100 (libjpeg's scale; clamped).
    int progressive;      ///< non-zero: libjpeg's simple progression script (SOF2).
    int subsampling;      ///< JPEGSHIM_SUBSAMPLING_*.
    int optimize_coding;  ///< non-zero: optimal Huffman tables (a second pass over the coefficients).
    int straight_alpha;   ///< non-zero: the pixels are straight RGBA; zero: premultiplied.
    unsigned char background[3];  ///< RGB the pixels are composited over (JPEG has no alpha).
    int grayscale;        ///< non-zero: write one component, the red channel (the caller checked R = G = B).
    const unsigned char *icc;  ///< an ICC profile to embed (APP2 "ICC_PROFILE" segments), or NULL.
    unsigned int icc_size;     ///< its length in bytes.
} jpegshim_encode_options;

/// Encodes RGBA8 pixels (rows `stride` bytes apart) as a baseline or progressive JFIF file,
/// composited over `options->background`; premultiplied pixels over black are handed to libjpeg
/// row by row with no copy. On success (JPEGSHIM_OK) `*out` is a malloc'd buffer of `*out_size`
/// bytes the caller frees with jpegshim_free; on failure nothing is left allocated and `message`
/// receives libjpeg's message. libjpeg never prints: its warnings are dropped.
int jpegshim_encode_rgba(const unsigned char *pixels, unsigned int width, unsigned int height, size_t stride,
                         const jpegshim_encode_options *options, unsigned char **out, size_t *out_size,
                         char *message, size_t message_size);

/// Frees a buffer returned by jpegshim_encode_rgba.
void jpegshim_free(void *buffer);

#endif
