import Foundation
import RuleLang
import RuleRuntime
import TestSupport
import XCTest

@testable import RuleTimeline

/// `rulec simulate --html`: the page is loaded in a real browser (Debian's chromium, headless),
/// and the drawing read back from its DOM is compared with `rulec simulate --json` run on its own:
/// every answer, execution and event where the text output puts it, and each lane's span at every
/// `try` of the colour of that answer. CI sets RULES_BROWSER=required; elsewhere the test is
/// skipped when no chromium is installed.
final class TimelinePictureTests: XCTestCase {
    struct Element {
        var name: String
        var attributes: [String: String]
        var lane: String?
    }

    /// The SVG elements of a dumped DOM, each with its attributes and the lane (`g`) it is in.
    static func elements(_ dom: String) -> [Element] {
        let pattern = try! NSRegularExpression(pattern: #"<(/?)(svg|g|rect|line|circle)\b([^>]*)>"#)
        let attribute = try! NSRegularExpression(pattern: #"([a-z0-9-]+)="([^"]*)""#)
        var result: [Element] = []
        var lane: String?
        let text = dom as NSString
        for match in pattern.matches(in: dom, range: NSRange(location: 0, length: text.length)) {
            let closing = text.substring(with: match.range(at: 1)) == "/"
            let name = text.substring(with: match.range(at: 2))
            if closing {
                if name == "g" { lane = nil }
                continue
            }
            let body = text.substring(with: match.range(at: 3))
            var attributes: [String: String] = [:]
            for found in attribute.matches(in: body, range: NSRange(location: 0, length: (body as NSString).length)) {
                let key = (body as NSString).substring(with: found.range(at: 1))
                attributes[key] = unescape((body as NSString).substring(with: found.range(at: 2)))
            }
            if name == "g" { lane = attributes["data-lane"] }
            result.append(Element(name: name, attributes: attributes, lane: lane))
        }
        return result
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The picture of `timeline` over `rules`, drawn in UTC from the simulation's start.
    static func picture(_ rules: SourceFile, _ timeline: SourceFile) throws -> TimelinePicture {
        let clock = ManualClock(TimelineRunner.start)
        let engine = try RuleEngine(sources: [rules], clock: clock)
        var parser = TimelineParser(file: timeline, program: engine.program)
        let steps = parser.parse()
        XCTAssertFalse(parser.diagnostics.hasErrors, "\(parser.diagnostics)")
        return TimelinePicture(
            steps: steps, engine: engine, clock: clock, zone: TimeZone(identifier: "UTC")!, title: "t")
    }

    /// Draws `timeline` against `rules` (paths), loads the page in the browser and checks it
    /// against the text output; returns the number of spans checked at a `try`, and the DOM's
    /// SVG elements.
    func checkPicture(
        rules: [String], timeline: String, in directory: URL, extra: [String] = [], answers: Bool = true
    ) throws -> (checked: Int, elements: [Element]) {
        let chromium = try ExternalTool.chromium()
        let page = directory.appendingPathComponent("page.html")
        let drawn = try RulecBinary.run(["simulate"] + extra + ["--html", page.path] + rules + [timeline])
        XCTAssertEqual(drawn.status, 0, drawn.stderr)
        let text = try RulecBinary.run(["simulate", "--json"] + extra + rules + [timeline])
        XCTAssertEqual(text.status, 0, text.stderr)
        let plain = try RulecBinary.run(["simulate"] + extra + rules + [timeline])
        XCTAssertEqual(drawn.stdout, plain.stdout, "--html changes the printed lines")
        let dumped = try Subprocess.run(
            URL(fileURLWithPath: chromium),
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(directory.path)/profile",
                "--dump-dom", page.absoluteString,
            ], in: directory)
        XCTAssertEqual(dumped.status, 0, dumped.stderr)
        let dom = dumped.stdout
        XCTAssertTrue(dom.contains("data-ready=\"yes\""), "the page's script did not run")
        let elements = Self.elements(dom)
        // A timeline of prompts, swaps and holdouts is checked kind by kind by its test.
        guard answers else { return (0, elements) }
        let svg = try XCTUnwrap(elements.first { $0.name == "svg" })
        let t0 = Double(svg.attributes["data-t0"]!)!
        let t1 = Double(svg.attributes["data-t1"]!)!
        let left = Double(svg.attributes["data-left"]!)!
        let width = Double(svg.attributes["data-width"]!)!
        func x(_ seconds: Double) -> Double { left + (seconds - t0) / (t1 - t0) * width }
        func number(_ element: Element, _ key: String) -> Double { Double(element.attributes[key] ?? "") ?? .nan }

        let outputs = try text.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        // Answers: one dot per 'try' line, in order, at its time, in its lane, of its answer.
        let tries = outputs.filter { $0["step"] as? String == "try" }
        let dots = elements.filter { $0.name == "circle" && ($0.attributes["class"] ?? "").hasPrefix("try ") }
        XCTAssertEqual(dots.count, tries.count)
        let spans = elements.filter { $0.name == "rect" && ($0.attributes["class"] ?? "").hasPrefix("span ") }
        var checked = 0
        for (dot, output) in zip(dots, tries) {
            let seconds = Double(output["seconds"] as! Int)
            let answer = output["result"] as! String
            XCTAssertEqual(dot.attributes["data-lane"], output["name"] as? String)
            XCTAssertEqual(dot.attributes["class"], "try \(answer)")
            XCTAssertEqual(number(dot, "cx"), x(seconds), accuracy: 0.01)
            // The lane's span at that moment (the last one starting at or before the dot's
            // sample) has the answer's colour and covers the dot; no span is drawn for a moment
            // behind one already reached (the clock set back).
            if dot.attributes["data-behind"] == "yes" { continue }
            let sample = Int(dot.attributes["data-sample"]!)!
            let lane = spans.filter { $0.lane == output["name"] as? String }
            let span = try XCTUnwrap(lane.last { Int($0.attributes["data-sample"]!)! <= sample })
            XCTAssertEqual(span.attributes["class"], "span \(answer)", "at \(output["time"]!) \(output["name"]!)")
            XCTAssertLessThanOrEqual(number(span, "x"), x(seconds) + 0.01)
            XCTAssertGreaterThanOrEqual(number(span, "x") + max(number(span, "width"), 1), x(seconds) - 0.01)
            checked += 1
        }
        // Every lane's spans tile the whole range, each at its own time.
        for lane in Set(spans.compactMap(\.lane)) {
            let own = spans.filter { $0.lane == lane }
            XCTAssertEqual(number(own.first!, "data-from"), t0)
            XCTAssertEqual(number(own.last!, "data-to"), t1)
            for (a, b) in zip(own, own.dropFirst()) {
                XCTAssertEqual(number(a, "data-to"), number(b, "data-from"))
                XCTAssertNotEqual(a.attributes["class"], b.attributes["class"], "two like spans in a row: \(lane)")
            }
            for span in own { XCTAssertEqual(number(span, "x"), x(number(span, "data-from")), accuracy: 0.01) }
        }
        // Executions: a tick per 'try ... yes' and per 'next NAME', in its lane, at its time.
        var executions: [String] = []
        for output in outputs {
            let step = output["step"] as? String
            if step == "try" && output["result"] as? String == "yes" || step == "next" && output["name"] != nil {
                executions.append("\(output["name"]!)@\(output["seconds"]!)")
            }
        }
        let ticks = elements.filter { $0.name == "line" && $0.attributes["class"] == "tick" }
        XCTAssertEqual(ticks.map { "\($0.attributes["data-lane"]!)@\($0.attributes["data-at"]!)" }, executions)
        for tick in ticks { XCTAssertEqual(number(tick, "x1"), x(number(tick, "data-at")), accuracy: 0.01) }
        return (checked, elements)
    }

    /// Language 1.2's steps on the picture: a presentation is an answer and a tick, a finish an
    /// outcome tick (none for a finish of nothing showing), a crash a session line.
    func testPromptStepsAreDrawn() throws {
        let rules = SourceFile(
            path: "p.rules",
            text:
                "# language 1.2\ngroup G < > {\n    scenario A < when since_last(crash) >= 1d >\n    scenario B < >\n}\n"
        )
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 launch 1\n0 present A\n0 present B\n1m finish A later\n1m finish B later\n2h crash\n3h present A\n"
        )
        let picture = try Self.picture(rules, timeline)
        XCTAssertEqual(
            picture.lines,
            [
                "0 A shown", "0 B no: showing: A is showing (for 0s; it ends when finished, or in 1h)",
                "1m finish A later", "1m finish B: not showing", "3h A no: when since_last(crash) >= 1d: false",
            ])
        let elements = Self.elements(picture.html)
        // A presentation is an execution's tick; an outcome a tick of its own kind.
        func at(_ class: String) -> [String] {
            elements.filter { $0.name == "line" && $0.attributes["class"] == `class` }.map {
                "\($0.attributes["data-lane"] ?? "")@\($0.attributes["data-at"]!)"
            }
        }
        XCTAssertEqual(at("tick"), ["A@0"])
        XCTAssertEqual(at("tick outcome"), ["A@60"])
        XCTAssertTrue(picture.html.contains("<title>presented</title>"))
        XCTAssertTrue(picture.html.contains("<title>outcome: later</title>"))
        let dots = elements.filter { $0.name == "circle" && ($0.attributes["class"] ?? "").hasPrefix("try ") }
        XCTAssertEqual(dots.map { $0.attributes["class"]! }, ["try yes", "try no", "try no"])
        XCTAssertEqual(at("session"), ["@0"], "the launch")
        XCTAssertEqual(at("session crash"), ["@7200"], "the crash's relaunch, a line of its own kind")
        // The legend names each kind once, and the drawing keeps its size.
        for label in ["execution", "outcome", "session", "crash", "try: yes", "try: no", "event"] {
            XCTAssertTrue(picture.html.contains(">\(label)</text>"), label)
        }
    }

    /// Language 1.3's counted exposure on the picture: a presentation of a scenario counted once
    /// seen is no execution; its execution is a tick at the moment its time on screen was reached
    /// (between two steps), and visible, hidden, background and foreground are marked.
    func testACountedPresentationIsDrawnWhenItCounts() throws {
        let rules = SourceFile(path: "c.rules", text: "# language 1.3\nscenario B < counts after 3s visible >\n")
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 launch 1\n0 present B\n1s visible B\n3s hidden B\n20s visible B\n1m finish B accepted\n"
                + "2m present B\n2m visible B\n2m1s background\n1h foreground\n1h1s finish B later\n")
        let picture = try Self.picture(rules, timeline)
        let elements = Self.elements(picture.html)
        func at(_ class: String) -> [String] {
            elements.filter { $0.name == "line" && $0.attributes["class"] == `class` }.map {
                "\($0.attributes["data-lane"] ?? "")@\($0.attributes["data-at"]!)"
            }
        }
        XCTAssertEqual(at("tick"), ["B@21"], "counted at 21s; the second presentation never counts")
        XCTAssertTrue(picture.html.contains("<title>counted once seen</title>"))
        XCTAssertFalse(picture.html.contains("<title>presented</title>"))
        XCTAssertEqual(at("tick visibility"), ["B@1", "B@3", "B@20", "B@120"])
        XCTAssertTrue(picture.html.contains("<title>background</title>"))
        XCTAssertTrue(picture.html.contains("<title>foreground</title>"))
    }

    /// Every kind of mark, loaded in the browser, where the text output (or the timeline, for
    /// steps that print nothing) puts it: executions, outcomes, a presentation on screen from
    /// `present` to `finish`, control exposures of a holdout, crashes, sessions, a swap and a
    /// zone change.
    func testEveryKindIsDrawnWhereTheSimulationSays() throws {
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rules = directory.appendingPathComponent("p.rules")
        let next = directory.appendingPathComponent("next.rules")
        let text = """
            # language 1.2
            event visit
            group G < between 1h > {
                scenario Rate < on visit; when since_last(crash) >= 1d >
            }
            scenario Offer < on visit; holdout 50% "offer" >

            """
        try text.write(to: rules, atomically: true, encoding: .utf8)
        try (text + "scenario Tip < on visit >\n").write(to: next, atomically: true, encoding: .utf8)
        let timeline = directory.appendingPathComponent("t.timeline")
        try """
        0 launch 1
        0 trigger visit
        1m present Rate
        10m finish Rate later
        20m try Offer
        2h present Rate
        3h crash
        4h timezone Asia/Tokyo
        5h try Offer
        6h rules next.rules
        7h try Tip
        8h outcome Rate declined

        """.write(to: timeline, atomically: true, encoding: .utf8)
        // An install the offer's holdout holds out.
        let probe = "# language 1.2\nscenario O < holdout 50% \"offer\" >"
        let id = try XCTUnwrap(
            (0..<100).map { "install-\($0)" }.first { id in
                var options = RuleEngine.Options(logSubsystem: nil)
                options.installID = id
                return (try? RuleEngine(source: probe, options: options))?.isHeldOut("O") == true
            })
        let (_, elements) = try checkPicture(
            rules: [rules.path], timeline: timeline.path, in: directory, extra: ["--install-id", id], answers: false)
        func at(_ name: String, _ kind: String) -> [String] {
            elements.filter { $0.name == name && $0.attributes["class"] == kind }.map {
                ($0.attributes["data-lane"].map { $0 + "@" } ?? "")
                    + ($0.attributes["data-at"] ?? "\($0.attributes["data-from"]!)-\($0.attributes["data-to"]!)")
            }
        }
        let text2 = try RulecBinary.run(["simulate", "--json", "--install-id", id, rules.path, timeline.path])
        let outputs = try text2.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        func seconds(_ step: String, _ result: (String) -> Bool) -> [String] {
            outputs.filter { $0["step"] as? String == step && result($0["result"] as? String ?? "") }.map {
                "\($0["name"]!)@\($0["seconds"]!)"
            }
        }
        // Held out: each `try Offer` answered no with the control arm, a control tick there.
        let held = outputs.filter { ($0["reason"] as? String ?? "").contains("the control arm") }.map {
            "\($0["name"]!)@\($0["seconds"]!)"
        }
        XCTAssertEqual(held, ["Offer@1200", "Offer@18000"])
        XCTAssertEqual(at("line", "tick control"), held)
        // Outcomes: a finish and an outcome step.
        XCTAssertEqual(at("line", "tick outcome"), ["Rate@600", "Rate@28800"])
        XCTAssertEqual(seconds("finish", { $0 == "later" }), ["Rate@600"])
        // On screen: from the shown presentation to its finish; the second never finished, until
        // it expires (an hour).
        XCTAssertEqual(seconds("present", { $0 == "shown" }), ["Rate@60", "Rate@7200"])
        XCTAssertEqual(at("rect", "showing"), ["Rate@60-600", "Rate@7200-10800"])
        // Executions: the presentations and the swap's new scenario.
        XCTAssertEqual(at("line", "tick"), ["Rate@60", "Rate@7200", "Tip@25200"])
        XCTAssertEqual(at("line", "session"), ["0"])
        XCTAssertEqual(at("line", "session crash"), ["10800"])
        XCTAssertEqual(at("line", "marker zone"), ["14400"])
        XCTAssertEqual(at("line", "marker rules"), ["21600"])
        // Every answer (a `try`, a `present`) where the text output puts it.
        let answered = outputs.filter { ["try", "present"].contains($0["step"] as? String) }.map {
            "\($0["name"]!)@\($0["seconds"]!):\($0["result"] as? String == "no" ? "no" : "yes")"
        }
        let dots = elements.filter { $0.name == "circle" && ($0.attributes["class"] ?? "").hasPrefix("try ") }.map {
            "\($0.attributes["data-lane"]!)@\($0.attributes["data-at"]!):\($0.attributes["class"]!.dropFirst(4))"
        }
        XCTAssertEqual(dots, answered)
        // Each at its own time on the axis.
        let svg = try XCTUnwrap(elements.first { $0.name == "svg" })
        let (t0, t1) = (Double(svg.attributes["data-t0"]!)!, Double(svg.attributes["data-t1"]!)!)
        let (left, width) = (Double(svg.attributes["data-left"]!)!, Double(svg.attributes["data-width"]!)!)
        for element in elements where ["tick control", "tick outcome", "showing"].contains(element.attributes["class"])
        {
            let time = Double(element.attributes["data-at"] ?? element.attributes["data-from"]!)!
            let x = Double(element.attributes["x1"] ?? element.attributes["x"]!)!
            XCTAssertEqual(x, left + (time - t0) / (t1 - t0) * width, accuracy: 0.01)
        }
    }

    /// The axis labels the start when no tick is close to it: a timeline in Berlin starts at 01:00
    /// local, after the day's midnight, and its first day had no label.
    func testTheAxisLabelsTheStart() {
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let labels = TimelinePicture.axis(first: 0, end: 7 * 86_400, zone: berlin)
        XCTAssertEqual(labels.first?.0, 0)
        XCTAssertEqual(labels.first?.1, "Jan 1 01:00")
        // In UTC the first midnight is the start: labelled once, as a day.
        let utc = TimelinePicture.axis(first: 0, end: 7 * 86_400, zone: TimeZone(identifier: "UTC")!)
        XCTAssertEqual(utc.first?.0, 0)
        XCTAssertEqual(utc.first?.1, "Jan 1")
        XCTAssertEqual(utc.filter { $0.0 == 0 }.count, 1)
    }

    /// A name with `<!--<script>` in it: the data embedded in the page's script element holds no
    /// `<` (inside a script element `<!--` and `<script` change where it ends, and the page's
    /// script broke), and reads back as the name.
    func testTheEmbeddedDataHoldsNoAngleBracket() throws {
        let name = "<!--<script>x</script>"
        let rules = SourceFile(path: "p.rules", text: "event \"\(name)\"\nscenario A < on \"\(name)\" >\n")
        let timeline = SourceFile(path: "t.timeline", text: "0 launch 1\n0 trigger \"\(name)\"\n1m try A\n")
        let html = try Self.picture(rules, timeline).html
        let open = "<script type=\"application/json\" id=\"data\">"
        let start = try XCTUnwrap(html.range(of: open)).upperBound
        let end = try XCTUnwrap(html.range(of: "</script>", range: start..<html.endIndex)).lowerBound
        let data = String(html[start..<end])
        XCTAssertFalse(data.contains("<"), data)
        let decoded = try JSONSerialization.jsonObject(with: Data(data.utf8))
        XCTAssertTrue("\(decoded)".contains(name), "the name reads back whole")
    }

    /// The page grows linearly with the steps and the distinct events: twice the events, each
    /// triggered once, makes a page about twice as large (it was four times: a state per sample
    /// for every event's lane, 742 MB for 2,000 names).
    func testThePageGrowsLinearlyWithDistinctEvents() throws {
        func pageSize(_ names: Int) throws -> Int {
            let rules = SourceFile(path: "p.rules", text: "scenario A < on e0; min_events 1 >\n")
            let steps = (0..<names).map { "\($0)m trigger e\($0)\n" }.joined()
            let timeline = SourceFile(path: "t.timeline", text: "0 launch 1\n" + steps + "\(names)m try A\n")
            return try Self.picture(rules, timeline).html.utf8.count
        }
        let (small, large) = (try pageSize(300), try pageSize(600))
        XCTAssertLessThan(Double(large) / Double(small), 2.5, "\(small) then \(large) bytes")
    }

    func testTheExampleTimelineIsDrawnWhereTheSimulationSays() throws {
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = RulecBinary.packageRoot.path
        let (checked, elements) = try checkPicture(
            rules: ["\(root)/examples/app.rules"], timeline: "\(root)/examples/app.timeline", in: directory)
        XCTAssertEqual(checked, 10)
        // A mark per 'trigger' step, on its stream's lane; a session line per 'launch'.
        let events = elements.filter { $0.name == "circle" && $0.attributes["class"] == "event" }
        XCTAssertEqual(
            events.map { "\($0.attributes["data-lane"]!)@\($0.attributes["data-at"]!)" },
            [
                "launch@0", "launch@3600", "article_read@7200", "article_read@10800", "article_read@14400",
                "launch@86400", "launch@86400",
            ])
        let sessions = elements.filter { $0.name == "line" && $0.attributes["class"] == "session" }
        XCTAssertEqual(sessions.map { $0.attributes["data-at"]! }, ["0", "7200", "86400"])
    }

    /// The hover, run under Node (`Tests/Browser/hover.js`: the page's script with a stub of the
    /// DOM): over a scenario's lane at the time of each `try` it answered no (nothing later at
    /// that time changes that scenario), it shows that time and the reason the text output gives.
    func testTheHoverShowsTheExplainLineOfThatMoment() throws {
        let node = try ExternalTool.node()
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = RulecBinary.packageRoot.path
        let page = directory.appendingPathComponent("page.html").path
        let rules = ["\(root)/examples/app.rules", "\(root)/examples/app.timeline"]
        XCTAssertEqual(try RulecBinary.run(["simulate", "--html", page] + rules).status, 0)
        let text = try RulecBinary.run(["simulate", "--json"] + rules)
        let refused = try text.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }.filter { $0["step"] as? String == "try" && $0["result"] as? String == "no" }
        XCTAssertEqual(refused.count, 5)
        let requests = refused.flatMap { [$0["name"] as! String, "\($0["seconds"] as! Int)"] }
        let hovered = try Subprocess.run(
            URL(fileURLWithPath: node), ["\(root)/Tests/Browser/hover.js", page] + requests, in: directory)
        XCTAssertEqual(hovered.status, 0, hovered.stderr)
        let lines = hovered.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, refused.count)
        for (line, output) in zip(lines, refused) {
            XCTAssertTrue(line.hasPrefix("\(output["time"]!) ("), line)
            XCTAssertTrue(line.hasSuffix(") scenario \(output["name"]!): \(output["reason"]!)"), line)
        }
    }

    /// Ten scenarios and a group over a year: sessions, a zone change, a swap to rules with one
    /// more scenario, a name that needs escaping, random events and answers from a fixed seed.
    func testAYearOfTenScenariosIsDrawnWhereTheSimulationSays() throws {
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rules = """
            event launch, read, "a <b> & 'c'"
            scenario Welcome < on launch; max_events 1; max_exec 1 >
            scenario WhatsNew < when upgraded; max_exec 1 per version; priority 5 >
            group Prompts < max_exec 1 within 1d; between 12h > {
                scenario Rate < on launch; min_events 5; since_first 7d; max_exec 4; between 30d; priority 3 >
                scenario Subscribe < on launch; min_events 3; max_exec 4; between 2d; priority 2 >
                scenario Invite < on read; min_events 3 within 1d; priority 1 >
            }
            scenario Tip < on read; min_events 2; max_exec 3 per session >
            scenario Odd < on "a <b> & 'c'"; max_exec 2 within 7d >
            scenario Nudge < on launch; since_last 2d >
            scenario Weekly < max_exec 1 within 7d >
            scenario Daily < between 1d; max_exec 30 >

            """
        try rules.write(to: directory.appendingPathComponent("v1.rules"), atomically: true, encoding: .utf8)
        try (rules + "scenario Late < on launch; min_events 100 >\n").write(
            to: directory.appendingPathComponent("v2.rules"), atomically: true, encoding: .utf8)
        let names = [
            "Welcome", "WhatsNew", "Rate", "Subscribe", "Invite", "Tip", "Odd", "Nudge", "Weekly",
            "Daily",
        ]
        var seed: UInt64 = 0x5EED
        func random(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        var lines: [String] = []
        var streams = ["launch"]
        for day in 0..<365 {
            let base = day * 86_400
            if day == 120 { lines.append("\(base)s timezone Asia/Tokyo") }
            if day == 200 { lines.append("\(base)s rules v2.rules") }
            for _ in 0..<random(3) {
                let at = base + random(86_400)
                lines.append("\(at)s launch \(1 + day / 90).0")
                lines.append("\(at)s trigger launch")
                for _ in 0..<random(4) {
                    let stream = ["read", "a <b> & 'c'"][random(2)]
                    lines.append("\(at + random(600))s trigger \"\(stream)\"")
                    if !streams.contains(stream) { streams.append(stream) }
                }
                lines.append("\(at + 700)s try \(names[random(names.count)])")
                if random(4) == 0 { lines.append("\(at + 800)s next") }
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(
            to: directory.appendingPathComponent("year.timeline"), atomically: true, encoding: .utf8)
        let (checked, elements) = try checkPicture(
            rules: [directory.appendingPathComponent("v1.rules").path],
            timeline: directory.appendingPathComponent("year.timeline").path, in: directory,
            extra: ["--time-zone", "Europe/Paris"])
        XCTAssertGreaterThan(checked, 300)
        // The generated steps go back in time now and then (a launch earlier in the day than the
        // last one's events): each first step back is marked, and its answers are not spans.
        let back = elements.filter { $0.name == "line" && $0.attributes["class"] == "marker back" }
        let behind = elements.filter { $0.attributes["data-behind"] == "yes" }
        XCTAssertGreaterThan(back.count, 10)
        XCTAssertGreaterThan(behind.count, 0)
        // Scenarios (a swap's new one after them), then groups, then streams.
        let lanes = elements.filter { $0.name == "g" }.map { $0.attributes["data-lane"]! }
        XCTAssertEqual(
            lanes,
            names + ["Late", "Prompts"] + streams)
        let markers = elements.filter {
            $0.name == "line" && ["marker zone", "marker rules"].contains($0.attributes["class"] ?? "")
        }
        XCTAssertEqual(
            markers.map { $0.attributes["class"]! + "@" + $0.attributes["data-at"]! },
            [
                "marker zone@\(120 * 86_400)", "marker rules@\(200 * 86_400)",
            ])
        let dom = try String(contentsOf: directory.appendingPathComponent("page.html"), encoding: .utf8)
        XCTAssertTrue(dom.contains("a &lt;b&gt; &amp; &#39;c&#39;"), "names are escaped in the page")
    }
}
