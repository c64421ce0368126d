// Test-only libjpeg drivers for the progressive-preview tests: buffered-image mode's output pass
// after every scan (what a preview must equal), and a lossless rewrite of a file as progressive
// (jpegtran -progressive), so the corpus's baseline files can be tested as progressive ones.
#ifndef JPEG_TEST_BUFFERED_H
#define JPEG_TEST_BUFFERED_H

#include <stddef.h>

/// Decodes `data` in buffered-image mode at `scale_num`/8, RGBA (JCS_EXT_RGBA), JDCT_ISLOW and
/// libjpeg's other defaults (block smoothing and fancy upsampling on), as the CJPEGShim decoder
/// does. After each scan is complete (jpeg_consume_input returned JPEG_SCAN_COMPLETED) it runs
/// the output pass for that scan (jpeg_start_output(cinfo, input_scan_number)), before any byte
/// of the next scan's headers is consumed.
/// On success returns 0 and a malloc'd `*out` (free with free()) holding `*passes` output passes
/// of `*width × *height × 4` bytes, one after the other; `*warnings` is how many warnings libjpeg
/// gave. On failure returns 1, with `*out` NULL and libjpeg's message in `message`.
int jpegtest_buffered_passes(const unsigned char *data, size_t size, int scale_num,
                             unsigned char **out, int *width, int *height, int *passes,
                             int *warnings, char *message, size_t message_size);

/// Rewrites `data` losslessly (same coefficients) as a progressive file with libjpeg's default
/// script (jpeg_simple_progression), Huffman or arithmetic coded, keeping its APP1 (EXIF) and
/// APP2 (ICC) segments. On success returns 0 and a malloc'd `*out` of `*out_size` bytes
/// (free with free()); on failure 1 and `*out` NULL.
int jpegtest_make_progressive(const unsigned char *data, size_t size, int arithmetic,
                              unsigned char **out, unsigned long *out_size);

#endif
