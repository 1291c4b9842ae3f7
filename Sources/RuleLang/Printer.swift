/// Canonical source text of clauses, scopes and expressions: used to compare
/// clauses, in explanations, and by the formatter.
public enum Printer {
    /// A scope as written in source: `per session`, `within 1d`.
    public static func scope(_ scope: ScopeKind) -> String {
        switch scope {
        case .install: return "per install"
        case .version: return "per version"
        case .session: return "per session"
        case .within(let seconds): return "within \(DurationText.format(seconds))"
        case .day: return "per day"
        case .week: return "per week"
        }
    }

    /// `scope` with a leading space, or nothing for the default `per install`.
    static func scopeSuffix(_ scope: ScopeKind) -> String {
        scope == .install ? "" : " " + Printer.scope(scope)
    }

    /// A clause as canonical source text: `min_events 5 per session`.
    public static func clause(_ kind: ClauseKind) -> String {
        clause(kind, integer: { String($0.value) })
    }

    /// A clause as canonical text with integers spelled by `integer` (the formatter keeps `1_000`).
    package static func clause(_ kind: ClauseKind, integer: (IntLiteral) -> String, source: SourceFile? = nil) -> String
    {
        switch kind {
        case .minEvents(let n, let s), .maxEvents(let n, let s), .maxExec(let n, let s):
            return "\(kind.keyword) \(integer(n))\(scopeSuffix(s.kind))"
        case .minEventsWhere(let n, let filter, let s):
            return "min_events \(integer(n)) where \(expression(filter, source: source))\(scopeSuffix(s.kind))"
        case .minDays(let n, let d):
            return "min_days \(integer(n)) within \(DurationText.format(d.seconds))"
        case .growingBetween(let gaps):
            return "between " + gaps.map { DurationText.format($0.seconds) }.joined(separator: ", ")
        case .sinceFirst(let d), .sinceLast(let d), .between(let d):
            return "\(kind.keyword) \(DurationText.format(d.seconds))"
        case .on(let names):
            return "on " + names.map { name($0.text) }.joined(separator: ", ")
        case .when(let expr):
            return "when " + expression(expr, source: source)
        case .priority(let n):
            return "priority \(integer(n))"
        case .after(let outcome, let wait):
            return "after \(outcome.text) " + Printer.wait(wait)
        case .during(let from, let to, let outside):
            return (outside ? "not " : "") + "during \(from.text)-\(to.text)"
        case .days(let names):
            return "days " + names.map(\.text).joined(separator: ", ")
        case .from(let date), .until(let date):
            return "\(kind.keyword) \(date.text)"
        case .holdout(let share, let salt):
            return "holdout \(integer(share))% \(string(salt.text))"
        case .contexts(let names, let outside):
            return (outside ? "not " : "") + "in " + names.map { name($0.text) }.joined(separator: ", ")
        case .countsAfter(let d):
            return "counts after \(DurationText.format(d.seconds)) visible"
        case .deferral(let d):
            return "defer up to \(DurationText.format(d.seconds))"
        }
    }

    /// What an `after` clause waits for, as written: `3d`, `next version`, `never`.
    public static func wait(_ wait: AfterWait) -> String {
        switch wait {
        case .duration(let d): return DurationText.format(d.seconds)
        case .next(let scope, _): return scope == .session ? "next session" : "next version"
        case .never: return "never"
        }
    }

    /// ` was OLD was OLDER`, or nothing.
    public static func former(_ names: [Name]) -> String {
        names.map { " was " + name($0.text) }.joined()
    }

    /// A name as an identifier when it is one, else as a string literal.
    public static func name(_ text: String) -> String {
        if let word = EngineStream.word(for: text) { return word }
        let bytes = Array(text.utf8)
        let isIdentifier =
            !bytes.isEmpty && !(bytes[0] >= 0x30 && bytes[0] <= 0x39)
            && bytes.allSatisfy(Lexer.isIdentifierByte) && TokenKind.keywords[text] == nil
        return isIdentifier ? text : string(text)
    }

    /// `text` as a string literal, with `\\` and `\"` escaped.
    public static func string(_ text: String) -> String {
        "\"" + text.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"") + "\""
    }

    /// An expression as canonical source text, parentheses kept.
    public static func expression(_ expr: Expr) -> String { expression(expr, source: nil) }

    /// An event's properties as declared: `(amount: int, plan: string)`; empty for none.
    public static func properties(_ properties: [PropertyDecl]) -> String {
        guard !properties.isEmpty else { return "" }
        return "(" + properties.map { name($0.name.text) + ": " + ($0.type?.rawValue ?? "") }.joined(separator: ", ")
            + ")"
    }

    /// With `source`, integers keep their spelling (`1_000`).
    package static func expression(_ expr: Expr, source: SourceFile?) -> String {
        func expression(_ expr: Expr) -> String { Printer.expression(expr, source: source) }
        switch expr.kind {
        case .integer(let value): return source.map { $0.text(expr.range) } ?? String(value)
        case .duration(let seconds): return DurationText.format(seconds)
        case .string(let text): return string(text)
        case .bool(let value): return value ? "true" : "false"
        case .name(let text): return text
        case .unary(let op, let operand): return "\(op.rawValue) \(expression(operand))"
        case .binary(let op, let left, let right):
            return "\(expression(left)) \(op.rawValue) \(expression(right))"
        case .call(let function, let argument, let scope, let outcome, let filter, let property):
            // A salt is always a string (`bucket("paywall")`); a property follows its event.
            var written = function.text == BuiltinFunction.bucket.name ? string(argument.text) : name(argument.text)
            if let property { written += "." + property.text }
            let filtered: String = filter.map { " where " + expression($0) } ?? ""
            let read = written + (outcome.map { ": " + $0.text } ?? "") + filtered
            return "\(function.text)(\(read)\(scope.map { " " + Printer.scope($0.kind) } ?? ""))"
        case .parenthesized(let inner): return "(\(expression(inner)))"
        case .invalid: return "<invalid>"
        }
    }
}

extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self {
            if character == target { out += replacement } else { out.append(character) }
        }
        return out
    }
}
