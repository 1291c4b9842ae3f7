import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// One shared file, engines on two versions of the rules: one renames a stream (`event open
/// was launch`), the other does not (an extension built with the bundled rules beside an app
/// that took delivered ones, or the app itself before and after a swap). Every engine counts the
/// whole history under the name its rules use, whichever wrote last.
final class SharedRenameTests: XCTestCase {
    private let old = "event launch\nscenario S < on launch; min_events 3 >"
    private let new = "# language 1.1\nevent open was launch\nscenario S < on open; min_events 3 >"

    func testAnEngineOnOldRulesBesideARenameKeepsCountingTheHistory() throws {
        let url = temporaryURL("rename.state")
        defer { removeFolder(of: url) }
        let stores = (0..<2).map { _ in FileStore(url: url, options: .init(shared: true)) }
        let app = try RuleEngine(source: old, store: stores[0])
        let widget = try RuleEngine(source: old, store: stores[1])
        app.trigger("launch")
        app.trigger("launch")
        try app.replaceRules(source: new)
        XCTAssertEqual(app.count("open"), 2, "the history moved with the rename")
        widget.trigger("launch")
        XCTAssertEqual(app.count("open"), 3, "the old rules' event counts on the renamed stream")
        XCTAssertTrue(app.canExecute("S"))
        XCTAssertEqual(widget.count("launch"), 3, "the old rules still see the whole history")
        app.trigger("open")
        XCTAssertEqual(widget.count("launch"), 4)
        XCTAssertEqual(app.count("open"), 4)
    }

    /// Seeded runs: engines on either rules, swaps both ways, engines opened on the file at
    /// any moment (their load moves the history to their name), triggers from any of them in
    /// any order. After every step each live engine counts every trigger acknowledged so far
    /// (the model: a plain counter), and so do fresh engines on either rules at the end.
    func testEveryEngineCountsEveryTriggerWhicheverRulesItRuns() throws {
        for seed in 1...12 {
            var generator = SeededGenerator(seed: UInt64(seed))
            let url = temporaryURL("rename-\(seed).state")
            defer { removeFolder(of: url) }
            var engines: [(engine: RuleEngine, renamed: Bool)] = []
            func open(renamed: Bool) throws {
                // Small files: compactions by one engine replace the file under the others, which
                // then read it whole.
                let store = FileStore(url: url, options: .init(compactionThreshold: 1_024, shared: true))
                engines.append((try RuleEngine(source: renamed ? new : old, store: store), renamed))
            }
            try open(renamed: false)
            try open(renamed: false)
            var total = 0
            for step in 0..<60 {
                let roll = Int.random(in: 0..<20, using: &generator)
                let k = Int.random(in: 0..<engines.count, using: &generator)
                if roll == 0 && engines.count < 5 {
                    try open(renamed: Bool.random(using: &generator))
                } else if roll == 1 {
                    engines[k].renamed.toggle()
                    try engines[k].engine.replaceRules(source: engines[k].renamed ? new : old)
                } else {
                    engines[k].engine.trigger(engines[k].renamed ? "open" : "launch")
                    total += 1
                }
                for (index, (engine, renamed)) in engines.enumerated() {
                    XCTAssertEqual(
                        engine.count(renamed ? "open" : "launch"), total,
                        "seed \(seed), step \(step), engine \(index) on the \(renamed ? "new" : "old") rules")
                }
            }
            engines = []
            for rules in [old, new, old] {
                let fresh = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
                XCTAssertEqual(fresh.count(rules == new ? "open" : "launch"), total, "seed \(seed), a fresh engine")
            }
        }
    }

    /// An engine whose start writes (here the move of a renamed stream's history) lets go of the
    /// file's lock when its initializer returns: another process's next call does not wait for
    /// this one's first call (it used to, and one in the same process waited for good).
    func testAnEngineThatWritesAtItsStartLetsGoOfTheLock() throws {
        let url = temporaryURL("start.state")
        defer { removeFolder(of: url) }
        let first = try RuleEngine(source: old, store: FileStore(url: url, options: .init(shared: true)))
        first.trigger("launch")
        let store = FileStore(url: url, options: .init(shared: true))
        let renaming = try RuleEngine(source: new, store: store)
        XCTAssertFalse(store.holdsLock, "the lock is let go when the engine is made")
        XCTAssertEqual(renaming.count("open"), 1)
        XCTAssertEqual(first.count("launch"), 1)
    }

    /// The same across processes: two child processes, one on each rules, and this process on the
    /// old rules, trigger in a seeded order on one shared file (the children compact it every
    /// 2 KiB); after each step every one counts every trigger acknowledged so far.
    func testProcessesOnBothRulesCountEveryTrigger() throws {
        let url = temporaryURL("processes.state")
        defer { removeFolder(of: url) }
        let folder = url.deletingLastPathComponent()
        var children: [(process: FixtureProcess, stream: String)] = []
        for (name, rules, stream) in [("old", old, "launch"), ("new", new, "open")] {
            let rulesFile = folder.appendingPathComponent("\(name).rules")
            try rules.write(to: rulesFile, atomically: true, encoding: .utf8)
            children.append((try FixtureProcess(["serve", url.path, rulesFile.path], input: true), stream))
        }
        defer { for child in children { child.process.input?.closeFile() } }
        let here = try RuleEngine(source: old, store: FileStore(url: url, options: .init(shared: true)))
        var generator = SeededGenerator(seed: 7)
        var total = 0
        for step in 0..<300 {
            let who = Int.random(in: 0...2, using: &generator)
            if who == 2 {
                here.trigger("launch")
            } else {
                children[who].process.send("1800000000 t \(children[who].stream)")
                XCTAssertEqual(children[who].process.readLine(), "ok")
            }
            total += 1
            XCTAssertEqual(here.count("launch"), total, "step \(step), this process (old rules)")
            for (process, stream) in children {
                process.send("1800000000 n \(stream)")
                XCTAssertEqual(process.readLine(), "\(total)", "step \(step), the child counting '\(stream)'")
            }
        }
    }
}
