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

/// `error.localizedDescription` as full Foundation (swift-corelibs-foundation) writes it, for a
/// module that links only FoundationEssentials (which has no `localizedDescription`): a
/// `LocalizedError`'s description, else "The operation could not be completed. " and the
/// reason (a `CocoaError`'s, a `POSIXError`'s `strerror`), else the error's domain and code.
/// PortableTextTests checks it against Foundation's.
package func localizedDescription(of error: any Error) -> String {
    let prefix = "The operation could not be completed."
    if let error = error as? any LocalizedError {
        if let description = error.errorDescription { return description }
        if let reason = error.failureReason { return "\(prefix) \(reason)" }
    }
    // Without full Foundation, CocoaError and POSIXError have no NSError domain of their own.
    if let error = error as? CocoaError {
        if let description = error.userInfo["NSLocalizedDescription"] as? String { return description }
        let code = error.code.rawValue
        let reason = error.userInfo["NSLocalizedFailureReason"] as? String ?? cocoaErrorReasons[code]
        return "\(prefix) \(reason ?? "(NSCocoaErrorDomain error \(code).)")"
    }
    if let error = error as? POSIXError {
        return "\(prefix) \(String(cString: strerror(error.code.rawValue)))"
    }
    return "\(prefix) (\(error._domain) error \(error._code).)"
}

/// swift-corelibs-foundation's failure reasons of `CocoaError` codes (the others have none).
private let cocoaErrorReasons: [Int: String] = [
    4: "The file doesn’t exist.", 255: "The file couldn’t be locked.", 257: "You don’t have permission.",
    258: "The file name is invalid.", 259: "The file isn’t in the correct format.", 260: "The file doesn’t exist.",
    261: "The specified text encoding isn’t applicable.", 262: "The specified URL type isn’t supported.",
    263: "The item is too large.", 264: "The text encoding of the contents couldn’t be determined.",
    513: "You don’t have permission.", 514: "The file name is invalid.", 516: "A file with the same name already exists.",
    517: "The specified text encoding isn’t applicable.", 518: "The specified URL type isn’t supported.",
    640: "There isn’t enough space.", 642: "The volume is read only.", 1024: "The value is invalid.", 2048: "The value is invalid.",
    3072: "The operation was cancelled.", 3328: "The requested operation is not supported.",
    3840: "The data is not in the correct format.", 3841: "The data is in a format that this application doesn’t understand.",
    3842: "An error occurred in the source of the data.", 3851: "An error occurred in the destination for the data.",
    3852: "An error occurred in the content of the data.", 4353: "The file is not available on iCloud yet.",
    4354: "There isn’t enough space in your account.",
    4355: "The iCloud servers might be unreachable or your settings might be incorrect.",
    4864: "The data isn’t in the correct format.", 4865: "The data is missing.", 4866: "The data isn’t in the correct format.",
]
