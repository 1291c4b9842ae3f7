import Foundation
import RuleLang
import RuleRuntime
import TestSupport
import XCTest

/// Language 1.3's contexts (grammar.md, "Contexts"): `in` and `not in` read where the app says
/// the user is; contexts belong to the process, are never stored, and survive a swap.
final class ContextTests: XCTestCase {
    let rules = """
        # language 1.3
        scenario Rate < not in checkout, pin >
        scenario News < in home, feed >
        group Prompts < not in onboarding > {
            scenario Tip < max_exec 5 >
        }
        """

    func testInAndNotInFollowTheContextsTheAppEnters() throws {
        let engine = try RuleEngine(source: rules)
        XCTAssertEqual(engine.contexts, [])
        XCTAssertTrue(engine.canExecute("Rate"))
        XCTAssertFalse(engine.canExecute("News"))
        XCTAssertTrue(engine.canExecute("Tip"))
        engine.enter("checkout")
        XCTAssertFalse(engine.canExecute("Rate"))
        XCTAssertEqual(engine.explain("Rate").failing.map(\.description), ["not in checkout, pin: in checkout"])
        XCTAssertNil(engine.explain("Rate").earliest, "waiting alone does not leave a context")
        engine.enter("home")
        XCTAssertTrue(engine.canExecute("News"))
        XCTAssertEqual(engine.explain("News").clauses.map(\.description), ["in home, feed: in home"])
        engine.leave("checkout")
        XCTAssertTrue(engine.canExecute("Rate"))
        engine.setContexts(["onboarding"])
        XCTAssertEqual(engine.contexts, ["onboarding"])
        XCTAssertFalse(engine.canExecute("Tip"), "a group's clause holds its scenarios")
        XCTAssertEqual(
            engine.explain("Tip").failing.map(\.description), ["group Prompts: not in onboarding: in onboarding"])
        XCTAssertFalse(engine.canExecute("News"))
        XCTAssertEqual(engine.explain("News").failing.map(\.description), ["in home, feed: in none of them"])
        XCTAssertFalse(engine.tryToExecute("Tip"))
        // A context no rule names changes nothing.
        engine.setContexts(["settings"])
        XCTAssertTrue(engine.tryToExecute("Tip"))
    }

    /// Never stored: an engine over the same store starts in no context; a swap keeps them.
    func testContextsAreTheProcessesNeverStoredAndSurviveASwap() throws {
        let store = InMemoryStore()
        let engine = try RuleEngine(source: rules, store: store)
        engine.enter("pin")
        XCTAssertFalse(engine.canExecute("Rate"))
        let before = try store.load()
        engine.enter("checkout")
        XCTAssertEqual(try store.load(), before, "entering a context writes nothing")
        let again = try RuleEngine(source: rules, store: store)
        XCTAssertTrue(again.canExecute("Rate"))
        _ = try engine.replaceRules(source: rules.replacingOccurrences(of: "checkout, pin", with: "pin"))
        XCTAssertFalse(engine.canExecute("Rate"), "the swapped rules see the contexts entered before")
        XCTAssertEqual(engine.contexts, ["pin", "checkout"])
    }

    /// An observer hears the answer a context changes.
    func testObserversHearAContextChange() async throws {
        let engine = try RuleEngine(source: rules)
        var updates = engine.updates(for: Scenario("Rate")).makeAsyncIterator()
        let first = await updates.next()
        XCTAssertEqual(first, true)
        engine.enter("pin")
        let second = await updates.next()
        XCTAssertEqual(second, false)
        engine.enter("checkout")
        engine.leave("pin")
        engine.leave("checkout")
        let third = await updates.next()
        XCTAssertEqual(third, true)
    }

    /// Language 1.3 only; a context named twice is a warning, `in a; not in a` an error.
    func testTheCheckerReadsContexts() {
        let old = RuleCompiler.check(text: "# language 1.2\nscenario A < in home >\n")
        XCTAssertTrue(old.diagnostics.contains { $0.message.contains("1.3") }, "\(old.diagnostics.map(\.message))")
        let twice = RuleCompiler.check(text: "# language 1.3\nscenario A < in home, home >\n")
        XCTAssertEqual(twice.diagnostics.map(\.message), ["context 'home' is named twice in one list"])
        let never = RuleCompiler.check(text: "# language 1.3\nscenario A < in home; not in home, pin >\n")
        XCTAssertTrue(never.hasErrors)
        XCTAssertTrue(never.diagnostics[0].message.contains("never runs"), never.diagnostics[0].message)
        XCTAssertEqual(Printer.clause(.contexts([Name("a", 0..<1), Name("b", 0..<1)], outside: true)), "not in a, b")
    }
}
