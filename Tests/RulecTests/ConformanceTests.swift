import Foundation
import RuleLang
import RuleTimeline
import TestSupport
import XCTest

/// The language-neutral conformance cases of `conformance/cases.json`: rules, a zone, an install
/// id, and a trace of calls at times with the answers expected. Every case runs here;
/// `conformance/README.md` says how another implementation runs them, and
/// `conformance/case.schema.json` is a case's JSON Schema.
///
/// The cases and their answers come from the whole-language model (`TestSupport`'s
/// `LanguageModel`, written from grammar.md alone), never from the engine: seeded random rules
/// of every language version and random traces, each answer the model's. To write them again
/// after the model or the language changes: `RULES_WRITE_CONFORMANCE=1 swift test --filter
/// ConformanceTests/testWriteTheCases`, and review the diff.
final class ConformanceTests: XCTestCase {
    static let casesURL = RulecBinary.packageRoot.appendingPathComponent("conformance/cases.json")
    static let schemaURL = RulecBinary.packageRoot.appendingPathComponent("conformance/case.schema.json")
    /// How many cases the writer makes.
    static let caseCount = 1_200

    /// The file: the language version the cases hold to, the schema of a case, and the cases.
    struct Corpus: Codable {
        var spec: String
        var schema: String
        var generator: String
        var cases: [Case]
    }

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
        /// The call: the first word of `text` (`launch`, `trigger`, `try`, `next`...).
        var call: String
        /// The step as a timeline writes it, without its time (grammar.md, "Timelines").
        var text: String
        /// What the step answers, for those that answer.
        var expect: Expect?
    }

    struct Expect: Codable, Equatable {
        /// `yes`, `no`, `shown`, a scenario's name or `none` (`next`), an outcome (`finish`),
        /// `swapped` (`rules`).
        var result: String
        /// A `no`'s failing clauses, each as `explain` writes it, in its order.
        var failing: [String]?
    }

    /// The timeline output's fields.
    struct Output: Codable {
        var result: String
        var failing: [String]?
    }

    static func load() throws -> Corpus {
        try JSONDecoder().decode(Corpus.self, from: Data(contentsOf: casesURL))
    }

    // MARK: - Running a case

    /// Writes the case's files and its trace as a timeline into a new folder, replays it, and
    /// returns what each answering step answered.
    static func run(_ item: Case) throws -> [Expect] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for file in item.files {
            try file.text.write(to: folder.appendingPathComponent(file.path), atomically: true, encoding: .utf8)
        }
        let timeline = item.steps.map { "\($0.at)s \($0.text)" }.joined(separator: "\n") + "\n"
        let timelineFile = SourceFile(path: folder.appendingPathComponent("case.timeline").path, text: timeline)
        let rules = SourceFile(path: item.files[0].path, text: item.files[0].text)
        let lines = try TimelineRunner.replay(
            rules: [rules], timeline: timelineFile, json: true, timeZone: TimeZone(identifier: item.zone)!,
            installID: item.installID)
        return try lines.map { line in
            let output = try JSONDecoder().decode(Output.self, from: Data(line.utf8))
            return Expect(result: output.result, failing: output.failing)
        }
    }

    // MARK: - The cases

    func testEveryCaseHolds() throws {
        let corpus = try Self.load()
        XCTAssertGreaterThanOrEqual(corpus.cases.count, 1_000)
        XCTAssertEqual(corpus.spec, "1.3")
        for item in corpus.cases {
            let expected = item.steps.compactMap(\.expect)
            XCTAssertEqual(try Self.run(item), expected, item.name)
            if testRun?.failureCount ?? 0 > 10 { return }
        }
    }

    /// Every case is what the schema says a case is.
    func testEveryCaseMatchesTheSchema() throws {
        let schema = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: Self.schemaURL))
        let file = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: Self.casesURL))
        guard case .object(let top) = file, case .array(let cases)? = top["cases"] else {
            return XCTFail("cases.json is an object with an array of cases")
        }
        XCTAssertEqual(top["schema"], .string("case.schema.json"))
        for (index, item) in cases.enumerated() {
            XCTAssertEqual(SchemaCheck.problems(item, schema), [], "case \(index)")
        }
        // The check finds what is wrong: a case without its steps, a zone that is a number.
        guard case .object(var broken) = cases[0] else { return XCTFail("a case is an object") }
        broken["steps"] = nil
        XCTAssertEqual(SchemaCheck.problems(.object(broken), schema), ["$: 'steps' is missing"])
        guard case .object(var other) = cases[0] else { return }
        other["zone"] = .integer(3)
        XCTAssertEqual(SchemaCheck.problems(.object(other), schema), ["$.zone: not string"])
    }

    /// The cases cover every clause keyword (as the parsed rules have them), function, scope,
    /// construct, language version and timeline step the model makes.
    func testTheCasesCoverTheLanguage() throws {
        let cases = try Self.load().cases
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
        let words = [
            "per version", "per session", "within", "not during", "per day", "per week", "retired", " was ", "where",
            "holdout", "after", "upgraded", "priority", "group", "param", ": declined", "crash", "problem",
            "not in ",
        ]
        for word in words { XCTAssertTrue(texts.contains { $0.contains(word) }, word) }
        for version in ["# language 1.1", "# language 1.2", "# language 1.3"] {
            XCTAssertTrue(texts.contains { $0.hasPrefix(version) }, version)
        }
        XCTAssertTrue(texts.contains { !$0.hasPrefix("# language") }, "language 1.0")
        let calls = Set(cases.flatMap { $0.steps.map(\.call) })
        XCTAssertEqual(
            calls,
            [
                "launch", "trigger", "done", "todo", "set", "try", "next", "present", "finish", "outcome", "crash",
                "problem", "timezone", "rules", "enter", "leave", "visible", "hidden", "background", "foreground",
            ])
        let zones = Set(cases.map(\.zone) + cases.flatMap { $0.steps.filter { $0.call == "timezone" }.map(\.text) })
        XCTAssertGreaterThan(zones.count, 4)
        let answers = cases.flatMap { $0.steps.compactMap(\.expect?.result) }
        for result in ["yes", "no", "shown", "none", "swapped", "declined"] {
            XCTAssertTrue(answers.contains(result), result)
        }
    }

    func testWriteTheCases() throws {
        guard ProcessInfo.processInfo.environment["RULES_WRITE_CONFORMANCE"] != nil else {
            throw XCTSkip("set RULES_WRITE_CONFORMANCE=1 to generate conformance/cases.json again")
        }
        let start = 1_767_225_600.0  // 2026-01-01T00:00:00Z, where a timeline starts
        let zones = ["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Asia/Kathmandu", "Australia/Sydney"]
        var cases: [Case] = []
        var seed = 0
        while cases.count < Self.caseCount {
            seed += 1
            var random = ModelRandom(seed: 1_000_000 + seed)
            let rules = ModelRules.random(&random, start: start)
            // Rules the checker refuses (windows that share no day): another seed.
            if RuleCompiler.check(text: rules.text).hasErrors { continue }
            if let swapped = rules.swapped, RuleCompiler.check(text: swapped).hasErrors { continue }
            let zone = random.pick(zones)
            let installID = "install-\(seed)"
            var model = LanguageModel(
                rules: rules, start: start, zone: TimeZone(identifier: zone)!, installID: installID)
            var steps: [Step] = []
            func add(_ step: ModelStep) {
                let answer = model.apply(step)
                let text = step.timelineText
                guard !text.isEmpty else { return }
                let expect = answer.map { Expect(result: $0.result, failing: $0.result == "no" ? $0.failing : nil) }
                steps.append(
                    Step(
                        at: Int64(model.now - start), call: String(text.prefix { $0 != " " }), text: text,
                        expect: expect))
            }
            add(.launch("1"))
            for _ in 0..<30 { add(model.randomStep(&random, floor: start)) }
            var files = [File(path: "case.rules", text: rules.text)]
            if let swapped = rules.swapped { files.append(File(path: "swapped.rules", text: swapped)) }
            cases.append(
                Case(name: "model/\(seed)", files: files, zone: zone, installID: installID, steps: steps))
        }
        let corpus = Corpus(
            spec: "1.3", schema: "case.schema.json",
            generator: "the whole-language model, Tests/TestSupport/LanguageModel.swift (seeds 1000001...)",
            cases: cases)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (encoder.encode(corpus) + Data("\n".utf8)).write(to: Self.casesURL)
    }
}

/// A decoded JSON value, its numbers told apart (an integer is not a bool, nor a fraction).
enum JSONValue: Decodable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

/// The part of JSON Schema that `case.schema.json` uses (`type`, `required`, `properties`,
/// `additionalProperties: false`, `items`, `enum`, `minItems`, `$ref` into `$defs`), checked
/// over a decoded JSON value: a list of what does not match, empty when it does.
enum SchemaCheck {
    static func problems(_ value: JSONValue, _ schema: JSONValue, root: JSONValue? = nil, at path: String = "$")
        -> [String]
    {
        guard case .object(var rule) = schema else { return ["\(path): the schema is not an object"] }
        let root = root ?? schema
        if case .string(let ref)? = rule["$ref"], ref.hasPrefix("#/$defs/"), case .object(let top) = root,
            case .object(let defs)? = top["$defs"], case .object(let target)? = defs[String(ref.dropFirst(8))]
        {
            rule = target
        }
        if case .string(let type)? = rule["type"] {
            let matches: Bool
            switch (type, value) {
            case ("object", .object), ("array", .array), ("string", .string), ("integer", .integer): matches = true
            case ("object", _), ("array", _), ("string", _), ("integer", _): matches = false
            default: matches = true
            }
            if !matches { return ["\(path): not \(type)"] }
        }
        var found: [String] = []
        if case .array(let choices)? = rule["enum"], case .string = value, !choices.contains(value) {
            found.append("\(path): not one of the values listed")
        }
        if case .object(let object) = value {
            if case .array(let required)? = rule["required"] {
                for case .string(let key) in required where object[key] == nil {
                    found.append("\(path): '\(key)' is missing")
                }
            }
            var properties: [String: JSONValue] = [:]
            if case .object(let listed)? = rule["properties"] { properties = listed }
            for key in object.keys.sorted() {
                if let property = properties[key] {
                    found += problems(object[key]!, property, root: root, at: path + "." + key)
                } else if rule["additionalProperties"] == .bool(false) {
                    found.append("\(path): '\(key)' is not allowed")
                }
            }
        }
        if case .array(let array) = value {
            if case .integer(let minimum)? = rule["minItems"], array.count < minimum {
                found.append("\(path): fewer than \(minimum) items")
            }
            if let items = rule["items"] {
                for (index, item) in array.enumerated() {
                    found += problems(item, items, root: root, at: path + "[\(index)]")
                }
            }
        }
        return found
    }
}
