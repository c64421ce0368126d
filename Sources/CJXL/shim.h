// libjxl 0.7 (Debian 12: libjxl-dev 0.7.0): the decoder, the encoder and the thread runner.
// The headers are in /usr/include/jxl, on the default search path.
#include <jxl/decode.h>
#include <jxl/encode.h>
#include <jxl/thread_parallel_runner.h>
