// See include/png_shim.h. Every entry point sets png_jmpbuf before calling libpng, so
// png_error longjmps back to a frame of this file, never across Swift.
#include "png_shim.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <png.h>

#define PNGSHIM_MESSAGE_SIZE 256

/// Inputs at least this large are checked for being a read-only file mapping.
#define PNGSHIM_RELEASE_MIN_SIZE ((size_t)4 << 20)
/// Consumed input is handed back to the kernel in steps of this many bytes.
#define PNGSHIM_RELEASE_STEP ((size_t)1 << 20)

struct pngshim_reader {
    png_structp png;
    png_infop info;
    const unsigned char *data;
    size_t size;
    size_t offset;
    int release_consumed;  ///< the input is a read-only file mapping: drop pages once read
    size_t released;       ///< bytes from the start already handed back
    char message[PNGSHIM_MESSAGE_SIZE];
    int warning_count;
    char warnings[PNGSHIM_MAX_WARNINGS][PNGSHIM_MESSAGE_SIZE];
    int truncated;  ///< the data ended before libpng had read what it asked for
};

static void on_read_error(png_structp png, png_const_charp message) {
    pngshim_reader *reader = png_get_error_ptr(png);
    snprintf(reader->message, sizeof reader->message, "%s", message);
    png_longjmp(png, 1);
}

static void on_read_warning(png_structp png, png_const_charp message) {
    pngshim_reader *reader = png_get_error_ptr(png);
    if (reader->warning_count < PNGSHIM_MAX_WARNINGS) {
        snprintf(reader->warnings[reader->warning_count], PNGSHIM_MESSAGE_SIZE, "%s", message);
    }
    reader->warning_count += 1;
}

/// Whether [data, data + size) lies in one read-only mapping of a file, per /proc/self/maps.
/// Only there is MADV_DONTNEED harmless: the pages come back from the file if touched again.
/// Heap memory (anonymous) would be zeroed by it, so anything else says no.
static int is_readonly_file_mapping(const unsigned char *data, size_t size) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) return 0;
    uintptr_t first = (uintptr_t)data, last = first + size;
    char *line = NULL;
    size_t capacity = 0;
    int answer = 0;
    while (getline(&line, &capacity, maps) > 0) {
        unsigned long start, end, offset, inode;
        unsigned int major, minor;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &start, &end, perms, &offset, &major, &minor, &inode) != 7) {
            continue;
        }
        if (start <= first && first < end) {
            answer = last <= end && perms[0] == 'r' && perms[1] == '-' && inode != 0;
            break;
        }
    }
    free(line);
    fclose(maps);
    return answer;
}

/// Hands consumed whole pages of a file-mapped input back to the kernel, so a 25 MB PNG read
/// through a mapping does not stay resident after libpng has inflated it. The page cache
/// keeps the file; only this process's mapping of the read part is dropped.
static void release_consumed(pngshim_reader *reader) {
    if (reader->offset - reader->released < PNGSHIM_RELEASE_STEP) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)(reader->data + reader->released) + page - 1) & ~(page - 1);
    uintptr_t to = (uintptr_t)(reader->data + reader->offset) & ~(page - 1);
    if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
    reader->released = reader->offset;
}

static void read_from_memory(png_structp png, png_bytep out, size_t length) {
    pngshim_reader *reader = png_get_io_ptr(png);
    if (length > reader->size - reader->offset) {
        reader->truncated = 1;
        png_error(png, "the data ends early (truncated file)");
    }
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
    if (reader->release_consumed) release_consumed(reader);
}

pngshim_reader *pngshim_create(const unsigned char *data, size_t size) {
    pngshim_reader *reader = calloc(1, sizeof *reader);
    if (reader == NULL) return NULL;
    reader->data = data;
    reader->size = size;
    reader->release_consumed = size >= PNGSHIM_RELEASE_MIN_SIZE && is_readonly_file_mapping(data, size);
    reader->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, on_read_error, on_read_warning);
    if (reader->png != NULL) reader->info = png_create_info_struct(reader->png);
    if (reader->png == NULL || reader->info == NULL) {
        pngshim_destroy(reader);
        return NULL;
    }
    png_set_read_fn(reader->png, reader, read_from_memory);
    // libpng 1.6 reads a text, pCAL, sCAL or sPLT chunk by allocating and zeroing a buffer of
    // the length the chunk declares, before reading a byte of it: a 200-byte file claiming a
    // 2 GiB iTXt cost 2 GiB and seconds. Nothing here uses those chunks; skipped as unknown
    // ones, they are read through a small buffer (and a short file fails at once).
    static const png_byte unused_chunks[] = "tEXt\0zTXt\0iTXt\0pCAL\0sCAL\0sPLT\0";
    png_set_keep_unknown_chunks(reader->png, PNG_HANDLE_CHUNK_NEVER, unused_chunks, 6);
    return reader;
}

void pngshim_destroy(pngshim_reader *reader) {
    if (reader == NULL) return;
    if (reader->png != NULL) png_destroy_read_struct(&reader->png, reader->info ? &reader->info : NULL, NULL);
    free(reader);
}

int pngshim_read_info(pngshim_reader *reader, pngshim_info *info) {
    png_structp png = reader->png;
    if (setjmp(png_jmpbuf(png))) return PNGSHIM_ERROR;
    if (reader->size < 8 || png_sig_cmp(reader->data, 0, 8) != 0) {
        snprintf(reader->message, sizeof reader->message, "not a PNG signature");
        return PNGSHIM_ERROR;
    }
    png_read_info(png, reader->info);
    info->width = png_get_image_width(png, reader->info);
    info->height = png_get_image_height(png, reader->info);
    info->bit_depth = png_get_bit_depth(png, reader->info);
    info->color_type = png_get_color_type(png, reader->info);
    info->interlaced = png_get_interlace_type(png, reader->info) != PNG_INTERLACE_NONE;
    info->channels = png_get_channels(png, reader->info);
    info->has_alpha = (info->color_type & PNG_COLOR_MASK_ALPHA) != 0
        || png_get_valid(png, reader->info, PNG_INFO_tRNS) != 0;
    info->row_bytes = png_get_rowbytes(png, reader->info);
    return PNGSHIM_OK;
}

void pngshim_icc_profile(const pngshim_reader *reader, const unsigned char **data, size_t *size) {
    png_charp name = NULL;
    int compression = 0;
    png_bytep profile = NULL;
    png_uint_32 length = 0;
    *data = NULL;
    *size = 0;
    // png_get_iCCP only reads the info struct (no png_error, so no longjmp).
    if (png_get_iCCP(reader->png, reader->info, &name, &compression, &profile, &length) == PNG_INFO_iCCP
        && profile != NULL && length > 0) {
        *data = profile;
        *size = length;
    }
}

int pngshim_set_rgba8(pngshim_reader *reader, pngshim_info *info) {
    png_structp png = reader->png;
    if (setjmp(png_jmpbuf(png))) return PNGSHIM_ERROR;
    int color_type = info->color_type;
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && info->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, reader->info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (info->bit_depth == 16) png_set_scale_16(png);
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    if ((color_type & PNG_COLOR_MASK_ALPHA) == 0) png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, reader->info);
    info->row_bytes = png_get_rowbytes(png, reader->info);
    if (info->row_bytes != (size_t)info->width * 4 || png_get_bit_depth(png, reader->info) != 8) {
        snprintf(reader->message, sizeof reader->message, "unexpected row layout after transforms");
        return PNGSHIM_ERROR;
    }
    return PNGSHIM_OK;
}

int pngshim_read_rows(pngshim_reader *reader, unsigned char *rows, size_t stride, unsigned int count) {
    png_structp png = reader->png;
    if (setjmp(png_jmpbuf(png))) return PNGSHIM_ERROR;
    for (unsigned int i = 0; i < count; i++) png_read_row(png, rows + (size_t)i * stride, NULL);
    return PNGSHIM_OK;
}

int pngshim_read_image(pngshim_reader *reader, unsigned char *pixels, size_t stride) {
    png_structp png = reader->png;
    if (setjmp(png_jmpbuf(png))) return PNGSHIM_ERROR;
    unsigned int height = png_get_image_height(png, reader->info);
    int passes = png_get_interlace_type(png, reader->info) != PNG_INTERLACE_NONE ? 7 : 1;
    // With interlace handling on, each pass's rows are merged into the rows already there.
    for (int pass = 0; pass < passes; pass++) {
        for (unsigned int y = 0; y < height; y++) png_read_row(png, pixels + (size_t)y * stride, NULL);
    }
    return PNGSHIM_OK;
}

int pngshim_read_end(pngshim_reader *reader) {
    png_structp png = reader->png;
    if (setjmp(png_jmpbuf(png))) return PNGSHIM_ERROR;
    png_read_end(png, NULL);
    return PNGSHIM_OK;
}

const char *pngshim_message(const pngshim_reader *reader) { return reader->message; }

int pngshim_warning_count(const pngshim_reader *reader) { return reader->warning_count; }

int pngshim_truncated(const pngshim_reader *reader) { return reader->truncated; }

const char *pngshim_warning(const pngshim_reader *reader, int index) {
    if (index < 0 || index >= PNGSHIM_MAX_WARNINGS || index >= reader->warning_count) return "";
    return reader->warnings[index];
}

// MARK: - Encoding

typedef struct {
    unsigned char *bytes;
    size_t size;
    size_t capacity;
    char *message;
    size_t message_size;
} pngshim_sink;

static void on_write_error(png_structp png, png_const_charp message) {
    pngshim_sink *sink = png_get_error_ptr(png);
    snprintf(sink->message, sink->message_size, "%s", message);
    png_longjmp(png, 1);
}

static void on_write_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;  // the writer's warnings (none for RGBA8 input) are not actionable
}

static void write_to_memory(png_structp png, png_bytep data, size_t length) {
    pngshim_sink *sink = png_get_io_ptr(png);
    if (length > sink->capacity - sink->size) {
        size_t capacity = sink->capacity ? sink->capacity : 4096;
        while (length > capacity - sink->size) {
            if (capacity > ((size_t)-1) / 2) png_error(png, "output too large");
            capacity *= 2;
        }
        unsigned char *grown = realloc(sink->bytes, capacity);
        if (grown == NULL) png_error(png, "out of memory");
        sink->bytes = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->bytes + sink->size, data, length);
    sink->size += length;
}

static void flush_nothing(png_structp png) { (void)png; }

int pngshim_encode_rgba(const unsigned char *pixels, unsigned int width, unsigned int height, size_t stride,
                        int level, unsigned char **out, size_t *out_size, char *message, size_t message_size) {
    return pngshim_encode_rgba_interlaced(pixels, width, height, stride, level, 0, NULL, 0, out, out_size, message,
                                          message_size);
}

int pngshim_encode_rgba_interlaced(const unsigned char *pixels, unsigned int width, unsigned int height, size_t stride,
                                   int level, int interlaced, const unsigned char *icc, size_t icc_size,
                                   unsigned char **out, size_t *out_size, char *message, size_t message_size) {
    pngshim_sink sink = {NULL, 0, 0, message, message_size};
    *out = NULL;
    *out_size = 0;
    if (message_size > 0) message[0] = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_write_error, on_write_warning);
    if (png == NULL) return PNGSHIM_NO_MEMORY;
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_write_struct(&png, NULL);
        return PNGSHIM_NO_MEMORY;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(sink.bytes);
        return PNGSHIM_ERROR;
    }
    png_set_write_fn(png, &sink, write_to_memory, flush_nothing);
    png_set_compression_level(png, level < 0 ? 0 : (level > 9 ? 9 : level));
    if (interlaced & 2) png_set_filter(png, 0, PNG_FILTER_NONE);
    interlaced &= 1;
    // A picture with no transparent pixel is written as RGB: a quarter smaller, and readers
    // (and `imgpipe info`) then see that it has no alpha.
    int opaque = 1;
    for (unsigned int y = 0; y < height && opaque; y++) {
        const unsigned char *row = pixels + (size_t)y * stride;
        for (unsigned int x = 0; x < width; x++) {
            if (row[(size_t)x * 4 + 3] != 255) { opaque = 0; break; }
        }
    }
    png_set_IHDR(png, info, width, height, 8, opaque ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (icc != NULL && icc_size > 0) png_set_iCCP(png, info, "ICC Profile", PNG_COMPRESSION_TYPE_BASE, icc, (png_uint_32)icc_size);
    png_write_info(png, info);
    if (opaque) png_set_filler(png, 0, PNG_FILLER_AFTER);  // drop the alpha byte of each pixel
    // Adam7: libpng picks each pass's pixels out of whole rows, so every row goes in once a pass.
    int passes = interlaced ? png_set_interlace_handling(png) : 1;
    for (int pass = 0; pass < passes; pass++) {
        for (unsigned int y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * stride);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *out = sink.bytes;
    *out_size = sink.size;
    return PNGSHIM_OK;
}

void pngshim_free(void *buffer) { free(buffer); }
