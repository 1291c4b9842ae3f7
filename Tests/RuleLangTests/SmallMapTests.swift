import XCTest

@testable import RuleLang

/// The checker's small tables: the same answers below and above the size at which they
/// start hashing, insertion order kept.
final class SmallMapTests: XCTestCase {
    func testFindsReplacesAndKeepsOrderOnBothSidesOfTheLinearLimit() {
        for count in [0, 1, SmallMap<String, Int>.linearLimit, SmallMap<String, Int>.linearLimit + 1, 500] {
            // Made empty, or with room for what is coming (or for far less or more).
            for expected in [nil, 0, count, 3 * count + 20] {
                var map = expected.map { SmallMap<String, Int>(expecting: $0) } ?? SmallMap<String, Int>()
                checkMap(&map, count)
            }
        }
    }

    private func checkMap(_ map: inout SmallMap<String, Int>, _ count: Int) {
        XCTAssertTrue(map.isEmpty)
        for k in 0..<count { map["k\(k)"] = k }
        for k in 0..<count { XCTAssertEqual(map["k\(k)"], k, "count \(count)") }
        XCTAssertNil(map["k\(count)"])
        XCTAssertNil(map["missing"])
        if count > 0 {
            map["k0"] = -1
            map["k0"] = nil  // ignored
            XCTAssertEqual(map["k0"], -1)
        }
        XCTAssertEqual(map.entries.map(\.key), (0..<count).map { "k\($0)" })
        XCTAssertEqual(map.entries.count, count)
    }
}
