#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Parses and formats HTTP dates (RFC 9110 §5.6.7): IMF-fixdate, RFC 850 and asctime forms.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date in `string`, or `nil` when it is none of the three forms.
    public static func parse(_ string: String) -> Date? {
        if let date = parseIMFFixdate(string) { return date }
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        for token in string.lowercased().split(whereSeparator: { $0 == " " || $0 == "," }) {
            if token.contains(":") {
                let parts = token.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                time = parts
            } else if token.contains("-") {  // RFC 850: 06-nov-94
                let parts = token.split(separator: "-")
                guard parts.count == 3, let d = Int(parts[0]), let m = months.firstIndex(of: String(parts[1])),
                      let y = Int(parts[2]) else { return nil }
                day = d
                month = m + 1
                year = parts[2].count == 2 ? (y < 70 ? 2000 + y : 1900 + y) : y
            } else if let m = months.firstIndex(of: String(token)) {
                month = m + 1
            } else if let number = Int(token) {
                if token.count == 4 { year = number } else { day = number }
            }
        }
        guard let day, let month, let year, let time else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    /// The common case, `"Sun, 06 Nov 1994 08:49:37 GMT"`, read straight from the bytes: every
    /// response carries two or three dates, and the general parser's string splitting is slow.
    private static func parseIMFFixdate(_ string: String) -> Date? {
        var string = string
        return string.withUTF8 { b -> Date? in
            guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20,
                  b[16] == 0x20, b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20 else { return nil }
            func number(_ range: Range<Int>) -> Int? {
                var value = 0
                for index in range {
                    guard (0x30...0x39).contains(b[index]) else { return nil }
                    value = value * 10 + Int(b[index] - 0x30)
                }
                return value
            }
            let monthName = String(decoding: UnsafeBufferPointer(rebasing: b[8..<11]), as: UTF8.self).lowercased()
            guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
                  let minute = number(20..<22), let second = number(23..<25),
                  let month = months.firstIndex(of: monthName) else { return nil }
            return date(year: year, month: month + 1, day: day, time: [hour, minute, second])
        }
    }

    /// The instant of a UTC calendar date and time, or `nil` when a field is out of range.
    private static func date(year: Int, month: Int, day: Int, time: [Int]) -> Date? {
        guard (1...12).contains(month), (1...31).contains(day), time.count == 3,
              time[0] < 24, time[1] < 60, time[2] < 61 else { return nil }
        // Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's
        // days_from_civil): plain arithmetic, as a Calendar costs microseconds per call.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]))
    }

    /// `date` as an IMF-fixdate: `"Sun, 06 Nov 1994 08:49:37 GMT"`.
    ///
    /// Plain arithmetic (Hinnant's civil_from_days), not a `Calendar`: a Calendar loads ICU's
    /// calendar and time-zone data, several MiB of resident memory for a process that only
    /// needs one file's modification date (every `FileDataLoader` load formats one).
    public static func format(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (index 4, Sunday 0)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let monthName = months[month - 1].prefix(1).uppercased() + months[month - 1].dropFirst()
        return "\(weekdays[weekday]), \(two(day)) \(monthName) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs (HTTP's optional whitespace).
    /// Works on the UTF-8 bytes: much cheaper than Foundation's `trimmingCharacters(in:)`.
    func trimmingHTTPWhitespace() -> String {
        let utf8 = self.utf8
        guard let first = utf8.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = utf8.lastIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        if first == utf8.startIndex && last == utf8.index(before: utf8.endIndex) { return self }
        return String(self[first...last])
    }
}
