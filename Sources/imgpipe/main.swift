// imgpipe: the command-line front end to the image pipeline.
//
//   imgpipe info SOURCE... [--json]
//   imgpipe thumb SOURCE (-s|--size N|WxH|Wx|xH | --fill WxH) (-o|--out) FILE
//   imgpipe thumb SOURCE... (--size N | --fill WxH) --out-dir DIR [--format jpg|png|webp|avif|heic|gif|jxl|pam]
//   imgpipe decode SOURCE --out FILE
//   imgpipe convert SOURCE (OUT | --out FILE) [--quality Q] [--lossless] [--progressive]
//     (FILE's extension picks the format: .jpg/.jpeg, .png, .webp, .avif, .heic, .gif, .jxl, .pam)
//   imgpipe frames SOURCE --out-dir DIR [--size N] [--format pam|png]
//   imgpipe sheet [SOURCE...] [--size N] [--columns C] --out FILE.png
//   imgpipe fetch SOURCE...
//   imgpipe demo STEP... --origin URL --state DIR [--out FILE.png]   (driven by ./scripts/demo)
//   imgpipe --version
//
// Exit status: 0 on success, 1 on an error (one line `imgpipe: <message>` on stderr per
// failure), 2 on a usage error.
import ImagePipelineKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The SVG worker (`Environment.decoders`): one document on stdin, before anything else runs.
if CommandLine.arguments.count == 2, CommandLine.arguments[1] == SVGWorker.imgpipeCommand { exit(SVGWorker.serve()) }
signal(SIGPIPE, SIG_IGN)  // a closed pipe is a write error, not a death by signal
MallocPolicy.apply()  // large codec buffers go back to the system when freed
_ = Console.standardError  // imgpipe's own stderr, duplicated before any decode can point fd 2 elsewhere
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.isEmpty || arguments == ["--help"] || arguments == ["-h"] || arguments == ["help"] {
    print(Command.overview)
    exit(arguments.isEmpty ? 2 : 0)
}
if arguments == ["--version"] || arguments == ["version"] {
    print(Command.version)
    exit(0)
}
do {
    let invocation = try Invocation.parse(arguments, commands: Command.all)
    if invocation.wantsHelp {
        print(invocation.command.help)
        exit(0)
    }
    exit(try await invocation.command.run(invocation))
} catch let error as UsageError {
    printError("imgpipe: \(error.message)")
    exit(2)
} catch {
    printError("imgpipe: \(Console.oneLine("\(error)"))")
    exit(1)
}
