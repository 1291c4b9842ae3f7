import RuleLang
import XCTest

/// Every file (or directory) in `examples/invalid/` against its `.expected` diagnostics,
/// and every other example must be clean.
final class GoldenTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func sources(_ relative: String) throws -> [SourceFile] {
        let url = Self.root.appendingPathComponent(relative)
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
        let paths =
            isDirectory.boolValue
            ? try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".rules") }.sorted()
                .map { relative + "/" + $0 }
            : [relative]
        return try paths.map {
            SourceFile(path: $0, bytes: [UInt8](try Data(contentsOf: Self.root.appendingPathComponent($0))))
        }
    }

    func testInvalidExamplesMatchExpectedDiagnostics() throws {
        let directory = Self.root.appendingPathComponent("examples/invalid")
        let expectedFiles = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".expected") }.sorted()
        XCTAssertGreaterThanOrEqual(expectedFiles.count, 12)
        for expectedFile in expectedFiles {
            let stem = String(expectedFile.dropLast(".expected".count))
            let relative =
                FileManager.default.fileExists(atPath: directory.appendingPathComponent(stem).path)
                ? "examples/invalid/\(stem)" : "examples/invalid/\(stem).rules"
            let result = RuleCompiler.check(try sources(relative))
            XCTAssertTrue(result.hasErrors, "\(relative) should have an error")
            let expected = try String(contentsOf: directory.appendingPathComponent(expectedFile), encoding: .utf8)
            XCTAssertEqual(DiagnosticRenderer().render(result.diagnostics), expected, relative)
        }
    }

    func testValidExamplesAreCleanTogether() throws {
        let enumerator = FileManager.default.enumerator(atPath: Self.root.appendingPathComponent("examples").path)!
        var files: [String] = []
        while let entry = enumerator.nextObject() as? String {
            // As `rulec check` does: skip invalid/ and hidden entries such as a build folder.
            if entry.hasPrefix("invalid") || entry.split(separator: "/").contains(where: { $0.hasPrefix(".") }) {
                continue
            }
            if entry.hasSuffix(".rules") { files.append("examples/" + entry) }
        }
        XCTAssertGreaterThanOrEqual(files.count, 11)
        let result = RuleCompiler.check(try files.sorted().flatMap { try sources($0) })
        XCTAssertEqual(result.diagnostics.map { DiagnosticRenderer().render($0) }, [])
        XCTAssertGreaterThanOrEqual(result.program.scenarios.count, 17)
    }
}
