// Test-only JPEG writer: makes the grayscale, CMYK/YCCK, progressive, arithmetic and
// restart-marker files the decoder tests need, without committing binary fixtures.
#ifndef JPEG_TEST_ENCODER_H
#define JPEG_TEST_ENCODER_H

#include <stddef.h>

/// Kinds of input pixels.
enum {
    JPEGTEST_GRAY = 1,  ///< 1 byte a pixel.
    JPEGTEST_RGB = 3,   ///< 3 bytes a pixel.
    JPEGTEST_CMYK = 4,  ///< 4 bytes a pixel, Adobe-inverted (255 = no ink), stored as CMYK.
    JPEGTEST_YCCK = 5,  ///< like CMYK, stored as YCCK.
};

/// Encodes `pixels` (`width × height`, kind `kind`, rows tightly packed) at `quality`.
/// On success returns 0 and a malloc'd `*out` of `*out_size` bytes (free with free()).
/// `restart_rows` > 0 writes a restart marker every that many MCU rows.
int jpegtest_encode(const unsigned char *pixels, int width, int height, int kind, int quality,
                    int progressive, int arithmetic, int restart_rows,
                    unsigned char **out, unsigned long *out_size);

/// Frees a buffer from jpegtest_encode.
void jpegtest_free(void *buffer);

#endif
