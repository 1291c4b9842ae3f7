import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// Stable buckets (language 1.2): the published hash, the install's id (made once, stored,
/// kept; or the app's), the testers' overrides, and the front end's checks.
final class BucketTests: XCTestCase {
    /// grammar.md's vectors, computed by an independent implementation (Python, from the
    /// definitions of FNV-1a and MurmurHash3's `fmix64`): salt, install id, hash, bucket.
    static let vectors: [(String, String, UInt64, Int)] = [
        ("paywall-2026", "simulated", 0x48a8_6b55_b303_edae, 10),
        ("paywall-2026", "3f2c8e1a-5b7d-4c9e-8a1f-2d6b9e0c4a7f", 0x5410_4921_d0c2_3742, 94),
        ("review", "3f2c8e1a-5b7d-4c9e-8a1f-2d6b9e0c4a7f", 0x9a12_acc1_cf15_8633, 75),
        ("holdout", "A", 0x6444_2a45_2d4e_d6f6, 82),
        ("", "x", 0x6df7_4e8b_1199_38be, 34),
        ("\u{E9}", "\u{FC}n\u{EF}c\u{F6}d\u{E9}", 0x77fe_3b19_e11b_0a35, 77),
    ]

    func testTheHashMatchesThePublishedVectors() {
        for (salt, id, hash, bucket) in Self.vectors {
            XCTAssertEqual(InstallBucket.hash(Array(salt.utf8) + [0x3A] + Array(id.utf8)), hash, "\(salt) \(id)")
            XCTAssertEqual(InstallBucket.bucket(salt: salt, installID: id), bucket, "\(salt) \(id)")
        }
    }

    /// Buckets are independent from salt to salt: for each pair of salts, the joint
    /// distribution of the two buckets over 100,000 ids passes a chi-square test of independence
    /// at 1% (99 x 99 degrees of freedom; the critical value by Wilson and Hilferty). With
    /// FNV-1a alone an id's bucket modulo 4 under one salt fixed it under every other (a
    /// statistic of about 309,000 against 10,130).
    func testBucketsAreIndependentAcrossSalts() {
        var random = SeededGenerator(seed: 100_000)
        let ids = (0..<100_000).map { _ in
            (0..<4).map { _ in String(UInt32.random(in: .min ... .max, using: &random), radix: 16) }.joined(
                separator: "-")
        }
        let salts = ["a", "b", "paywall-2026", "review", "", "\u{E9}"]
        let buckets = salts.map { salt in ids.map { InstallBucket.bucket(salt: salt, installID: $0) } }
        let freedom = 99.0 * 99.0
        let z = 2.326_35  // the normal distribution's 99th percentile
        let critical = freedom * pow(1 - 2 / (9 * freedom) + z * (2 / (9 * freedom)).squareRoot(), 3)
        for a in 0..<salts.count {
            for b in (a + 1)..<salts.count {
                var joint = [Double](repeating: 0, count: 10_000)
                var rows = [Double](repeating: 0, count: 100)
                var columns = [Double](repeating: 0, count: 100)
                for (x, y) in zip(buckets[a], buckets[b]) {
                    joint[x * 100 + y] += 1
                    rows[x] += 1
                    columns[y] += 1
                }
                var statistic = 0.0
                for x in 0..<100 {
                    for y in 0..<100 {
                        let expected = rows[x] * columns[y] / Double(ids.count)
                        statistic += (joint[x * 100 + y] - expected) * (joint[x * 100 + y] - expected) / expected
                    }
                }
                XCTAssertLessThan(statistic, critical, "salts '\(salts[a])' and '\(salts[b])'")
            }
        }
    }

    /// The bucket kept for a salt is found by its bytes, as the hash reads them: a salt in NFD
    /// is hashed as written, whichever spelling was asked first (`==` took it for its NFC twin).
    func testTheKeptBucketIsFoundByTheSaltsBytes() throws {
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        let id = "3f2c8e1a-5b7d-4c9e-8a1f-2d6b9e0c4a7f"
        XCTAssertNotEqual(
            InstallBucket.bucket(salt: nfc, installID: id), InstallBucket.bucket(salt: nfd, installID: id),
            "the two spellings fall in different buckets for this id")
        for order in [[nfc, nfd], [nfd, nfc]] {
            let rules = "# language 1.2\nscenario S < >\n"
            var options = RuleEngine.Options()
            options.installID = id
            let engine = try RuleEngine(source: rules, clock: ManualClock(), options: options)
            for salt in order {
                XCTAssertTrue(
                    try engine.check(
                        "bucket(\(Printer.string(salt))) == \(InstallBucket.bucket(salt: salt, installID: id))"),
                    "\(order.map { Array($0.unicodeScalars) })")
            }
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
        // An empty salt is a salt (grammar.md publishes its vector), in a call and a holdout.
        XCTAssertEqual(messages("# language 1.2\nscenario A < when (bucket(\"\") < 10) >\n"), [])
        XCTAssertEqual(messages("# language 1.2\nscenario A < holdout 5% \"\" >\n"), [])
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
