import Foundation
import TestSupport
import XCTest

/// Every command reads its options through one parser: `--opt=value` as `--opt value`, `--`
/// ending the options, `-h`/`--help`, and exit 64 with `error:` and `Usage:` for a mistake.
final class OptionParsingTests: XCTestCase {
    static let commands = [
        "check", "simulate", "gen", "fmt", "dump", "state", "explain", "trigger", "diff", "seal", "lsp", "server",
    ]
    private let rules = "examples/seeds/waitforit_ask_to_subscribe.rules"
    private let timeline = "examples/seeds/waitforit_ask_to_subscribe.timeline"

    private func run(_ arguments: [String]) throws -> CommandResult { try RulecBinary.run(arguments) }

    /// Both spellings give the same status and output.
    private func assertSame(
        _ joined: [String], _ separate: [String], file: StaticString = #filePath, line: UInt = #line
    )
        throws
    {
        let a = try run(joined)
        let b = try run(separate)
        XCTAssertEqual(a.status, b.status, "\(joined): \(a.stderr)", file: file, line: line)
        XCTAssertEqual(a.stdout, b.stdout, "\(joined)", file: file, line: line)
        XCTAssertEqual(a.stderr, b.stderr, "\(joined)", file: file, line: line)
    }

    /// The commands are declared once: `rulec --help` lists them from the one list, each with
    /// its required options and operands; each usage line is made from the command's options
    /// (every one of them named in it); no command reads an option by a string.
    func testCommandsAreDeclaredOnce() throws {
        let help = try run(["--help"]).stdout
        let listed = help.split(separator: "\n").filter { $0.hasPrefix("  ") }.map {
            String($0.dropFirst(2).split(separator: " ")[0])
        }
        XCTAssertEqual(listed, Self.commands)
        for command in Self.commands {
            let arguments = command == "gen" ? [command, "swift"] : [command]
            let text = try run(arguments + ["--help"]).stdout
            let usage = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("Usage: rulec ") })
            let options = text.split(separator: "\n").drop { $0 != "Options:" }.dropFirst()
                .prefix { !$0.isEmpty }.compactMap { line -> String? in
                    let label = line.trimmingCharacters(in: .whitespaces).split(separator: " ")[0]
                    return label.hasPrefix("--") && label != "--" && label != "--help" ? String(label) : nil
                }
            for option in options {
                XCTAssertTrue(usage.contains(option.hasSuffix(",") ? String(option.dropLast()) : option), "\(usage)")
            }
        }
        let sources = RulecBinary.packageRoot.appendingPathComponent("Sources/rulec")
        for file in try FileManager.default.contentsOfDirectory(atPath: sources.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            XCTAssertFalse(
                text.contains("parsed.has(") || text.contains("parsed.value("), "\(file) reads an option by string")
            XCTAssertFalse(text.contains("usage: \"Usage:"), "\(file) writes its usage line by hand")
        }
    }

    /// An option the usage line shows bare is required: its absence is misuse, said by the parser.
    func testARequiredOptionMissingIsMisuse() throws {
        for (arguments, message) in [
            (["explain", rules], "error: missing '--state FILE'"),
            (["trigger", rules, "x"], "error: missing '--state FILE'"),
            (["dump", rules], "error: missing '--json'"),
        ] {
            let result = try run(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments)")
            XCTAssertTrue(result.stderr.hasPrefix(message + "\nUsage: rulec \(arguments[0])"), result.stderr)
        }
    }

    func testHelpUnknownOptionAndMissingValueInEveryCommand() throws {
        for command in Self.commands {
            let arguments = command == "gen" ? [command, "swift"] : [command]
            for help in ["-h", "--help"] {
                let result = try run(arguments + [help])
                XCTAssertEqual(result.status, 0, "\(command) \(help)")
                XCTAssertTrue(result.stdout.contains("Usage: rulec \(command)"), "\(command) \(help)")
                XCTAssertTrue(result.stdout.contains("  --  "), "\(command): help lists '--'")
            }
            let unknown = try run(arguments + ["--bogus", "x"])
            XCTAssertEqual(unknown.status, 64, command)
            XCTAssertTrue(unknown.stderr.hasPrefix("error: unknown option '--bogus'"), "\(command): \(unknown.stderr)")
            XCTAssertTrue(unknown.stderr.contains("\nUsage: rulec \(command)"), command)
        }
        for (command, option) in [
            ("check", "--stamp"), ("simulate", "--save"), ("fmt", "--width"), ("explain", "--state"),
            ("trigger", "--count"), ("diff", "--state"),
        ] {
            let missing = try run([command, option])
            XCTAssertEqual(missing.status, 64, command)
            XCTAssertTrue(missing.stderr.hasPrefix("error: '\(option)' needs a value"), "\(command): \(missing.stderr)")
        }
        let flagWithValue = try run(["dump", "--json=yes", rules])
        XCTAssertEqual(flagWithValue.status, 64)
        XCTAssertTrue(flagWithValue.stderr.hasPrefix("error: '--json' takes no value"), flagWithValue.stderr)
    }

    func testEqualsFormEveryValuedOption() throws {
        let folder = scratchFolder("options")
        let state = folder.appendingPathComponent("s.state").path
        let stamp = folder.appendingPathComponent("stamp").path
        try assertSame(
            ["check", "--language=1.0", "--stamp=\(stamp)", rules],
            ["check", "--language", "1.0", "--stamp", stamp, rules])
        try assertSame(["fmt", "--width=40", rules], ["fmt", "--width", "40", rules])
        try assertSame(["gen", "swift", "--access=public", rules], ["gen", "swift", "--access", "public", rules])
        try assertSame(["gen", "swift", "-o=\(stamp)", rules], ["gen", "swift", "--output", stamp, rules])
        try assertSame(
            ["simulate", "--time-zone=Europe/Paris", "--save=\(state)", rules, timeline],
            ["simulate", "--time-zone", "Europe/Paris", "--save", state, rules, timeline])
        try assertSame(
            ["explain", "--state=\(state)", "--at=1767225600", rules],
            ["explain", "--state", state, "--at", "1767225600", rules])
        XCTAssertEqual(try run(["trigger", "--state=\(state)", "--count=2", rules, "AskToSubscribe"]).status, 0)
        XCTAssertEqual(try run(["trigger", "--state", state, "--count", "2", rules, "AskToSubscribe"]).status, 0)
        XCTAssertTrue(try run(["state", state]).stdout.contains("AskToSubscribe"))
        try assertSame(
            ["diff", "--state=\(state)", "examples/release/v1.rules", "examples/release/v2.rules"],
            ["diff", "--state", state, "examples/release/v1.rules", "examples/release/v2.rules"])
    }

    func testDoubleDashEndsOptionsInEveryCommand() throws {
        let folder = scratchFolder("options")
        // A rules file whose name starts with '-': reachable only after '--'.
        let dashed = folder.appendingPathComponent("-app.rules")
        try FileManager.default.copyItem(
            at: RulecBinary.packageRoot.appendingPathComponent(rules), to: dashed)
        let timelineCopy = folder.appendingPathComponent("-t.timeline")
        try FileManager.default.copyItem(at: RulecBinary.packageRoot.appendingPathComponent(timeline), to: timelineCopy)
        let (d, state) = ("-app.rules", "-s.state")
        // Run in the folder, with relative names: each starts with '-'.
        func ok(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
            let result = try Subprocess.run(RulecBinary.url, arguments, in: folder)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)", file: file, line: line)
            return result
        }
        _ = try ok(["check", "--", d])
        _ = try ok(["fmt", "--", d])
        _ = try ok(["gen", "--", "swift", d])
        _ = try ok(["dump", "--json", "--", d])
        _ = try ok(["simulate", "--save", state, "--", d, "-t.timeline"])
        _ = try ok(["state", "--", state])
        _ = try ok(["explain", "--state", state, "--", d])
        _ = try ok(["trigger", "--state", state, "--", d, "AskToSubscribe"])
        XCTAssertTrue(try ok(["seal", "--", d]).stdout.contains("# sealed crc32="))
        _ = try ok(["diff", "--", d, d])
        // Before '--', a name starting with '-' is an unknown option.
        let relative = try Subprocess.run(RulecBinary.url, ["check", "-app.rules"], in: folder)
        XCTAssertEqual(relative.status, 64)
        XCTAssertTrue(relative.stderr.hasPrefix("error: unknown option '-app.rules'"), relative.stderr)
        XCTAssertEqual(try Subprocess.run(RulecBinary.url, ["check", "--", "-app.rules"], in: folder).status, 0)
        // lsp takes no operands, after '--' or not.
        XCTAssertEqual(try run(["lsp", "--", "x"]).status, 64)
    }
}
