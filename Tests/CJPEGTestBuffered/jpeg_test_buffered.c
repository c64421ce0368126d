#include "jpeg_test_buffered.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    int warnings;
} test_error;

static void on_error(j_common_ptr cinfo) { longjmp(((test_error *)cinfo->err)->jump, 1); }

static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) ((test_error *)cinfo->err)->warnings += 1;  // level >= 0: traces
}

int jpegtest_buffered_passes(const unsigned char *data, size_t size, int scale_num,
                             unsigned char **out, int *width, int *height, int *passes,
                             int *warnings, char *message, size_t message_size) {
    struct jpeg_decompress_struct cinfo;
    test_error error;
    // Written after setjmp and read after longjmp: volatile, so the value is the last one stored.
    unsigned char *volatile pixels = NULL;
    *out = NULL;
    *width = *height = *passes = *warnings = 0;
    if (message_size > 0) message[0] = 0;
    cinfo.err = jpeg_std_error(&error.base);
    error.base.error_exit = on_error;
    error.base.emit_message = on_message;
    error.warnings = 0;
    if (setjmp(error.jump)) {
        char text[JMSG_LENGTH_MAX];
        (*cinfo.err->format_message)((j_common_ptr)&cinfo, text);
        if (message_size > 0) snprintf(message, message_size, "%s", text);
        jpeg_destroy_decompress(&cinfo);
        free(pixels);
        *passes = 0;
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.buffered_image = TRUE;
    cinfo.scale_num = (unsigned int)(scale_num < 1 ? 1 : (scale_num > 8 ? 8 : scale_num));
    cinfo.scale_denom = 8;
    cinfo.out_color_space = JCS_EXT_RGBA;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    size_t row_bytes = (size_t)cinfo.output_width * 4;
    size_t pass_bytes = row_bytes * cinfo.output_height;
    size_t capacity = 0;
    for (;;) {
        int status;
        do {
            status = jpeg_consume_input(&cinfo);
        } while (status != JPEG_SCAN_COMPLETED && status != JPEG_REACHED_EOI && status != JPEG_SUSPENDED);
        if (status != JPEG_SCAN_COMPLETED) break;  // EOI (a memory source never suspends)
        if ((size_t)*passes == capacity) {
            capacity = capacity == 0 ? 16 : capacity * 2;
            unsigned char *grown = realloc(pixels, capacity * pass_bytes);
            if (grown == NULL) ERREXIT1(&cinfo, JERR_OUT_OF_MEMORY, 0);
            pixels = grown;
        }
        unsigned char *pass = pixels + (size_t)*passes * pass_bytes;
        jpeg_start_output(&cinfo, cinfo.input_scan_number);
        while (cinfo.output_scanline < cinfo.output_height) {
            JSAMPROW row = pass + (size_t)cinfo.output_scanline * row_bytes;
            jpeg_read_scanlines(&cinfo, &row, 1);
        }
        jpeg_finish_output(&cinfo);
        *passes += 1;
    }
    jpeg_finish_decompress(&cinfo);
    *width = (int)cinfo.output_width;
    *height = (int)cinfo.output_height;
    *warnings = error.warnings;
    jpeg_destroy_decompress(&cinfo);
    *out = pixels;
    return 0;
}

int jpegtest_make_progressive(const unsigned char *data, size_t size, int arithmetic,
                              unsigned char **out, unsigned long *out_size) {
    struct jpeg_decompress_struct source;
    struct jpeg_compress_struct target;
    // One error manager (and jump) serves both objects: whichever fails longjmps here.
    test_error error;
    // Which objects exist, for the error path (volatile: set after setjmp).
    volatile int created = 0;
    *out = NULL;
    *out_size = 0;
    source.err = target.err = jpeg_std_error(&error.base);
    error.base.error_exit = on_error;
    error.base.emit_message = on_message;
    error.warnings = 0;
    if (setjmp(error.jump)) {
        if (created & 2) jpeg_destroy_compress(&target);
        if (created & 1) jpeg_destroy_decompress(&source);
        free(*out);
        *out = NULL;
        *out_size = 0;
        return 1;
    }
    jpeg_create_decompress(&source);
    created |= 1;
    jpeg_create_compress(&target);
    created |= 2;
    jpeg_mem_src(&source, data, (unsigned long)size);
    jpeg_save_markers(&source, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(&source, JPEG_APP0 + 2, 0xFFFF);
    jpeg_read_header(&source, TRUE);
    jvirt_barray_ptr *coefficients = jpeg_read_coefficients(&source);
    jpeg_copy_critical_parameters(&source, &target);
    jpeg_simple_progression(&target);
    target.arith_code = arithmetic ? TRUE : FALSE;
    target.optimize_coding = arithmetic ? FALSE : TRUE;
    jpeg_mem_dest(&target, out, out_size);
    jpeg_write_coefficients(&target, coefficients);
    for (jpeg_saved_marker_ptr marker = source.marker_list; marker != NULL; marker = marker->next) {
        jpeg_write_marker(&target, marker->marker, marker->data, marker->data_length);
    }
    jpeg_finish_compress(&target);
    jpeg_finish_decompress(&source);
    jpeg_destroy_compress(&target);
    jpeg_destroy_decompress(&source);
    return 0;
}
