import Foundation
import XCTest

/// Removes, when each test ends (pass or fail), what the test made in the system's temporary
/// folder under the names the suite uses (`rules-`, `rulec-`, `gen-`, ...), so that a run leaves
/// nothing behind (CI checks). Tests run one at a time: what appeared during a test is its own.
/// Its state is read and written under `lock` only (hence `@unchecked Sendable`, as the tests'
/// other lock-protected helpers).
public final class TemporaryFiles: NSObject, XCTestObservation, @unchecked Sendable {
    /// The prefixes of every temporary file and folder the suite makes.
    public static let prefixes = [
        "rules-", "rulec-", "firebase-", "warn-", "stamp-", "sim-", "state-", "gen-", "diff-", "readme-",
        "trigger-", "upgrade-", "home-",
    ]

    private static let shared = TemporaryFiles()
    private static let registered: Bool = {
        XCTestObservationCenter.shared.addTestObserver(shared)
        return true
    }()
    private let lock = NSLock()
    private var before: Set<String> = []
    private var started = false

    /// Starts watching (idempotent): call it before a test makes a temporary file.
    public static func watch() {
        _ = registered
        shared.lock.lock()
        defer { shared.lock.unlock() }
        if !shared.started {
            shared.started = true
            shared.before = entries()
        }
    }

    static func entries() -> Set<String> {
        let folder = FileManager.default.temporaryDirectory.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return Set(names.filter { name in prefixes.contains { name.hasPrefix($0) } })
    }

    public func testCaseWillStart(_ testCase: XCTestCase) {
        lock.lock()
        defer { lock.unlock() }
        started = true
        before = TemporaryFiles.entries()
    }

    public func testCaseDidFinish(_ testCase: XCTestCase) {
        lock.lock()
        let left = TemporaryFiles.entries().subtracting(before)
        lock.unlock()
        let folder = FileManager.default.temporaryDirectory
        for name in left { try? FileManager.default.removeItem(at: folder.appendingPathComponent(name)) }
    }
}

extension XCTestCase {
    /// A new folder in the temporary folder, `PREFIX-UUID` (PREFIX one of
    /// ``TemporaryFiles/prefixes``), removed when the test ends, pass or fail.
    public func scratchFolder(_ prefix: String) -> URL {
        TemporaryFiles.watch()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }
}
