import CLCMS2
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Colour management for the codecs: embedded ICC profiles read by lcms2 and converted to sRGB.
///
/// Each codec module reads its format's profile (JPEG `APP2 ICC_PROFILE`, PNG `iCCP`, WebP
/// `ICCP`, HEIF `colr`), gets a ``ColorProfile`` from ``profile(iccData:)`` (cached by the
/// profile's bytes, so one camera's profile is opened once), reports it in
/// `ImageInfo.colorProfile` and converts the decoded, already downscaled rows with
/// ``PipelineCore/DecodedImage/applyColorProfile(_:options:pictureIsGray:)``. PipelineCore itself never links lcms2.
public enum ColorManagement {
    /// How many profiles the cache keeps (least recently used dropped first).
    public static let cacheCapacity = 32
    /// How many bytes of profile data the cache keeps at most; a larger profile is used once
    /// and not cached (a hostile file's 16 MB profile does not stay in memory).
    public static let cacheByteLimit = 4 << 20

    private static let cache = Mutex(ProfileCache())

    /// The profile for `iccData`, from the cache or read now (outside the lock: two threads
    /// meeting a new profile at once may both read it; one copy is kept). lcms's error handler
    /// is replaced before the first profile is read, so lcms never prints.
    public static func profile(iccData: Data) -> ColorProfile {
        silenceGlobalHandler
        if let hit = cache.withLock({ $0.lookup(iccData) }) { return hit }
        let made = ColorProfile(bytes: iccData)
        guard iccData.count <= cacheByteLimit else { return made }
        return cache.withLock { $0.insert(iccData, made, capacity: cacheCapacity, byteLimit: cacheByteLimit) }
    }

    /// The profile for `iccData`, refused when it is over `limits`: its size first, then its
    /// lookup tables (read from the tables' headers, before any transform is built). Codecs call
    /// this one; a refusal is `ImagePipelineError.overLimit(_:limit:actual:)`.
    public static func profile(iccData: Data, limits: ColorProfileLimits) throws(ImagePipelineError) -> ColorProfile {
        try limits.check(byteCount: iccData.count)
        let entries = ICCLookupTables.entryCount(iccData)
        guard entries <= limits.maxTableEntries else {
            throw .overLimit(.colorProfileTableEntries, limit: limits.maxTableEntries, actual: entries)
        }
        return profile(iccData: iccData)
    }

    /// How many profiles are cached now (for tests).
    public static var cachedProfileCount: Int { cache.withLock { $0.count } }

    /// Runs once: lcms's global (context-less) error handler discards messages.
    private static let silenceGlobalHandler: Void = {
        cmsSetLogErrorHandler { _, _, _ in }
    }()
}

/// A small LRU keyed by profile bytes (hashed by `Data`, compared whole), bounded in entries
/// and in bytes.
struct ProfileCache: ~Copyable {
    private var entries: [Data: (profile: ColorProfile, tick: UInt64)] = [:]
    private var clock: UInt64 = 0
    private var bytes = 0

    var count: Int { entries.count }

    mutating func lookup(_ key: Data) -> ColorProfile? {
        guard let entry = entries[key] else { return nil }
        clock += 1
        entries[key] = (entry.profile, clock)
        return entry.profile
    }

    mutating func insert(_ key: Data, _ profile: ColorProfile, capacity: Int, byteLimit: Int) -> ColorProfile {
        clock += 1
        if let existing = entries[key] {
            entries[key] = (existing.profile, clock)
            return existing.profile
        }
        while !entries.isEmpty, entries.count >= capacity || bytes + key.count > byteLimit,
              let oldest = entries.min(by: { $0.value.tick < $1.value.tick }) {
            entries[oldest.key] = nil
            bytes -= oldest.key.count
        }
        entries[key] = (profile, clock)
        bytes += key.count
        return profile
    }
}

extension DecodedImage {
    /// Converts the pixels to sRGB through `profile` unless `options.convertsToSRGB` is off.
    /// `nil` (no embedded profile) does nothing.
    ///
    /// A damaged profile (lcms cannot read it or build its transform), a gray profile on a colour picture or a CMYK
    /// profile on RGB pixels (CMYK JPEGs use ``ColorProfile/convertCMYKToSRGB(_:inverted:)``
    /// instead) leaves the pixels as stored and adds a warning, so strict decoding fails on it.
    /// A valid profile this module does not apply (Lab, device link) leaves them as stored
    /// silently; its reason is in `ColorProfileInfo.problem`.
    ///
    /// Without conversion (`DecodeOptions.convertsToSRGB` `false`), an RGB profile that is not
    /// damaged becomes `iccProfile`, so an encoder can embed it and keep the colours.
    public mutating func applyColorProfile(_ profile: ColorProfile?, options: DecodeOptions, pictureIsGray: Bool) {
        guard let profile else { return }
        guard options.convertsToSRGB else {
            if profile.describesRGBPixels && !pictureIsGray { iccProfile = profile.iccData }
            return
        }
        if let problem = profile.info.problem {
            if profile.isDamaged { issues.append(.warning("the embedded ICC profile is ignored: \(problem)")) }
            return
        }
        if profile.isCMYKSpace {
            issues.append(.warning("the embedded ICC profile is ignored: a CMYK profile on an RGB picture"))
            return
        }
        if profile.isGray && !pictureIsGray {
            issues.append(.warning("the embedded ICC profile is ignored: a gray profile on a colour picture"))
            return
        }
        guard profile.isApplicable else {
            // The transform failed to build: its problem is known now.
            info.colorProfile = profile.info
            issues.append(.warning("the embedded ICC profile is ignored: \(profile.info.problem ?? "lcms2 cannot use it")"))
            return
        }
        profile.convertToSRGB(&bitmap, hasAlpha: info.hasAlpha)
    }
}
