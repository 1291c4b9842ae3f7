/// How serious a diagnostic is.
public enum Severity: String, Sendable, Equatable, Codable {
    case note, warning, error
}

/// A place in a file: the file and a byte range in it.
public struct SourceSpan: Sendable {
    /// The file.
    public var file: SourceFile
    /// The byte range in it.
    public var range: SourceRange

    /// The range `range` of `file`.
    public init(_ file: SourceFile, _ range: SourceRange) {
        self.file = file
        self.range = range
    }

    /// The line and column where the span starts.
    public var start: SourceLocation { file.location(of: range.lowerBound) }
}

/// A secondary message attached to a diagnostic, pointing somewhere else.
public struct DiagnosticNote: Sendable {
    /// The note's text.
    public var message: String
    /// Where it points; nil for a note about the whole diagnostic.
    public var span: SourceSpan?

    /// A note saying `message`, pointing at `span`.
    public init(_ message: String, at span: SourceSpan? = nil) {
        self.message = message
        self.span = span
    }
}

/// A suggested edit: replace `range` of the diagnostic's file with `replacement`.
public struct FixIt: Sendable, Equatable {
    /// The bytes to replace (empty to insert).
    public var range: SourceRange
    /// The text to put there.
    public var replacement: String

    /// `replace 'a' with 'b'`, `insert 'b'` (an empty range) or `remove 'a'` (an empty replacement).
    public func summary(in file: SourceFile) -> String {
        let replaced = file.text(range)
        let replacement = self.replacement.split(separator: "\n", omittingEmptySubsequences: false).joined(
            separator: "\\n")
        if replaced.isEmpty { return "insert '\(replacement)'" }
        if replacement.isEmpty { return "remove '\(replaced)'" }
        return "replace '\(replaced)' with '\(replacement)'"
    }

    /// Replace `range` with `replacement`.
    public init(range: SourceRange, replacement: String) {
        self.range = range
        self.replacement = replacement
    }
}

/// One problem found in source text. Phases return these; only tools print them.
public struct Diagnostic: Sendable {
    /// What it says and its stable identifier, made together (``DiagnosticMessage``).
    public var problem: DiagnosticMessage
    /// Error, warning or note.
    public var severity: Severity
    /// Where the problem is.
    public var span: SourceSpan
    /// Secondary messages, possibly in other files.
    public var notes: [DiagnosticNote]
    /// Edits that fix the problem when applied.
    public var fixIts: [FixIt]

    /// A stable identifier from ``DiagnosticID``, for tools and documentation.
    public var id: DiagnosticID { problem.id }
    /// The message: lowercase, no final period.
    public var message: String { problem.text }

    /// A diagnostic of `severity` saying `problem` at `span`.
    public init(
        _ problem: DiagnosticMessage, _ severity: Severity, at span: SourceSpan,
        notes: [DiagnosticNote] = [], fixIts: [FixIt] = []
    ) {
        self.problem = problem
        self.severity = severity
        self.span = span
        self.notes = notes
        self.fixIts = fixIts
    }

    /// The file the diagnostic is in.
    public var file: SourceFile { span.file }
    /// The diagnostic's byte range in its file.
    public var range: SourceRange { span.range }
    /// The line and column where it starts.
    public var location: SourceLocation { span.start }
}

extension Array where Element == Diagnostic {
    /// True when any diagnostic is an error.
    public var hasErrors: Bool { contains { $0.severity == .error } }

    /// Sorted by file path, then start position; diagnostics at the same place keep their order.
    public func sortedByPosition() -> [Diagnostic] {
        enumerated().sorted { a, b in
            let x = a.element
            let y = b.element
            if x.file.path != y.file.path { return x.file.path < y.file.path }
            if x.range.lowerBound != y.range.lowerBound { return x.range.lowerBound < y.range.lowerBound }
            return a.offset < b.offset
        }.map(\.element)
    }
}

extension Array where Element == Diagnostic {
    /// At most ``Limits/maxErrorsPerFile`` diagnostics of any severity per file (sorted input),
    /// then one line saying how many more there were: an error if any of them is one, so a
    /// file never looks clean because its errors came after its warnings.
    func capped() -> [Diagnostic] {
        var result: [Diagnostic] = []
        var index = 0
        while index < count {
            let path = self[index].file.path
            var end = index
            while end < count && self[end].file.path == path { end += 1 }
            let limit = Limits.maxErrorsPerFile + 1  // the parser's own "too many errors" line included
            if end - index <= limit {
                result += self[index..<end]
            } else {
                let kept = self[index..<index + Limits.maxErrorsPerFile]
                let dropped = self[(index + Limits.maxErrorsPerFile)..<end]
                result += kept
                if dropped.first?.id != .tooManyErrors || dropped.count > 1 {
                    let errors = dropped.contains { $0.severity == .error && $0.id != .tooManyErrors }
                    let tail = dropped.first!
                    result.append(
                        Diagnostic(
                            Message.tooManyDiagnostics(dropped.count, Limits.maxErrorsPerFile),
                            errors ? .error : .warning, at: tail.span))
                } else {
                    result += dropped
                }
            }
            index = end
        }
        return result
    }
}

/// Collects diagnostics for one file and caps how many errors it keeps.
struct DiagnosticSink {
    let file: SourceFile
    private(set) var diagnostics: [Diagnostic] = []
    private(set) var errorCount = 0
    /// Set once the cap is reached; phases stop early when it is.
    private(set) var isFull = false

    init(file: SourceFile) { self.file = file }

    mutating func add(_ diagnostic: Diagnostic) {
        if isFull { return }
        if diagnostic.severity == .error {
            errorCount += 1
            if errorCount > Limits.maxErrorsPerFile {
                isFull = true
                diagnostics.append(
                    Diagnostic(Message.tooManyErrors(Limits.maxErrorsPerFile), .error, at: diagnostic.span))
                return
            }
        }
        diagnostics.append(diagnostic)
    }

    mutating func error(
        _ problem: DiagnosticMessage, _ range: SourceRange, notes: [DiagnosticNote] = [], fixIts: [FixIt] = []
    ) {
        add(Diagnostic(problem, .error, at: SourceSpan(file, range), notes: notes, fixIts: fixIts))
    }
}
