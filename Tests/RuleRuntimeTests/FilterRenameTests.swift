import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// Renaming an event (`event paid(...) was purchase`) carries its filtered streams
/// (`count(EVENT where ...)`), as it carries the event's own: at a restart, at a swap, back to
/// the older rules, and between processes on a shared file that run either rules.
final class FilterRenameTests: XCTestCase {
    private let old = """
        # language 1.2
        event purchase(amount: int), open
        scenario Big < on open; when count(purchase where amount >= 10) >= 2 and since_first(purchase where amount >= 10) >= 0s >
        scenario Spent < on open; when sum(purchase.amount) >= 0 >
        """
    private let new = """
        # language 1.2
        event paid(amount: int) was purchase
        event open
        scenario Big < on open; when count(paid where amount >= 10) >= 2 and since_first(paid where amount >= 10) >= 0s >
        scenario Spent < on open; when sum(paid.amount) >= 0 >
        """

    private func big(_ engine: RuleEngine, renamed: Bool) -> Int {
        engine.count(Event(EngineStream.filtered(renamed ? "paid" : "purchase", "amount >= 10")))
    }

    /// The sum of the amounts, by either rules.
    private func spent(_ engine: RuleEngine, renamed: Bool) -> Int {
        engine.count(Event(EngineStream.sum(renamed ? "paid" : "purchase", "amount")))
    }

    private func buy(_ engine: RuleEngine, renamed: Bool, _ amount: Int64) {
        engine.trigger(renamed ? "paid" : "purchase", properties: ["amount": .int(amount)])
    }

    func testARestartOnRenamingRulesKeepsTheFilteredHistoryAndGoesBack() throws {
        let url = temporaryURL("filter-rename.state")
        defer { removeFolder(of: url) }
        do {
            let engine = try RuleEngine(source: old, store: FileStore(url: url))
            buy(engine, renamed: false, 12)
            buy(engine, renamed: false, 3)
            buy(engine, renamed: false, 40)
            XCTAssertEqual(big(engine, renamed: false), 2)
        }
        do {
            let engine = try RuleEngine(source: new, store: FileStore(url: url))
            XCTAssertEqual(big(engine, renamed: true), 2, "the filtered history moved with the rename")
            XCTAssertEqual(spent(engine, renamed: true), 55, "and the sum")
            XCTAssertTrue(engine.canExecute("Big"))
            buy(engine, renamed: true, 11)
            XCTAssertEqual(big(engine, renamed: true), 3)
        }
        do {
            let engine = try RuleEngine(source: old, store: FileStore(url: url))
            XCTAssertEqual(big(engine, renamed: false), 3, "older rules find it under the former name")
            XCTAssertEqual(engine.count("purchase"), 4)
        }
    }

    func testASwapBothWaysKeepsTheFilteredHistory() throws {
        let engine = try RuleEngine(source: old)
        buy(engine, renamed: false, 12)
        buy(engine, renamed: false, 30)
        try engine.replaceRules(source: new)
        XCTAssertEqual(big(engine, renamed: true), 2)
        XCTAssertTrue(engine.canExecute("Big"))
        buy(engine, renamed: true, 10)
        try engine.replaceRules(source: old)
        XCTAssertEqual(big(engine, renamed: false), 3)
        XCTAssertEqual(engine.count("purchase"), 3)
    }

    /// An app that took the renaming rules and its widget on the bundled ones, on one shared file:
    /// each counts every qualifying trigger of either, under the name its rules use (the model:
    /// a plain count of the triggers of 10 or more), and so do fresh engines at the end.
    func testProcessesOnEitherRulesCountEveryFilteredTrigger() throws {
        for seed in 1...6 {
            var generator = SeededGenerator(seed: UInt64(seed))
            let url = temporaryURL("filter-rename-\(seed).state")
            defer { removeFolder(of: url) }
            func open(_ renamed: Bool) throws -> (RuleEngine, Bool) {
                let store = FileStore(url: url, options: .init(compactionThreshold: 1_024, shared: true))
                return (try RuleEngine(source: renamed ? new : old, store: store), renamed)
            }
            var engines = [try open(false), try open(false)]
            var total = 0
            var amounts = 0
            for step in 0..<50 {
                let k = Int.random(in: 0..<engines.count, using: &generator)
                switch Int.random(in: 0..<12, using: &generator) {
                case 0:
                    engines[k].1.toggle()
                    try engines[k].0.replaceRules(source: engines[k].1 ? new : old)
                case 1 where engines.count < 4:
                    engines.append(try open(Bool.random(using: &generator)))
                default:
                    let amount = Int64.random(in: 0..<20, using: &generator)
                    buy(engines[k].0, renamed: engines[k].1, amount)
                    if amount >= 10 { total += 1 }
                    amounts += Int(amount)
                }
                for (index, (engine, renamed)) in engines.enumerated() {
                    XCTAssertEqual(big(engine, renamed: renamed), total, "seed \(seed), step \(step), engine \(index)")
                    XCTAssertEqual(
                        spent(engine, renamed: renamed), amounts, "seed \(seed), step \(step), engine \(index)")
                }
            }
            engines = []
            for rules in [new, old, new] {
                let fresh = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
                XCTAssertEqual(big(fresh, renamed: rules == new), total, "seed \(seed), a fresh engine")
                XCTAssertEqual(spent(fresh, renamed: rules == new), amounts, "seed \(seed), a fresh engine")
            }
        }
    }

    /// The same across processes: a child on each rules and this process on the older ones, one
    /// shared file the children compact every 2 KiB; after each trigger every one counts every
    /// qualifying trigger so far under its own name.
    func testChildProcessesOnEitherRulesCountEveryFilteredTrigger() throws {
        let url = temporaryURL("filter-processes.state")
        defer { removeFolder(of: url) }
        let folder = url.deletingLastPathComponent()
        var children: [(process: FixtureProcess, renamed: Bool)] = []
        for (name, rules, renamed) in [("old", old, false), ("new", new, true)] {
            let rulesFile = folder.appendingPathComponent("\(name).rules")
            try rules.write(to: rulesFile, atomically: true, encoding: .utf8)
            children.append((try FixtureProcess(["serve", url.path, rulesFile.path], input: true), renamed))
        }
        defer { for child in children { child.process.input?.closeFile() } }
        let here = try RuleEngine(source: old, store: FileStore(url: url, options: .init(shared: true)))
        var generator = SeededGenerator(seed: 11)
        var total = 0
        for step in 0..<150 {
            let who = Int.random(in: 0...2, using: &generator)
            let amount = Int64.random(in: 0..<20, using: &generator)
            if who == 2 {
                buy(here, renamed: false, amount)
            } else {
                let event = children[who].renamed ? "paid" : "purchase"
                children[who].process.send("1800000000 p \(event) amount=\(amount)")
                XCTAssertEqual(children[who].process.readLine(), "ok")
            }
            if amount >= 10 { total += 1 }
            XCTAssertEqual(
                big(here, renamed: false), total, "step \(step), this process (old rules), who \(who) amount \(amount)")
            for (process, renamed) in children {
                process.send("1800000000 n \(EngineStream.filtered(renamed ? "paid" : "purchase", "amount >= 10"))")
                XCTAssertEqual(
                    process.readLine(), "\(total)", "step \(step), the child on the \(renamed ? "new" : "old") rules")
            }
        }
    }

    /// A start that races another process's write keeps what it writes: the child on the renaming
    /// rules starts while the other child triggers the former name. Its start's record (the
    /// rename it records) was refused as a conflict and not written again: the engines on the
    /// older rules then never knew of the rename and lost the history it moved (1 to 6 trials in
    /// 20 lost it before the fix). Every trial: a fresh engine on either rules counts both triggers.
    func testAStartRacingAnotherWriteKeepsItsRecord() throws {
        for trial in 0..<40 {
            let url = temporaryURL("start-\(trial).state")
            defer { removeFolder(of: url) }
            let folder = url.deletingLastPathComponent()
            var children: [FixtureProcess] = []
            for (name, rules) in [("old", old), ("new", new)] {
                let rulesFile = folder.appendingPathComponent("\(name).rules")
                try rules.write(to: rulesFile, atomically: true, encoding: .utf8)
                children.append(try FixtureProcess(["serve", url.path, rulesFile.path], input: true))
            }
            defer { for child in children { child.input?.closeFile() } }
            children[0].send("1800000000 p purchase amount=5")
            XCTAssertEqual(children[0].readLine(), "ok")
            children[1].send("1800000000 p paid amount=12")
            XCTAssertEqual(children[1].readLine(), "ok")
            for (rules, renamed) in [(old, false), (new, true)] {
                let fresh = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
                XCTAssertEqual(fresh.count(renamed ? "paid" : "purchase"), 2, "trial \(trial), renamed \(renamed)")
                XCTAssertEqual(big(fresh, renamed: renamed), 1, "trial \(trial), renamed \(renamed)")
            }
        }
    }

    /// A swap to renaming rules that races another process's write keeps what it writes, as a
    /// start does: one child swaps from the older rules to the renaming ones while the other,
    /// on the older rules, triggers the former name. Every trial: both children and a fresh
    /// engine on either rules count every trigger. The swap's own write conflicts in few trials
    /// here (the window is short); ``testASwapWhoseWriteConflictsRunsAgain`` makes it conflict
    /// every time, and fails without the rerun.
    func testASwapRacingAnotherWriteKeepsItsRecord() throws {
        for trial in 0..<30 {
            let url = temporaryURL("swap-\(trial).state")
            defer { removeFolder(of: url) }
            let folder = url.deletingLastPathComponent()
            let oldFile = folder.appendingPathComponent("old.rules")
            let newFile = folder.appendingPathComponent("new.rules")
            try old.write(to: oldFile, atomically: true, encoding: .utf8)
            try new.write(to: newFile, atomically: true, encoding: .utf8)
            let children = try (0..<2).map { _ in
                try FixtureProcess(["serve", url.path, oldFile.path], input: true)
            }
            defer { for child in children { child.input?.closeFile() } }
            children[0].send("1800000000 p purchase amount=12")
            XCTAssertEqual(children[0].readLine(), "ok")
            // Sent together: the swap's read and write and the other child's appends interleave.
            children[0].send("1800000000 w \(newFile.path)")
            let triggers = 6
            for _ in 0..<triggers { children[1].send("1800000000 p purchase amount=12") }
            XCTAssertEqual(children[0].readLine(), "ok", "trial \(trial): the swap")
            for _ in 0..<triggers { XCTAssertEqual(children[1].readLine(), "ok") }
            // Then each writes again, under its own name.
            children[0].send("1800000000 p paid amount=20")
            XCTAssertEqual(children[0].readLine(), "ok")
            children[1].send("1800000000 p purchase amount=11")
            XCTAssertEqual(children[1].readLine(), "ok")
            let total = triggers + 3
            children[0].send("1800000000 n \(EngineStream.filtered("paid", "amount >= 10"))")
            XCTAssertEqual(children[0].readLine(), "\(total)", "trial \(trial): the child that swapped")
            children[1].send("1800000000 n \(EngineStream.filtered("purchase", "amount >= 10"))")
            XCTAssertEqual(children[1].readLine(), "\(total)", "trial \(trial): the child on the older rules")
            for (rules, renamed) in [(old, false), (new, true)] {
                let fresh = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
                XCTAssertEqual(fresh.count(renamed ? "paid" : "purchase"), total, "trial \(trial), renamed \(renamed)")
                XCTAssertEqual(big(fresh, renamed: renamed), total, "trial \(trial), renamed \(renamed)")
            }
        }
    }

    /// The same in one process, the other write made at a chosen point: an engine on the older
    /// rules triggers while the swapping engine asks its clock the time, after the swap read
    /// the shared file and before it wrote its record (the clock is asked while the new core is
    /// made). The first few points the clock is asked are tried in turn; the first is after the
    /// read (without the call's rerun, history was lost there).
    func testASwapWhoseWriteConflictsRunsAgain() throws {
        for point in 1...6 {
            let url = temporaryURL("swap-point-\(point).state")
            defer { removeFolder(of: url) }
            let other = try RuleEngine(source: old, store: FileStore(url: url, options: .init(shared: true)))
            let clock = InterruptingClock()
            let swapping = try RuleEngine(
                source: old, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
            buy(swapping, renamed: false, 12)
            clock.arm(after: point) { self.buy(other, renamed: false, 15) }
            try swapping.replaceRules(source: new)
            let fired = clock.fired
            clock.arm(after: 0) {}
            // Then each writes again, under its own name.
            buy(swapping, renamed: true, 20)
            buy(other, renamed: false, 11)
            let total = fired ? 4 : 3
            XCTAssertEqual(big(swapping, renamed: true), total, "point \(point): the engine that swapped")
            XCTAssertEqual(big(other, renamed: false), total, "point \(point): the engine on the older rules")
            for (rules, renamed) in [(old, false), (new, true)] {
                let fresh = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
                XCTAssertEqual(fresh.count(renamed ? "paid" : "purchase"), total, "point \(point), renamed \(renamed)")
                XCTAssertEqual(big(fresh, renamed: renamed), total, "point \(point), renamed \(renamed)")
                XCTAssertEqual(spent(fresh, renamed: renamed), fired ? 58 : 43, "point \(point), renamed \(renamed)")
            }
        }
    }
}

/// A clock that runs an action once, from inside the engine's call, the `n`th time it is asked
/// the time after it is armed.
private final class InterruptingClock: RuleClock, @unchecked Sendable {
    // Asked and armed by one thread at a time in these tests; the lock keeps it honest.
    private let lock = NSLock()
    private var remaining = 0
    private var action: (() -> Void)?
    private(set) var fired = false

    func arm(after asks: Int, _ action: @escaping () -> Void) {
        lock.withLock {
            remaining = asks
            self.action = asks > 0 ? action : nil
            fired = false
        }
    }

    func now() -> Date {
        let due: (() -> Void)? = lock.withLock {
            guard action != nil else { return nil }
            remaining -= 1
            guard remaining == 0 else { return nil }
            defer { action = nil }
            fired = true
            return action
        }
        due?()
        return Date(timeIntervalSince1970: 1_800_000_000)
    }
}
