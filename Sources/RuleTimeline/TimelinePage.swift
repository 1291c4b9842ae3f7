import Foundation
import RuleLang

/// The page of a ``TimelinePicture``: the SVG is written here; the script only reads the embedded
/// samples to show the explain line under the pointer.
extension TimelinePicture {
    /// The drawing's geometry, in SVG units: lanes' labels on the left, the plot on the right.
    enum Layout {
        static let left = 220.0
        static let width = 1000.0
        static let laneHeight = 22.0
        static let top = 64.0
    }

    /// Every span, tick, mark and marker carries its time in seconds (`data-at`, `data-from`,
    /// `data-to`) and the sample it starts at (`data-sample`), so a check can read the drawing
    /// back; the `svg` element carries the scale (`data-t0`, `data-t1`, `data-left`, `data-width`).
    static func page(
        title: String, zone: TimeZone, first: Int64, end: Int64, times: [Int64], lanes unordered: [Lane],
        ticks: [Mark], tries: [Mark], events: [Mark], markers: [Mark], showings: [Mark]
    ) -> String {
        // Scenarios (a swap's new ones after the first rules'), then groups, then streams.
        let lanes = [Lane.Kind.scenario, .group, .stream].flatMap { kind in unordered.filter { $0.kind == kind } }
        let span = Double(max(end - first, 1))
        func x(_ seconds: Int64) -> Double { Layout.left + Double(seconds - first) / span * Layout.width }
        func number(_ value: Double) -> String { String(format: "%.2f", value) }
        // Sessions and the clock set back are ticks on the top row; swaps, zone changes and
        // contexts entered and left are lines across every lane, labelled.
        let sessions = markers.filter { $0.lane == "launch" || $0.lane == "back" }
        let swaps = markers.filter { $0.lane == "rules" || $0.lane == "zone" || $0.lane == "context" }
        let sessionY = Layout.top
        func laneY(_ k: Int) -> Double { Layout.top + Layout.laneHeight * Double(k + 1) }
        let height = laneY(lanes.count) + 24
        let total = Layout.left + Layout.width + 20
        // The row of each scenario's lane, and of each stream's.
        var ruleRow: [String: Int] = [:]
        var streamRow: [String: Int] = [:]
        for (k, lane) in lanes.enumerated() where lane.kind == .scenario { ruleRow[lane.name] = k }
        for (k, lane) in lanes.enumerated() where lane.kind == .stream { streamRow[lane.name] = k }

        var svg: [String] = []
        svg.append(
            "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(number(total))\" "
                + "height=\"\(number(height))\" viewBox=\"0 0 \(number(total)) \(number(height))\" "
                + "data-t0=\"\(first)\" data-t1=\"\(end)\" data-left=\"\(number(Layout.left))\" "
                + "data-width=\"\(number(Layout.width))\">")
        svg.append("<text class=\"title\" x=\"8\" y=\"20\">\(escape(title))</text>")
        // The legend, on the title's row (the drawing keeps its size): each kind of mark once, its
        // elements of the class `key` besides their kind's (so that no reading of the drawing
        // takes them for marks).
        var legend = ""
        var legendX = Layout.left + Layout.width - 700
        for (kind, label) in [
            ("line tick", "execution"), ("line tick outcome", "outcome"), ("line tick control", "held out"),
            ("rect showing", "on screen"), ("line session", "session"), ("line session crash", "crash"),
            ("circle try yes", "try: yes"), ("circle try no", "try: no"), ("circle event", "event"),
        ] {
            let parts = kind.split(separator: " ", maxSplits: 1).map(String.init)
            switch parts[0] {
            case "line":
                legend +=
                    "<line class=\"key \(parts[1])\" x1=\"\(number(legendX))\" x2=\"\(number(legendX))\" y1=\"10\" y2=\"22\"/>"
            case "rect":
                legend +=
                    "<rect class=\"key \(parts[1])\" x=\"\(number(legendX - 4))\" y=\"11\" width=\"8\" height=\"10\"/>"
            default:
                legend += "<circle class=\"key \(parts[1])\" cx=\"\(number(legendX))\" cy=\"16\" r=\"3\"/>"
            }
            legend += "<text class=\"key axis\" x=\"\(number(legendX + 6))\" y=\"20\">\(label)</text>"
            legendX += 80
        }
        svg.append(legend)
        for (seconds, label) in axis(first: first, end: end, zone: zone) {
            svg.append(
                "<line class=\"grid\" x1=\"\(number(x(seconds)))\" x2=\"\(number(x(seconds)))\" y1=\"40\" "
                    + "y2=\"\(number(laneY(lanes.count)))\"/><text class=\"axis\" x=\"\(number(x(seconds)))\" "
                    + "y=\"36\">\(escape(label))</text>")
        }
        svg.append(
            "<text class=\"label\" x=\"8\" y=\"\(number(sessionY + 15))\">sessions (\(escape(zone.identifier)))</text>")
        for mark in sessions {
            svg.append(
                "<line class=\"\(mark.lane == "back" ? "marker back" : "session" + (mark.kind.map { " " + $0 } ?? ""))\" data-at=\"\(mark.seconds)\" x1=\"\(number(x(mark.seconds)))\" "
                    + "x2=\"\(number(x(mark.seconds)))\" y1=\"\(number(sessionY + 3))\" y2=\"\(number(sessionY + 19))\">"
                    + "<title>\(escape(mark.text))</title></line>")
        }
        for (k, lane) in lanes.enumerated() {
            let y = laneY(k)
            let kind = lane.kind == .stream ? "event" : lane.kind.rawValue
            svg.append(
                "<g class=\"lane \(lane.kind.rawValue)\" data-lane=\"\(escape(lane.name))\" data-y=\"\(number(y))\">"
                    + "<text class=\"label\" x=\"8\" y=\"\(number(y + 15))\">\(kind) \(escape(lane.name))</text>")
            if lane.kind != .stream {
                var start = 0
                while start < lane.states.count {
                    var next = start + 1
                    while next < lane.states.count && lane.states[next].answer == lane.states[start].answer {
                        next += 1
                    }
                    let from = times[start]
                    let to = next < times.count ? times[next] : end
                    let answer = lane.states[start].answer.rawValue
                    // An eligible moment between two steps at one time is drawn a pixel wide.
                    let width = max(x(to) - x(from), answer == "yes" ? 1 : 0)
                    svg.append(
                        "<rect class=\"span \(answer)\" data-sample=\"\(start)\" data-from=\"\(from)\" "
                            + "data-to=\"\(to)\" x=\"\(number(x(from)))\" y=\"\(number(y + 4))\" "
                            + "width=\"\(number(width))\" height=\"\(number(Layout.laneHeight - 8))\"/>")
                    start = next
                }
            }
            svg.append("</g>")
        }
        // A presentation on screen: a band over its lane from `present` to `finish` (or its expiry).
        for showing in showings {
            guard let row = ruleRow[showing.lane], let until = showing.until else { continue }
            let y = laneY(row)
            svg.append(
                "<rect class=\"showing\" data-lane=\"\(escape(showing.lane))\" data-from=\"\(showing.seconds)\" "
                    + "data-to=\"\(until)\" x=\"\(number(x(showing.seconds)))\" y=\"\(number(y + 1))\" "
                    + "width=\"\(number(max(x(until) - x(showing.seconds), 1)))\" height=\"3\">"
                    + "<title>\(escape(showing.text))</title></rect>")
        }
        for tick in ticks {
            guard let row = ruleRow[tick.lane] else { continue }
            let y = laneY(row)
            svg.append(
                "<line class=\"tick\(tick.kind.map { " " + $0 } ?? "")\" data-lane=\"\(escape(tick.lane))\" data-at=\"\(tick.seconds)\" "
                    + "x1=\"\(number(x(tick.seconds)))\" x2=\"\(number(x(tick.seconds)))\" y1=\"\(number(y + 1))\" "
                    + "y2=\"\(number(y + Layout.laneHeight - 1))\"><title>\(escape(tick.text))</title></line>")
        }
        for mark in tries {
            guard let row = ruleRow[mark.lane] else { continue }
            svg.append(
                "<circle class=\"try \(mark.answer ?? "no")\" data-lane=\"\(escape(mark.lane))\" "
                    + "data-at=\"\(mark.seconds)\" data-sample=\"\(mark.sample)\"\(mark.behind ? " data-behind=\"yes\"" : "") cx=\"\(number(x(mark.seconds)))\" "
                    + "cy=\"\(number(laneY(row) + Layout.laneHeight / 2))\" r=\"2.5\"><title>try "
                    + "\(escape(mark.lane)): \(escape(mark.text))</title></circle>")
        }
        for mark in events {
            guard let row = streamRow[mark.lane] else { continue }
            svg.append(
                "<circle class=\"event\" data-lane=\"\(escape(mark.lane))\" data-at=\"\(mark.seconds)\" "
                    + "cx=\"\(number(x(mark.seconds)))\" cy=\"\(number(laneY(row) + Layout.laneHeight / 2))\" r=\"3\">"
                    + "<title>\(escape(mark.text))</title></circle>")
        }
        for mark in swaps {
            svg.append(
                "<line class=\"marker \(mark.lane)\" data-at=\"\(mark.seconds)\" x1=\"\(number(x(mark.seconds)))\" "
                    + "x2=\"\(number(x(mark.seconds)))\" y1=\"\(number(sessionY))\" y2=\"\(number(laneY(lanes.count)))\">"
                    + "<title>\(escape(mark.text))</title></line><text class=\"marker-label\" "
                    + "x=\"\(number(x(mark.seconds) + 3))\" y=\"\(number(laneY(lanes.count) + 14))\">"
                    + "\(escape(mark.text))</text>")
        }
        svg.append("</svg>")

        // The hover data: each lane's explain line per sample, as indices into one table.
        var table: [String] = []
        var tableIndex: [String: Int] = [:]
        let laneData: [[String: AnyEncodable]] = lanes.enumerated().map { k, lane in
            let indices = lane.states.map { state -> Int in
                if let found = tableIndex[state.reason] { return found }
                table.append(state.reason)
                tableIndex[state.reason] = table.count - 1
                return table.count - 1
            }
            return [
                "name": AnyEncodable(lane.name), "kind": AnyEncodable(lane.kind.rawValue),
                "y": AnyEncodable(laneY(k)), "reasons": AnyEncodable(indices),
            ]
        }
        let data: [String: AnyEncodable] = [
            "t0": AnyEncodable(first), "t1": AnyEncodable(end), "left": AnyEncodable(Layout.left),
            "width": AnyEncodable(Layout.width), "laneHeight": AnyEncodable(Layout.laneHeight),
            "zone": AnyEncodable(zone.identifier), "start": AnyEncodable(TimelineRunner.start.timeIntervalSince1970),
            "times": AnyEncodable(times), "lanes": AnyEncodable(laneData), "table": AnyEncodable(table),
        ]
        // Inside a script element, '<!--' and '<script' change how the element ends, so no '<'
        // is left as it is: JSON reads '\u003c' as '<' (and JSONEncoder writes '/' as '\/').
        let json =
            (try? JSONEncoder().encode(data)).map {
                String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "<", with: "\\u003c")
            } ?? "{}"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body { font: 12px -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 12px; color: #222; }
            .title { font-weight: bold; font-size: 14px; }
            .label { font-size: 12px; } .axis { font-size: 11px; fill: #555; }
            .grid { stroke: #ddd; stroke-width: 1; }
            .span.yes { fill: #4caf6a; } .span.no { fill: #e4e4e4; } .span.absent { fill: none; }
            .tick { stroke: #1b3fa0; stroke-width: 2; } .tick.outcome { stroke: #ef6c00; stroke-dasharray: 2 2; }
            .tick.control { stroke: #757575; stroke-dasharray: 1 3; } .showing { fill: #6a1b9a; }
            .try.yes { fill: #1b3fa0; } .try.no { fill: #c62828; }
            .event { fill: #ef8c00; } .session { stroke: #7b1fa2; stroke-width: 1.5; }
            .session.crash { stroke: #c62828; stroke-width: 3; }
            .marker { stroke: #7b1fa2; stroke-dasharray: 4 3; } .marker.back { stroke: #c62828; stroke-dasharray: none; } .marker-label { font-size: 11px; fill: #7b1fa2; }
            #tip { min-height: 1.4em; font-family: "DejaVu Sans Mono", monospace; white-space: pre-wrap; }
            </style></head>
            <body>
            <div id="tip">Point at a lane to see its explain line at that moment.</div>
            \(svg.joined(separator: "\n"))
            <script type="application/json" id="data">\(json)</script>
            <script>
            (function () {
              var d = JSON.parse(document.getElementById("data").textContent);
              var svg = document.getElementById("timeline"), tip = document.getElementById("tip");
              function offset(t) {
                var s = Math.round(t), out = "", units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
                for (var k = 0; k < units.length; k++) {
                  var n = Math.floor(s / units[k][0]);
                  if (n > 0) { out += n + units[k][1]; s -= n * units[k][0]; }
                }
                return out || "0";
              }
              svg.addEventListener("mousemove", function (e) {
                var p = svg.createSVGPoint(); p.x = e.clientX; p.y = e.clientY;
                var q = p.matrixTransform(svg.getScreenCTM().inverse());
                var lane = d.lanes.filter(function (l) { return q.y >= l.y && q.y < l.y + d.laneHeight; })[0];
                if (!lane || q.x < d.left || q.x > d.left + d.width) return;
                var t = d.t0 + (q.x - d.left) / d.width * (d.t1 - d.t0), lo = 0, hi = d.times.length - 1;
                while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (d.times[mid] <= t) lo = mid; else hi = mid - 1; }
                var when = new Date((d.start + t) * 1000).toLocaleString("en-GB", { timeZone: d.zone });
                var reason = lane.kind === "stream" ? "" : ": " + d.table[lane.reasons[lo]];
                tip.textContent = offset(t) + " (" + when + ") " + lane.kind + " " + lane.name + reason;
              });
              document.body.setAttribute("data-ready", "yes");
            })();
            </script>
            </body></html>

            """
    }

    /// The axis's ticks in `zone`: local midnights, month starts or hours, about ten of them.
    static func axis(first: Int64, end: Int64, zone: TimeZone) -> [(Int64, String)] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        let span = end - first
        let steps: [(Calendar.Component, Int, String)] = [
            (.hour, 1, "MMM d HH:mm"), (.hour, 3, "MMM d HH:mm"), (.hour, 6, "MMM d HH:mm"),
            (.hour, 12, "MMM d HH:mm"), (.day, 1, "MMM d"), (.day, 2, "MMM d"), (.day, 7, "MMM d"),
            (.day, 14, "MMM d"), (.month, 1, "MMM yyyy"), (.month, 3, "MMM yyyy"), (.year, 1, "yyyy"),
        ]
        let seconds: [Calendar.Component: Int64] = [.hour: 3_600, .day: 86_400, .month: 2_629_746, .year: 31_556_952]
        let chosen = steps.first(where: { span / (seconds[$0.0]! * Int64($0.1)) <= 10 }) ?? steps[steps.count - 1]
        formatter.dateFormat = chosen.2
        let origin = TimelineRunner.start.addingTimeInterval(TimeInterval(first))
        let unit: Calendar.Component =
            chosen.0 == .hour ? .day : chosen.0 == .day ? .day : chosen.0 == .month ? .month : .year
        var date = calendar.dateInterval(of: unit, for: origin)?.start ?? origin
        var result: [(Int64, String)] = []
        let step = seconds[chosen.0]! * Int64(chosen.1)
        let last = TimelineRunner.start.addingTimeInterval(TimeInterval(end))
        while date <= last && result.count < 200 {
            let at = Int64(date.timeIntervalSince(TimelineRunner.start))
            if at >= first { result.append((at, formatter.string(from: date))) }
            guard let next = calendar.date(byAdding: chosen.0, value: chosen.1, to: date), next > date else { break }
            date = next
        }
        // The start is labelled, with its day and time, unless a tick is close to it (the first
        // day was left unlabelled when the zone's midnight came before the start).
        if result.first.map({ ($0.0 - first) * 4 > step * 3 }) ?? true {
            formatter.dateFormat = "MMM d HH:mm"
            result.insert((first, formatter.string(from: origin)), at: 0)
        }
        return result
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}

/// A value of any encodable type, for the page's JSON.
struct AnyEncodable: Encodable {
    let encodeValue: (Encoder) throws -> Void
    init<T: Encodable>(_ value: T) { encodeValue = value.encode }
    func encode(to encoder: Encoder) throws { try encodeValue(encoder) }
}
