import Foundation
import XCTest

@testable import RuleLang

/// The TextMate grammar under editors/ gives every token class of examples/app.rules its scope:
/// a small tokenizer applies the grammar's patterns as an editor does (leftmost match, then
/// pattern order) and each token the language's own lexer finds is checked against it.
final class TextMateGrammarTests: XCTestCase {
    struct Rule {
        var regex: NSRegularExpression
        /// The scope of the whole match, or of capture groups by number.
        var name: String?
        var captures: [Int: String]
    }

    /// The grammar's patterns, includes resolved, in order.
    static func rules() throws -> [Rule] {
        let url = RulecBinary.packageRoot.appendingPathComponent("editors/vscode-rules/syntaxes/rules.tmLanguage.json")
        let grammar = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        let repository = grammar["repository"] as! [String: Any]
        var result: [Rule] = []
        func add(_ pattern: [String: Any]) throws {
            if let include = pattern["include"] as? String {
                try add(repository[String(include.dropFirst())] as! [String: Any])
            } else if let patterns = pattern["patterns"] as? [[String: Any]], pattern["begin"] == nil {
                for inner in patterns { try add(inner) }
            } else {
                // A begin/end rule (strings) is read as one match from begin to end.
                let source = (pattern["match"] as? String) ?? "\"(?:\\\\.|[^\"\\\\])*(?:\"|$)"
                var captures: [Int: String] = [:]
                for (key, value) in pattern["captures"] as? [String: [String: String]] ?? [:] {
                    captures[Int(key)!] = value["name"]
                }
                result.append(
                    Rule(
                        regex: try NSRegularExpression(pattern: source, options: [.anchorsMatchLines]),
                        name: pattern["name"] as? String, captures: captures))
            }
        }
        for pattern in grammar["patterns"] as! [[String: Any]] { try add(pattern) }
        return result
    }

    /// Scopes by UTF-16 offset within `line`.
    static func scopes(_ line: String, _ rules: [Rule]) -> [Int: String] {
        let text = line as NSString
        var scopes: [Int: String] = [:]
        var position = 0
        while position < text.length {
            var best: (match: NSTextCheckingResult, rule: Rule)?
            for rule in rules {
                guard
                    let match = rule.regex.firstMatch(
                        in: line, options: [.withTransparentBounds],
                        range: NSRange(location: position, length: text.length - position)),
                    match.range.length > 0
                else { continue }
                if best == nil || match.range.location < best!.match.range.location { best = (match, rule) }
            }
            guard let (match, rule) = best else { break }
            if let name = rule.name {
                for offset in match.range.location..<NSMaxRange(match.range) { scopes[offset] = name }
            }
            for (group, name) in rule.captures where match.range(at: group).location != NSNotFound {
                let range = match.range(at: group)
                for offset in range.location..<NSMaxRange(range) { scopes[offset] = name }
            }
            position = NSMaxRange(match.range)
        }
        return scopes
    }

    /// The scope prefix each token class must get.
    static func expectedScope(_ token: Token, _ text: String) -> String? {
        switch token.kind {
        case .kwScenario, .kwGroup, .kwParam: return "keyword.declaration"
        case .kwPer, .kwWithin: return "keyword.other.scope"
        case .kwAnd, .kwOr, .kwNot: return "keyword.operator.logical"
        case .kwTrue, .kwFalse: return "constant.language.boolean"
        case .integer: return "constant.numeric.integer"
        case .duration: return "constant.numeric.duration"
        case .string: return "string.quoted.double"
        case .equalEqual, .bangEqual, .lessEqual, .greaterEqual: return "keyword.operator.comparison"
        case .less, .greater: return "punctuation.section.body"
        case .leftBrace, .rightBrace: return "punctuation.section.group"
        case .leftParen, .rightParen: return "punctuation.section.parens"
        case .semicolon, .comma, .colon: return "punctuation.separator"
        case .identifier:
            if text == "event" { return "keyword.declaration" }
            if ClauseKind.keywords.contains(text) { return nil }  // a clause, or a function: checked below
            if ["install", "version", "session"].contains(text) { return "keyword.other.scope" }
            if ValueType(rawValue: text) != nil { return "storage.type" }
            if text == "upgraded" { return "variable.language.builtin" }
            if BuiltinFunction(rawValue: text) != nil { return "support.function.builtin" }
            return nil
        default: return nil
        }
    }

    func testEveryTokenClassOfAppRulesIsMatched() throws {
        let rules = try Self.rules()
        let url = RulecBinary.packageRoot.appendingPathComponent("examples/app.rules")
        let source = SourceFile(path: url.path, bytes: [UInt8](try Data(contentsOf: url)))
        var sink = DiagnosticSink(file: source)
        var lexer = Lexer(file: source)
        let tokens = lexer.tokenize(into: &sink)
        var checked: Set<String> = []
        var lineScopes: [Int: [Int: String]] = [:]
        for token in tokens where token.kind != .eof {
            let text = source.text(token.range)
            let location = source.location(of: token.range.lowerBound)
            let lineText = source.text(source.lineRange(location.line))
            let scopes = lineScopes[location.line] ?? Self.scopes(lineText, rules)
            lineScopes[location.line] = scopes
            let column =
                (String(lineText.utf8.prefix(token.range.lowerBound - source.lineStarts[location.line - 1]))
                ?? "").utf16.count
            var expected = Self.expectedScope(token, text)
            if token.kind == .identifier, ClauseKind.keywords.contains(text) {
                let isCall =
                    BuiltinFunction(rawValue: text) != nil
                    && tokens.first { $0.range.lowerBound >= token.range.upperBound }?.kind == .leftParen
                expected = isCall ? "support.function.builtin" : "keyword.control.clause"
            }
            guard let expected else { continue }
            let scope = scopes[column] ?? "none"
            XCTAssertTrue(scope.hasPrefix(expected), "\(location) '\(text)': \(scope), expected \(expected)")
            checked.insert(expected)
        }
        // Comments: every '#' comment line.
        for line in 1...source.lineStarts.count {
            let lineText = source.text(source.lineRange(line))
            guard let hash = lineText.firstIndex(of: "#"), !lineText[..<hash].contains("\"") else { continue }
            let column = lineText.utf16.distance(from: lineText.startIndex, to: hash)
            let scope = (lineScopes[line] ?? Self.scopes(lineText, rules))[column] ?? "none"
            XCTAssertTrue(scope.hasPrefix("comment.line"), "line \(line): \(scope)")
            checked.insert("comment.line")
        }
        XCTAssertEqual(
            checked,
            [
                "keyword.declaration", "keyword.control.clause", "keyword.other.scope", "keyword.operator.logical",
                "constant.language.boolean", "constant.numeric.integer", "constant.numeric.duration",
                "string.quoted.double", "keyword.operator.comparison", "punctuation.section.body",
                "punctuation.section.group", "punctuation.section.parens", "punctuation.separator", "storage.type",
                "support.function.builtin", "variable.language.builtin", "comment.line",
            ], "app.rules exercises every token class")
    }

    func testRenamesAndTheLanguageLineHaveTheirScopes() throws {
        let rules = try Self.rules()
        let language = Self.scopes("# language 1.1", rules)
        XCTAssertEqual(language[2], "keyword.other.language.rules")
        XCTAssertEqual(language[11], "constant.numeric.version.rules")
        XCTAssertEqual(Self.scopes("# a comment about the language 1.1", rules)[2], "comment.line.number-sign.rules")
        let line = "scenario Subscribe was AskToSubscribe < min_events 1 >"
        let scopes = Self.scopes(line, rules)
        XCTAssertEqual(scopes[19], "keyword.other.rename.rules", "was")
        XCTAssertEqual(scopes[9], "entity.name.type.rules", "the new name")
        let event = Self.scopes("event open was launch, close", rules)
        XCTAssertEqual(event[11], "keyword.other.rename.rules")
        XCTAssertNotEqual(
            Self.scopes("scenario A < on was >", rules)[16], "keyword.other.rename.rules", "a stream named was")
        let retired = Self.scopes("retired scenario RateApp", rules)
        XCTAssertEqual(retired[0], "storage.modifier.retired.rules")
        XCTAssertEqual(retired[8], Self.scopes("scenario RateApp", rules)[0], "'scenario' as in any declaration")
        XCTAssertNotEqual(Self.scopes("scenario A < on retired >", rules)[16], "storage.modifier.retired.rules")
    }

    /// Language 1.2's prompts: `after`, its outcome and wait, an outcome in a call, the engine's streams.
    func testOutcomesAndTheEnginesStreamsHaveTheirScopes() throws {
        let rules = try Self.rules()
        let line =
            "scenario R < after declined next version; after later 3d; after accepted never; when since_last(crash) >= 3d >"
        let scopes = Self.scopes(line, rules)
        func scope(_ word: String, from: Int = 0) -> String? {
            let start = line.range(of: word, range: line.index(line.startIndex, offsetBy: from)..<line.endIndex)!
            return scopes[line.distance(from: line.startIndex, to: start.lowerBound)]
        }
        XCTAssertEqual(scope("after"), "keyword.control.clause.rules")
        XCTAssertEqual(scope("declined"), "constant.language.outcome.rules")
        XCTAssertEqual(scope("next"), "keyword.other.scope.rules")
        XCTAssertEqual(scope("version"), "keyword.other.scope.rules")
        XCTAssertEqual(scope("later"), "constant.language.outcome.rules")
        XCTAssertEqual(scope("never"), "keyword.other.scope.rules")
        XCTAssertEqual(scope("crash"), "variable.language.builtin.rules")
        let call = Self.scopes("scenario S < when count(RateApp: declined per version) == 0 >", rules)
        XCTAssertEqual(call[33], "constant.language.outcome.rules")
        XCTAssertNotEqual(Self.scopes("scenario S < on declined >", rules)[16], "constant.language.outcome.rules")
    }

    /// Language 1.2's days: each day, a range of days and the two groups, after `days` and its commas.
    func testDaysAndRangesOfDaysHaveTheirScope() throws {
        let rules = try Self.rules()
        let line = "scenario S < days mon-thu, sat, weekend; on fri >"
        let scopes = Self.scopes(line, rules)
        for (word, offset) in [("mon-thu", 18), ("sat", 27), ("weekend", 32)] {
            for k in offset..<offset + word.count {
                XCTAssertEqual(scopes[k], "constant.language.weekday.rules", "\(word) at \(k)")
            }
        }
        XCTAssertNotEqual(scopes[44], "constant.language.weekday.rules", "an event named fri")
    }

    /// Language 1.2's filters: `where` in a call is a keyword, the event before it keeps its scope.
    func testAFiltersWhereHasItsScope() throws {
        let rules = try Self.rules()
        let line = "scenario S < when count(purchase where amount >= 10) >= 2; on where >"
        let scopes = Self.scopes(line, rules)
        let position = line.distance(from: line.startIndex, to: line.range(of: "where")!.lowerBound)
        for k in position..<position + 5 { XCTAssertEqual(scopes[k], "keyword.other.filter.rules", "at \(k)") }
        XCTAssertEqual(scopes[24], Self.scopes("scenario S < when count(purchase) >= 2 >", rules)[24], "the event")
        let last = line.distance(from: line.startIndex, to: line.range(of: "where", options: .backwards)!.lowerBound)
        XCTAssertNotEqual(scopes[last], "keyword.other.filter.rules", "an event named where")
    }

    /// Every built-in function is a function where it is called (`sum` and `bucket` of language 1.2
    /// among them), and a name elsewhere.
    func testEveryFunctionHasItsScope() throws {
        let rules = try Self.rules()
        for function in BuiltinFunction.names {
            let scopes = Self.scopes("scenario S < when \(function)(a) >", rules)
            XCTAssertEqual(scopes[18], "support.function.builtin.rules", function)
            XCTAssertNotEqual(Self.scopes("scenario S < on \(function) >", rules)[16], "support.function.builtin.rules")
        }
    }

    /// The extension's only code starts `rulec lsp`, with VS Code's API and Node's own modules.
    func testTheExtensionNeedsNoPackages() throws {
        let root = RulecBinary.packageRoot.appendingPathComponent("editors/vscode-rules")
        let package =
            try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("package.json")))
            as! [String: Any]
        XCTAssertEqual(package["main"] as? String, "./extension.js")
        XCTAssertNil(package["dependencies"], "no npm packages")
        let code = try String(contentsOf: root.appendingPathComponent("extension.js"), encoding: .utf8)
        let required = code.components(separatedBy: "require(\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        XCTAssertEqual(
            Set(required), ["vscode", "child_process", "os", "path"], "VS Code's API and Node's own modules")
        XCTAssertTrue(code.contains("[\"lsp\"]"), "it starts rulec lsp")
        let configuration =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: root.appendingPathComponent("language-configuration.json"))) as! [String: Any]
        XCTAssertEqual((configuration["comments"] as? [String: String])?["lineComment"], "#")
        XCTAssertEqual(configuration["brackets"] as? [[String]], [["<", ">"], ["(", ")"], ["{", "}"]])
    }
}
