import RuleLang

/// The canonical layout of a `.rules` file (`rulec fmt`, grammar.md section "Layout").
///
/// Declarations keep their order, one per line, with at most one blank line between them
/// (kept where the source had one). A body fits on one line (`scenario A < c1; c2 >`) when it
/// holds no comment and the line fits the width; otherwise each clause gets its own line,
/// indented four spaces, followed by `;` except the last, and `>` closes on its own line.
/// Group members are indented four spaces inside `{` `}`. Clauses keep their order and are
/// printed canonically (durations as `1d12h`, numbers without `_`, names quoted only when they
/// must be, one space around operators, parentheses kept). Comments stay where they were: a
/// comment on its own line stays on its own line before the same declaration or clause; a
/// comment after code stays after that line's code, at its column when the code still ends
/// before it.
public enum Formatter {
    /// A comment of the source: its text and where it was.
    struct Comment {
        var text: String
        var start: Int
        var line: Int
        var column: Int
        /// True when only blanks precede it on its line.
        var ownLine: Bool
    }

    /// `file` in the canonical layout, or nil with the diagnostics when it has errors.
    public static func format(_ file: SourceFile, width: Int = 100) -> (text: String?, diagnostics: [Diagnostic]) {
        let (parsed, diagnostics) = Parser.parse(file)
        if diagnostics.hasErrors { return (nil, diagnostics) }
        var printer = LayoutPrinter(file: file, comments: comments(file), width: width)
        for declaration in parsed.declarations { printer.declaration(declaration) }
        printer.remainingComments()
        return (printer.output, diagnostics)
    }

    /// Every comment, in order; `#` or `//` outside strings, to the end of the line.
    static func comments(_ file: SourceFile) -> [Comment] {
        let bytes = file.bytes
        var result: [Comment] = []
        var index = file.contentStart
        var inString = false
        var lineHasCode = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                inString = false
                lineHasCode = false
                index += 1
                continue
            }
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                } else {
                    if byte == UInt8(ascii: "\"") { inString = false }
                    index += 1
                }
                continue
            }
            let slashes = byte == UInt8(ascii: "/") && index + 1 < bytes.count && bytes[index + 1] == byte
            if byte == UInt8(ascii: "#") || slashes {
                var end = index
                while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
                var trimmed = end
                while trimmed > index,
                    bytes[trimmed - 1] == 0x20 || bytes[trimmed - 1] == 0x09 || bytes[trimmed - 1] == 0x0D
                {
                    trimmed -= 1
                }
                let location = file.location(of: index)
                result.append(
                    Comment(
                        text: file.text(index..<trimmed), start: index, line: location.line,
                        column: location.column, ownLine: !lineHasCode))
                index = end
                continue
            }
            if byte == UInt8(ascii: "\"") { inString = true }
            if byte != 0x20 && byte != 0x09 && byte != 0x0D { lineHasCode = true }
            index += 1
        }
        return result
    }
}

/// Writes declarations and the comments around them.
struct LayoutPrinter {
    let file: SourceFile
    let comments: [Formatter.Comment]
    let width: Int
    var output = ""
    /// Comments already written (by index).
    var next = 0
    /// The source line where the last written item ended, for blank lines.
    var lastLine = 0

    init(file: SourceFile, comments: [Formatter.Comment], width: Int) {
        self.file = file
        self.comments = comments
        self.width = width
    }

    func line(of offset: Int) -> Int { file.location(of: offset).line }

    /// A blank line when the source had one between the last item and `line`.
    mutating func blankLine(before line: Int) {
        if lastLine > 0 && line > lastLine + 1 && !output.hasSuffix("\n\n") { output += "\n" }
    }

    /// Writes the own-line comments that start before `offset`, at `indent`.
    mutating func commentsBefore(_ offset: Int, indent: String) {
        while next < comments.count, comments[next].start < offset {
            let comment = comments[next]
            blankLine(before: comment.line)
            output += indent + comment.text + "\n"
            lastLine = comment.line
            next += 1
        }
    }

    /// Appends `code` as one line at `indent`, with the trailing comment of source line
    /// `sourceLine` (one that starts before `limit`) if there is one.
    mutating func codeLine(_ code: String, indent: String, sourceLine: Int, limit: Int) {
        var text = indent + code
        if next < comments.count, !comments[next].ownLine, comments[next].line == sourceLine,
            comments[next].start < limit
        {
            let comment = comments[next]
            let column = text.count + 1
            text += String(repeating: " ", count: comment.column > column + 1 ? comment.column - column : 2)
            text += comment.text
            next += 1
        }
        output += text + "\n"
        lastLine = sourceLine
    }

    /// True when a comment starts inside `range`.
    func hasComment(in range: SourceRange) -> Bool {
        comments[next...].contains { range.contains($0.start) }
    }

    mutating func declaration(_ declaration: Declaration) {
        switch declaration {
        case .event(let decl):
            startDeclaration(decl.range)
            let names = decl.names.enumerated().map { position, name in
                Printer.name(name.text)
                    + Printer.properties(position < decl.properties.count ? decl.properties[position] : [])
                    + Printer.former(position < decl.formerNames.count ? decl.formerNames[position] : [])
            }.joined(separator: ", ")
            codeLine("event " + names, indent: "", sourceLine: line(of: decl.range.upperBound), limit: .max)
        case .param(let decl):
            startDeclaration(decl.range)
            var code =
                "param \(Printer.name(decl.name.text))\(Printer.former(decl.formerNames)): \(decl.type?.rawValue ?? "")"
            if let value = decl.defaultValue { code += " = " + Printer.expression(value, source: file) }
            codeLine(code, indent: "", sourceLine: line(of: decl.range.upperBound), limit: .max)
        case .scenario(let decl):
            startDeclaration(decl.range)
            scenario(decl, indent: "")
        case .group(let decl):
            startDeclaration(decl.range)
            // The body ends at the `{` that opens the members.
            let membersStart = decl.members.first?.range.lowerBound ?? decl.range.upperBound
            let bodyEnd = decl.clauses.last?.range.upperBound ?? decl.name.range.upperBound
            let brace = file.bytes[bodyEnd..<membersStart].firstIndex(of: UInt8(ascii: "{")) ?? bodyEnd
            body(
                "group \(Printer.name(decl.name.text))\(Printer.former(decl.formerNames))", decl.clauses, open: " {",
                indent: "",
                range: decl.range.lowerBound..<brace + 1)
            for member in decl.members {
                commentsBefore(member.range.lowerBound, indent: "    ")
                blankLine(before: line(of: member.range.lowerBound))
                scenario(member, indent: "    ")
            }
            commentsBefore(decl.range.upperBound - 1, indent: "    ")
            codeLine("}", indent: "", sourceLine: line(of: decl.range.upperBound), limit: .max)
        }
    }

    mutating func startDeclaration(_ range: SourceRange) {
        commentsBefore(range.lowerBound, indent: "")
        blankLine(before: line(of: range.lowerBound))
    }

    mutating func scenario(_ decl: ScenarioDecl, indent: String) {
        if decl.retired != nil {
            let text = "retired scenario \(Printer.name(decl.name.text))\(Printer.former(decl.formerNames))"
            codeLine(text, indent: indent, sourceLine: line(of: decl.range.upperBound - 1), limit: Int.max)
            return
        }
        body(
            "scenario \(Printer.name(decl.name.text))\(Printer.former(decl.formerNames))", decl.clauses, open: "",
            indent: indent, range: decl.range)
    }

    /// `HEADER < clauses >OPEN` on one line when it fits and holds no comment, else one clause a
    /// line. `range` runs from the header to the closing `>` (or the group's `{`), inclusive.
    mutating func body(_ header: String, _ clauses: [Clause], open: String, indent: String, range: SourceRange) {
        let file = self.file
        let texts = clauses.map { Printer.clause($0.kind, integer: { file.text($0.range) }, source: file) }
        let oneLine = header + " <" + (texts.isEmpty ? " " : " " + texts.joined(separator: "; ") + " ") + ">" + open
        let endLine = line(of: range.upperBound - 1)
        // After a group's `{`, a comment on the same line belongs to the member that follows.
        let trailingLimit = open.isEmpty ? Int.max : range.upperBound + 1
        if !hasComment(in: range) && indent.count + oneLine.count <= width {
            codeLine(oneLine, indent: indent, sourceLine: endLine, limit: trailingLimit)
            return
        }
        codeLine(
            header + " <", indent: indent, sourceLine: line(of: range.lowerBound),
            limit: clauses.first?.range.lowerBound ?? range.upperBound)
        for (index, clause) in clauses.enumerated() {
            commentsBefore(clause.range.lowerBound, indent: indent + "    ")
            // Comments inside a clause (a condition over several lines) go before it.
            while next < comments.count, clause.range.contains(comments[next].start) {
                output += indent + "    " + comments[next].text + "\n"
                next += 1
            }
            let end = index + 1 < clauses.count ? clauses[index + 1].range.lowerBound : range.upperBound - 1
            let separator = index + 1 < clauses.count ? ";" : ""
            codeLine(
                texts[index] + separator, indent: indent + "    ", sourceLine: line(of: clause.range.upperBound),
                limit: end)
        }
        commentsBefore(range.upperBound - 1, indent: indent + "    ")
        codeLine(">" + open, indent: indent, sourceLine: endLine, limit: trailingLimit)
    }

    /// Comments after the last declaration.
    mutating func remainingComments() {
        commentsBefore(.max, indent: "")
    }
}
