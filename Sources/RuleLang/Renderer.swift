/// Renders diagnostics in the compiler style:
///
///     app.rules:3:14: error: unknown clause 'min_event'; did you mean 'min_events'?
///      3 | scenario A < min_event 5 >
///        |              ^~~~~~~~~
///     app.rules:3:14: note: ...
public struct DiagnosticRenderer {
    /// ANSI colour, for terminals only.
    public var colored: Bool

    /// A renderer; `colored` adds ANSI colours (for a terminal).
    public init(colored: Bool = false) {
        self.colored = colored
    }

    /// `diagnostics` as text: each as `path:line:col: severity: message`, the source line, a caret, fix-its and notes.
    public func render(_ diagnostics: [Diagnostic]) -> String {
        diagnostics.map(render).joined()
    }

    /// One diagnostic, with its source line, caret, fix-its and notes; ends with a newline.
    public func render(_ diagnostic: Diagnostic) -> String {
        var out = header(diagnostic.span, diagnostic.severity.rawValue, diagnostic.message)
        out += excerpt(diagnostic.span)
        for fixIt in diagnostic.fixIts {
            out += paint("   = fix: \(fixIt.summary(in: diagnostic.file))", "36") + "\n"
        }
        for note in diagnostic.notes {
            if let span = note.span {
                out += header(span, "note", note.message)
            } else {
                out += header(diagnostic.span, "note", note.message)
            }
        }
        return out
    }

    private func header(_ span: SourceSpan, _ severity: String, _ message: String) -> String {
        let location = span.start
        let color = severity == "error" ? "1;31" : severity == "warning" ? "1;33" : "1;36"
        return paint("\(span.file.path):\(location.line):\(location.column):", "1") + " "
            + paint("\(severity):", color) + " " + paint(message, "1") + "\n"
    }

    /// The source line under a gutter and a caret line under the range (first line only).
    /// Long lines are cut to a window around the range; control characters are shown as '?'.
    private func excerpt(_ span: SourceSpan) -> String {
        let file = span.file
        let location = span.start
        let lineRange = file.lineRange(location.line)
        let start = min(max(span.range.lowerBound, lineRange.lowerBound), lineRange.upperBound)
        var from = max(lineRange.lowerBound, start - 80)
        while from > lineRange.lowerBound && file.bytes[from] & 0xC0 == 0x80 { from -= 1 }
        var to = min(lineRange.upperBound, start + 160)
        while to < lineRange.upperBound && file.bytes[to] & 0xC0 == 0x80 { to += 1 }
        let lead = from > lineRange.lowerBound ? "…" : ""
        let tail = to < lineRange.upperBound ? "…" : ""
        func clean(_ text: String) -> String {
            String(text.map { $0.asciiValue.map { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F } == true ? "?" : $0 })
        }
        let before = clean(file.text(from..<start))
        let gutter = String(location.line)
        let pad = String(repeating: " ", count: gutter.count)
        // Keep tabs under tabs so the caret lines up.
        var indent = lead.isEmpty ? "" : " "
        for character in before { indent.append(character == "\t" ? "\t" : " ") }
        let end = min(span.range.upperBound, to)
        let width = max(1, end > start ? String(decoding: file.bytes[start..<end], as: UTF8.self).count : 1)
        let marker = "^" + String(repeating: "~", count: width - 1)
        let shown = lead + clean(file.text(from..<to)) + tail
        return " \(gutter) | \(shown)\n \(pad) | \(indent)\(paint(marker, "1;32"))\n"
    }

    private func paint(_ text: String, _ code: String) -> String {
        colored ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}
