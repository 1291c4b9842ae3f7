import Foundation
import RuleLang
import RuleTimeline
import XCTest

/// The language-neutral conformance cases of `conformance/cases.json`: rules, a zone, an install
/// id, and a trace of calls at times with the answers and reasons expected. Every case runs
/// here; `conformance/README.md` says how another implementation runs them.
///
/// The cases were generated from the example timelines and from a grid of rules (every clause,
/// scope, function and language version) against a set of traces, then frozen. To generate them
/// again after an intended change of meaning: `RULES_WRITE_CONFORMANCE=1 swift test --filter
/// ConformanceTests/testWriteTheCases`, and review the diff.
final class ConformanceTests: XCTestCase {
    static let casesURL = RulecBinary.packageRoot.appendingPathComponent("conformance/cases.json")

    struct Case: Codable, Equatable {
        var name: String
        /// The rule files: the first is loaded; others are read by `rules PATH` steps.
        var files: [File]
        var zone: String
        var installID: String
        var steps: [Step]
    }

    struct File: Codable, Equatable {
        var path: String
        var text: String
    }

    struct Step: Codable, Equatable {
        /// Seconds after the start, 2026-01-01T00:00:00Z.
        var at: Int64
        /// The call: the first word of `text` (`launch`, `trigger`, `try`, `check`...).
        var call: String
        /// The step as a timeline writes it, without its time (grammar.md, "Timelines").
        var text: String
        /// What the step answers, for those that answer.
        var expect: Expect?
    }

    struct Expect: Codable, Equatable {
        var result: String
        var reason: String?
        var name: String?
        var condition: String?
    }

    /// The timeline output's fields.
    struct Output: Codable {
        var result: String
        var reason: String?
        var name: String?
        var condition: String?
        var seconds: Int64
    }

    // MARK: - Running a case

    /// Writes the case's files and its trace as a timeline into a new folder, replays it, and
    /// returns what each answering step answered.
    static func run(_ item: Case) throws -> [Expect] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for file in item.files {
            let url = folder.appendingPathComponent(file.path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try file.text.write(to: url, atomically: true, encoding: .utf8)
        }
        let timeline = item.steps.map { "\($0.at)s \($0.text)" }.joined(separator: "\n") + "\n"
        let timelineFile = SourceFile(path: folder.appendingPathComponent("case.timeline").path, text: timeline)
        let rules = SourceFile(path: item.files[0].path, text: item.files[0].text)
        let lines = try TimelineRunner.replay(
            rules: [rules], timeline: timelineFile, json: true, timeZone: TimeZone(identifier: item.zone)!,
            installID: item.installID)
        return try lines.map { line in
            let output = try JSONDecoder().decode(Output.self, from: Data(line.utf8))
            return Expect(result: output.result, reason: output.reason, name: output.name, condition: output.condition)
        }
    }

    static let answering: Set<String> = ["try", "check", "next", "info", "present", "finish", "rules"]

    /// A case from rule files and a timeline's text (its steps one per line; `#` comments and
    /// `#>` lines are left out), its expectations filled by running it.
    static func make(_ name: String, files: [File], timeline: String, zone: String = "UTC") throws -> Case {
        var steps: [Step] = []
        for raw in timeline.split(separator: "\n") {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.isEmpty { continue }
            // A comment after the step (no step has `#` in it but a quoted name, which these do not).
            if let hash = line.range(of: " #") { line = String(line[..<hash.lowerBound]) }
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, let at = TimelineText.seconds(String(parts[0])) else {
                throw NSError(domain: "conformance", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(name): \(line)"])
            }
            let text = parts[1].trimmingCharacters(in: .whitespaces)
            let call = String(text.prefix { $0 != " " })
            steps.append(Step(at: at, call: call, text: text, expect: nil))
        }
        var item = Case(name: name, files: files, zone: zone, installID: TimelineRunner.installID, steps: steps)
        var answers = try run(item)[...]
        for index in item.steps.indices where answering.contains(item.steps[index].call) {
            item.steps[index].expect = answers.popFirst()
        }
        return item
    }

    // MARK: - The cases

    func testEveryCaseHolds() throws {
        let cases = try JSONDecoder().decode([Case].self, from: Data(contentsOf: Self.casesURL))
        XCTAssertGreaterThanOrEqual(cases.count, 300)
        for item in cases {
            let expected = item.steps.compactMap(\.expect)
            XCTAssertEqual(try Self.run(item), expected, item.name)
        }
    }

    /// The cases cover every clause keyword (as the parsed rules have them), function, scope and
    /// language version.
    func testTheCasesCoverTheLanguage() throws {
        let cases = try JSONDecoder().decode([Case].self, from: Data(contentsOf: Self.casesURL))
        let texts = cases.flatMap { $0.files.map(\.text) }
        var keywords: Set<String> = []
        for text in texts {
            let program = RuleCompiler.check(text: text).program
            for scenario in program.scenarios {
                for clause in scenario.decl.clauses { keywords.insert(clause.kind.keyword) }
            }
            for group in program.groups { for clause in group.clauses { keywords.insert(clause.kind.keyword) } }
        }
        XCTAssertEqual(keywords, Set(ClauseKind.keywords))
        for function in BuiltinFunction.names {
            XCTAssertTrue(texts.contains { $0.contains(function + "(") }, function)
        }
        for word in ["per install", "per version", "per session", "within", "not during", "retired", " was "] {
            XCTAssertTrue(texts.contains { $0.contains(word) }, word)
        }
        for version in ["# language 1.1", "# language 1.2"] {
            XCTAssertTrue(texts.contains { $0.hasPrefix(version) }, version)
        }
        XCTAssertTrue(texts.contains { !$0.hasPrefix("# language") }, "language 1.0")
        let zones = Set(cases.map(\.zone) + cases.flatMap { $0.steps.filter { $0.call == "timezone" }.map(\.text) })
        XCTAssertGreaterThan(zones.count, 2)
    }

    func testWriteTheCases() throws {
        guard ProcessInfo.processInfo.environment["RULES_WRITE_CONFORMANCE"] != nil else {
            throw XCTSkip("set RULES_WRITE_CONFORMANCE=1 to generate conformance/cases.json again")
        }
        var cases: [Case] = []
        // The example timelines, each with its rules (and the files its `rules` steps read).
        let examples = RulecBinary.packageRoot.appendingPathComponent("examples")
        let enumerator = FileManager.default.enumerator(atPath: examples.path)!
        var timelines: [String] = []
        while let entry = enumerator.nextObject() as? String {
            if entry.hasSuffix(".timeline") { timelines.append(entry) }
        }
        for entry in timelines.sorted() {
            let folder = (entry as NSString).deletingLastPathComponent
            let base = ((entry as NSString).lastPathComponent as NSString).deletingPathExtension
            let timeline = try String(contentsOf: examples.appendingPathComponent(entry), encoding: .utf8)
            var files = [
                File(
                    path: base + ".rules",
                    text: try String(
                        contentsOf: examples.appendingPathComponent(folder).appendingPathComponent(base + ".rules"),
                        encoding: .utf8))
            ]
            for line in timeline.split(separator: "\n") {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                if words.count >= 3, words[1] == "rules" {
                    let path = String(words[2])
                    files.append(
                        File(
                            path: path,
                            text: try String(
                                contentsOf: examples.appendingPathComponent(folder).appendingPathComponent(path),
                                encoding: .utf8)))
                }
            }
            cases.append(try Self.make("examples/" + entry, files: files, timeline: timeline))
        }
        // The grid: each rule text against each trace.
        for (r, rules) in Self.grid.enumerated() {
            for (t, trace) in Self.traces.enumerated() {
                cases.append(
                    try Self.make(
                        "grid/\(r)-\(t)", files: [File(path: "case.rules", text: rules)], timeline: trace.text,
                        zone: trace.zone))
            }
        }
        // Event properties: their rules against traces whose triggers carry properties.
        for (r, rules) in Self.propertyGrid.enumerated() {
            for (t, trace) in Self.propertyTraces.enumerated() {
                cases.append(
                    try Self.make(
                        "properties/\(r)-\(t)", files: [File(path: "case.rules", text: Self.properties + rules)],
                        timeline: trace))
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try FileManager.default.createDirectory(
            at: Self.casesURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (encoder.encode(cases) + Data("\n".utf8)).write(to: Self.casesURL)
    }

    /// Rule texts over the streams `a` and `b`, each with a scenario `S`: every clause, scope,
    /// function and version.
    static let grid: [String] = [
        "scenario S < on a; min_events 3 >",
        "scenario S < on a; min_events 2 per session >",
        "scenario S < on a; min_events 2 per version >",
        "scenario S < on a; min_events 2 within 1h >",
        "scenario S < on a; max_events 2 >",
        "scenario S < on a; max_events 1 per session >",
        "scenario S < on a; max_events 3 within 1d >",
        "scenario S < on a; max_exec 2 >",
        "scenario S < on a; max_exec 1 per session >",
        "scenario S < on a; max_exec 1 per version >",
        "scenario S < on a; max_exec 2 within 1d >",
        "scenario S < on a; since_first 1h >",
        "scenario S < on a; since_last 30m >",
        "scenario S < on a; between 1d >",
        "scenario S < on a; between 2h; max_exec 3 >",
        "scenario S < on a, b; min_events 2 >",
        "scenario S < min_events 5; since_first 7d; max_exec 4; between 2d >",
        "scenario S < on a; min_events 2 per session; max_exec 1 per session; since_first 1h >",
        "scenario S < when (count(a) > 2) >",
        "scenario S < when count(a per session) >= 1 and since_last(a) >= 1h >",
        "scenario S < when since_first(a) >= 1d >",
        "scenario S < on a; when executions(S within 1d) == 0 >",
        "scenario S < when todo(task) or upgraded >",
        "param p: int = 3\nscenario S < on a; when count(a) >= p >",
        "param on_sale: bool = false\nscenario S < on a; when not on_sale; min_events 1 >",
        "group G < max_exec 1 within 1d; between 2h > {\n    scenario S < on a; min_events 1 >\n    scenario T < on a >\n}",
        "scenario S < on a; min_events 1; priority 2 >\nscenario T < on a; priority 5 >",
        "# language 1.1\nscenario S < on a; between 1h, 1d, 3d >",
        "# language 1.1\nscenario S < on a; min_days 2 within 3d >",
        "# language 1.1\nscenario S < when active_days(a within 7d) >= 2 >",
        "# language 1.1\nscenario S was Old < on a; min_events 1 >",
        "# language 1.2\nscenario S < on a; after declined next version >",
        "# language 1.2\nscenario S < on a; after later 1d >",
        "# language 1.2\nscenario S < on a; after accepted never >",
        "# language 1.2\nscenario S < on a; after dismissed next session >",
        "# language 1.2\nscenario S < on a; when count(S: declined) == 0 >",
        "# language 1.2\nscenario S < on a; when since_last(crash) >= 1d >",
        "# language 1.2\nscenario S < on a; not during 22:00-08:00 >",
        "# language 1.2\nscenario S < on a; during 09:00-17:00 >",
        "# language 1.2\nscenario S < on a; days weekdays >",
        "# language 1.2\nscenario S < on a; days sat, sun >",
        "# language 1.2\nscenario S < on a; from 2026-01-02 >",
        "# language 1.2\nscenario S < on a; until 2026-01-03 >",
        "# language 1.2\nscenario S < on a; when (bucket(\"x\") < 50) >",
        "# language 1.2\nscenario S < on a; when bucket(\"y\") >= 50 >",
        "# language 1.2\nretired scenario Old\nscenario S < on a >",
        "# language 1.2\ngroup G < max_exec 1 within 1d; not during 22:00-08:00 > {\n    scenario S < on a >\n}",
        "# language 1.2\nscenario S < on a, crash; min_events 2 >",
        "# language 1.2\nscenario S < on a; when count(problem) == 0 >",
        "scenario S < on a; max_events 0 per session; max_exec 5 >",
        "scenario S < on a; min_events 2 per install; max_exec 1 per install >",
        "# language 1.2\nscenario S < on a; holdout 50% \"h\" >\nscenario T < on a; holdout 10% \"t\" >",
    ]

    /// The events of the property grid, with properties of each type (language 1.2).
    static let properties = "# language 1.2\nevent a(n: int, k: string, f: bool), b(n: int, k: string, f: bool), go\n"

    /// Rule texts over `a` and `b` with properties, each with a scenario `S`: every function that
    /// takes a filter, `min_events ... where`, every operator and property type, and scopes.
    static let propertyGrid: [String] = [
        "scenario S < on go; when count(a where n >= 10) >= 2 >",
        "scenario S < on go; when count(a where k == \"x\" and (n < 5) within 1h) >= 1 >",
        "scenario S < on go; when since_last(a where not (n == 3)) >= 30m >",
        "scenario S < on go; when since_first(a where k != \"y\" or f) >= 1h >",
        "scenario S < on go; when active_days(a where (n > 2) within 7d) >= 2 >",
        "scenario S < on go; when count(a where f == false per session) == 0 >",
        "scenario S < on go; when count(a where n <= 10 per version) >= 2 >",
        "scenario S < on a; min_events 2 where n >= 10 >",
        "scenario S < on a, b; min_events 3 where k == \"x\" within 1d >",
        "scenario S < on a; min_events 1 where f per session; max_exec 1 per session >",
        "scenario S < on go; when sum(a.n) >= 25 >",
        "scenario S < on go; when sum(a.n where k == \"x\" per session) >= 10 and sum(b.n per version) == 0 >",
        "scenario S < on go; when sum(a.n within 1h) >= 12 and (sum(b.n where k == \"x\" within 1d) < 30) >",
    ]

    /// Traces of triggers with properties (some missing, one event without any) for the property grid.
    static let propertyTraces: [String] = [
        """
        0 launch 1.0
        0 trigger a n=12 k=x f=true
        0 trigger go
        0 try S
        1h trigger a n=3 k=x f=false
        1h trigger b n=20 k=x
        90m trigger go
        90m try S
        2h trigger a n=15 k=y
        2h trigger go
        150m try S
        1d launch 1.0
        1d trigger a n=10 k=x f=true
        1d trigger go
        1d try S
        3d trigger a n=1 k=x f=true
        3d trigger b k=x
        3d try S
        """,
        """
        0 launch 1.0
        0 trigger a
        0 trigger a n=4 k=x
        30m trigger b n=4 k=x f=false
        30m try S
        2h launch 2.0
        2h trigger a n=11 k=z f=false
        2h trigger a n=11 k=x f=true
        2h1m try S
        2d trigger a n=3 k=x
        2d try S
        8d try S
        """,
    ]

    /// Traces over the streams `a` and `b` and the scenario `S`, which every rule text has.
    static let traces: [(zone: String, text: String)] = [
        (
            "UTC",
            """
            0 launch 1.0
            0 trigger a
            0 try S
            1h trigger a
            90m try S
            2h trigger a
            150m try S
            1d try S
            3d try S
            """
        ),
        (
            "UTC",
            """
            0 launch 1.0
            0 trigger a
            0 try S
            1h launch 1.0
            1h trigger a
            1h trigger a
            2h try S
            1d launch 2.0
            1d try S
            1d1h trigger a
            1d2h try S
            2d check count(a) >= 3
            """
        ),
        (
            "Europe/Paris",
            """
            0 launch 1.0
            9h trigger a
            9h try S
            23h try S
            1d9h trigger b
            1d10h trigger a
            1d10h try S
            2d10h try S
            3d23h try S
            9d10h trigger a
            9d10h try S
            """
        ),
        (
            "America/New_York",
            """
            0 launch 1.0
            0 trigger a
            12h trigger a
            12h try S
            1d timezone Asia/Tokyo
            1d try S
            1d6h trigger a
            1d6h try S
            2d timezone America/New_York
            2d14h try S
            3d3h try S
            """
        ),
        (
            "UTC",
            """
            0 launch 1.0
            0 trigger a
            0 trigger a
            1h present S
            1h finish S declined
            2h try S
            1d try S
            2d launch 2.0
            2d present S
            2d finish S later
            3d try S
            9d try S
            10d crash
            10d1h try S
            11d2h try S
            """
        ),
        (
            "UTC",
            """
            0 launch 1.0
            0 trigger a
            0 trigger a
            0 trigger a
            0 try S
            1d try S
            2d try S
            2d reset S
            2d1h try S
            3d next
            3d check count(a) >= 3
            """
        ),
    ]
}

/// Offsets as timelines write them (`90m`, `1d2h`, `3600s`, `0`).
enum TimelineText {
    static func seconds(_ text: String) -> Int64? {
        if text == "0" { return 0 }
        var total: Int64 = 0
        var number: Int64 = 0
        var digits = false
        for character in text {
            if let digit = character.wholeNumberValue {
                number = number * 10 + Int64(digit)
                digits = true
                continue
            }
            guard digits else { return nil }
            switch character {
            case "s": total += number
            case "m": total += number * 60
            case "h": total += number * 3_600
            case "d": total += number * 86_400
            case "w": total += number * 604_800
            default: return nil
            }
            number = 0
            digits = false
        }
        return digits ? nil : total
    }
}
