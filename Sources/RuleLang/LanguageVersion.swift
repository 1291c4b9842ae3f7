/// This library's version (semantic versioning): what `rulec --version` prints, the README's
/// dependency line asks for and the CHANGELOG's newest heading names (a test holds them to it).
/// Not the language's version (``LanguageVersion``), which a rules file declares.
public enum RulesLibrary {
    /// `MAJOR.MINOR.PATCH`.
    public static let version = "3.0.0"
}

/// A version of the rules language: `MAJOR.MINOR`.
///
/// A file declares the version it needs on its first line, as a comment so that a library
/// older than the declaration itself still reads a file that uses nothing newer:
/// `# language 1.1`. A file without one is language 1.0. A library refuses a file that needs
/// a newer version than it reads, with one error naming both, before anything else.
public struct LanguageVersion: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// The major version: a file of another major version may mean anything.
    public var major: Int
    /// The minor version: each adds constructs.
    public var minor: Int

    /// The version `major.minor`.
    public init(_ major: Int, _ minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `1.1`: `major.minor`, each a whole number of at most four digits; nil otherwise.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = Int(parts[0]), let minor = Int(parts[1]),
            parts.allSatisfy({ (1...4).contains($0.count) && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        else { return nil }
        self.init(major, minor)
    }

    /// Everything written before versions were declared.
    public static let initial = LanguageVersion(1, 0)
    /// The newest version this library reads.
    public static let current = LanguageVersion(1, 3)

    public var description: String { "\(major).\(minor)" }

    public static func < (a: LanguageVersion, b: LanguageVersion) -> Bool {
        (a.major, a.minor) < (b.major, b.minor)
    }
}

/// A file's `# language X.Y` line: the version and where it is written.
public struct LanguageDeclaration: Equatable, Hashable, Sendable {
    /// The version declared.
    public var version: LanguageVersion
    /// The line's byte range (the comment, `#` to the end of the line).
    public var range: SourceRange

    /// The declaration on the first line of `file`, if that line is a `# language` comment;
    /// a malformed one is reported through `error` (and nil returned).
    static func parse(_ file: SourceFile, error: (DiagnosticMessage, SourceRange) -> Void) -> LanguageDeclaration? {
        let bytes = file.bytes
        let start = file.contentStart
        var end = start
        while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
        let line = String(decoding: bytes[start..<end], as: UTF8.self)
        guard line.hasPrefix("#") else { return nil }
        let words = line.dropFirst().split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
        guard words.first == "language" else { return nil }
        let range = start..<end
        guard words.count == 2, let version = LanguageVersion(words[1]) else {
            error(Message.malformedLanguageLine(line), range)
            return nil
        }
        return LanguageDeclaration(version: version, range: range)
    }
}

/// A construct of the language newer than 1.0: the checker's version check, and the editor's
/// completion, which offers a construct only in a file that declares its version.
public enum Construct: String, Sendable {
    /// A former name: `scenario B was A`.
    case was = "'was'"
    /// `between 1d, 3d, 7d`.
    case growingBetween = "'between' with several gaps"
    /// `min_days N within D` and `active_days(EVENT within D)`.
    case days = "'min_days' and 'active_days'"
    /// `retired scenario NAME`.
    case retired = "'retired'"
    /// `after OUTCOME ...` and `SCENARIO: OUTCOME` in a call.
    case outcomes = "outcomes"
    /// `during`, `days`, `from` and `until`.
    case localTime = "local hours, days and dates"
    /// `bucket("salt")`.
    case buckets = "buckets"
    /// Typed event properties and filters over them.
    case properties = "event properties"
    /// `max_exec N per day` and `per week`: caps on the local calendar.
    case calendarCaps = "'per day' and 'per week'"
    /// `in CONTEXT, ...` and `not in CONTEXT, ...`: where the app is.
    case contexts = "contexts ('in', 'not in')"
    /// `counts after D visible`: a presentation counts once seen this long.
    case countedExposure = "'counts after ... visible'"
    /// `defer up to D`: a wish kept while a context or a local window refuses.
    case deferral = "'defer up to'"

    /// The version it came in.
    public var version: LanguageVersion {
        switch self {
        case .was, .growingBetween, .days: return LanguageVersion(1, 1)
        case .retired, .outcomes, .localTime, .buckets, .properties, .calendarCaps: return LanguageVersion(1, 2)
        case .contexts, .countedExposure, .deferral: return LanguageVersion(1, 3)
        }
    }
}
