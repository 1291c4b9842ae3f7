import Foundation

/// What an importer did: each item carried over, and each one left out with the reason.
public struct ImportReport: Codable, Equatable, Sendable, CustomStringConvertible {
    /// `"WaitForIt"` or `"Ecno"`.
    public var peer: String
    /// One line per scenario, tag, to-do or value imported.
    public var imported: [String]
    /// One line per item left out, saying why.
    public var skipped: [String]
    /// True when this report is the one stored by an earlier run on this store: the
    /// importer runs once per store, and a second call changes nothing.
    public var fromEarlierRun = false

    public var description: String {
        var lines = ["\(peer) import\(fromEarlierRun ? " (done earlier)" : ""):"]
        lines += imported.map { "  imported: \($0)" }
        lines += skipped.map { "  skipped: \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// The peers' keys, as they write them into `UserDefaults` (see the README's migration section).
enum PeerKeys {
    static func waitForIt(_ typeName: String, _ field: String) -> String {
        "net.pabloweb.WaitForIt.\(typeName).\(field)"
    }
    static let ecnoTimestamps = "com.xmartlabs.Ecno.Timestamps"
    static let ecnoToDo = "com.xmartlabs.Ecno.ToDo"
    static let ecnoAppVersion = "com.xmartlabs.Ecno.AppVersion"
    static let ecnoLastAppUpdateTime = "com.xmartlabs.Ecno.LastAppUpdateTime"
}

extension RuleEngine {
    /// Carries WaitForIt's stored history over to this engine's store, once per store.
    ///
    /// `scenarios` maps each WaitForIt scenario type's name (`String(describing: T.self)`,
    /// unqualified, as WaitForIt keys it) to the scenario of these rules that replaces it. For
    /// each, the event count, first and last event dates, execution count and last execution
    /// date become the scenario's history (its own stream when it has no `on`; its view
    /// either way), so its clauses answer as WaitForIt's did for that history. WaitForIt
    /// keeps no per-event times: a `within` count sees only the first and last events.
    /// A type with no stored key, a scenario the rules lack, or a scenario that already has
    /// history in this store is skipped, with the reason in the report. The peer's keys are
    /// never changed or deleted. A second call returns the first call's report and changes nothing.
    public func importWaitForIt(from defaults: UserDefaults = .standard, scenarios: [String: Scenario])
        -> ImportReport
    {
        locked { core in
            core.runImport("WaitForIt") { core, report in
                for (typeName, scenario) in scenarios.sorted(by: { $0.key < $1.key }) {
                    core.importWaitForIt(typeName, into: scenario.name, from: defaults, &report)
                }
            }
        }
    }

    /// Carries Ecno's stored data over to this engine's store, once per store: every tag's
    /// timestamps (a tag is a stream), every pending to-do with its `until` expiry and its info,
    /// and the app version with the time it was first seen (the `per version` scope and
    /// ``firstVersion`` continue from it). Info values that are not strings, numbers or bools,
    /// and tags or to-dos that already exist in this store, are skipped with the reason. The
    /// peer's keys are never changed or deleted. A second call returns the first call's report.
    public func importEcno(from defaults: UserDefaults = .standard) -> ImportReport {
        locked { core in
            core.runImport("Ecno") { core, report in core.importEcno(from: defaults, &report) }
        }
    }
}

extension EngineCore {
    /// Runs `body` unless an import for `peer` already ran on this store; stores its report as the marker.
    mutating func runImport(_ peer: String, _ body: (inout EngineCore, inout ImportReport) -> Void) -> ImportReport {
        if shared { _ = lockFileForWriting() }
        if let json = imports[peer], var earlier = try? JSONDecoder().decode(ImportReport.self, from: Data(json.utf8)) {
            earlier.fromEarlierRun = true
            return earlier
        }
        var report = ImportReport(peer: peer, imported: [], skipped: [])
        body(&self, &report)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: (try? encoder.encode(report)) ?? Data("{}".utf8), as: UTF8.self)
        imports[peer] = json
        save([EngineState.change(importMarker: peer, report: json)])
        return report
    }

    mutating func importWaitForIt(
        _ typeName: String, into name: String, from defaults: UserDefaults, _ report: inout ImportReport
    ) {
        func value(_ field: String) -> Any? { defaults.object(forKey: PeerKeys.waitForIt(typeName, field)) }
        func count(_ field: String) -> Int64 { Int64(clamping: (value(field) as? NSNumber)?.int64Value ?? 0) }
        func date(_ field: String) -> Double? { (value(field) as? Date)?.timeIntervalSince1970 }
        let events = max(0, count("eventsCount"))
        let executions = max(0, count("executionsCount"))
        let firstEvent = date("firstEventDate")
        let lastEvent = date("lastEventDate")
        let lastExecution = date("lastExecutionDate")
        guard events > 0 || executions > 0 || firstEvent != nil || lastEvent != nil || lastExecution != nil else {
            report.skipped.append("\(typeName): no stored data (never triggered nor executed)")
            return
        }
        guard let index = rules.scenarioIndex[name] else {
            report.skipped.append("\(typeName): the rules have no scenario '\(name)'")
            return
        }
        let scenario = rules.scenarios[index]
        let ownStream = scenario.streams == [streams.index[name]].compactMap { $0 }
        if built[index], !(views[index].events.isEmpty && views[index].executions.isEmpty) {
            report.skipped.append("\(typeName): scenario '\(name)' already has history in this store")
            return
        }
        if ownStream, let slot = streams.index[name], !tallies.isBlank(slot) {
            report.skipped.append("\(typeName): stream '\(name)' already has events in this store")
            return
        }
        // WaitForIt keeps a count and two dates: the tally holds the count, the first and last
        // times, and those two as its recent times. It has no sessions or versions.
        var eventTally = Tally()
        if events > 0 || firstEvent != nil || lastEvent != nil {
            eventTally.total = max(events, 1)
            eventTally.first = firstEvent ?? lastEvent
            eventTally.last = lastEvent ?? firstEvent
            eventTally.recent = Array(Set([eventTally.first, eventTally.last].compactMap { $0 })).sorted()
            if eventTally.total == 1 { eventTally.recent = [eventTally.last!] }
        }
        var executionTally = Tally()
        if executions > 0 || lastExecution != nil {
            executionTally.total = max(executions, 1)
            executionTally.first = lastExecution
            executionTally.last = lastExecution
            executionTally.recent = lastExecution.map { [$0] } ?? []
        }
        eventTally.counts.sessionID = meta.sessionID
        eventTally.counts.versionID = meta.versionID
        executionTally.counts.sessionID = meta.sessionID
        executionTally.counts.versionID = meta.versionID
        var changes: [StoreChange] = []
        if ownStream, !eventTally.isEmpty {
            let slot = slot(name)
            tallies[slot] = eventTally
            changes.append(EngineState.change(key: streamKey(slot), eventTally))
        }
        let view = ScenarioState(events: eventTally, executions: executionTally, streams: scenario.fingerprint)
        views[index] = view
        built[index] = true
        changes.append(EngineState.change(key: scenario.key, view))
        save(changes)
        func when(_ time: Double?) -> String {
            time.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: $0)) } ?? "never"
        }
        report.imported.append(
            "\(typeName) -> scenario '\(name)': \(eventTally.total) events (first \(when(eventTally.first)), "
                + "last \(when(eventTally.last))), \(executionTally.total) executions (last \(when(lastExecution)))")
    }

    mutating func importEcno(from defaults: UserDefaults, _ report: inout ImportReport) {
        var changes: [StoreChange] = []
        let versionStart = (defaults.object(forKey: PeerKeys.ecnoLastAppUpdateTime) as? Date)?.timeIntervalSince1970
        if let version = defaults.string(forKey: PeerKeys.ecnoAppVersion) {
            if meta.version == nil {
                meta.versionID.saturatingIncrement()
                meta.version = version
                meta.versionStart = versionStart
                if meta.firstVersion == nil { meta.firstVersion = version }
                changes.append(EngineState.change(meta: meta))
                report.imported.append(
                    "app version '\(version)'" + (versionStart == nil ? "" : " and its first launch"))
            } else {
                report.skipped.append("app version '\(version)': this store already has version '\(meta.version!)'")
            }
        }
        let timestamps = defaults.dictionary(forKey: PeerKeys.ecnoTimestamps) ?? [:]
        for tag in timestamps.keys.sorted() {
            guard let entry = timestamps[tag] as? [String: Any], let dates = entry["timestamps"] as? [Date] else {
                report.skipped.append("tag '\(tag)': not a list of timestamps")
                continue
            }
            if let slot = streams.index[tag], !tallies.isBlank(slot) {
                report.skipped.append("tag '\(tag)': already has events in this store")
                continue
            }
            if dates.isEmpty {
                report.skipped.append("tag '\(tag)': no timestamps")
                continue
            }
            let slot = slot(tag)
            var tally = Tally()
            for date in dates { tally.record(at: date.timeIntervalSince1970, in: meta.epoch, keep: keep(slot)) }
            // Ecno's version scope is "since the version was first seen"; it has no stored sessions.
            let inVersion = versionStart.map { start in dates.filter { $0.timeIntervalSince1970 >= start }.count } ?? 0
            tally.counts.versionCount = Int64(inVersion)
            tally.counts.sessionCount = 0
            tallies[slot] = tally
            changes.append(EngineState.change(key: streamKey(slot), tally))
            // Scenarios counting the tag see it: rebuild their views from the streams.
            for index in rules.listeners(slot) where built[index] {
                views[index].events = mergedEvents(index)
                changes.append(EngineState.change(key: rules.scenarios[index].key, views[index]))
            }
            report.imported.append("tag '\(tag)': \(dates.count) timestamps")
        }
        let todoEntries = defaults.dictionary(forKey: PeerKeys.ecnoToDo) ?? [:]
        let time = now()
        for tag in todoEntries.keys.sorted() {
            let entry = todoEntries[tag] as? [String: Any] ?? [:]
            if todos[tag] != nil {
                report.skipped.append("to-do '\(tag)': already pending in this store")
                continue
            }
            var expires: Double?
            if let scope = entry["scope"] as? [String: Any], scope["name"] as? String == "until" {
                guard let interval = (scope["timeInterval"] as? NSNumber)?.doubleValue,
                    let reference = scope["referenceDate"] as? Date
                else {
                    report.skipped.append("to-do '\(tag)': an 'until' scope without its time")
                    continue
                }
                expires = reference.timeIntervalSince1970 + interval
                if expires! <= time {
                    report.skipped.append("to-do '\(tag)': expired")
                    continue
                }
            }
            var info: [String: String]? = entry["info"] is [String: Any] ? [:] : nil
            var dropped: [String] = []
            for (key, value) in (entry["info"] as? [String: Any] ?? [:]).sorted(by: { $0.key < $1.key }) {
                switch value {
                case let text as String: info?[key] = text
                case let number as NSNumber: info?[key] = number.stringValue
                default: dropped.append(key)
                }
            }
            let item = ToDoItem(created: time, expires: expires, info: info)
            todos[tag] = item
            if let expires { nextExpiry = min(nextExpiry, expires) }
            changes.append(EngineState.change(todo: tag, item))
            report.imported.append(
                "to-do '\(tag)'" + (expires == nil ? "" : " until its expiry") + " with \(info?.count ?? 0) info values"
            )
            if !dropped.isEmpty {
                report.skipped.append(
                    "to-do '\(tag)': info \(dropped.map { "'\($0)'" }.joined(separator: ", ")) (not a string, number or bool)"
                )
            }
        }
        save(changes)
    }
}
