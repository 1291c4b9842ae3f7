import Foundation
import RuleRuntime
import XCTest

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// An engine over `source` with a manual clock at a fixed start and an in-memory store.
func makeEngine(
    _ source: String, store: RuleStore = InMemoryStore(),
    file: StaticString = #filePath, line: UInt = #line
) throws -> (RuleEngine, ManualClock) {
    let clock = ManualClock()
    return (try RuleEngine(source: source, store: store, clock: clock), clock)
}

/// An engine over one of `examples/`.
func exampleEngine(_ relative: String) throws -> (RuleEngine, ManualClock) {
    let clock = ManualClock()
    let engine = try RuleEngine(contentsOf: packageRoot.appendingPathComponent("examples/" + relative), clock: clock)
    return (engine, clock)
}

func temporaryURL(_ name: String) -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rules-tests-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name)
}
