import Foundation
import RuleLang
import RuleTimeline
import XCTest

/// The example corpus, run once: every invalid rule file against the diagnostics it
/// carries inline (`# expect: LINE:COL SEVERITY: MESSAGE`, `# expect: = fix: ...`), through
/// the `rulec` binary (exit status 1) and the library alike; every other rule file clean,
/// all together; every timeline against the output it carries after its steps (`#> LINE`);
/// and every fix-it applied, leaving the diagnostic it fixes gone.
final class CorpusTests: XCTestCase {
    let root = RulecBinary.packageRoot
    /// Rule files of folders with a `.rulecignore`: versions of one program, each clean alone.
    private var versions: [String] = []

    /// `examples/` entries: rule files and directories of rule files under `invalid/`, other rule files, timelines.
    private func corpus() throws -> (invalid: [[String]], valid: [String], timelines: [String]) {
        var invalid: [[String]] = []
        let invalidRoot = root.appendingPathComponent("examples/invalid")
        for entry in try FileManager.default.contentsOfDirectory(atPath: invalidRoot.path).sorted() {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(
                atPath: invalidRoot.appendingPathComponent(entry).path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                let files = try FileManager.default.contentsOfDirectory(
                    atPath: invalidRoot.appendingPathComponent(entry).path)
                invalid.append(
                    files.filter { $0.hasSuffix(".rules") }.sorted().map { "examples/invalid/\(entry)/\($0)" })
            } else if entry.hasSuffix(".rules") {
                invalid.append(["examples/invalid/\(entry)"])
            }
        }
        var valid: [String] = []
        var timelines: [String] = []
        versions = []
        let enumerator = FileManager.default.enumerator(atPath: root.appendingPathComponent("examples").path)!
        while let entry = enumerator.nextObject() as? String {
            // As `rulec check` does: skip hidden entries such as a build folder.
            if entry.split(separator: "/").contains(where: { $0.hasPrefix(".") }) || entry.hasPrefix("invalid") {
                continue
            }
            // A folder with a `.rulecignore` holds versions of one program (examples/release):
            // each file is checked alone, below.
            let folder = root.appendingPathComponent("examples/" + entry).deletingLastPathComponent()
            let alone = FileManager.default.fileExists(atPath: folder.appendingPathComponent(".rulecignore").path)
            if entry.hasSuffix(".rules") && alone { versions.append("examples/" + entry) }
            if entry.hasSuffix(".rules") && !alone { valid.append("examples/" + entry) }
            if entry.hasSuffix(".timeline") { timelines.append("examples/" + entry) }
        }
        return (invalid, valid.sorted(), timelines.sorted())
    }

    private func source(_ path: String) throws -> SourceFile {
        SourceFile(path: path, bytes: [UInt8](try Data(contentsOf: root.appendingPathComponent(path))))
    }

    /// Lines after `marker` in comments of `path`, in order.
    private func inline(_ path: String, _ marker: String) throws -> [String] {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .filter { $0.hasPrefix(marker) }.map { String($0.dropFirst(marker.count)) }
    }

    /// Each diagnostic as the `# expect:` lines of the file it belongs to.
    static func expectations(_ diagnostics: [Diagnostic]) -> [String: [String]] {
        var lines: [String: [String]] = [:]
        for diagnostic in diagnostics {
            let at = diagnostic.location
            lines[diagnostic.file.path, default: []].append(
                "\(at.line):\(at.column) \(diagnostic.severity.rawValue): \(diagnostic.message)")
            for fix in diagnostic.fixIts {
                lines[diagnostic.file.path, default: []].append("= fix: \(fix.summary(in: diagnostic.file))")
            }
            for note in diagnostic.notes {
                let span = note.span ?? diagnostic.span
                lines[span.file.path, default: []].append(
                    "\(span.start.line):\(span.start.column) note: \(note.message)")
            }
        }
        return lines
    }

    func testTheCorpus() throws {
        let (invalid, valid, timelines) = try corpus()
        XCTAssertGreaterThanOrEqual(invalid.count, 13)
        XCTAssertGreaterThanOrEqual(timelines.count, 12)

        for files in invalid {
            let result = RuleCompiler.check(try files.map(source))
            XCTAssertTrue(result.hasErrors, "\(files) must have an error")
            let actual = Self.expectations(result.diagnostics)
            for file in files {
                XCTAssertEqual(actual[file] ?? [], try inline(file, "# expect: "), file)
            }
            let command = try RulecBinary.run(["check"] + files)
            XCTAssertEqual(command.status, 1, "\(files)")
            for diagnostic in result.diagnostics {
                XCTAssertTrue(command.stdout.contains(DiagnosticRenderer().render(diagnostic)), "\(files)")
            }
        }

        let clean = RuleCompiler.check(try valid.map(source))
        XCTAssertEqual(clean.diagnostics.map { DiagnosticRenderer().render($0) }, [])
        XCTAssertGreaterThanOrEqual(clean.program.scenarios.count, 17)
        XCTAssertGreaterThanOrEqual(versions.count, 2)
        for version in versions {
            XCTAssertEqual(
                RuleCompiler.check([try source(version)]).diagnostics.map { DiagnosticRenderer().render($0) }, [])
        }

        for timeline in timelines {
            let rules = String(timeline.dropLast(".timeline".count)) + ".rules"
            // Named by its full path: a `rules` step reads files beside it.
            let file = SourceFile(
                path: root.appendingPathComponent(timeline).path, bytes: try source(timeline).bytes)
            let output = try TimelineRunner.replay(rules: [try source(rules)], timeline: file)
            XCTAssertEqual(output, try inline(timeline, "#> "), timeline)
        }
    }

    /// Applying a diagnostic's fix-its (all of them: they are one edit) removes the diagnostic
    /// and lowers the count of its severity, adding nothing at that place.
    func testEveryFixItFixesItsDiagnostic() throws {
        var applied = 0
        for files in try corpus().invalid {
            let sources = try files.map(source)
            let before = RuleCompiler.check(sources).diagnostics
            for diagnostic in before where !diagnostic.fixIts.isEmpty {
                var bytes = diagnostic.file.bytes
                for fix in diagnostic.fixIts.sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
                    bytes.replaceSubrange(fix.range, with: Array(fix.replacement.utf8))
                }
                let fixed = sources.map {
                    $0.path == diagnostic.file.path ? SourceFile(path: $0.path, bytes: bytes) : $0
                }
                let after = RuleCompiler.check(fixed).diagnostics
                let start = diagnostic.fixIts.map(\.range.lowerBound).min()!
                let remaining = after.filter {
                    $0.file.path == diagnostic.file.path && $0.severity == diagnostic.severity
                        && $0.range.lowerBound == start && $0.id == diagnostic.id
                }
                XCTAssertEqual(remaining.map(\.message), [], "\(diagnostic.file.path): \(diagnostic.message)")
                let severity = diagnostic.severity
                XCTAssertLessThan(
                    after.filter { $0.severity == severity }.count, before.filter { $0.severity == severity }.count,
                    "\(diagnostic.file.path): \(diagnostic.message)")
                applied += 1
            }
        }
        XCTAssertGreaterThanOrEqual(applied, 5, "the corpus exercises fix-its")
    }
}
