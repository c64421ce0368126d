#include <lcms2.h>

// lcms's pixel-format constants are macro expressions Swift does not import; these return them.

/// RGBA, 8 bits a channel, straight (alpha is an extra channel the transform copies).
static inline cmsUInt32Number clcms2_type_rgba_8(void) { return TYPE_RGBA_8; }
/// Gray read from the first byte of an RGBA8 pixel (the other three bytes skipped as extras).
static inline cmsUInt32Number clcms2_type_gray_in_rgba_8(void) {
    return COLORSPACE_SH(PT_GRAY) | CHANNELS_SH(1) | BYTES_SH(1) | EXTRA_SH(3);
}
/// CMYK, 8 bits a channel, 0 = no ink.
static inline cmsUInt32Number clcms2_type_cmyk_8(void) { return TYPE_CMYK_8; }
/// CMYK, 8 bits a channel, inverted (255 = no ink), as Adobe writes CMYK JPEGs.
static inline cmsUInt32Number clcms2_type_cmyk_8_rev(void) { return TYPE_CMYK_8_REV; }
/// Flags: keep the extra (alpha) channel, compensate black points.
static inline cmsUInt32Number clcms2_flag_copy_alpha(void) { return cmsFLAGS_COPY_ALPHA; }
static inline cmsUInt32Number clcms2_flag_black_point_compensation(void) { return cmsFLAGS_BLACKPOINTCOMPENSATION; }
