// imgpipe: command-line front end to the image pipeline.
//
//   imgpipe thumb SOURCE --size N --out FILE.png|FILE.pam
//
// Errors print `imgpipe: <message>` on stderr and exit 1; usage errors exit 2.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    let invocation = try Invocation.parse(arguments, commands: Command.all)
    try await invocation.command.run(invocation)
} catch let error as UsageError {
    FileHandle.standardError.write(Data("imgpipe: \(error.message)\n\n\(Command.usage)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("imgpipe: \(error)\n".utf8))
    exit(1)
}
