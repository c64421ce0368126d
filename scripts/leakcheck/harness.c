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
/// The JPEG encoder's success paths (baseline, progressive, every subsampling, a flattened
/// straight-alpha picture, an output that outgrows its first buffer) and its error paths (an
/// empty picture, one over libjpeg's size limit, each after its scratch row exists).
static void jpeg_encoder(void) {
  enum { W = 300, H = 200 }; unsigned char *px = malloc((size_t)W * H * 4); unsigned int seed = 7;
  for (size_t i = 0; i < (size_t)W * H * 4; i++) { seed = seed * 1103515245u + 12345u; px[i] = (unsigned char)(seed >> 16); }
  for (int k = 0; k < 8; k++) {
    jpegshim_encode_options o = {0}; o.quality = 20 + k * 10; o.progressive = k & 1; o.subsampling = k % 3;
    o.optimize_coding = k != 2; o.straight_alpha = k > 4; o.background[0] = (unsigned char)(k == 4 ? 255 : 0);
    unsigned int w = k == 6 ? 0 : (k == 7 ? 70000 : W);
    unsigned char *out = NULL; size_t sz = 0; char msg[256];
    if (jpegshim_encode_rgba(px, w, H, (size_t)W * 4, &o, &out, &sz, msg, sizeof msg) == 0) jpegshim_free(out);
    else if (out != NULL) { fprintf(stderr, "jpeg encoder: output left on failure\n"); exit(3); }
  }
  unsigned char *out; size_t sz; char msg[256];
  if (pngshim_encode_rgba_interlaced(px, W, H, (size_t)W * 4, 1, 1, &out, &sz, msg, sizeof msg) == 0) pngshim_free(out);
  free(px); }
int main(int argc, char **argv) {
  jpeg_encoder();
  for (int i = 1; i < argc; i++) { size_t n; unsigned char *b = slurp(argv[i], &n); if (!b) continue;
    int isjpeg = n > 2 && b[0] == 0xFF;
    for (size_t cut = 0; cut <= n; cut += (n / 13) + 1) { if (isjpeg) jpeg(b, cut); else png(b, cut); }
    if (isjpeg) jpeg(b, n); else png(b, n);
    if (!isjpeg) { unsigned char *out; size_t sz; char msg[256]; unsigned char px[16*16*4] = {0}; if (pngshim_encode_rgba(px, 16, 16, 64, 6, &out, &sz, msg, sizeof msg) == 0) pngshim_free(out); }
    free(b); }
  return 0; }
