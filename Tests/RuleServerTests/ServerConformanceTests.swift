import Foundation
import RuleLang
import RuleRuntime
import RuleServer
import TestSupport
import XCTest

/// Every case of `conformance/cases.json` (the whole-language model's answers) run on the server,
/// each case an install of its own: each step a server call, each answer the case's.
final class ServerConformanceTests: XCTestCase {
    struct Corpus: Decodable { var cases: [Case] }
    struct Case: Decodable {
        var name: String
        var files: [File]
        var zone: String
        var installID: String
        var steps: [Step]
    }
    struct File: Decodable {
        var path: String
        var text: String
    }
    struct Step: Decodable {
        var at: Int64
        var text: String
        var expect: Expect?
    }
    struct Expect: Decodable, Equatable {
        var result: String
        var failing: [String]?
    }

    func testEveryConformanceCaseOnTheServer() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let corpus = try JSONDecoder().decode(
            Corpus.self, from: Data(contentsOf: root.appendingPathComponent("conformance/cases.json")))
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        var answered = 0
        var skipped = 0
        for item in corpus.cases {
            // A server sees no screen: the app's visibility and background calls are the
            // device's (docs/server.md), so the cases that make them are played on devices only.
            let screen: Set<String> = ["visible", "hidden", "background", "foreground"]
            if item.steps.contains(where: { screen.contains(String($0.text.prefix { $0 != " " })) }) {
                skipped += 1
                continue
            }
            var options = RuleServer.Options(connections: 1)
            options.engine.timeZone = TimeZone(identifier: item.zone)!
            let server = try RuleServer(
                sources: [SourceFile(path: item.files[0].path, text: item.files[0].text)], database: pg.conninfo,
                options: options)
            let install = item.installID
            // Tokens of the presentations open, by scenario (a former name is the same scenario).
            var tokens: [String: String] = [:]
            var contexts: Set<String> = []
            func canonical(_ name: String) -> String { name == "S2" ? "S" : name }
            for step in item.steps {
                let now = start.addingTimeInterval(TimeInterval(step.at))
                let words = step.text.split(separator: " ").map(String.init)
                var answer: Expect?
                switch words[0] {
                case "launch": try server.startSession(install: install, version: words[1], at: now)
                case "trigger":
                    var properties: [String: PropertyValue] = [:]
                    for pair in words.dropFirst(2) {
                        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                        properties[parts[0]] = Int64(parts[1]).map { .int($0) } ?? .string(parts[1])
                    }
                    try server.trigger(
                        install: install, words[1], properties: properties.isEmpty ? nil : properties, at: now)
                case "done": try server.markDone(install: install, words[1], at: now)
                case "todo": try server.toDo(install: install, words[1], at: now)
                case "set": try server.set(install: install, words[1], to: .int(Int64(words[2])!), at: now)
                case "try", "present":
                    let before = try server.explain(install: install, words[1], at: now, contexts: contexts)
                    let shown: Bool
                    if words[0] == "try" {
                        shown = try server.tryToExecute(install: install, words[1], at: now, contexts: contexts)
                    } else {
                        let token = try server.present(install: install, words[1], at: now, contexts: contexts)
                        if let token { tokens[canonical(words[1])] = token }
                        shown = token != nil
                    }
                    answer =
                        shown
                        ? Expect(result: words[0] == "try" ? "yes" : "shown", failing: nil)
                        : Expect(result: "no", failing: before.failing.map(\.clause))
                case "next":
                    let names = Array(words.dropFirst())
                    answer = Expect(
                        result: try server.executeNext(install: install, among: names, at: now, contexts: contexts)
                            ?? "none", failing: nil)
                case "finish":
                    let token = try XCTUnwrap(tokens[canonical(words[1])], "\(item.name): \(step.text)")
                    try server.finish(install: install, words[1], token: token, Outcome(rawValue: words[2])!, at: now)
                    tokens[canonical(words[1])] = nil
                    answer = Expect(result: words[2], failing: nil)
                case "outcome":
                    try server.recordOutcome(install: install, Outcome(rawValue: words[2])!, of: words[1], at: now)
                case "crash": try server.relaunchAfterCrash(install: install, at: now)
                case "problem": try server.recordProblem(install: install, at: now)
                // The app's contexts: its process's, sent with each call that judges.
                case "enter": contexts.insert(words[1])
                case "leave": contexts.remove(words[1])
                case "timezone": try server.setTimeZone(install: install, TimeZone(identifier: words[1])!, at: now)
                case "rules":
                    let file = try XCTUnwrap(item.files.first { $0.path == words[1] })
                    try server.replaceRules(sources: [SourceFile(path: file.path, text: file.text)])
                    answer = Expect(result: "swapped", failing: nil)
                default: XCTFail("\(item.name): a step the server does not take: \(step.text)")
                }
                XCTAssertEqual(answer, step.expect, "\(item.name) at \(step.at)s: \(step.text)")
                if answer != nil { answered += 1 }
            }
            if testRun?.failureCount ?? 0 > 5 { return }
        }
        XCTAssertGreaterThan(answered, 5_000)
        XCTAssertLessThan(skipped, corpus.cases.count / 3, "most cases make no visibility call")
    }
}
