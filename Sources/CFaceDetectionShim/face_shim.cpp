// The C face of OpenCV's cascade classifier for Swift: every C++ exception stops here and
// becomes an error code, and every allocation is freed on every path (RAII inside, a plain
// free() for what crosses the boundary).
#include "face_shim.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "opencv2/core.hpp"
#include "opencv2/core/utils/logger.hpp"
#include "opencv2/imgproc.hpp"
#include "opencv2/objdetect.hpp"

struct faceshim_detector {
    cv::CascadeClassifier classifier;
};

namespace {

void say(char *message, size_t capacity, const char *text) {
    if (message == nullptr || capacity == 0) return;
    std::strncpy(message, text, capacity - 1);
    message[capacity - 1] = '\0';
}

// OpenCV logs warnings (a TBB or plugin note, say) to stderr: a library's caller owns stderr.
void silenceOpenCV() {
    static std::once_flag once;
    std::call_once(once, [] { cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT); });
}

// Runs `body` (which returns a code), turning every C++ exception into a code and a message:
// none may cross into Swift. `failure` is the code of an exception other than bad_alloc.
template <typename Body> int guarded(char *message, size_t capacity, int failure, Body body) {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        say(message, capacity, "out of memory");
        return FACESHIM_NO_MEMORY;
    } catch (const std::exception &error) {
        say(message, capacity, error.what());
        return failure;
    } catch (...) {
        say(message, capacity, "unknown exception");
        return failure;
    }
}

}  // namespace

extern "C" int faceshim_detector_create(const char *path, faceshim_detector **detector, char *message, size_t capacity) {
    if (detector == nullptr) return FACESHIM_BAD_ARGUMENT;
    *detector = nullptr;
    if (path == nullptr) return FACESHIM_BAD_ARGUMENT;
    return guarded(message, capacity, FACESHIM_BAD_CASCADE, [&] {
        silenceOpenCV();
        std::unique_ptr<faceshim_detector> made(new faceshim_detector());
        if (!made->classifier.load(path) || made->classifier.empty()) {
            say(message, capacity, "not an OpenCV cascade");
            return FACESHIM_BAD_CASCADE;
        }
        *detector = made.release();
        return FACESHIM_OK;
    });
}

extern "C" void faceshim_detector_free(faceshim_detector *detector) { delete detector; }

extern "C" int faceshim_detect(faceshim_detector *detector, const uint8_t *grey, int32_t width, int32_t height, size_t stride,
                               double scale_factor, int32_t min_neighbors, int32_t min_size, faceshim_box **boxes,
                               size_t *count, char *message, size_t capacity) {
    if (boxes == nullptr || count == nullptr) return FACESHIM_BAD_ARGUMENT;
    *boxes = nullptr;
    *count = 0;
    if (detector == nullptr || grey == nullptr || width <= 0 || height <= 0 || stride < static_cast<size_t>(width)
        || !(scale_factor > 1) || min_neighbors < 0 || min_size < 0) {
        say(message, capacity, "bad argument");
        return FACESHIM_BAD_ARGUMENT;
    }
    return guarded(message, capacity, FACESHIM_OPENCV_ERROR, [&] {
        // A header over the caller's pixels: OpenCV reads them, never writes or keeps them.
        const cv::Mat picture(height, width, CV_8UC1, const_cast<uint8_t *>(grey), stride);
        // Histogram-equalised first, as OpenCV's facedetect sample does: a dim or
        // washed-out face then has the contrast the cascade was trained on.
        cv::Mat equalised;
        cv::equalizeHist(picture, equalised);
        std::vector<cv::Rect> found;
        detector->classifier.detectMultiScale(equalised, found, scale_factor, min_neighbors, 0, cv::Size(min_size, min_size));
        if (found.empty()) return FACESHIM_OK;
        auto *out = static_cast<faceshim_box *>(std::malloc(found.size() * sizeof(faceshim_box)));
        if (out == nullptr) {
            say(message, capacity, "out of memory");
            return FACESHIM_NO_MEMORY;
        }
        for (size_t i = 0; i < found.size(); i++) out[i] = {found[i].x, found[i].y, found[i].width, found[i].height};
        *boxes = out;
        *count = found.size();
        return FACESHIM_OK;
    });
}

extern "C" void faceshim_boxes_free(faceshim_box *boxes) { std::free(boxes); }
