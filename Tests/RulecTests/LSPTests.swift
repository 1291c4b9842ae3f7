import Foundation
import RuleLang
import RuleTools
import TestSupport
import XCTest

@testable import RuleLSP

/// `rulec lsp` over pipes, as an editor talks to it.
final class LSPTests: XCTestCase {
    private var root: URL!
    private var client: LSPTestClient!

    private let appRules = """
        event launch, "café😀", purchase
        param plan: string = "free"
        scenario Ask < on launch; min_events 5; since_first 7d; max_exec 4; between 2d >
        group Prompts < max_exec 1 per session > {
          scenario Rate < on launch; when plan == "pro" >
        }

        """
    private let otherRules = """
        scenario Late < on "café😀", lanch; when executions(Ask) >= 1 >

        """

    override func setUpWithError() throws {
        root = scratchFolder("lsp")
        try appRules.write(to: root.appendingPathComponent("app.rules"), atomically: true, encoding: .utf8)
        try otherRules.write(to: root.appendingPathComponent("other.rules"), atomically: true, encoding: .utf8)
        client = try LSPTestClient(root: root)
    }

    override func tearDown() {
        client = nil
    }

    private var app: String { client.uri(root.appendingPathComponent("app.rules")) }
    private var other: String { client.uri(root.appendingPathComponent("other.rules")) }

    private func open(_ uri: String, _ text: String) {
        client.notify(
            "textDocument/didOpen",
            ["textDocument": ["uri": uri, "languageId": "rules", "version": 1, "text": text] as [String: Any]])
    }

    /// A request's parameters at a position, with `extra` ones.
    private func at(_ uri: String, _ line: Int, _ character: Int, _ extra: [String: Any] = [:]) -> [String: Any] {
        extra.merging(["textDocument": ["uri": uri], "position": ["line": line, "character": character]]) { $1 }
    }

    /// Every reference to the name at a position, its declaration included.
    private func references(_ uri: String, _ line: Int, _ character: Int) throws -> [[String: Any]] {
        try XCTUnwrap(
            client.result(
                "textDocument/references", at(uri, line, character, ["context": ["includeDeclaration": true]]))
                as? [[String: Any]])
    }

    /// The UTF-16 column of the first `needle` on `line` of `text`.
    private func column(of needle: String, line: Int, in text: String) -> Int {
        let row = String(text.split(separator: "\n", omittingEmptySubsequences: false)[line])
        return row.utf16.distance(from: row.startIndex, to: row.range(of: needle)!.lowerBound)
    }

    func testDiagnosticsAreCheckOnesWithUTF16Columns() throws {
        // The workspace is checked as soon as it is initialized, unopened files included.
        let diagnostics = try client.waitForDiagnostics(other)
        let expected = RuleCompiler.check([
            SourceFile(path: "app.rules", text: appRules), SourceFile(path: "other.rules", text: otherRules),
        ]).diagnostics.filter { $0.file.path == "other.rules" }
        XCTAssertEqual(diagnostics.count, expected.count)
        let first = try XCTUnwrap(diagnostics.first)
        XCTAssertEqual(first["code"] as? String, "unknown-event")
        XCTAssertEqual(first["severity"] as? Int, 1)
        XCTAssertTrue((first["message"] as? String ?? "").hasPrefix(expected[0].message), "\(first)")
        let range = try XCTUnwrap(first["range"] as? [String: [String: Int]])
        // "café😀" before the mistake: é is one UTF-16 unit, 😀 two.
        XCTAssertEqual(range["start"], ["line": 0, "character": column(of: "lanch", line: 0, in: otherRules)])
        XCTAssertEqual(range["end"], ["line": 0, "character": column(of: "lanch", line: 0, in: otherRules) + 5])
        // Not the byte count (32): é is two bytes, 😀 four.
        XCTAssertEqual(column(of: "lanch", line: 0, in: otherRules), 29)
    }

    func testQuickFixAppliedChecksClean() throws {
        open(other, otherRules)
        let diagnostics = try client.waitForDiagnostics(other)
        XCTAssertFalse(diagnostics.isEmpty)
        let range = try XCTUnwrap(diagnostics.first?["range"])
        let actions = try XCTUnwrap(
            client.result(
                "textDocument/codeAction",
                ["textDocument": ["uri": other], "range": range, "context": ["diagnostics": diagnostics]])
                as? [[String: Any]])
        let fix = try XCTUnwrap(actions.first)
        XCTAssertEqual(fix["kind"] as? String, "quickfix")
        let edits = try XCTUnwrap(((fix["edit"] as? [String: Any])?["changes"] as? [String: [[String: Any]]])?[other])
        XCTAssertEqual(edits.first?["newText"] as? String, "launch")
        let fixed = applying(edits, to: otherRules)
        XCTAssertEqual(fixed, otherRules.replacingOccurrences(of: "lanch", with: "launch"))
        client.notify(
            "textDocument/didChange",
            ["textDocument": ["uri": other, "version": 2], "contentChanges": [["text": fixed]]] as [String: Any])
        XCTAssertEqual(try client.waitForDiagnostics(other).count, 0)
    }

    func testIncrementalChangeAndDiskChange() throws {
        open(app, appRules)
        _ = try client.waitForDiagnostics(app)
        _ = try client.waitForDiagnostics(other)
        // An incremental edit that breaks the file: 'min_events 5' becomes 'min_events x'.
        let line = 2
        let start = column(of: "min_events 5", line: line, in: appRules) + 11
        client.notify(
            "textDocument/didChange",
            [
                "textDocument": ["uri": app, "version": 2],
                "contentChanges": [
                    [
                        "range": [
                            "start": ["line": line, "character": start], "end": ["line": line, "character": start + 1],
                        ],
                        "text": "x",
                    ] as [String: Any]
                ],
            ] as [String: Any])
        let broken = try client.waitForDiagnostics(app)
        XCTAssertTrue(broken.contains { $0["severity"] as? Int == 1 }, "\(broken)")
        // other.rules fixed on disk, outside the editor: re-read at the next check.
        try otherRules.replacingOccurrences(of: "lanch", with: "launch").write(
            to: root.appendingPathComponent("other.rules"), atomically: true, encoding: .utf8)
        client.notify("workspace/didChangeWatchedFiles", ["changes": [["uri": other, "type": 2]]])
        XCTAssertEqual(try client.waitForDiagnostics(other).count, 0)
    }

    /// A file changed on disk with no notification (Neovim 0.7 sends none) is re-read at the
    /// next request, and its new diagnostics follow the answer.
    func testADiskChangeIsSeenAtTheNextRequest() throws {
        XCTAssertFalse(try client.waitForDiagnostics(other).isEmpty)
        try otherRules.replacingOccurrences(of: "lanch", with: "launch").write(
            to: root.appendingPathComponent("other.rules"), atomically: true, encoding: .utf8)
        _ = try client.result("textDocument/documentSymbol", ["textDocument": ["uri": app]])
        XCTAssertEqual(try client.waitForDiagnostics(other).count, 0)
    }

    /// A document of another language is not checked as rules.
    func testOtherLanguagesAreLeftAlone() throws {
        _ = try client.waitForDiagnostics(other)
        let timeline = client.uri(root.appendingPathComponent("app.timeline"))
        client.notify(
            "textDocument/didOpen",
            ["textDocument": ["uri": timeline, "languageId": "timeline", "version": 1, "text": "0 launch 1.0\n"]])
        let answer = try client.request("textDocument/documentSymbol", ["textDocument": ["uri": timeline]])
        XCTAssertEqual((answer["error"] as? [String: Any])?["code"] as? Int, -32602, "\(answer)")
        XCTAssertNil(client.diagnostics[timeline])
    }

    func testHover() throws {
        open(app, appRules)
        func hover(_ uri: String, _ line: Int, _ character: Int) throws -> String {
            let result = try client.result("textDocument/hover", at(uri, line, character)) as? [String: Any]
            return ((result?["contents"] as? [String: Any])?["value"] as? String) ?? ""
        }
        let scenario = try hover(app, 2, column(of: "Ask", line: 2, in: appRules) + 1)
        XCTAssertTrue(scenario.contains("at least 5 events"), scenario)
        XCTAssertTrue(scenario.contains("at most 4 executions"), scenario)
        XCTAssertTrue(scenario.contains("2d apart"), scenario)
        XCTAssertTrue(try hover(app, 4, column(of: "Rate", line: 4, in: appRules)).contains("group Prompts"))
        let keyword = try hover(app, 2, column(of: "since_first", line: 2, in: appRules) + 2)
        XCTAssertTrue(keyword.contains("at least D old"), keyword)
        let event = try hover(app, 0, column(of: "launch", line: 0, in: appRules))
        XCTAssertTrue(event.contains("used by: Ask, Rate"), event)
        let param = try hover(app, 4, column(of: "plan", line: 4, in: appRules))
        XCTAssertTrue(param.contains("param plan: string"), param)
    }

    /// Language 1.2: hovering `after` explains it; hovering a scenario with outcome clauses words them.
    func testHoverOfOutcomes() throws {
        let text =
            "# language 1.2\nscenario Rate < after declined next version; after later 3d; after accepted never >\n"
        open(app, text)
        func hover(_ line: Int, _ character: Int) throws -> String {
            let result = try client.result("textDocument/hover", at(app, line, character)) as? [String: Any]
            return ((result?["contents"] as? [String: Any])?["value"] as? String) ?? ""
        }
        let keyword = try hover(1, column(of: "after", line: 1, in: text) + 1)
        XCTAssertTrue(keyword.contains("`after declined next version` (none this version)"), keyword)
        let scenario = try hover(1, column(of: "Rate", line: 1, in: text) + 1)
        XCTAssertTrue(scenario.contains("no 'declined' this version"), scenario)
        XCTAssertTrue(scenario.contains("at least 3d after the last 'later'"), scenario)
        XCTAssertTrue(scenario.contains("never after 'accepted'"), scenario)
    }

    /// Language 1.2: hovering an event with properties, where it is declared or read through a
    /// filter, shows them; a filter's properties are no params.
    func testHoverOfAnEventsProperties() throws {
        let text =
            "# language 1.2\nevent purchase(amount: int, plan: string), open\nscenario S < on open; when count(purchase where amount >= 10) >= 2 >\n"
        open(app, text)
        func hover(_ line: Int, _ character: Int) throws -> String {
            let result = try client.result("textDocument/hover", at(app, line, character)) as? [String: Any]
            return ((result?["contents"] as? [String: Any])?["value"] as? String) ?? ""
        }
        let read = try hover(2, column(of: "purchase", line: 2, in: text) + 1)
        XCTAssertTrue(read.contains("event **purchase**`(amount: int, plan: string)`"), read)
        let declared = try hover(1, column(of: "purchase", line: 1, in: text) + 1)
        XCTAssertTrue(declared.contains("(amount: int, plan: string)"), declared)
        XCTAssertNil(client.diagnostics[app]?.first, "clean")
    }

    func testCompletion() throws {
        func labels(_ text: String, _ line: Int, _ character: Int) throws -> [String] {
            open(app, text)
            let result = try client.result("textDocument/completion", at(app, line, character)) as? [String: Any]
            return ((result?["items"] as? [[String: Any]]) ?? []).compactMap { $0["label"] as? String }
        }
        let clauses = try labels("scenario A <  >\n", 0, 12)
        XCTAssertTrue(clauses.contains("min_events") && clauses.contains("between"), "\(clauses)")
        XCTAssertFalse(clauses.contains("min_days"), "language 1.0 has no min_days")
        XCTAssertTrue(try labels("# language 1.1\nscenario A <  >\n", 1, 12).contains("min_days"))
        XCTAssertFalse(try labels("scenario A < >\n\n", 1, 0).contains("retired"), "language 1.0 has no retired")
        XCTAssertTrue(try labels("# language 1.2\nscenario A < >\n\n", 2, 0).contains("retired"))
        XCTAssertEqual(try labels("event launch, buy\nscenario A < on launch,  >\n", 1, 24), ["buy"])
        XCTAssertEqual(
            try labels("scenario A < min_events 5  >\n", 0, 26),
            ["per session", "per version", "per install", "within"])
        let when = try labels("param plan: string\nscenario A < when  >\n", 1, 18)
        XCTAssertTrue(when.contains("plan") && when.contains("count") && when.contains("upgraded"), "\(when)")
        XCTAssertFalse(when.contains("min_events"))
        XCTAssertEqual(
            try labels("group G < > { scenario B < > }\nscenario A < when executions() >\n", 1, 29),
            ["B", "A", "Late", "G"])
        XCTAssertEqual(try labels("scenario A < on x >  # a comm", 0, 28), [])
    }

    /// Language 1.2: `after`, its outcomes and waits, a scenario's outcomes in a call, `crash`.
    func testCompletionOfOutcomes() throws {
        func labels(_ text: String, _ line: Int, _ character: Int) throws -> [String] {
            open(app, text)
            let result = try client.result("textDocument/completion", at(app, line, character)) as? [String: Any]
            return ((result?["items"] as? [[String: Any]]) ?? []).compactMap { $0["label"] as? String }
        }
        XCTAssertFalse(try labels("scenario A <  >\n", 0, 12).contains("after"), "language 1.0 has no after")
        let v12 = "# language 1.2\n"
        XCTAssertTrue(try labels(v12 + "scenario A <  >\n", 1, 12).contains("after"))
        XCTAssertEqual(try labels(v12 + "scenario A < after  >\n", 1, 19), Outcome.names)
        XCTAssertEqual(
            try labels(v12 + "scenario A < after later  >\n", 1, 25), ["next version", "next session", "never", "7d"])
        let stream = try labels(v12 + "event launch\nscenario RateApp < when count() >\n", 2, 30)
        XCTAssertEqual(
            stream, ["launch", "crash", "problem", "RateApp: ", "Late: "], "every scenario of the workspace")
        XCTAssertEqual(try labels(v12 + "scenario RateApp < when count(RateApp: ) >\n", 1, 39), Outcome.names)
        XCTAssertEqual(try labels("event launch\nscenario RateApp < when count() >\n", 1, 30), ["launch"])
    }

    /// Language 1.2's properties: `where` after an event that has some, then its properties, the
    /// comparisons of a property's type, and `and`, `or` and the scopes after a comparison; in a
    /// call and in `min_events N where`.
    func testCompletionOfProperties() throws {
        func labels(_ text: String, _ line: Int, _ character: Int) throws -> [String] {
            open(app, text)
            let result = try client.result("textDocument/completion", at(app, line, character)) as? [String: Any]
            return ((result?["items"] as? [[String: Any]]) ?? []).compactMap { $0["label"] as? String }
        }
        let head = "# language 1.2\nevent purchase(amount: int, plan: string, trial: bool), open\n"
        func call(_ inside: String) throws -> [String] {
            let line = "scenario A < on open; when (count(\(inside)) > 1) >"
            return try labels(head + line + "\n", 2, "scenario A < on open; when (count(\(inside)".utf8.count)
        }
        let scopes = ["per session", "per version", "per install", "within"]
        XCTAssertEqual(try call("purchase "), ["where"] + scopes)
        XCTAssertEqual(try call("open "), scopes, "an event without properties: no where")
        XCTAssertEqual(try call("purchase where "), ["amount", "plan", "trial"])
        XCTAssertEqual(try call("purchase where am"), ["amount", "plan", "trial"], "a property being typed")
        XCTAssertEqual(try call("purchase where amount "), ["==", "!=", ">=", "<="])
        XCTAssertEqual(try call("purchase where plan "), ["==", "!="])
        XCTAssertEqual(try call("purchase where amount >= 10 "), ["and", "or"] + scopes)
        XCTAssertEqual(try call("purchase where amount >= 10 and not "), ["amount", "plan", "trial"])
        let clause = "scenario B < on purchase; min_events 3 "
        XCTAssertEqual(try labels(head + clause + ">\n", 2, clause.utf8.count), ["where"] + scopes)
        let filter = clause + "where "
        XCTAssertEqual(try labels(head + filter + ">\n", 2, filter.utf8.count), ["amount", "plan", "trial"])
        let sum = "scenario C < on open; when (sum("
        XCTAssertEqual(try labels(head + sum + ") > 1) >\n", 2, sum.utf8.count), ["purchase.amount"])
        let sumWhere = sum + "purchase.amount where "
        XCTAssertEqual(try labels(head + sumWhere + ") > 1) >\n", 2, sumWhere.utf8.count), ["amount", "plan", "trial"])
        let none = "scenario B < on open; min_events 3 "
        XCTAssertEqual(try labels(head + none + ">\n", 2, none.utf8.count), scopes)
    }

    func testDefinitionAndReferences() throws {
        open(other, otherRules)
        let definition = try XCTUnwrap(
            client.result("textDocument/definition", at(other, 0, column(of: "Ask", line: 0, in: otherRules)))
                as? [String: Any])
        XCTAssertEqual(definition["uri"] as? String, app)
        XCTAssertEqual(
            (definition["range"] as? [String: [String: Int]])?["start"],
            ["line": 2, "character": column(of: "Ask", line: 2, in: appRules)])
        let found = try references(app, 0, column(of: "launch", line: 0, in: appRules))
        // The declaration, then Ask's and Rate's `on` (other.rules misspells it).
        XCTAssertEqual(found.count, 3)
        XCTAssertEqual(found.map { $0["uri"] as? String }, [app, app, app])
    }

    func testRenameAcrossFilesAndCollision() throws {
        let result = try XCTUnwrap(
            client.result(
                "textDocument/rename",
                at(app, 2, column(of: "Ask", line: 2, in: appRules), ["newName": "AskMore"]))
                as? [String: Any])
        let changes = try XCTUnwrap(result["changes"] as? [String: [[String: Any]]])
        XCTAssertEqual(Set(changes.keys), [app, other])
        XCTAssertEqual(
            applying(changes[app]!, to: appRules), appRules.replacingOccurrences(of: "Ask ", with: "AskMore "))
        XCTAssertEqual(
            applying(changes[other]!, to: otherRules), otherRules.replacingOccurrences(of: "(Ask)", with: "(AskMore)"))
        let refused = try client.request(
            "textDocument/rename",
            at(app, 2, column(of: "Ask", line: 2, in: appRules), ["newName": "Rate"]))
        XCTAssertTrue(
            ((refused["error"] as? [String: Any])?["message"] as? String ?? "").contains("already"), "\(refused)")
        // A scenario's name is an identifier, never a keyword; an event's may be a string.
        for bad in ["two words", "scenario", "", "9lives"] {
            let answer = try client.request(
                "textDocument/rename", at(app, 2, column(of: "Ask", line: 2, in: appRules), ["newName": bad]))
            XCTAssertEqual((answer["error"] as? [String: Any])?["code"] as? Int, -32602, "'\(bad)': \(answer)")
        }
        let event = try XCTUnwrap(
            client.result(
                "textDocument/rename", at(app, 0, column(of: "purchase", line: 0, in: appRules), ["newName": "in app"]))
                as? [String: Any])
        let eventEdits = try XCTUnwrap((event["changes"] as? [String: [[String: Any]]])?[app])
        XCTAssertEqual(eventEdits.map { $0["newText"] as? String }, ["\"in app\""])
    }

    /// A rename writes only text that parses: a scenario counting its own stream keeps an
    /// identifier (renaming it from a use of the stream cannot quote it); a name with a line
    /// break is refused; an event's name that needs quotes and escapes reads back as itself.
    func testRenameWritesOnlyTextThatParses() throws {
        let text = "scenario Own < min_events 2 >\nscenario B < when count(Own) > 1 >\n"
        open(app, text)
        let use = at(app, 1, column(of: "Own", line: 1, in: text))
        for bad in ["x y", "a\nb", "tab\there"] {
            let answer = try client.request("textDocument/rename", use.merging(["newName": bad]) { $1 })
            XCTAssertEqual((answer["error"] as? [String: Any])?["code"] as? Int, -32602, "'\(bad)': \(answer)")
        }
        let purchase = at(app, 0, column(of: "purchase", line: 0, in: appRules))
        open(app, appRules)
        let broken = try client.request("textDocument/rename", purchase.merging(["newName": "in\napp"]) { $1 })
        XCTAssertTrue(
            ((broken["error"] as? [String: Any])?["message"] as? String ?? "").contains("line break"), "\(broken)")
        let quoted = try XCTUnwrap(
            client.result("textDocument/rename", purchase.merging(["newName": #"say "hi" \ bye"#]) { $1 })
                as? [String: Any])
        let edits = try XCTUnwrap((quoted["changes"] as? [String: [[String: Any]]])?[app])
        let renamed = applying(edits, to: appRules)
        let (parsed, diagnostics) = Parser.parse(SourceFile(path: "app.rules", text: renamed))
        XCTAssertFalse(diagnostics.contains { $0.severity == .error }, renamed)
        guard case .event(let events) = parsed.declarations[0] else { return XCTFail("no event declaration") }
        XCTAssertEqual(events.names.map(\.text), ["launch", "café😀", #"say "hi" \ bye"#])
    }

    /// `LSPPosition.positions` (one sweep) against `position(in:offset:)` per offset, on text
    /// with a byte order mark, multi-byte and astral characters and invalid bytes, in random order
    /// (offsets past the end and before the start included).
    func testPositionsInOneSweepMatchPositionsOneByOne() {
        var bytes: [UInt8] = [0xEF, 0xBB, 0xBF]
        var seed: UInt64 = 7
        func random(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        let pieces: [[UInt8]] = [
            Array("a".utf8), Array("é".utf8), Array("😀".utf8), Array("\n".utf8), Array("\r\n".utf8), [0xFF], [0xC3],
            Array("名".utf8),
        ]
        for _ in 0..<3_000 { bytes += pieces[random(pieces.count)] }
        let file = SourceFile(path: "x.rules", bytes: bytes)
        let offsets = (0..<4_000).map { _ in random(bytes.count + 21) - 10 }
        let swept = LSPPosition.positions(in: file, offsets)
        XCTAssertEqual(swept.count, offsets.count)
        for (offset, got) in zip(offsets, swept) {
            XCTAssertEqual(
                ["line": got.line, "character": got.character] as NSDictionary,
                LSPPosition.position(in: file, offset: offset) as NSDictionary, "offset \(offset)")
        }
    }

    /// The server's JSON writer against Foundation's reader: random nested values (strings with
    /// quotes, backslashes, control characters and astral characters; whole and fractional
    /// numbers; Booleans; null; parsed numbers echoed back) read back equal.
    func testTheJSONWriterReadsBackWithFoundation() throws {
        var seed: UInt64 = 99
        func random(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        let alphabet = ["a", "\"", "\\", "\n", "\r", "\t", "\u{1}", "\u{1F}", "é", "😀", "/", " ", "\u{7F}"]
        func value(_ depth: Int) -> Any {
            switch random(depth > 3 ? 5 : 7) {
            case 0: return (0..<random(6)).map { _ in alphabet[random(alphabet.count)] }.joined()
            case 1: return random(2_000_000) - 1_000_000
            case 2: return Double(random(1_000)) / 8
            case 3: return random(2) == 0
            case 4: return NSNull()
            case 5: return (0..<random(4)).map { _ in value(depth + 1) }
            default:
                var object: [String: Any] = [:]
                for _ in 0..<random(4) { object[alphabet[random(alphabet.count)] + "k"] = value(depth + 1) }
                return object
            }
        }
        for _ in 0..<500 {
            let original = ["v": value(0)] as [String: Any]
            let written = JSON.data(original)
            let read = try JSONSerialization.jsonObject(with: written) as? NSDictionary
            XCTAssertEqual(read, original as NSDictionary, String(decoding: written, as: UTF8.self))
        }
        let parsed = try JSONSerialization.jsonObject(with: Data(#"{"id":7,"b":true,"d":2.5}"#.utf8)) as! [String: Any]
        XCTAssertEqual(String(decoding: JSON.data(parsed), as: UTF8.self), #"{"b":true,"d":2.5,"id":7}"#)
        XCTAssertEqual(String(decoding: JSON.data(["a": "x/y\u{0}"]), as: UTF8.self), #"{"a":"x/y\u0000"}"#)
        XCTAssertEqual(
            String(decoding: JSON.data([0, 9, 10, 99, 100, Int.max, -5, Int.min] as [Any]), as: UTF8.self),
            "[0,9,10,99,100,\(Int.max),-5,\(Int.min)]")
    }

    /// 20,000 uses of one name on one line: every one found, in order, at its UTF-16 column.
    func testManyUsesOnOneLine() throws {
        let uses = Array(repeating: "\"é\"", count: 20_000).joined(separator: ",")
        let text = "event \"é\"\nscenario A < on \(uses); min_events 1 >\n"
        open(app, text)
        let answer = try client.request(
            "textDocument/references", at(app, 0, 7, ["context": ["includeDeclaration": true]]))
        let found = try XCTUnwrap(answer["result"] as? [[String: Any]], "\(answer)".prefix(300).description)
        XCTAssertEqual(found.count, 20_001)
        let starts = found.dropFirst().compactMap { ($0["range"] as? [String: [String: Int]])?["start"]?["character"] }
        XCTAssertEqual(starts, (0..<20_000).map { 16 + 4 * $0 })
    }

    func testSymbolsAndFormatting() throws {
        let symbols = try XCTUnwrap(
            client.result("textDocument/documentSymbol", ["textDocument": ["uri": app]]) as? [[String: Any]])
        XCTAssertEqual(
            symbols.compactMap { $0["name"] as? String }, ["launch", "café😀", "purchase", "plan", "Ask", "Prompts"])
        XCTAssertEqual((symbols.last?["children"] as? [[String: Any]])?.first?["name"] as? String, "Rate")
        let messy = "scenario   A<min_events 5;between 2d>\n"
        open(app, messy)
        let edits = try XCTUnwrap(
            client.result("textDocument/formatting", ["textDocument": ["uri": app], "options": [:] as [String: Any]])
                as? [[String: Any]])
        XCTAssertEqual(applying(edits, to: messy), Formatter.format(SourceFile(path: "x", text: messy)).text)
    }

    func testBadMessagesGetErrorsAndTheServerGoesOn() throws {
        client.sendRaw(Array("Content-Length: 5\r\n\r\n{bad}".utf8))
        let parseError = try client.nextResponse()
        XCTAssertEqual((parseError["error"] as? [String: Any])?["code"] as? Int, -32700)
        client.sendRaw(Array("X-Nothing: 1\r\n\r\n".utf8))
        XCTAssertEqual(((try client.nextResponse())["error"] as? [String: Any])?["code"] as? Int, -32700)
        let unknown = try client.request("textDocument/unheardOf", [:])
        XCTAssertEqual((unknown["error"] as? [String: Any])?["code"] as? Int, -32601)
        let missing = try client.request("textDocument/hover", ["textDocument": ["uri": app]])
        XCTAssertEqual((missing["error"] as? [String: Any])?["code"] as? Int, -32602)
        // A valid request after all that.
        XCTAssertNotNil(try client.result("textDocument/documentSymbol", ["textDocument": ["uri": app]]) as? [Any])
        XCTAssertEqual(try client.shutDown(), 0)
    }

    /// The README sends Neovim users to the file the headless Neovim check in CI loads.
    func testReadmeShowsTheNeovimLinesCIRuns() throws {
        let readme = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertTrue(
            readme.contains("copy [editors/nvim/rules.lua](editors/nvim/rules.lua) to\n`~/.config/nvim/plugin/`"))
        let ci = try String(contentsOf: RulecBinary.packageRoot.appendingPathComponent(".ci/run"), encoding: .utf8)
        XCTAssertTrue(ci.contains("cp editors/nvim/rules.lua \"$nvimhome/config/nvim/plugin/rules.lua\""))
        let rulec = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent("docs/rulec.md"), encoding: .utf8)
        XCTAssertTrue(rulec.contains("command = \"rulec\"\nargs = [\"lsp\"]"), "docs/rulec.md's Helix lines")
    }

    /// Former names (`was`): definition and references lead to the declaration they became;
    /// a rename leaves them (they name stored history) and refuses to rename one.
    func testFormerNames() throws {
        let text = """
            # language 1.1
            event open was launch
            scenario Subscribe was AskToSubscribe < on open >
            scenario Later < when executions(Subscribe) >= 1 >

            """
        open(app, text)
        let former = at(app, 2, column(of: "AskToSubscribe", line: 2, in: text) + 2)
        let definition = try XCTUnwrap(client.result("textDocument/definition", former) as? [String: Any])
        XCTAssertEqual(
            (definition["range"] as? [String: [String: Int]])?["start"],
            ["line": 2, "character": column(of: "Subscribe", line: 2, in: text)])
        XCTAssertEqual(
            try references(app, 3, column(of: "Subscribe", line: 3, in: text)).count, 3,
            "the declaration, its former name and the use")
        let hover =
            try client.result("textDocument/hover", at(app, 1, column(of: "launch", line: 1, in: text)))
            as? [String: Any]
        XCTAssertTrue(
            ((hover?["contents"] as? [String: Any])?["value"] as? String ?? "").contains(
                "former name of event **open**"))
        let renamed = try XCTUnwrap(
            client.result(
                "textDocument/rename",
                at(app, 2, column(of: "Subscribe", line: 2, in: text), ["newName": "Offer"]))
                as? [String: Any])
        let edits = try XCTUnwrap((renamed["changes"] as? [String: [[String: Any]]])?[app])
        XCTAssertEqual(
            applying(edits, to: text),
            text.replacingOccurrences(of: "scenario Subscribe", with: "scenario Offer")
                .replacingOccurrences(of: "executions(Subscribe)", with: "executions(Offer)"))
        let refused = try client.request("textDocument/rename", former.merging(["newName": "Offer"]) { $1 })
        XCTAssertTrue(
            ((refused["error"] as? [String: Any])?["message"] as? String ?? "").contains("former name"), "\(refused)")
        let reused = try client.request(
            "textDocument/rename",
            at(app, 3, column(of: "Later", line: 3, in: text), ["newName": "AskToSubscribe"]))
        XCTAssertNotNil(reused["error"], "a former name is taken")
    }

    /// A file deleted from the workspace is checked once without it, not again at every request
    /// (its stamp, kept, differed forever).
    func testADeletedFileStopsBeingWatched() throws {
        let folder = scratchFolder("lsp-workspace")
        try "scenario A < >\n".write(to: folder.appendingPathComponent("a.rules"), atomically: true, encoding: .utf8)
        try "scenario B < >\n".write(to: folder.appendingPathComponent("b.rules"), atomically: true, encoding: .utf8)
        let workspace = LSPWorkspace()
        workspace.root = folder.path
        XCTAssertEqual(workspace.analysis().files.count, 2)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("b.rules"))
        workspace.filesChanged()
        XCTAssertEqual(workspace.analysis().files.count, 1)
        let checks = workspace.generation
        _ = workspace.analysis()
        _ = workspace.analysis()
        XCTAssertEqual(workspace.generation, checks, "nothing changed: no new check")
    }
}
