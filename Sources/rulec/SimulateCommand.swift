import Foundation
import RuleLang
import RuleRuntime
import RuleTimeline

/// `rulec simulate RULES... TIMELINE [--json]`
enum SimulateCommand: Command {
    static let summary = "replay a timeline against the rules with a simulated clock"
    static let json = Flag("--json", help: "print one JSON object per output line")
    static let html = Valued(
        "--html", value: "FILE",
        help:
            "also draw the timeline into FILE, one self-contained HTML page: a lane\nper scenario and group (eligible spans, executions, answers), events,\nsessions, swaps and zone changes; the explain line on hover"
    )
    static let timeZone = Valued(
        "--time-zone", value: "ZONE",
        help:
            "the device's time zone at the start (an IANA name such as\nEurope/Paris; default UTC); a 'timezone' step moves it"
    )
    static let installID = Valued(
        "--install-id", value: "ID",
        help:
            "the install's id that bucket(\"salt\") hashes (default 'simulated', so that\na replay's buckets are the same every time)"
    )
    static let save = Valued(
        "--save", value: "FILE",
        help:
            "write the final state to FILE, a FileStore file (replaced whole), for\n'rulec state' and 'rulec explain --state'"
    )
    static let check = Flag(
        "--check",
        help:
            "compare the output with the timeline's '#> ' lines (each the output\nline of the step above it): print nothing when they agree, both\nlists from the first difference and exit 1 when they do not"
    )
    static let options = CommandOptions(
        name: "simulate",
        title: "rulec simulate: replay a timeline against rules, with a simulated clock and an in-memory store.",
        operands: "RULES... TIMELINE",
        about: """
            RULES are .rules files or directories, checked together; TIMELINE is the
            last argument. Each timeline line is 'TIME STEP ...' where TIME is an
            offset from the start ('0', '90s', '1d12h'; it may go backwards). Steps:
              launch VERSION          the run before ends cleanly and a session of the app at VERSION
                                      starts (it records no event: add 'trigger launch' for one)
              trigger NAME            record an event on stream NAME
              trigger NAME PROP=VALUE ...  an event with its declared properties (a quoted VALUE is a string)
              done NAME               Ecno's markDone: an event, and NAME's to-do cleared
              try SCENARIO            try to execute: prints 'TIME SCENARIO yes' or 'TIME SCENARIO no: REASON'
              set PARAM VALUE         store a param's value
              reset NAME              reset a scenario (or a group's budget)
              todo NAME [until D]     add a to-do, expiring after D
              info NAME               prints the pending to-do's info: 'TIME info NAME: k=v ...'
              check CONDITION         prints 'TIME check true' or 'TIME check false'
              next [SCENARIO ...]     execute the highest-priority eligible scenario: 'TIME next NAME' or 'TIME next none'
              rules PATH              swap to the rules in PATH (beside the timeline): 'TIME rules PATH: swapped'
              timezone ZONE           the device moves to time zone ZONE (an IANA name such as Asia/Tokyo)
              outcome SCENARIO OUTCOME   record what became of its prompt (accepted, dismissed, declined, later, unknown)
              present SCENARIO        show it if it may run: 'TIME SCENARIO shown' or 'TIME SCENARIO no: REASON'
              finish SCENARIO OUTCOME end its open presentation: 'TIME finish SCENARIO OUTCOME'
              crash                   the app's run ends uncleanly; it is launched again (same version)
              problem                 the app reports a problem (the 'problem' stream)
              enter CONTEXT           the app is in CONTEXT from now on (language 1.3's 'in', 'not in')
              leave CONTEXT           the app leaves CONTEXT
              visible SCENARIO        its open presentation is on screen (language 1.3's 'counts after')
              hidden SCENARIO         its open presentation is no longer on screen
              background              the app is suspended (its presentations' time on screen stops)
              foreground              the app comes back without a launch
            '#' starts a comment. Names with spaces may be quoted.
            """,
        options: [json, html, timeZone, installID, save, check],
        exitStatus:
            "Exit status: 0 success, 1 errors in the rules or the timeline (or, with --check, an\noutput that differs from its '#> ' lines), 64 wrong usage."
    )

    /// The simulation starts at 2026-01-01T00:00:00Z.
    static let start = TimelineRunner.start

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let json = parsed[Self.json]
        let save = parsed[Self.save]
        let checking = parsed[Self.check]
        if checking && json {
            return CLI.misuse("'--check' compares the text output; leave out '--json'", usage: usage)
        }
        var zone = TimeZone(identifier: "UTC")!
        var paths = parsed.operands
        if let value = parsed[Self.timeZone] {
            guard let found = TimeZone(identifier: value) else {
                return CLI.misuse("unknown time zone '\(value)'; use an IANA name such as Europe/Paris", usage: usage)
            }
            zone = found
        }
        guard paths.count >= 2 else { return CLI.misuse("expected RULES and a TIMELINE", usage: usage) }
        let timelinePath = paths.removeLast()
        guard let ruleFiles = CLI.ruleFiles(paths, usage: usage) else { return ExitCode.usage }
        guard FileManager.default.fileExists(atPath: timelinePath) else {
            CLI.printError("error: no such file or directory: '\(timelinePath)'")
            return ExitCode.usage
        }
        let read = CLI.readSources(ruleFiles + [timelinePath])
        guard read.unreadable.isEmpty, let timeline = read.sources.last else { return ExitCode.failure }
        let sources = Array(read.sources.dropLast())
        let renderer = DiagnosticRenderer(colored: CLI.stdoutIsColorTerminal && !json)
        let clock = ManualClock(start)
        let memory = InMemoryStore()
        let engine: RuleEngine
        do {
            var options = RuleEngine.Options(timeZone: zone)
            options.installID = parsed[Self.installID] ?? TimelineRunner.installID
            engine = try RuleEngine(sources: sources, store: memory, clock: clock, options: options)
        } catch RuleEngineError.invalidRules(let diagnostics) {
            print(renderer.render(diagnostics), terminator: "")
            return ExitCode.failure
        } catch {
            CLI.printError("error: \(error)")
            return ExitCode.failure
        }
        var parser = TimelineParser(file: timeline, program: engine.program)
        let steps = parser.parse()
        if parser.diagnostics.hasErrors {
            print(renderer.render(parser.diagnostics.sortedByPosition()), terminator: "")
            return ExitCode.failure
        }
        if !parser.diagnostics.isEmpty {
            // Warnings go to standard error, so the simulation's output stays as it was.
            let warnings = DiagnosticRenderer(colored: CLI.stderrIsColorTerminal).render(
                parser.diagnostics.sortedByPosition())
            FileHandle.standardError.write(Data(warnings.utf8))
        }
        if let html = parsed[Self.html] {
            let picture = TimelinePicture(
                steps: steps, engine: engine, clock: clock, zone: zone,
                title: (timelinePath as NSString).lastPathComponent, json: json)
            if checking {
                if let exit = compare(picture.lines, with: timeline, at: timelinePath) { return exit }
            } else {
                for line in picture.lines { print(line) }
            }
            do {
                try Data(picture.html.utf8).write(to: URL(fileURLWithPath: html), options: .atomic)
            } catch {
                CLI.printError("error: cannot write '\(html)': \(error.localizedDescription)")
                return ExitCode.failure
            }
        } else {
            let lines = TimelineRunner.run(steps, on: engine, clock: clock, json: json)
            if checking {
                if let exit = compare(lines, with: timeline, at: timelinePath) { return exit }
            } else {
                for line in lines { print(line) }
            }
        }
        if let save { return saveState(memory, to: save) }
        return ExitCode.ok
    }

    /// `--check`: the output `lines` against the timeline's `#> ` lines. Nil when they agree;
    /// otherwise prints where they part (the expected line's place, then both lists from there)
    /// and returns exit status 1.
    static func compare(_ lines: [String], with timeline: SourceFile, at path: String) -> Int32? {
        var expected: [(line: Int, text: String)] = []
        for line in 1...max(1, timeline.lineStarts.count) {
            let text = timeline.text(timeline.lineRange(line))
            if text.hasPrefix("#> ") { expected.append((line, String(text.dropFirst(3)))) }
        }
        let common = min(lines.count, expected.count)
        let first = (0..<common).first { lines[$0] != expected[$0].text } ?? common
        if first == lines.count && first == expected.count { return nil }
        let place = first < expected.count ? "\(path):\(expected[first].line):1" : path
        var out = "\(place): error: the output differs from the timeline's '#> ' lines"
        out += first < expected.count ? " from this one\n" : " after its last\n"
        out += "expected:\n" + expected[first...].map { "  \($0.text)\n" }.joined()
        out += "actual:\n" + lines[first...].map { "  \($0)\n" }.joined()
        print(out, terminator: "")
        return ExitCode.failure
    }

    /// Writes `memory`'s entries as a fresh FileStore file at `path` (built beside it, then
    /// renamed over it, so a failure leaves any old file whole).
    static func saveState(_ memory: InMemoryStore, to path: String) -> Int32 {
        let temporary = path + ".saving-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            try? FileManager.default.removeItem(atPath: temporary)
            let entries = try memory.load()
            do {
                let store = FileStore(url: URL(fileURLWithPath: temporary))
                _ = try store.load()
                try store.apply(entries.keys.sorted().map { StoreChange(key: $0, value: entries[$0]) })
            }
            if rename(temporary, path) != 0 { throw CocoaError(.fileWriteUnknown) }
            return ExitCode.ok
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            CLI.printError("error: cannot write state file '\(path)': \(error)")
            return ExitCode.failure
        }
    }
}
