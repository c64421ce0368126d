// See include/jpeg_shim.h. Every entry point sets `jump` before calling libjpeg, so error_exit
// longjmps back to a frame of this file, never across Swift.
#include "jpeg_shim.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>


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
    int max_scans;        ///< more scans than this fail (the caller's walk refuses them first).
    char message[JMSG_LENGTH_MAX];
    int warning_count;
    char warnings[JPEGSHIM_MAX_WARNINGS][JMSG_LENGTH_MAX];
    int warning_codes[JPEGSHIM_MAX_WARNINGS];
    int truncated;        ///< the source ran out (JWRN_JPEG_EOF), kept or not.
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
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) decoder->truncated = 1;
    if (decoder->warning_count < JPEGSHIM_MAX_WARNINGS) {
        (*cinfo->err->format_message)(cinfo, decoder->warnings[decoder->warning_count]);
        decoder->warning_codes[decoder->warning_count] = cinfo->err->msg_code;
    }
    decoder->warning_count += 1;
    cinfo->err->num_warnings += 1;
}

static void on_progress(j_common_ptr cinfo) {
    if (cinfo->is_decompressor) {
        j_decompress_ptr d = (j_decompress_ptr)cinfo;
        if (d->input_scan_number > owner(cinfo)->max_scans) {
            ERREXIT1(cinfo, JERR_NOTIMPL, 0);  // replaced by a clearer message in fail_scans
        }
    }
}

static int failure(jpegshim_decoder *decoder) {
    if (decoder->cinfo.input_scan_number > decoder->max_scans) {
        snprintf(decoder->message, sizeof decoder->message,
                 "more than %d progressive scans", decoder->max_scans);
        return JPEGSHIM_ERROR;
    }
    return decoder->unsupported ? JPEGSHIM_UNSUPPORTED : JPEGSHIM_ERROR;
}

jpegshim_decoder *jpegshim_create(const unsigned char *data, size_t size) {
    jpegshim_decoder *decoder = calloc(1, sizeof *decoder);
    if (decoder == NULL) return NULL;
    decoder->data = data;
    decoder->size = size;
    decoder->max_scans = JPEGSHIM_DEFAULT_MAX_SCANS;
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

void jpegshim_set_max_scans(jpegshim_decoder *decoder, int max_scans) {
    decoder->max_scans = max_scans < 1 ? 1 : max_scans;
}

const char *jpegshim_message(const jpegshim_decoder *decoder) { return decoder->message; }

int jpegshim_warning_count(const jpegshim_decoder *decoder) { return decoder->warning_count; }

int jpegshim_warning_truncates(const jpegshim_decoder *decoder, int index) {
    if (index < 0 || index >= JPEGSHIM_MAX_WARNINGS || index >= decoder->warning_count) return 0;
    return decoder->warning_codes[index] == JWRN_JPEG_EOF;
}

int jpegshim_truncated(const jpegshim_decoder *decoder) { return decoder->truncated; }

const char *jpegshim_warning(const jpegshim_decoder *decoder, int index) {
    if (index < 0 || index >= JPEGSHIM_MAX_WARNINGS || index >= decoder->warning_count) return "";
    return decoder->warnings[index];
}

// MARK: - Encoding

/// The first output buffer; it doubles as needed (a 256-px thumbnail fits in one).
#define JPEGSHIM_FIRST_OUTPUT 16384

typedef struct {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr errors;
    struct jpeg_destination_mgr destination;
    jmp_buf jump;
    unsigned char *bytes;   ///< the output, owned here until handed to the caller
    size_t capacity;
    char *message;
    size_t message_size;
} jpegshim_encoder;

static void on_encode_error(j_common_ptr cinfo) {
    jpegshim_encoder *encoder = (jpegshim_encoder *)cinfo->client_data;
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    if (encoder->message_size > 0) snprintf(encoder->message, encoder->message_size, "%s", text);
    longjmp(encoder->jump, 1);
}

static void on_encode_message(j_common_ptr cinfo, int level) {
    (void)cinfo;
    (void)level;  // the compressor's warnings and traces are not actionable; never printed
}

static void destination_init(j_compress_ptr cinfo) {
    jpegshim_encoder *encoder = (jpegshim_encoder *)cinfo->client_data;
    encoder->destination.next_output_byte = encoder->bytes;
    encoder->destination.free_in_buffer = encoder->capacity;
}

/// libjpeg filled the whole buffer: double it (the filled part is kept).
static boolean destination_empty(j_compress_ptr cinfo) {
    jpegshim_encoder *encoder = (jpegshim_encoder *)cinfo->client_data;
    size_t used = encoder->capacity;
    if (encoder->capacity > ((size_t)-1) / 2) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 11);
    size_t capacity = encoder->capacity * 2;
    unsigned char *grown = realloc(encoder->bytes, capacity);
    if (grown == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 12);
    encoder->bytes = grown;
    encoder->capacity = capacity;
    encoder->destination.next_output_byte = grown + used;
    encoder->destination.free_in_buffer = capacity - used;
    return TRUE;
}

static void destination_term(j_compress_ptr cinfo) { (void)cinfo; }

/// One row of premultiplied or straight RGBA composited over `background`, as RGBX.
static void flatten_row(const unsigned char *in, unsigned char *out, unsigned int width, int straight,
                        const unsigned char background[3]) {
    for (unsigned int x = 0; x < width; x++) {
        const unsigned char *p = in + (size_t)x * 4;
        unsigned char *q = out + (size_t)x * 4;
        unsigned int a = p[3], rest = 255 - a;
        for (int c = 0; c < 3; c++) {
            unsigned int colour = straight ? p[c] * a : p[c] * 255u;  // colour × alpha, ×255
            q[c] = (unsigned char)((colour + background[c] * rest + 127) / 255);  // rounded
        }
        q[3] = 255;
    }
}

/// One row's first channel, composited like flatten_row when `flatten`, as one byte a pixel.
static void gray_row(const unsigned char *in, unsigned char *out, unsigned int width, int flatten, int straight,
                     unsigned char background) {
    for (unsigned int x = 0; x < width; x++) {
        const unsigned char *p = in + (size_t)x * 4;
        if (!flatten) { out[x] = p[0]; continue; }
        unsigned int a = p[3];
        unsigned int colour = straight ? p[0] * a : p[0] * 255u;
        out[x] = (unsigned char)((colour + background * (255 - a) + 127) / 255);
    }
}

int jpegshim_encode_rgba(const unsigned char *pixels, unsigned int width, unsigned int height, size_t stride,
                         const jpegshim_encode_options *options, unsigned char **out, size_t *out_size,
                         char *message, size_t message_size) {
    *out = NULL;
    *out_size = 0;
    if (message_size > 0) message[0] = 0;
    // Volatile: they change after setjmp and are read after a longjmp.
    jpegshim_encoder *volatile encoder = calloc(1, sizeof(jpegshim_encoder));
    unsigned char *volatile scratch = NULL;
    volatile int created = 0;
    if (encoder == NULL) return JPEGSHIM_NO_MEMORY;
    encoder->message = message;
    encoder->message_size = message_size;
    encoder->capacity = JPEGSHIM_FIRST_OUTPUT;
    encoder->bytes = malloc(encoder->capacity);
    if (encoder->bytes == NULL) {
        free(encoder);
        return JPEGSHIM_NO_MEMORY;
    }
    struct jpeg_compress_struct *c = &encoder->cinfo;
    c->err = jpeg_std_error(&encoder->errors);
    encoder->errors.error_exit = on_encode_error;
    encoder->errors.emit_message = on_encode_message;
    c->client_data = encoder;
    if (setjmp(encoder->jump)) {
        if (created) jpeg_destroy_compress(c);  // frees libjpeg's own memory only
        free(scratch);
        free(encoder->bytes);
        free(encoder);
        return JPEGSHIM_ERROR;
    }
    jpeg_create_compress(c);
    created = 1;
    encoder->destination.init_destination = destination_init;
    encoder->destination.empty_output_buffer = destination_empty;
    encoder->destination.term_destination = destination_term;
    c->dest = &encoder->destination;

    c->image_width = width;
    c->image_height = height;
    int gray = options->grayscale != 0;
    c->input_components = gray ? 1 : 4;
    c->in_color_space = gray ? JCS_GRAYSCALE : JCS_EXT_RGBX;  // RGBX: libjpeg skips the alpha byte
    jpeg_set_defaults(c);              // YCbCr (or gray), JFIF marker, 4:2:0, baseline tables
    jpeg_set_quality(c, options->quality < 1 ? 1 : (options->quality > 100 ? 100 : options->quality), TRUE);
    int h = 2, v = 2;
    if (options->subsampling == JPEGSHIM_SUBSAMPLING_422) { h = 2; v = 1; }
    if (options->subsampling == JPEGSHIM_SUBSAMPLING_444 || gray) { h = 1; v = 1; }
    c->comp_info[0].h_samp_factor = h;
    c->comp_info[0].v_samp_factor = v;
    for (int i = 1; i < c->num_components; i++) {
        c->comp_info[i].h_samp_factor = 1;
        c->comp_info[i].v_samp_factor = 1;
    }
    c->optimize_coding = options->optimize_coding ? TRUE : FALSE;
    c->dct_method = JDCT_ISLOW;
    if (options->progressive) jpeg_simple_progression(c);  // libjpeg then optimises Huffman tables too

    // Premultiplied pixels over black are the pixels themselves: rows go to libjpeg as they are.
    // Otherwise each row is composited into one scratch row first.
    int flatten = options->straight_alpha || options->background[0] || options->background[1]
        || options->background[2];
    if (flatten || gray) {
        scratch = malloc((size_t)width * 4 + 1);
        if (scratch == NULL) ERREXIT1((j_common_ptr)c, JERR_OUT_OF_MEMORY, 13);
    }
    jpeg_start_compress(c, TRUE);
    if (options->icc != NULL && options->icc_size > 0) jpeg_write_icc_profile(c, options->icc, options->icc_size);
    while (c->next_scanline < c->image_height) {
        const unsigned char *row = pixels + (size_t)c->next_scanline * stride;
        if (gray) {
            gray_row(row, scratch, width, flatten, options->straight_alpha, options->background[0]);
            row = scratch;
        } else if (flatten) {
            flatten_row(row, scratch, width, options->straight_alpha, options->background);
            row = scratch;
        }
        JSAMPROW rows[1] = {(JSAMPROW)row};  // libjpeg only reads input rows
        jpeg_write_scanlines(c, rows, 1);
    }
    jpeg_finish_compress(c);
    size_t size = encoder->capacity - encoder->destination.free_in_buffer;
    jpeg_destroy_compress(c);
    free(scratch);
    *out = encoder->bytes;
    *out_size = size;
    free(encoder);
    return JPEGSHIM_OK;
}

void jpegshim_free(void *buffer) { free(buffer); }
