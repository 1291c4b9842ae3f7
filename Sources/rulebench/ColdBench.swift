import Foundation
import RuleLang
import RuleRuntime

/// Cold start: an engine built over a stored state, at 1,000 and 100,000 streams against
/// reading the file, and over examples/app.rules with a year's state.
func coldBenchmarks(_ goals: inout [Goal]) throws {
    // Cold start at 1,000 and 100,000 streams that scenarios count, against reading the file.
    var rules = ""
    for k in 0..<50 {
        rules +=
            "scenario S\(k) < on launch, e\(k); min_events \(k % 7); since_first \(k)d; max_exec 4 within 7d; between 2d; when count(e\(k + 1) per session) >= 1 >\n"
    }
    for streams in [1_000, 100_000] {
        let coldPath = temporaryPath("cold-\(streams).state")
        let coldRules = rules + "scenario Wide < on \((0..<streams).map { "c\($0)" }.joined(separator: ", ")) >\n"
        do {
            let seed = try RuleEngine(source: coldRules, store: FileStore(url: coldPath))
            for stream in 0..<streams { seed.trigger("c\(stream)") }
        }
        try FileStore(url: coldPath).compact()
        let readFile = measure(rounds: 11, batch: 1) { _ = FileManager.default.contents(atPath: coldPath.path) }
        let cold = measure(rounds: 11, batch: 1) {
            _ = try? RuleEngine(source: coldRules, store: FileStore(url: coldPath))
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: coldPath.path)[.size] as? Int) ?? 0
        line(
            "cold start, \(streams) streams (\(size / 1024) KiB)",
            "median \(format(cold.median)); reading the file \(format(readFile.median))")
        // Where it goes: the rules naming the streams (\(coldRules.utf8.count / 1024) KiB of text), and
        // the same engine without stored state.
        let checkOnly = measure(rounds: 11, batch: 1) { _ = RuleCompiler.check(text: coldRules) }
        let noState = measure(rounds: 11, batch: 1) { _ = try? RuleEngine(source: coldRules) }
        line(
            "  of which: rules (\(coldRules.utf8.count / 1024) KiB)",
            "parse + check \(format(checkOnly.median)); engine without state \(format(noState.median))")
        if streams == 100_000 {
            // What the rules cost is paid by any engine over them: judged against reading the file
            // plus parsing and checking the same rules (no cached compiled form), interleaved so
            // that each round's ratio compares like with like on a shared machine.
            let rounds = interleaved(
                rounds: 11, batch: 1,
                [
                    { _ = try? RuleEngine(source: coldRules, store: FileStore(url: coldPath)) },
                    { _ = FileManager.default.contents(atPath: coldPath.path) },
                    { _ = RuleCompiler.check(text: coldRules) },
                ])
            let ratio = Samples(rounds.perRound.map { $0[0] / ($0[1] + $0[2]) })
            line(
                "  the same rounds: cold start, read, check",
                (0..<3).map { format(rounds.samples[$0].median) }.joined(separator: ", ") + " (medians)")
            line("  cold / (read + parse and check), per round", ratio.ratioSummary)
            goals.append(
                Goal(key: "cold_100k_vs_read_and_check", value: ratio.median, unit: "x", limit: 2, atMost: true))
        }
    }

    // Cold start as an app feels it: examples/app.rules over a state of a year's use.
    let appURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/app.rules")
    let appSources = [SourceFile(path: appURL.path, bytes: [UInt8](try Data(contentsOf: appURL)))]
    let appPath = temporaryPath("cold-app.state")
    do {
        let clock = ManualClock()
        let year = try RuleEngine(sources: appSources, store: FileStore(url: appPath), clock: clock)
        let known = year.program.knownStreams
        // A year: daily sessions, the app's events every day, a tag per article read, to-dos, params.
        for day in 0..<365 {
            year.startSession(version: day < 200 ? "1.0" : "1.1")
            for name in known { year.trigger(Event(name)) }
            _ = year.executeNext()
            if day < 330 { for k in 0..<3 { year.markDone("article-\(day * 3 + k)") } }
            if day % 7 == 0 { _ = year.toDo("weekly-\(day)", scope: .until(30 * 86_400), info: ["day": "\(day)"]) }
            clock.advance(by: 86_400)
        }
        for param in year.program.params {
            switch param.type {
            case .bool: try? year.set(Param<Bool>(param.name.text), to: true)
            case .int: try? year.set(Param<Int>(param.name.text), to: 12)
            case .string: try? year.set(Param<String>(param.name.text), to: "pro")
            case .duration: try? year.set(Param<TimeInterval>(param.name.text), to: 600)
            case nil: break
            }
        }
    }
    try FileStore(url: appPath).compact()
    let appStreams = try StateSnapshot(entries: FileStore(url: appPath).load()).streams.count
    let coldApp = measure(rounds: 21, batch: 1) {
        _ = try? RuleEngine(sources: appSources, store: FileStore(url: appPath))
    }
    let appSize = (try? FileManager.default.attributesOfItem(atPath: appPath.path)[.size] as? Int) ?? 0
    line("cold start, app.rules, a year's state (\(appStreams) streams, \(appSize / 1024) KiB)", coldApp.summary)
    goals.append(Goal(key: "cold_app_ms", value: coldApp.median / 1e6, unit: "ms", limit: 2, atMost: true))
}
