import Foundation
import RuleLang
import XCTest

@testable import RuleRuntime

/// Stable buckets (language 1.2): the published hash, the install's id (made once, stored,
/// kept; or the app's), the testers' overrides, and the front end's checks.
final class BucketTests: XCTestCase {
    /// grammar.md's vectors, computed by an independent implementation (Python, the FNV-1a
    /// definition): salt, install id, hash, bucket.
    static let vectors: [(String, String, UInt64, Int)] = [
        ("paywall-2026", "simulated", 0xff3b_d988_8771_52fe, 6),
        ("paywall-2026", "3f2c8e1a-5b7d-4c9e-8a1f-2d6b9e0c4a7f", 0x5f62_12cb_16bb_1de3, 99),
        ("review", "3f2c8e1a-5b7d-4c9e-8a1f-2d6b9e0c4a7f", 0x1dfe_58c9_acad_6056, 94),
        ("holdout", "A", 0xe094_e199_5ddc_d6a9, 1),
        ("", "x", 0x081e_4c07_b4da_60ef, 59),
        ("\u{E9}", "\u{FC}n\u{EF}c\u{F6}d\u{E9}", 0x069b_9203_0ce4_face, 86),
    ]

    func testTheHashMatchesThePublishedVectors() {
        for (salt, id, hash, bucket) in Self.vectors {
            XCTAssertEqual(InstallBucket.hash(Array(salt.utf8) + [0x3A] + Array(id.utf8)), hash, "\(salt) \(id)")
            XCTAssertEqual(InstallBucket.bucket(salt: salt, installID: id), bucket, "\(salt) \(id)")
        }
    }

    func testBucketsSpreadEvenly() {
        // 20,000 random ids: each tenth of the range holds 10% of them, within 1.5 points.
        var tenths = Array(repeating: 0, count: 10)
        for _ in 0..<20_000 { tenths[InstallBucket.bucket(salt: "spread", installID: UUID().uuidString) / 10] += 1 }
        for count in tenths { XCTAssertEqual(Double(count) / 20_000, 0.1, accuracy: 0.015) }
    }

    let rules = "# language 1.2\nscenario Offer < when (bucket(\"offer\") < 30) >\nscenario Plain < >\n"

    func testAnEngineMakesItsIdOnceAndKeepsIt() throws {
        let url = temporaryURL("bucket.state")
        var id = ""
        var answer = false
        do {
            // Released before the file is opened again (an exclusive store holds its file).
            let first = try RuleEngine(source: rules, store: FileStore(url: url))
            id = try XCTUnwrap(first.installID)
            answer = first.canExecute("Offer")
        }
        XCTAssertEqual(UUID(uuidString: id)?.uuidString.lowercased(), id, "a random UUID, lowercased")
        XCTAssertEqual(answer, InstallBucket.bucket(salt: "offer", installID: id) < 30)
        XCTAssertEqual(try StateSnapshot(entries: FileStore(url: url).load()).installID, id, "what rulec state shows")
        let again = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertEqual(again.installID, id, "stored, read back")
        XCTAssertEqual(again.canExecute("Offer"), answer)
        again.clearAll()
        XCTAssertEqual(again.installID, id, "clearAll keeps the install's id")
        // Rules that do not read `bucket` make no id.
        XCTAssertNil(try RuleEngine(source: "scenario Plain < >").installID)
    }

    func testTheAppsIdAndTheOverridesWin() throws {
        var options = RuleEngine.Options()
        options.installID = "simulated"
        let store = InMemoryStore()
        let given = try RuleEngine(source: rules, store: store, options: options)
        XCTAssertEqual(given.installID, "simulated")
        XCTAssertEqual(
            given.explain("Offer").reason,
            "when (bucket(\"offer\") < 30): \(InstallBucket.bucket(salt: "offer", installID: "simulated") < 30)")
        XCTAssertNil(try store.load()["u:"], "the app's id is the app's to keep")
        for forced in [5, 80] {
            options.bucketOverrides = ["offer": forced]
            let engine = try RuleEngine(source: rules, options: options)
            XCTAssertEqual(engine.canExecute("Offer"), forced < 30)
        }
        XCTAssertEqual(
            RuleEngine.Options.launchBucketOverrides(
                arguments: ["app", "-RulesBucket", "offer=5", "-RulesBucket", "bad=100", "-RulesBucket"],
                environment: ["RULES_BUCKET": "a=1, b = 2,c=x,=3"]),
            ["offer": 5, "a": 1, "b": 2])
    }

    func testAProcessSharingTheFileTakesTheStoredId() throws {
        let url = temporaryURL("shared-bucket.state")
        let app = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
        let widget = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
        XCTAssertNotNil(app.installID)
        XCTAssertEqual(widget.installID, app.installID)
    }

    func testTheFrontEndChecksTheSalt() {
        func messages(_ text: String) -> [String] { RuleCompiler.check(text: text).diagnostics.map(\.message) }
        XCTAssertEqual(messages(rules), [])
        XCTAssertEqual(
            messages("# language 1.2\nscenario A < when (bucket(offer) < 10) >\n"),
            ["'bucket' takes a salt written as a string, such as bucket(\"paywall-2026\"), not 'offer'"])
        XCTAssertEqual(messages("# language 1.2\nscenario A < when (bucket(\"\") < 10) >\n").count, 1)
        XCTAssertEqual(messages("# language 1.2\nscenario A < when (bucket(\"x\" per session) < 10) >\n").count, 1)
        XCTAssertEqual(
            RuleCompiler.check(text: "scenario A < when (bucket(\"x\") < 10) >\n").diagnostics.map(\.id),
            [.languageVersion])
        let program = RuleCompiler.check(text: rules).program
        XCTAssertEqual(
            Printer.clause(program.scenarios[0].decl.clauses[0].kind), "when (bucket(\"offer\") < 30)",
            "a salt prints as a string, even one that reads as a name")
    }
}
