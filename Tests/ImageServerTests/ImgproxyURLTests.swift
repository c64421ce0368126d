import Foundation
import ImageServer
import PipelineCore
import Testing

/// The options of `/insecure/<options>/plain/https://example.com/a.jpg`.
func options(_ path: String, presets: Presets = Presets()) throws -> RenderOptions {
    let segments = path.isEmpty ? "" : "/" + path
    return try ImgproxyURL.parse("/insecure\(segments)/plain/https://example.com/a.jpg", signing: URLSigning(), presets: presets).options
}

/// The error parsing those options throws.
func refusal(_ path: String, presets: Presets = Presets()) -> ServerError? {
    #expect(throws: ServerError.self) { try options(path, presets: presets) }
}

@Suite struct ImgproxyURLGrammarTests {
    @Test func aPlainSourceIsPercentDecodedAndItsExtensionIsTheFormat() throws {
        let url = try ImgproxyURL.parse("/insecure/plain/https://example.com/a%20b%40c.jpg%3Fx%3D1@webp", signing: URLSigning(), presets: Presets())
        #expect(url.source == "https://example.com/a b@c.jpg?x=1")
        #expect(url.options.format == .webp)
        #expect(try ImgproxyURL.parse("/insecure/plain/local:///a.jpg", signing: URLSigning(), presets: Presets()).source == "local:///a.jpg")
    }

    @Test func aBase64SourceMayBeSplitIntoChunksAndCarryAnExtension() throws {
        let url = try ImgproxyURL.parse("/insecure/w:10/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.avif", signing: URLSigning(), presets: Presets())
        #expect(url.source == "http://example.com/images/curiosity.jpg")
        #expect(url.options.format == .avif && url.options.width == 10)
        // Padding some clients leave on is taken.
        let padded = try ImgproxyURL.parse("/insecure/aHR0cDovL2EuYi9j==", signing: URLSigning(), presets: Presets())
        #expect(padded.source == "http://a.b/c")
        #expect(padded.options == RenderOptions())
    }

    @Test(arguments: [
        ("jpg", ImageFormat.jpeg), ("jpeg", .jpeg), ("png", .png), ("webp", .webp), ("avif", .avif), ("gif", .gif),
        ("heic", .heif), ("jxl", ImageFormat("jxl", mimeType: "image/jxl", fileExtension: "jxl")),
    ])
    func formatsFromTheExtensionAndFormatOption(name: String, format: ImageFormat) throws {
        #expect(try options("f:\(name)").format == format)
        #expect(try options("format:\(name)").format == format)
        #expect(try options("ext:\(name)").format == format)
        #expect(try ImgproxyURL.parse("/x/plain/https://e.com/a.png@\(name)", signing: URLSigning(), presets: Presets()).options.format == format)
        #expect(try ImgproxyURL.parse("/x/f:png/aHR0cDovL2EuYi9j.\(name)", signing: URLSigning(), presets: Presets()).options.format == format)
        #expect(try options("f:\(name)").format?.mimeType == format.mimeType)
    }

    @Test(arguments: ["bmp", "tiff", "svg", "best", "mp4", "ico", "heif", "JPG2"])
    func otherFormatsAreRefused(name: String) {
        #expect(refusal("f:\(name)")?.kind == .badRequest)
        let error = #expect(throws: ServerError.self) { try ImgproxyURL.parse("/x/plain/https://e.com/a.png@\(name)", signing: URLSigning(), presets: Presets()) }
        #expect(error?.kind == .badRequest)
        #expect(error?.message.contains(name) == true)
    }

    @Test(arguments: [
        ("", "malformed path"), ("/", "malformed path"), ("insecure/plain/x", "malformed path"), ("/insecure", "malformed path"),
        ("//plain/https://e.com/a.jpg", "signature segment is empty"), ("/insecure/", "source URL is empty"),
        ("/insecure/w:10", "no source URL"), ("/insecure/plain/", "source URL is empty"), ("/insecure/plain", "not base64url"), ("/insecure/plain/@png", "source URL is empty"),
        ("/insecure/plain/https://e.com/a@b@png", "more than one format"), ("/insecure/aHR0cDovL2EuYi9j.png.webp", "more than one format"),
        ("/insecure/plain/https://e.com/%zz.jpg", "bad percent-encoding"), ("/insecure/a$b", "not base64url"),
        ("/insecure/_w8", "not base64url"), ("/insecure/enc/abcdef", "encrypted source URLs (/enc/) are not supported"),
        ("/insecure/fill/300/400/sm/0/aHR0cDovL2EuYi9j", "deprecated basic URL format"),
    ])
    func malformedPathsAre400(path: String, message: String) {
        let error = #expect(throws: ServerError.self) { try ImgproxyURL.parse(path, signing: URLSigning(), presets: Presets()) }
        #expect(error?.kind == .badRequest)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test func anExpiredURLIs404AndAFutureOneCarriesItsDate() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let error = #expect(throws: ServerError.self) {
            try ImgproxyURL.parse("/x/exp:1799999999/plain/https://e.com/a.jpg", signing: URLSigning(), presets: Presets(), now: now)
        }
        #expect(error?.kind == .notFound)
        let url = try ImgproxyURL.parse("/x/expires:1800000060/plain/https://e.com/a.jpg", signing: URLSigning(), presets: Presets(), now: now)
        #expect(url.options.expires == Date(timeIntervalSince1970: 1_800_000_060))
        #expect(try options("exp:0").expires == nil)
        #expect(refusal("exp:-5")?.message.contains("exp") == true)
        #expect(refusal("exp:soon")?.kind == .badRequest)
    }
}

@Suite struct ImgproxyURLOptionTests {
    @Test func resizeAndItsPartsReadAsImgproxysDo() throws {
        let all = try options("rs:fill-down:300:200:1:1:so:5:-6")
        #expect(all.resizingType == .fillDown && all.width == 300 && all.height == 200 && all.enlarge)
        #expect(all.extend == RenderOptions.Gravity(.bottom, offsetX: 5, offsetY: -6))
        #expect(try options("resize:fill:300:200") == options("rt:fill/w:300/h:200"))
        #expect(try options("rs:fill:300:200") == options("resizing_type:fill/width:300/height:200"))
        #expect(try options("s:300:200:t") == options("size:300:200/el:1"))
        #expect(try options("rs::300") == options("w:300"))  // an empty argument leaves its field alone
        #expect(try options("w:300/s::200").width == 300)
        #expect(try options("rs:force").resizingType == .force)
        #expect(try options("rt:auto").resizingType == .auto)
        #expect(try options("ex:1:fp:0.25:0.75").extend == RenderOptions.Gravity(.focalPoint(x: 0.25, y: 0.75)))
        #expect(try options("extend:1").extend == RenderOptions.Gravity())
        #expect(try options("ex:1/ex:0").extend == nil)
        #expect(try options("enlarge:true").enlarge && !options("el:1/el:False").enlarge)
    }

    @Test func gravityTypesAndOffsets() throws {
        let expected: [String: CropAnchor] = [
            "no": .top, "so": .bottom, "ea": .right, "we": .left, "noea": .topRight, "nowe": .topLeft,
            "soea": .bottomRight, "sowe": .bottomLeft, "ce": .center, "sm": .attention,
        ]
        for (name, anchor) in expected { #expect(try options("g:\(name)").gravity == RenderOptions.Gravity(anchor), "\(name)") }
        #expect(try options("gravity:nowe:10:20").gravity == RenderOptions.Gravity(.topLeft, offsetX: 10, offsetY: 20))
        #expect(try options("g:fp:0.3:0.6").gravity == RenderOptions.Gravity(.focalPoint(x: 0.3, y: 0.6)))
        // `sm` is strip_metadata as an option name and smart gravity as a value.
        let both = try options("sm:0/g:sm")
        #expect(!both.stripMetadata && both.gravity.anchor == .attention)
        #expect(try options("strip_metadata:1").stripMetadata)
        #expect(refusal("g:sm:1:2")?.message.contains("g") == true)
        #expect(refusal("g:fp:0.5")?.kind == .badRequest)
        #expect(refusal("g:fp:1.5:0.5")?.message.contains("1.5") == true)
        #expect(refusal("g:north")?.message.contains("north") == true)
        #expect(refusal("ex:1:sm")?.kind == .badRequest)  // an extension has no smart gravity
        #expect(refusal("g:no:1:2:3")?.kind == .badRequest)
        #expect(refusal("g:no:x")?.kind == .badRequest)
    }

    @Test func cropTrimPaddingAndBackground() throws {
        #expect(try options("c:100:50:sm").crop == RenderOptions.Crop(width: 100, height: 50, gravity: RenderOptions.Gravity(.attention)))
        #expect(try options("crop:0.5:0.5").crop == RenderOptions.Crop(width: 0.5, height: 0.5))
        #expect(try options("c:0:0").crop == nil)
        #expect(try options("t:10:ff0000:1:0").trim
                == RenderOptions.TrimOptions(threshold: 10, color: RGBAColor(red: 255, green: 0, blue: 0), equalHorizontal: true, equalVertical: false))
        #expect(try options("trim:10/t:").trim == nil)
        #expect(try options("pd:10").padding == RenderOptions.Padding(top: 10, right: 10, bottom: 10, left: 10))
        #expect(try options("pd:10:20").padding == RenderOptions.Padding(top: 10, right: 20, bottom: 10, left: 20))
        #expect(try options("pd:10:20:30").padding == RenderOptions.Padding(top: 10, right: 20, bottom: 30, left: 20))
        #expect(try options("padding:1:2:3:4").padding == RenderOptions.Padding(top: 1, right: 2, bottom: 3, left: 4))
        #expect(try options("pd:0").padding == nil)
        #expect(try options("bg:ff8000").background == RGBAColor(red: 255, green: 128, blue: 0))
        #expect(try options("background:255:128:0").background == RGBAColor(red: 255, green: 128, blue: 0))
        #expect(try options("bg:fff/bg:").background == nil)
        for bad in ["bg:white", "bg:ff80", "bg:256:0:0", "bg:1:2", "bg:#ffffff", "t:10:red", "t:-1", "pd:-1", "pd:1:2:3:4:5", "c:-5", "c:inf"] {
            #expect(refusal(bad)?.kind == .badRequest, "\(bad)")
        }
    }

    @Test func booleansAreGosParseBoolAndNothingElse() throws {
        for yes in ["1", "t", "T", "true", "TRUE", "True"] { #expect(try !options("ar:\(yes)/ar:0").autoRotate && options("ar:0/ar:\(yes)").autoRotate) }
        for no in ["0", "f", "F", "false", "FALSE", "False"] { #expect(try !options("auto_rotate:\(no)").autoRotate) }
        for bad in ["yes", "2", "", "on"] { #expect(refusal("el:\(bad)")?.message.contains("boolean") == true, "\(bad)") }
        #expect(try !options("scp:0").stripColorProfile && options("strip_color_profile:1").stripColorProfile)
        #expect(try options("att:1").returnAttachment && !options("return_attachment:0").returnAttachment)
    }

    /// imgproxy's `rotate|rot:%angle` (a multiple of 90, else refused as imgproxy does) and
    /// `flip|fl:%horizontal:%vertical`, folded into one turn after the EXIF orientation.
    @Test func rotateAndFlip() throws {
        #expect(try options("rot:90").rotate == 90 && options("rotate:180").rotate == 180)
        #expect(try options("rot:450").rotate == 90 && options("rot:-90").rotate == 270 && options("rot:-360").rotate == 0)
        #expect(try options("rot:90/rot:").rotate == 90, "an empty argument leaves it")
        #expect(try options("rot:90").transform == .right && options("rot:270").transform == .left)
        #expect(try options("fl:1").flipHorizontal && !options("fl:1").flipVertical)
        #expect(try options("flip::t").flipVertical && !options("flip::t").flipHorizontal)
        #expect(try options("fl:1:1").transform == .down && options("fl:1:0").transform == .upMirrored)
        // imgproxy's order: the rotation, then the flips.
        #expect(try options("rot:90/fl:1").transform == .leftMirrored && options("fl:0:1/rot:90").transform == .rightMirrored)
        #expect(refusal("rot:45")?.message == "invalid argument \"45\" to rot: the rotation angle must be a multiple of 90")
        #expect(refusal("rotate:1.5")?.message.contains("multiple of 90") == true)
        #expect(refusal("rot:99999999999999999999999")?.kind == .badRequest)
        #expect(refusal("rot:90:1")?.kind == .badRequest)
        #expect(refusal("fl:1:0:1")?.kind == .badRequest)
        #expect(refusal("fl:yes")?.message.contains("boolean") == true)
    }

    @Test func qualityBlurWatermarkAndLimits() throws {
        #expect(try options("q:80").quality == 80)
        #expect(try options("quality:80/q:0").quality == nil)
        #expect(try options("fq:webp:70:avif:50").formatQuality == [.webp: 70, .avif: 50])
        #expect(try options("format_quality:jpg:90/fq:jpeg:0").formatQuality.isEmpty)
        #expect(try options("bl:2.5").blur == 2.5 && options("blur:1").blur == 1)
        #expect(try options("sh:0.7").sharpen == 0.7 && options("sharpen:1").sharpen == 1 && options("sh:10").sharpen == 10)
        #expect(try options("sh:2/sharpen:0.5").sharpen == 0.5)
        #expect(try options("").sharpen == nil)
        #expect(try options("wm:0.5:soea:10:5:0.25").watermark
                == RenderOptions.Watermark(opacity: 0.5, position: RenderOptions.Gravity(.bottomRight, offsetX: 10, offsetY: 5), scale: 0.25))
        #expect(try options("watermark:1").watermark == RenderOptions.Watermark(opacity: 1))
        #expect(try options("wm:0").watermark == nil)
        #expect(try options("msr:12.5").maxSourceResolution == 12.5 && options("max_src_resolution:1").maxSourceResolution == 1)
        #expect(try options("maf:1").maxAnimationFrames == 1 && options("max_animation_frames:30").maxAnimationFrames == 30)
        #expect(try options("dpr:2").dpr == 2)
        #expect(try options("cb:v2").cacheBuster == "v2" && options("cachebuster:v2/cb:").cacheBuster == nil)
        #expect(try options("fn:my%20picture").filename == "my picture")
        #expect(try options("filename:bXkgcGljdHVyZQ:1").filename == "my picture")
        #expect(try options("fn:bXkgcGljdHVyZQ:0").filename == "bXkgcGljdHVyZQ")
    }

    /// imgproxy Pro's `adjust|a:%brightness:%contrast:%saturation` and its three single options:
    /// brightness an integer −255…255, contrast and saturation factors 0…10; an empty argument of
    /// `adjust` leaves its field, and a later option overrides an earlier one.
    @Test func colourAdjustments() throws {
        #expect(try options("br:-40").brightness == -40 && options("brightness:255").brightness == 255)
        #expect(try options("co:1.5").contrast == 1.5 && options("contrast:0").contrast == 0)
        #expect(try options("sa:0.25").saturation == 0.25 && options("saturation:10").saturation == 10)
        let adjusted = try options("a:20:1.2:0.8")
        #expect(adjusted.brightness == 20 && adjusted.contrast == 1.2 && adjusted.saturation == 0.8)
        let partly = try options("sa:3/adjust:-5::")
        #expect(partly.brightness == -5 && partly.contrast == 1 && partly.saturation == 3)
        let overridden = try options("a:10:2:2/co:1/br:0")
        #expect(overridden.brightness == 0 && overridden.contrast == 1 && overridden.saturation == 2)
        #expect(try options("a:0:1:1").canonical == "")
        #expect(try options("a:7:1.5:0.5").canonical == options("sa:0.5/br:7/contrast:1.5").canonical)
    }

    @Test(arguments: [
        ("w:-1", "w"), ("h:16385", "h"), ("width:abc", "abc"), ("w:99999999999999999999999", "w"),
        ("w:10000/dpr:2", "dpr"), ("dpr:2/h:9000", "dpr"), ("dpr:0", "dpr"), ("dpr:8.5", "dpr"), ("dpr:-1", "dpr"), ("dpr:nan", "nan"),
        ("q:101", "q"), ("quality:-1", "quality"), ("q:8.5", "8.5"), ("fq:webp", "fq"), ("fq:bmp:50", "bmp"), ("fq:webp:200", "200"),
        ("bl:0", "bl"), ("blur:-2", "blur"), ("bl:1e9", "bl"), ("bl:inf", "inf"),
        ("sh:0", "sh"), ("sharpen:-1", "sharpen"), ("sh:10.5", "a sigma in (0, 10]"), ("sh:100", "a sigma in (0, 10]"), ("sh:nan", "nan"), ("sh:1:2", "sh"), ("sh:x", "sh"),
        ("pd:10000/dpr:2", "padding"), ("g:no:20000:0", "gravity offset"),
        ("wm:2", "wm"), ("wm:0.5:sm", "sm"), ("wm:0.5:re", "replicate"), ("wm:0.5:ce:0:0:2", "scale"), ("wm:0.5:ce:0:0:0.5:1", "wm"),
        ("msr:0", "msr"), ("maf:0", "maf"), ("maf:x", "maf"), ("rt:cover", "cover"), ("rs:fit:1:2:0:0:ce:0:0:9", "rs"),
        ("fn:%zz", "fn"), ("fn:bad%0Aname", "fn"), ("fn:%%%:1", "fn"), ("cb:a:b", "cb"), ("w:1:2", "w"),
        ("ex:maybe", "ex"), ("s:1:2:3", "s"),
        ("br:256", "br"), ("brightness:-256", "brightness"), ("br:1.5", "1.5"), ("br:1:2", "br"), ("co:-0.5", "co"), ("co:10.5", "co"),
        ("contrast:nan", "nan"), ("sa:inf", "inf"), ("saturation:x", "saturation"), ("a:300", "a"), ("adjust:0:0:11", "adjust"),
        ("a:0:1:1:1", "a"), ("a::-1", "a"),
    ])
    func malformedOrOutOfRangeArgumentsAre400NamingThem(path: String, named: String) {
        let error = refusal(path)
        #expect(error?.kind == .badRequest)
        #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
    }

    @Test(arguments: [
        "pixelate:4", "pix:4", "unsharp_masking:auto", "ush:auto",
        "min-width:10", "mw:10", "min-height:10", "mh:10", "zoom:2", "z:2", "raw:1", "skp:png", "max_bytes:10", "kcr:1",
    ])
    func unbuiltOptionsAreRefusedByName(path: String) {
        let name = String(path.prefix { $0 != ":" })
        let error = refusal(path)
        #expect(error?.kind == .badRequest)
        #expect(error?.message == "option \(name) is not supported by this server")
    }

    @Test func unknownOptionsAreRefusedEscaped() {
        #expect(refusal("bogus:1")?.message == "unknown option \"bogus\"")
        #expect(refusal(":1")?.message == "unknown option \"\"")
        let error = refusal("x%1B\u{1B}]0;title\u{07}:1")
        #expect(error?.message.contains("\u{1B}") == false)
        #expect(error?.message.contains("\\u{1B}") == true)
        let long = refusal(String(repeating: "y", count: 5_000) + ":1")
        #expect((long?.message.count ?? .max) < 120)
    }

    @Test func argumentsInMessagesAreEscapedAndBounded() {
        let error = refusal("w:\u{1B}[31m" + String(repeating: "9", count: 3_000))
        #expect(error?.message.contains("\u{1B}") == false)
        #expect((error?.message.count ?? .max) < 160)
    }
}
