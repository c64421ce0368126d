// A thin layer over libpng's classic API that keeps setjmp/longjmp inside C.
//
// libpng reports errors by longjmp-ing to a jmp_buf. Every function here sets that jmp_buf
// first, so an error returns here (never through a Swift frame) as a non-zero code plus
// libpng's message.
#ifndef PNG_SHIM_H
#define PNG_SHIM_H

#include <stddef.h>

/// Return codes of the pngshim_* functions.
enum {
    PNGSHIM_OK = 0,
    PNGSHIM_ERROR = 1,      ///< libpng failed; see pngshim_message.
    PNGSHIM_NO_MEMORY = 3,  ///< the reader or writer could not be allocated.
};

/// What IHDR says, and the row layout after the shim's transforms (always RGBA8).
typedef struct {
    unsigned int width;
    unsigned int height;
    int bit_depth;        ///< as stored: 1, 2, 4, 8 or 16.
    int color_type;       ///< PNG colour type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA.
    int interlaced;       ///< 1 for Adam7.
    int has_alpha;        ///< 1 when an alpha channel or a tRNS chunk is present.
    int channels;         ///< stored channels (1–4).
    size_t row_bytes;     ///< bytes per output row after transforms (width × 4).
} pngshim_info;

typedef struct pngshim_reader pngshim_reader;

/// A new reader over `size` bytes at `data` (not copied: they must outlive the reader), or
/// NULL when out of memory. Free it with pngshim_destroy on every path.
pngshim_reader *pngshim_create(const unsigned char *data, size_t size);

/// Frees everything the reader holds. NULL is allowed.
void pngshim_destroy(pngshim_reader *reader);

/// Reads the signature and the chunks before the first IDAT; fills `info`. No pixel buffer.
int pngshim_read_info(pngshim_reader *reader, pngshim_info *info);

/// The iCCP chunk's profile, decompressed, as read by pngshim_read_info (`*data` NULL and
/// `*size` 0 when the file has none or libpng rejected it). Owned by the reader.
void pngshim_icc_profile(const pngshim_reader *reader, const unsigned char **data, size_t *size);

/// Sets the transforms to straight RGBA8 (palette and low bit depths expanded, tRNS to alpha,
/// 16-bit scaled to 8, gray to RGB, opaque alpha added). Call once, after read_info.
int pngshim_set_rgba8(pngshim_reader *reader, pngshim_info *info);

/// Reads the next `count` rows of a non-interlaced image, `stride` bytes apart, into `rows`.
int pngshim_read_rows(pngshim_reader *reader, unsigned char *rows, size_t stride, unsigned int count);

/// Reads the whole image (every Adam7 pass when interlaced) into `pixels`, `stride` bytes a row.
int pngshim_read_image(pngshim_reader *reader, unsigned char *pixels, size_t stride);

/// Reads the chunks after the image data up to IEND, checking their CRCs.
int pngshim_read_end(pngshim_reader *reader);

/// libpng's message for the last error (empty when none). Owned by the reader.
const char *pngshim_message(const pngshim_reader *reader);

/// How many warnings libpng reported so far.
int pngshim_warning_count(const pngshim_reader *reader);

/// Whether the data ended before libpng had read what it asked for (the last error, or the
/// problem `pngshim_read_end` reported, was that).
int pngshim_truncated(const pngshim_reader *reader);

/// The text of warning `index` (< min(count, PNGSHIM_MAX_WARNINGS)). Owned by the reader.
const char *pngshim_warning(const pngshim_reader *reader, int index);

/// How many warning texts are kept; later ones are only counted.
#define PNGSHIM_MAX_WARNINGS 8

/// Encodes straight (not premultiplied) RGBA8 pixels as a PNG. On success `*out` is a
/// malloc'd buffer of `*out_size` bytes that the caller frees with pngshim_free. On failure
/// `message` (at least 200 bytes) receives libpng's message.
/// `level` is the zlib level 0–9.
int pngshim_encode_rgba(const unsigned char *pixels, unsigned int width, unsigned int height, size_t stride,
                        int level, unsigned char **out, size_t *out_size, char *message, size_t message_size);

/// pngshim_encode_rgba, with Adam7 interlacing when bit 0 of `interlaced` is set (the rows are
/// still read in place, once per pass: no copy of the picture), and no row filters (filter
/// type None on every row: the fastest to write and to read back) when bit 1 is; with `icc`
/// (`icc_size` bytes, or NULL), that ICC profile embedded as an `iCCP` chunk (libpng checks it
/// and fails with its message on a profile it cannot take).
int pngshim_encode_rgba_interlaced(const unsigned char *pixels, unsigned int width, unsigned int height, size_t stride,
                                   int level, int interlaced, const unsigned char *icc, size_t icc_size,
                                   unsigned char **out, size_t *out_size, char *message, size_t message_size);

/// Frees a buffer returned by pngshim_encode_rgba or pngshim_encode_rgba_interlaced.
void pngshim_free(void *buffer);

#endif
