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

    func testInsertIfAbsentKeepsTheFirstValueOnBothSidesOfTheLinearLimit() {
        for count in [1, SmallMap<String, Int>.linearLimit, SmallMap<String, Int>.linearLimit + 1, 500] {
            for reserved in [0, count] {
                var map = SmallMap<String, Int>()
                map.reserveCapacity(reserved)
                for k in 0..<count { XCTAssertNil(map.insertIfAbsent("k\(k)", k)) }
                for k in stride(from: 0, to: count, by: 7) {
                    XCTAssertEqual(map.insertIfAbsent("k\(k)", -k - 1), k, "count \(count)")
                    XCTAssertEqual(map["k\(k)"], k)
                }
                XCTAssertEqual(map.entries.map(\.key), (0..<count).map { "k\($0)" })
                XCTAssertEqual(map.entries.map(\.value), Array(0..<count))
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
