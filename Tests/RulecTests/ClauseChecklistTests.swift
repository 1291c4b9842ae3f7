import Foundation
import RuleLang
import RuleTools
import TestSupport
import XCTest

@testable import RuleLSP

/// Adding a clause is a checklist (docs/adding-a-clause.md): every list the compiler cannot
/// check is held here against `ClauseKind.keywords`, so that one left out fails. The lists it
/// can check (the checker's group clauses, the duplicate test, lowering, the evaluator, dump,
/// diff's pairing) are switches with no `default`.
final class ClauseChecklistTests: XCTestCase {
    /// One clause of each keyword as the canonical printer writes it, and the same clause
    /// changed (for `rulec diff`).
    static let samples: [String: (clause: String, changed: String)] = [
        "min_events": ("min_events 3 per session", "min_events 4 per session"),
        "max_events": ("max_events 5 within 1d", "max_events 6 within 1d"),
        "max_exec": ("max_exec 2 per week", "max_exec 1 per week"),
        "since_first": ("since_first 7d", "since_first 3d"),
        "since_last": ("since_last 1d", "since_last 2d"),
        "between": ("between 2d", "between 3d"),
        "on": ("on visit", "on visit, shop"),
        "when": ("when count(visit) >= 2", "when count(visit) >= 3"),
        "priority": ("priority 3", "priority 4"),
        "min_days": ("min_days 2 within 7d", "min_days 3 within 7d"),
        "after": ("after later 3d", "after later 4d"),
        "during": ("during 09:00-17:00", "during 10:00-17:00"),
        "days": ("days mon-fri", "days weekend"),
        "from": ("from 2026-12-01", "from 2026-12-02"),
        "until": ("until 2026-12-24", "until 2026-12-25"),
        "holdout": ("holdout 10% \"x\"", "holdout 20% \"x\""),
        "in": ("in home, feed", "in home"),
        "counts": ("counts after 3s visible", "counts after 5s visible"),
        "defer": ("defer up to 30m", "defer up to 1h"),
    ]

    /// The scopes, as printed: each must be offered and highlighted.
    static let scopes = ["per install", "per version", "per session", "within", "per day", "per week"]

    static let head = "# language 1.3\nevent visit, shop\nscenario Shop < on shop >\n"

    /// A body holding `clause` of `keyword` (and `on visit`, unless it is the `on`; a `defer`
    /// has a context to wait out).
    static func body(_ keyword: String, _ clause: String) -> String {
        keyword == "on" ? clause : keyword == "defer" ? "on visit; not in pin; " + clause : "on visit; " + clause
    }

    func testEveryKeywordHasASample() {
        XCTAssertEqual(Set(Self.samples.keys), Set(ClauseKind.keywords), "add a sample for each keyword")
    }

    /// Parsed, checked and printed back the same (`texts(of:)`, `explain`, `fmt` print clauses).
    func testEachClauseRoundTrips() {
        for (keyword, sample) in Self.samples {
            let result = RuleCompiler.check(text: Self.head + "scenario A < \(Self.body(keyword, sample.clause)) >\n")
            XCTAssertEqual(result.diagnostics.map(\.message), [], keyword)
            let printed = result.program.scenarios.last?.decl.clauses.map { Printer.clause($0.kind) } ?? []
            XCTAssertTrue(printed.contains(sample.clause), "\(keyword): \(printed)")
        }
    }

    /// Each clause written twice is said (a duplicate warning, or an error for a clause that
    /// may be written once).
    func testEachClauseWrittenTwiceIsSaid() {
        for (keyword, sample) in Self.samples {
            let body = keyword == "on" ? "on visit; on visit" : "on visit; \(sample.clause); \(sample.clause)"
            let messages = RuleCompiler.check(text: Self.head + "scenario A < \(body) >\n").diagnostics.map(\.message)
            XCTAssertTrue(
                messages.contains { $0.contains("duplicate") || $0.contains("more than once") || $0.contains("twice") },
                "\(keyword): \(messages)")
        }
    }

    /// The editor: completion offers each keyword (in a language 1.2 file), hover explains it,
    /// the TextMate grammar highlights it and each scope.
    func testTheEditorKnowsEachKeyword() throws {
        let offered = Set(LSPFeatures.clauseItems(.current).compactMap { $0["label"] as? String })
        let grammar = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent(
                "editors/vscode-rules/syntaxes/rules.tmLanguage.json"),
            encoding: .utf8)
        let patterns = try JSONSerialization.jsonObject(with: Data(grammar.utf8))
        var matches: [String] = []
        func collect(_ value: Any) {
            if let object = value as? [String: Any] {
                if let match = object["match"] as? String { matches.append(match) }
                object.values.forEach(collect)
            } else if let array = value as? [Any] {
                array.forEach(collect)
            }
        }
        collect(patterns)
        /// A pattern that names `word` (not the one for any identifier) highlights it in `text`.
        func highlighted(_ word: String, in text: String) -> Bool {
            matches.contains { pattern in
                guard pattern.range(of: "(^|[^A-Za-z_])\(word)([^A-Za-z_]|$)", options: .regularExpression) != nil,
                    let regex = try? NSRegularExpression(pattern: pattern)
                else { return false }
                let range = (text as NSString).range(of: word)
                return regex.matches(in: text, range: NSRange(location: 0, length: (text as NSString).length)).contains
                {
                    NSIntersectionRange($0.range, range).length == range.length
                }
            }
        }
        for keyword in ClauseKind.keywords {
            XCTAssertTrue(offered.contains(keyword), "completion lacks \(keyword)")
            XCTAssertNotNil(LSPFeatures.keywordHelp[keyword], "hover lacks \(keyword)")
            let clause = Self.samples[keyword]?.clause ?? keyword
            XCTAssertTrue(highlighted(keyword, in: "scenario A < \(clause) >"), "the grammar lacks \(keyword)")
        }
        for scope in Self.scopes {
            let word = String(scope.split(separator: " ").last!)
            XCTAssertTrue(highlighted(word, in: "scenario A < max_exec 1 \(scope) >"), "the grammar lacks \(scope)")
        }
    }

    /// `rulec diff` says every changed clause, in words of its own.
    func testDiffSaysEveryChange() {
        for (keyword, sample) in Self.samples {
            let before = RuleCompiler.check(text: Self.head + "scenario A < \(Self.body(keyword, sample.clause)) >\n")
            let after = RuleCompiler.check(text: Self.head + "scenario A < \(Self.body(keyword, sample.changed)) >\n")
            XCTAssertEqual(after.diagnostics.map(\.message), [], keyword)
            let findings = RuleDiff.compare(old: before.program, new: after.program).map(\.message)
            XCTAssertFalse(findings.isEmpty, "\(keyword): a change says nothing")
        }
    }

    /// `rulec dump --json` gives each clause its keyword and more than its range.
    func testDumpGivesEachClausesPayload() throws {
        let dir = scratchFolder("rulec")
        let path = dir.appendingPathComponent("all.rules").path
        let body = ClauseKind.keywords.filter { $0 != "on" }.map { Self.samples[$0]!.clause }.joined(separator: "; ")
        try (Self.head + "scenario A < on visit; \(body) >\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try RulecBinary.run(["dump", "--json", path])
        XCTAssertEqual(result.status, 0, result.stderr + result.stdout)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let scenarios = try XCTUnwrap(json["scenarios"] as? [[String: Any]])
        let clauses = try XCTUnwrap(scenarios.first { $0["name"] as? String == "A" }?["clauses"] as? [[String: Any]])
        for keyword in ClauseKind.keywords {
            let clause = clauses.first { $0["keyword"] as? String == keyword }
            XCTAssertNotNil(clause, "dump lacks \(keyword)")
            XCTAssertGreaterThan(Set(clause?.keys ?? [:].keys).subtracting(["keyword", "range"]).count, 0, keyword)
        }
    }

    /// grammar.md and docs/adding-a-clause.md name each keyword.
    func testTheDocsNameEachKeyword() throws {
        for page in ["grammar.md", "docs/adding-a-clause.md"] {
            let text = try String(contentsOf: RulecBinary.packageRoot.appendingPathComponent(page), encoding: .utf8)
            for keyword in ClauseKind.keywords where page == "grammar.md" {
                XCTAssertTrue(text.contains("`\(keyword)"), "\(page) lacks \(keyword)")
            }
            XCTAssertTrue(text.contains("per day") || page == "docs/adding-a-clause.md", page)
        }
    }
}
