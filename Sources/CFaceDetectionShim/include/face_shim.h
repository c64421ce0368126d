#ifndef CFACEDETECTIONSHIM_H
#define CFACEDETECTIONSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a call returns: 0 on success, else one of these.
enum {
    FACESHIM_OK = 0,
    /// The cascade file could not be read or is not a cascade.
    FACESHIM_BAD_CASCADE = 1,
    /// A pointer was null, or a size or stride impossible.
    FACESHIM_BAD_ARGUMENT = 2,
    /// An allocation failed.
    FACESHIM_NO_MEMORY = 3,
    /// OpenCV threw (its message is in the caller's buffer).
    FACESHIM_OPENCV_ERROR = 4,
};

/// One cascade classifier. Not safe for two threads at once: its caller gives each thread its own.
typedef struct faceshim_detector faceshim_detector;

/// A detected box, in the pixels of the picture searched.
typedef struct {
    int32_t x, y, width, height;
} faceshim_box;

/// Loads the OpenCV cascade at `path` (XML) into `*detector` (NULL on failure). On failure,
/// `message` (of `capacity` bytes, may be NULL) holds a NUL-terminated reason. OpenCV's own
/// logging is silenced the first time.
int faceshim_detector_create(const char *path, faceshim_detector **detector, char *message, size_t capacity);

/// Frees a detector (NULL is ignored).
void faceshim_detector_free(faceshim_detector *detector);

/// Runs `detectMultiScale` over an 8-bit grey picture (histogram-equalised first) of `width` × `height` whose rows are
/// `stride` bytes apart, with `scale_factor` (> 1) between search scales, `min_neighbors`
/// overlapping hits for a box to count, and boxes no smaller than `min_size` pixels square.
/// On success `*boxes` (free with `faceshim_boxes_free`; NULL when none) holds `*count` boxes.
/// Every C++ exception is caught: the result is then an error code and `message` says why.
int faceshim_detect(faceshim_detector *detector, const uint8_t *grey, int32_t width, int32_t height, size_t stride,
                    double scale_factor, int32_t min_neighbors, int32_t min_size, faceshim_box **boxes, size_t *count,
                    char *message, size_t capacity);

/// Frees boxes from `faceshim_detect` (NULL is ignored).
void faceshim_boxes_free(faceshim_box *boxes);

#ifdef __cplusplus
}
#endif

#endif
