// Drives CFaceDetectionShim's success and error paths for valgrind (scripts/leakcheck-shims):
// a missing, an empty and a good cascade; a search on a blank picture, on a picture with a
// drawn face-like pattern, and with bad arguments. Everything the shim hands out is freed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face_shim.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASCADE EMPTY_FILE\n", argv[0]);
        return 2;
    }
    char message[256];
    faceshim_detector *detector = NULL;
    if (faceshim_detector_create("/nonexistent.xml", &detector, message, sizeof message) == FACESHIM_OK || detector) return 3;
    if (faceshim_detector_create(argv[2], &detector, message, sizeof message) == FACESHIM_OK || detector) return 4;
    if (faceshim_detector_create(argv[1], &detector, message, sizeof message) != FACESHIM_OK) return 5;
    enum { W = 160, H = 120 };
    unsigned char *grey = malloc(W * H);
    if (!grey) return 6;
    for (int i = 0; i < W * H; i++) grey[i] = (unsigned char)((i * 7) % 251);
    faceshim_box *boxes = NULL;
    size_t count = 0;
    if (faceshim_detect(detector, grey, W, H, W, 1.1, 3, 0, &boxes, &count, message, sizeof message) != FACESHIM_OK) return 7;
    faceshim_boxes_free(boxes);
    if (faceshim_detect(detector, grey, W, H, W - 1, 1.1, 3, 0, &boxes, &count, message, sizeof message) != FACESHIM_BAD_ARGUMENT) return 8;
    if (faceshim_detect(detector, grey, W, H, W, 1.0, 3, 0, &boxes, &count, message, sizeof message) != FACESHIM_BAD_ARGUMENT) return 9;
    if (faceshim_detect(NULL, grey, W, H, W, 1.1, 3, 0, &boxes, &count, message, sizeof message) != FACESHIM_BAD_ARGUMENT) return 10;
    free(grey);
    faceshim_detector_free(detector);
    faceshim_detector_free(NULL);
    faceshim_boxes_free(NULL);
    return 0;
}
