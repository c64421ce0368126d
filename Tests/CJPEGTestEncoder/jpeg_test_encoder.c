#include "jpeg_test_encoder.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
} test_error;

static void on_error(j_common_ptr cinfo) { longjmp(((test_error *)cinfo->err)->jump, 1); }

int jpegtest_encode(const unsigned char *pixels, int width, int height, int kind, int quality,
                    int progressive, int arithmetic, int restart_rows,
                    unsigned char **out, unsigned long *out_size) {
    struct jpeg_compress_struct cinfo;
    test_error error;
    *out = NULL;
    *out_size = 0;
    cinfo.err = jpeg_std_error(&error.base);
    error.base.error_exit = on_error;
    if (setjmp(error.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(*out);
        *out = NULL;
        return 1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, out, out_size);
    int components = kind == JPEGTEST_YCCK ? 4 : kind;
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = components;
    cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : (components == 3 ? JCS_RGB : JCS_CMYK);
    jpeg_set_defaults(&cinfo);
    if (kind == JPEGTEST_YCCK) jpeg_set_colorspace(&cinfo, JCS_YCCK);
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive) jpeg_simple_progression(&cinfo);
    cinfo.arith_code = arithmetic ? TRUE : FALSE;
    cinfo.restart_in_rows = restart_rows;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * (size_t)width * (size_t)components);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return 0;
}

void jpegtest_free(void *buffer) { free(buffer); }
