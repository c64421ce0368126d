// See include/jpeg_shim.h. Every entry point sets `jump` before calling libjpeg, so error_exit
// longjmps back to a frame of this file, never across Swift.
#include "jpeg_shim.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

/// A progressive file can hold any number of scans; a crafted one with thousands of tiny
/// scans makes libjpeg work for minutes. Real encoders write about ten.
#define JPEGSHIM_MAX_SCANS 1000

struct jpegshim_decoder {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr errors;
    struct jpeg_progress_mgr progress;
    jmp_buf jump;
    int created;
    int cmyk;
    int adobe_inverted;
    int raw_cmyk;
    int unsupported;
    const unsigned char *data;
    size_t size;
    JOCTET *icc;          ///< malloc'd by jpeg_read_icc_profile; freed in jpegshim_destroy.
    unsigned int icc_size;
    char message[JMSG_LENGTH_MAX];
    int warning_count;
    char warnings[JPEGSHIM_MAX_WARNINGS][JMSG_LENGTH_MAX];
};

static jpegshim_decoder *owner(j_common_ptr cinfo) {
    return (jpegshim_decoder *)cinfo->client_data;
}

static int is_unsupported(int code) {
    return code == JERR_BAD_PRECISION || code == JERR_SOF_UNSUPPORTED || code == JERR_NOT_COMPILED
        || code == JERR_CONVERSION_NOTIMPL || code == JERR_NOTIMPL;
}

static void on_error_exit(j_common_ptr cinfo) {
    jpegshim_decoder *decoder = owner(cinfo);
    (*cinfo->err->format_message)(cinfo, decoder->message);
    decoder->unsupported = is_unsupported(cinfo->err->msg_code);
    longjmp(decoder->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    jpegshim_decoder *decoder = owner(cinfo);
    if (decoder->warning_count < JPEGSHIM_MAX_WARNINGS) {
        (*cinfo->err->format_message)(cinfo, decoder->warnings[decoder->warning_count]);
    }
    decoder->warning_count += 1;
    cinfo->err->num_warnings += 1;
}

static void on_progress(j_common_ptr cinfo) {
    if (cinfo->is_decompressor) {
        j_decompress_ptr d = (j_decompress_ptr)cinfo;
        if (d->input_scan_number > JPEGSHIM_MAX_SCANS) {
            ERREXIT1(cinfo, JERR_NOTIMPL, 0);  // replaced by a clearer message in fail_scans
        }
    }
}

static int failure(jpegshim_decoder *decoder) {
    if (decoder->cinfo.input_scan_number > JPEGSHIM_MAX_SCANS) {
        snprintf(decoder->message, sizeof decoder->message,
                 "more than %d progressive scans", JPEGSHIM_MAX_SCANS);
        return JPEGSHIM_ERROR;
    }
    return decoder->unsupported ? JPEGSHIM_UNSUPPORTED : JPEGSHIM_ERROR;
}

jpegshim_decoder *jpegshim_create(const unsigned char *data, size_t size) {
    jpegshim_decoder *decoder = calloc(1, sizeof *decoder);
    if (decoder == NULL) return NULL;
    decoder->data = data;
    decoder->size = size;
    decoder->cinfo.err = jpeg_std_error(&decoder->errors);
    decoder->errors.error_exit = on_error_exit;
    decoder->errors.emit_message = on_message;
    decoder->cinfo.client_data = decoder;
    if (setjmp(decoder->jump)) {
        jpegshim_destroy(decoder);
        return NULL;
    }
    decoder->created = 1;  // jpeg_destroy copes with a half-created object (its mem is NULL)
    jpeg_create_decompress(&decoder->cinfo);
    decoder->progress.progress_monitor = on_progress;
    decoder->cinfo.progress = &decoder->progress;
    jpeg_mem_src(&decoder->cinfo, data, (unsigned long)size);
    return decoder;
}

void jpegshim_destroy(jpegshim_decoder *decoder) {
    if (decoder == NULL) return;
    free(decoder->icc);
    if (decoder->created) {
        // jpeg_destroy only frees memory; it does not call error_exit.
        jpeg_destroy_decompress(&decoder->cinfo);
    }
    free(decoder);
}

int jpegshim_read_header(jpegshim_decoder *decoder, jpegshim_info *info) {
    if (setjmp(decoder->jump)) return failure(decoder);
    if (decoder->size == 0) {
        snprintf(decoder->message, sizeof decoder->message, "the data is empty");
        return JPEGSHIM_ERROR;
    }
    jpeg_save_markers(&decoder->cinfo, JPEG_APP0 + 2, 0xFFFF);  // ICC_PROFILE segments
    if (jpeg_read_header(&decoder->cinfo, TRUE) != JPEG_HEADER_OK) {
        snprintf(decoder->message, sizeof decoder->message, "the file holds tables but no image");
        return JPEGSHIM_ERROR;
    }
    struct jpeg_decompress_struct *c = &decoder->cinfo;
    info->width = (int)c->image_width;
    info->height = (int)c->image_height;
    info->components = c->num_components;
    info->color_space = (int)c->jpeg_color_space;
    info->progressive = c->progressive_mode ? 1 : 0;
    info->arithmetic = c->arith_code ? 1 : 0;
    info->precision = c->data_precision;
    info->adobe_inverted = c->saw_Adobe_marker ? 1 : 0;
    decoder->adobe_inverted = info->adobe_inverted;
    // What jdcoefct.c allocates for buffered (progressive) decoding: one JBLOCK per block of
    // every component, the block counts rounded up to whole MCUs.
    info->coefficient_bytes = 0;
    for (int i = 0; i < c->num_components; i++) {
        const jpeg_component_info *component = &c->comp_info[i];
        size_t across = ((size_t)component->width_in_blocks + component->h_samp_factor - 1)
                        / component->h_samp_factor * component->h_samp_factor;
        size_t down = ((size_t)component->height_in_blocks + component->v_samp_factor - 1)
                      / component->v_samp_factor * component->v_samp_factor;
        info->coefficient_bytes += across * down * sizeof(JBLOCK);
    }
    free(decoder->icc);
    decoder->icc = NULL;
    decoder->icc_size = 0;
    // Reassembles every APP2 ICC_PROFILE segment in sequence order; a bad sequence is a
    // warning (JWRN_BOGUS_ICC) and FALSE, never an error.
    if (!jpeg_read_icc_profile(&decoder->cinfo, &decoder->icc, &decoder->icc_size)) {
        free(decoder->icc);
        decoder->icc = NULL;
        decoder->icc_size = 0;
    }
    return JPEGSHIM_OK;
}

void jpegshim_set_raw_cmyk(jpegshim_decoder *decoder, int raw) { decoder->raw_cmyk = raw != 0; }

int jpegshim_start(jpegshim_decoder *decoder, int scale_num, int *out_width, int *out_height) {
    if (setjmp(decoder->jump)) return failure(decoder);
    struct jpeg_decompress_struct *c = &decoder->cinfo;
    c->scale_num = (unsigned int)(scale_num < 1 ? 1 : (scale_num > 8 ? 8 : scale_num));
    c->scale_denom = 8;
    decoder->cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
    c->out_color_space = decoder->cmyk ? JCS_CMYK : JCS_EXT_RGBA;
    c->dct_method = JDCT_ISLOW;
    jpeg_start_decompress(c);
    *out_width = (int)c->output_width;
    *out_height = (int)c->output_height;
    return JPEGSHIM_OK;
}

/// CMYK (inverted when Adobe wrote it, as Photoshop does) to RGBA, in place: 4 bytes to 4.
static void cmyk_to_rgba(unsigned char *row, unsigned int width, int inverted) {
    for (unsigned int x = 0; x < width; x++) {
        unsigned char *p = row + 4 * x;
        unsigned int c = p[0], m = p[1], y = p[2], k = p[3];
        if (!inverted) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        p[0] = (unsigned char)((c * k + 127) / 255);
        p[1] = (unsigned char)((m * k + 127) / 255);
        p[2] = (unsigned char)((y * k + 127) / 255);
        p[3] = 255;
    }
}

int jpegshim_read_rgba(jpegshim_decoder *decoder, unsigned char *pixels, size_t stride, int *rows_done) {
    *rows_done = 0;
    if (setjmp(decoder->jump)) return failure(decoder);
    struct jpeg_decompress_struct *c = &decoder->cinfo;
    while (c->output_scanline < c->output_height) {
        JSAMPROW rows[8];
        unsigned int first = c->output_scanline;
        unsigned int want = c->output_height - first;
        if (want > 8) want = 8;
        for (unsigned int i = 0; i < want; i++) rows[i] = pixels + (size_t)(first + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(c, rows, want);
        if (got == 0) {  // cannot happen with a memory source (it fakes EOI), but never spin
            snprintf(decoder->message, sizeof decoder->message, "the decoder stopped at row %u", first);
            return JPEGSHIM_ERROR;
        }
        if (decoder->cmyk && !decoder->raw_cmyk) {
            for (JDIMENSION i = 0; i < got; i++) cmyk_to_rgba(rows[i], c->output_width, decoder->adobe_inverted);
        }
        *rows_done = (int)c->output_scanline;
    }
    return JPEGSHIM_OK;
}

int jpegshim_finish(jpegshim_decoder *decoder) {
    if (setjmp(decoder->jump)) return failure(decoder);
    jpeg_finish_decompress(&decoder->cinfo);
    return JPEGSHIM_OK;
}

void jpegshim_icc_profile(const jpegshim_decoder *decoder, const unsigned char **data, size_t *size) {
    *data = decoder->icc;
    *size = decoder->icc != NULL ? decoder->icc_size : 0;
}

const char *jpegshim_message(const jpegshim_decoder *decoder) { return decoder->message; }

int jpegshim_warning_count(const jpegshim_decoder *decoder) { return decoder->warning_count; }

const char *jpegshim_warning(const jpegshim_decoder *decoder, int index) {
    if (index < 0 || index >= JPEGSHIM_MAX_WARNINGS || index >= decoder->warning_count) return "";
    return decoder->warnings[index];
}
