// svg-worker: the process SVGDecoder parses and draws one untrusted SVG document in
// (`SVGDecoder(isolation: .worker(SVGWorker(executable: path-to-this)))`). It speaks only the
// decoder's protocol on stdin and stdout; see SVGWorker.
import CodecSVG

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

exit(SVGWorker.serve())
