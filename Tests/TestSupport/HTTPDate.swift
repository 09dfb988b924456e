import Foundation

/// `date` as an HTTP date in its preferred format (IMF-fixdate, RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`), as
/// a server writes `Date` and `Retry-After`.
public func httpDate(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.string(from: date)
}
