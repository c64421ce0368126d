// Drives the codec C shims (Sources/CJPEGShim, Sources/CPNGShim) over corrupt, truncated and
// valid files, so that valgrind can check that every error path (each a longjmp inside C)
// frees everything. Run by scripts/leakcheck-shims; not part of the Swift package.
#include <stdio.h>
#include <stdlib.h>
#include "jpeg_shim.h"
#include "png_shim.h"
static unsigned char *slurp(const char *p, size_t *n) { FILE *f = fopen(p, "rb"); if (!f) return NULL; fseek(f, 0, SEEK_END); *n = ftell(f); rewind(f); unsigned char *b = malloc(*n + 1); fread(b, 1, *n, f); fclose(f); return b; }
static void jpeg(const unsigned char *d, size_t n) {
  jpegshim_decoder *j = jpegshim_create(d, n); if (!j) return; jpegshim_info info;
  if (jpegshim_read_header(j, &info) == 0 && (long)info.width * info.height < 50000000) { int w, h, rows;
    if (jpegshim_start(j, 2, &w, &h) == 0) { unsigned char *px = malloc((size_t)w * h * 4); jpegshim_read_rgba(j, px, (size_t)w * 4, &rows); jpegshim_finish(j); free(px); } }
  jpegshim_destroy(j); }
static void png(const unsigned char *d, size_t n) {
  pngshim_reader *r = pngshim_create(d, n); if (!r) return; pngshim_info info;
  if (pngshim_read_info(r, &info) == 0 && (long)info.width * info.height < 50000000 && pngshim_set_rgba8(r, &info) == 0) {
    unsigned char *px = malloc((size_t)info.width * info.height * 4); if (pngshim_read_image(r, px, info.width * 4) == 0) pngshim_read_end(r); free(px); }
  pngshim_destroy(r); }
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) { size_t n; unsigned char *b = slurp(argv[i], &n); if (!b) continue;
    int isjpeg = n > 2 && b[0] == 0xFF;
    for (size_t cut = 0; cut <= n; cut += (n / 13) + 1) { if (isjpeg) jpeg(b, cut); else png(b, cut); }
    if (isjpeg) jpeg(b, n); else png(b, n);
    if (!isjpeg) { unsigned char *out; size_t sz; char msg[256]; unsigned char px[16*16*4] = {0}; if (pngshim_encode_rgba(px, 16, 16, 64, 6, &out, &sz, msg, sizeof msg) == 0) pngshim_free(out); }
    free(b); }
  return 0; }
