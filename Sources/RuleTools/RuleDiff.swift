import RuleLang

/// What a change of rules does to users who already have state (`rulec diff OLD NEW`).
///
/// Each finding is a ``Diagnostic``, located in the new rules (or the old ones for something
/// removed): a warning when users would lose history (a removal, a rename without `was`), a
/// note otherwise (a rename with `was`, an `on` list, a threshold, window or cap, a group, a
/// param's type).
public enum RuleDiff {
    /// The findings of going from `old` to `new`, in the new rules' order, removals last.
    public static func compare(old: RuleProgram, new: RuleProgram) -> [Diagnostic] {
        var findings: [Diagnostic] = []
        let renames = new.renames
        func note(_ message: DiagnosticMessage, _ file: SourceFile, _ range: SourceRange) {
            findings.append(Diagnostic(message, .note, at: SourceSpan(file, range)))
        }
        func removal(_ kind: String, _ name: Name, _ file: SourceFile) {
            findings.append(
                Diagnostic(DiffMessage.removed(kind, name.text), .warning, at: SourceSpan(file, name.range)))
        }

        /// Pairs each declaration of the new rules with its old self (the same name, or a former
        /// name its `was` claims that the old rules declare), noting renames, and calls `compare`
        /// for each pair; returns the old declarations left without one (no `was` claims them).
        func pair<Decl>(
            _ kind: RenameKind, _ oldDecls: [Decl], _ newDecls: [Decl], name: (Decl) -> Name,
            compare: (_ before: Decl, _ after: Decl) -> Void
        ) -> [Decl] {
            var oldByName: [String: Decl] = [:]
            for decl in oldDecls where oldByName[name(decl).text] == nil { oldByName[name(decl).text] = decl }
            let newNames = Set(newDecls.map { name($0).text })
            var claimed: Set<String> = []
            for rename in renames where rename.kind == kind { claimed.formUnion(rename.formerNames.map(\.text)) }
            for decl in newDecls {
                let current = name(decl)
                let former = renames.first { $0.kind == kind && $0.name.text == current.text }?.formerNames.first {
                    oldByName[$0.text] != nil && !newNames.contains($0.text)
                }
                if let former, let file = RuleDiff.file(of: current, in: new) {
                    note(DiffMessage.renamed(kind.rawValue, former.text, current.text), file, current.range)
                }
                if let before = oldByName[current.text] ?? former.flatMap({ oldByName[$0.text] }) {
                    compare(before, decl)
                }
            }
            return oldDecls.filter { !newNames.contains(name($0).text) && !claimed.contains(name($0).text) }
        }

        // Event streams renamed with `was`: an `on` list naming them anew counts the same history.
        var streamRenames: [String: String] = [:]
        for rename in renames where rename.kind == .event {
            for former in rename.formerNames { streamRenames[former.text] = rename.name.text }
        }

        // Scenarios.
        var removedScenarios = pair(.scenario, old.scenarios, new.scenarios, name: \.decl.name) { before, scenario in
            // Retired now: one note, not its clauses one by one.
            if let word = scenario.decl.retired {
                if before.decl.retired == nil {
                    note(
                        DiffMessage.retired(scenario.name), scenario.file,
                        word.lowerBound..<scenario.decl.name.range.upperBound)
                }
                return
            }
            compareBodies(
                "scenario '\(scenario.name)'", before.decl.clauses, scenario.decl.clauses, scenario.file, &findings,
                isScenario: true, streamRenames: streamRenames)
            if before.group != scenario.group {
                let message =
                    scenario.group.map { DiffMessage.movedIntoGroup(scenario.name, $0) }
                    ?? DiffMessage.movedOutOfGroup(scenario.name, before.group ?? "")
                note(message, scenario.file, scenario.decl.name.range)
            }
        }
        let oldNames = Set(old.scenarios.map(\.name))
        let added = new.scenarios.filter { s in
            !oldNames.contains(s.name) && !renames.contains { $0.kind == .scenario && $0.name.text == s.name }
        }
        // A removed scenario with an added one of the same clauses or a close name: a rename without `was`.
        var takenByRename: Set<String> = []
        removedScenarios.removeAll { removed in
            let sameBody = added.first { candidate in
                !takenByRename.contains(candidate.name)
                    && text(candidate.decl.clauses, candidate.file) == text(removed.decl.clauses, removed.file)
            }
            let close = Suggestions.closest(
                to: removed.name, in: added.map(\.name).filter { !takenByRename.contains($0) })
            guard let target = sameBody ?? close.first.flatMap({ name in added.first { $0.name == name } }) else {
                return false
            }
            takenByRename.insert(target.name)
            let end = target.decl.name.range.upperBound
            findings.append(
                Diagnostic(
                    DiffMessage.probableRename("scenario", removed.name, target.name), .warning,
                    at: SourceSpan(target.file, target.decl.name.range),
                    notes: [
                        DiagnosticNote(
                            "'\(removed.name)' was declared here", at: SourceSpan(removed.file, removed.decl.name.range)
                        )
                    ],
                    fixIts: [FixIt(range: end..<end, replacement: " was " + Printer.name(removed.name))]))
            return true
        }
        for removed in removedScenarios { removal("scenario", removed.decl.name, removed.file) }

        // Groups.
        for group in pair(
            .group, old.groups, new.groups, name: \.name,
            compare: { before, group in
                guard let file = file(of: group.name, in: new) else { return }
                compareBodies(
                    "group '\(group.name.text)'", before.clauses, group.clauses, file, &findings, isScenario: false)
            })
        {
            if let file = file(of: group.name, in: old) { removal("group", group.name, file) }
        }

        // Params.
        for param in pair(
            .param, old.params, new.params, name: \.name,
            compare: { before, param in
                guard let was = before.type, let now = param.type, was != now, let file = file(of: param.name, in: new)
                else { return }
                note(DiffMessage.paramType(param.name.text, was, now), file, param.typeRange)
            })
        {
            if let file = file(of: param.name, in: old) { removal("param", param.name, file) }
        }

        // Event streams (a scenario's own stream goes with the scenario, reported above).
        let eventClaims = Set(renames.filter { $0.kind == .event }.flatMap { $0.formerNames.map(\.text) })
        let newStreams = Set(new.knownStreams)
        let oldOwn = Set(old.scenarios.map(\.name))
        for rename in renames where rename.kind == .event {
            if let former = rename.formerNames.first(where: {
                old.knownStreams.contains($0.text) && !newStreams.contains($0.text)
            }) {
                note(DiffMessage.renamed("event", former.text, rename.name.text), rename.file, rename.name.range)
            }
        }
        let removedEvents = old.knownStreams.filter {
            !newStreams.contains($0) && !eventClaims.contains($0) && !oldOwn.contains($0)
        }
        // A removed event with an added declared one of a close name (or the only one of each): a
        // rename without `was`, with the fix that adds it to the new declaration, as for scenarios.
        let oldStreams = Set(old.knownStreams)
        let newOwn = Set(new.scenarios.map(\.name))
        var addedEvents: [(name: Name, file: SourceFile)] = []
        for file in new.files {
            for case .event(let event) in file.declarations {
                for (k, name) in event.names.enumerated()
                where (k >= event.formerNames.count || event.formerNames[k].isEmpty)
                    && !oldStreams.contains(name.text) && !newOwn.contains(name.text)
                {
                    addedEvents.append((name, file.source))
                }
            }
        }
        var takenEvents: Set<String> = []
        for stream in removedEvents {
            guard let (oldName, oldFile) = firstMention(of: stream, in: old) else { continue }
            let free = addedEvents.filter { !takenEvents.contains($0.name.text) }
            let close = Suggestions.closest(to: stream, in: free.map(\.name.text)).first
            let only = removedEvents.count == 1 && addedEvents.count == 1 ? free.first?.name.text : nil
            guard let targetName = close ?? only, let target = free.first(where: { $0.name.text == targetName }) else {
                removal("event", oldName, oldFile)
                continue
            }
            takenEvents.insert(targetName)
            let end = target.name.range.upperBound
            findings.append(
                Diagnostic(
                    DiffMessage.probableRename("event", stream, targetName), .warning,
                    at: SourceSpan(target.file, target.name.range),
                    notes: [DiagnosticNote("'\(stream)' was named here", at: SourceSpan(oldFile, oldName.range))],
                    fixIts: [FixIt(range: end..<end, replacement: " was " + Printer.name(stream))]))
        }

        // Filters over event properties the old rules did not read: they start from nothing.
        let oldFilters = Set(filters(in: old).map(\.text))
        var reported: Set<String> = []
        for filter in filters(in: new) where !oldFilters.contains(filter.text) && reported.insert(filter.text).inserted
        {
            note(DiffMessage.newFilter(filter.text), filter.file, filter.range)
        }
        return findings
    }

    /// The filtered reads of event properties in `program`'s conditions (`purchase where
    /// amount >= 10`, canonical), each where it is first written.
    static func filters(in program: RuleProgram) -> [(text: String, file: SourceFile, range: SourceRange)] {
        var found: [(text: String, file: SourceFile, range: SourceRange)] = []
        func visit(_ expr: Expr, _ file: SourceFile) {
            switch expr.kind {
            case .unary(_, let operand), .parenthesized(let operand): visit(operand, file)
            case .binary(_, let left, let right):
                visit(left, file)
                visit(right, file)
            case .call(_, let argument, _, nil, let filter, let property) where filter != nil || property != nil:
                // `purchase where ...`, `purchase.amount`, `purchase.amount where ...`: read from here on.
                let read = Printer.name(argument.text) + (property.map { "." + $0.text } ?? "")
                found.append((read + (filter.map { " where " + Printer.expression($0) } ?? ""), file, expr.range))
            default: break
            }
        }
        for file in program.files {
            for declaration in file.declarations {
                var bodies: [[Clause]] = []
                switch declaration {
                case .scenario(let scenario): bodies = [scenario.clauses]
                case .group(let group): bodies = [group.clauses] + group.members.map(\.clauses)
                case .param, .event: break
                }
                for body in bodies {
                    for clause in body {
                        switch clause.kind {
                        case .when(let expr): visit(expr, file.source)
                        case .minEventsWhere(_, let filter, _):
                            // Over each `on` event: `EVENT where FILTER`.
                            for case .on(let names) in body.map(\.kind) {
                                for name in names {
                                    found.append(
                                        (
                                            Printer.name(name.text) + " where " + Printer.expression(filter),
                                            file.source,
                                            clause.range
                                        ))
                                }
                            }
                        default: break
                        }
                    }
                }
            }
        }
        return found
    }

    /// True when a finding means users would lose history.
    public static func losesHistory(_ finding: Diagnostic) -> Bool { finding.severity == .warning }

    // MARK: - Bodies

    static func text(_ clauses: [Clause], _ file: SourceFile) -> [String] {
        clauses.map { Printer.clause($0.kind, integer: { file.text($0.range) }, source: file) }
    }

    /// What a clause is about, for pairing old and new: its keyword and, for counts, its scope's kind.
    static func slot(_ kind: ClauseKind) -> String {
        switch kind {
        case .minEvents(_, let scope), .maxEvents(_, let scope), .maxExec(_, let scope):
            let scopeKind: String
            switch scope.kind {
            case .install: scopeKind = "install"
            case .version: scopeKind = "version"
            case .session: scopeKind = "session"
            case .within: scopeKind = "within"
            case .day: scopeKind = "day"
            case .week: scopeKind = "week"
            }
            return kind.keyword + " " + scopeKind
        case .when(let expr): return "when " + Printer.expression(expr)
        case .minEventsWhere(_, let filter, let scope):
            return "min_events where " + Printer.expression(filter) + " " + Printer.scope(scope.kind)
        case .after(let outcome, _): return "after " + outcome.text
        case .contexts(_, let outside): return outside ? "not in" : "in"
        default: return kind.keyword
        }
    }

    static func compareBodies(
        _ owner: String, _ before: [Clause], _ after: [Clause], _ file: SourceFile, _ findings: inout [Diagnostic],
        isScenario: Bool, streamRenames: [String: String] = [:]
    ) {
        let old = Dictionary(before.map { (slot($0.kind), $0) }, uniquingKeysWith: { a, _ in a })
        let new = Dictionary(after.map { (slot($0.kind), $0) }, uniquingKeysWith: { a, _ in a })
        for clause in after {
            let key = slot(clause.kind)
            let range = clause.range
            func add(_ message: DiagnosticMessage) {
                findings.append(Diagnostic(message, .note, at: SourceSpan(file, range)))
            }
            guard let previous = old[key] else {
                if case .when = clause.kind,
                    before.contains(where: { if case .when = $0.kind { return true } else { return false } })
                {
                    add(DiffMessage.conditionChanged(owner, Printer.clause(clause.kind)))
                } else {
                    add(DiffMessage.clauseAdded(owner, Printer.clause(clause.kind)))
                }
                continue
            }
            if Printer.clause(previous.kind) == Printer.clause(clause.kind) { continue }
            if let effect = effect(previous.kind, clause.kind) {
                add(
                    DiffMessage.clauseChanged(owner, Printer.clause(previous.kind), Printer.clause(clause.kind), effect)
                )
            }
        }
        for clause in before where new[slot(clause.kind)] == nil {
            if case .when = clause.kind,
                after.contains(where: { if case .when = $0.kind { return true } else { return false } })
            {
                continue
            }
            if case .on = clause.kind { continue }
            if let anchor = after.first?.range ?? before.first?.range {
                findings.append(
                    Diagnostic(
                        DiffMessage.clauseRemoved(owner, Printer.clause(clause.kind)), .note,
                        at: SourceSpan(file, anchor.lowerBound..<anchor.lowerBound)))
            }
        }
        if isScenario {
            func streams(_ clauses: [Clause]) -> Set<String>? {
                for clause in clauses { if case .on(let names) = clause.kind { return Set(names.map(\.text)) } }
                return nil
            }
            let renamed = streams(before).map { Set($0.map { streamRenames[$0] ?? $0 }) }
            if let anchor = after.first?.range, renamed != streams(after) {
                findings.append(Diagnostic(DiffMessage.onChanged(owner), .note, at: SourceSpan(file, anchor)))
            }
        }
    }

    /// `low to high`, or the one number when they are the same ("users with 2 executions", not
    /// "2 to 2").
    static func span(_ low: some BinaryInteger, _ high: some BinaryInteger) -> String {
        low == high ? "\(low)" : "\(low) to \(high)"
    }

    /// What changing `before` to `after` (the same clause, another number, window or duration) does.
    static func effect(_ before: ClauseKind, _ after: ClauseKind) -> String? {
        func window(_ scope: Scope) -> Int64? { if case .within(let s) = scope.kind { return s } else { return nil } }
        switch (before, after) {
        case (.minEvents(let a, let s), .minEvents(let b, let t)):
            if a.value != b.value {
                return a.value > b.value
                    ? "lowered from \(a.value) to \(b.value): users with \(span(b.value, a.value - 1)) events see it sooner"
                    : "raised from \(a.value) to \(b.value): users with \(span(a.value, b.value - 1)) events wait for more"
            }
            return windowEffect(window(s), window(t))
        case (.maxEvents(let a, let s), .maxEvents(let b, let t)), (.maxExec(let a, let s), .maxExec(let b, let t)):
            let what = before.keyword == "max_exec" ? "executions" : "events"
            if a.value != b.value {
                return a.value > b.value
                    ? "lowered from \(a.value) to \(b.value): users with \(span(b.value, a.value - 1)) \(what) stop seeing it"
                    : "raised from \(a.value) to \(b.value): users who reached \(a.value) \(what) see it again"
            }
            return windowEffect(window(s), window(t))
        case (.between(let a), .between(let b)), (.sinceFirst(let a), .sinceFirst(let b)),
            (.sinceLast(let a), .sinceLast(let b)):
            return a.seconds > b.seconds
                ? "shortened from \(DurationText.format(a.seconds)) to \(DurationText.format(b.seconds)): users waiting see it sooner"
                : "lengthened from \(DurationText.format(a.seconds)) to \(DurationText.format(b.seconds)): users wait longer"
        case (.between, .growingBetween), (.growingBetween, .between), (.growingBetween, .growingBetween):
            return "the gaps between executions changed"
        case (.minDays(let a, let w), .minDays(let b, let v)):
            if a.value != b.value {
                return a.value > b.value
                    ? "lowered from \(a.value) to \(b.value) days: users active on \(span(b.value, a.value - 1)) days see it sooner"
                    : "raised from \(a.value) to \(b.value) days: users active on \(span(a.value, b.value - 1)) days wait"
            }
            return windowEffect(w.seconds, v.seconds)
        case (.after(let outcome, .duration(let a)), .after(_, .duration(let b))):
            return a.seconds > b.seconds
                ? "shortened from \(DurationText.format(a.seconds)) to \(DurationText.format(b.seconds)): users who answered '\(outcome.text)' see it sooner"
                : "lengthened from \(DurationText.format(a.seconds)) to \(DurationText.format(b.seconds)): users who answered '\(outcome.text)' wait longer"
        case (.after(let outcome, let a), .after(_, let b)):
            func wait(_ w: AfterWait) -> String {
                switch w {
                case .duration(let d): return "\(DurationText.format(d.seconds))"
                case .next(let scope, _): return "until the next \(scope == .session ? "session" : "version")"
                case .never: return "for good"
                }
            }
            return "after '\(outcome.text)' it now waits \(wait(b)), not \(wait(a))"
        case (.priority(let a), .priority(let b)):
            return "priority \(a.value < b.value ? "raised" : "lowered") from \(a.value) to \(b.value)"
        case (.holdout(let a, let s), .holdout(let b, let t)):
            if s.text != t.text { return "a new salt: every install is placed in an arm anew" }
            return a.value < b.value
                ? "the control arm grows from \(a.value)% to \(b.value)%: some users who saw it are held out"
                : "the control arm shrinks from \(a.value)% to \(b.value)%: some held-out users see it"
        case (.on, .on):
            return nil  // said once per scenario, with the streams' renames (`onChanged`)
        case (.during, .during), (.days, .days), (.from, .from), (.until, .until):
            return "the local window changed: users see it at other local times"
        case (.contexts(let a, let outside), .contexts(let b, _)):
            let (old, new) = (Set(a.map(\.text)), Set(b.map(\.text)))
            let added = b.map(\.text).filter { !old.contains($0) }
            let removed = a.map(\.text).filter { !new.contains($0) }
            var parts: [String] = []
            if !added.isEmpty {
                parts.append((outside ? "now refused in " : "now shown in ") + added.joined(separator: ", "))
            }
            if !removed.isEmpty {
                parts.append((outside ? "now shown in " : "no longer shown in ") + removed.joined(separator: ", "))
            }
            return parts.isEmpty ? nil : parts.joined(separator: "; ")
        case (.countsAfter(let a), .countsAfter(let b)):
            return "a presentation now counts after \(DurationText.format(b.seconds)) on screen, not "
                + DurationText.format(a.seconds)
        case (.deferral(let a), .deferral(let b)):
            return "a refused wish is now kept \(DurationText.format(b.seconds)), not \(DurationText.format(a.seconds))"
        default:
            // Any other change of a clause is still said, in its own words.
            return "changed"
        }
    }

    static func windowEffect(_ before: Int64?, _ after: Int64?) -> String? {
        guard let before, let after, before != after else { return nil }
        return
            "window \(before < after ? "widened" : "narrowed") from \(DurationText.format(before)) to \(DurationText.format(after))"
    }

    // MARK: - Locating

    /// The file declaring the scenario, group or param `name` (the name with its range).
    static func file(of name: Name, in program: RuleProgram) -> SourceFile? {
        for file in program.files {
            for declaration in file.declarations {
                switch declaration {
                case .scenario(let scenario) where scenario.name == name: return file.source
                case .group(let group) where group.name == name || group.members.contains { $0.name == name }:
                    return file.source
                case .param(let param) where param.name == name: return file.source
                default: continue
                }
            }
        }
        return nil
    }

    /// The first place `stream` is named: an `event` declaration or an `on` list.
    static func firstMention(of stream: String, in program: RuleProgram) -> (Name, SourceFile)? {
        for file in program.files {
            for case .event(let event) in file.declarations {
                if let name = event.names.first(where: { $0.text == stream }) { return (name, file.source) }
            }
            var listed: Name?
            _ = file.firstInClauses { clause in
                guard case .on(let names) = clause.kind else { return nil }
                listed = names.first { $0.text == stream }
                return listed?.range
            }
            if let listed { return (listed, file.source) }
        }
        return nil
    }
}

/// The wording of `rulec diff`'s findings.
enum DiffMessage {
    static func retired(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .diffChanged,
            "scenario '\(name)' retired: it answers no from now on; its history is kept, and the app may still call it")
    }
    static func removed(_ kind: String, _ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffRemoved, "\(kind) '\(name)' removed: its users' history is orphaned")
    }
    static func probableRename(_ kind: String, _ old: String, _ new: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .diffProbableRename,
            "\(kind) '\(new)' looks like '\(old)' renamed; without 'was \(old)' its users' history is orphaned")
    }
    static func renamed(_ kind: String, _ old: String, _ new: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffRenamed, "\(kind) '\(old)' renamed to '\(new)': its history moves with it")
    }
    static func newFilter(_ filter: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .diffChanged,
            "'\(filter)' is read for the first time: it counts from these rules on (no trigger's properties were kept)")
    }
    static func onChanged(_ owner: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffChanged, "\(owner) counts other streams: its view is rebuilt from their history")
    }
    static func clauseChanged(_ owner: String, _ from: String, _ to: String, _ effect: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffChanged, "\(owner): '\(from)' became '\(to)': \(effect)")
    }
    static func conditionChanged(_ owner: String, _ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffChanged, "\(owner): its condition changed to '\(clause)'")
    }
    static func clauseAdded(_ owner: String, _ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffChanged, "\(owner): '\(clause)' added")
    }
    static func clauseRemoved(_ owner: String, _ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(.diffChanged, "\(owner): '\(clause)' removed")
    }
    static func movedIntoGroup(_ scenario: String, _ group: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .diffChanged, "scenario '\(scenario)' moved into group '\(group)': the group's budget starts empty for it")
    }
    static func movedOutOfGroup(_ scenario: String, _ group: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .diffChanged, "scenario '\(scenario)' moved out of group '\(group)': the group's budget no longer limits it"
        )
    }
    static func paramType(_ name: String, _ was: ValueType, _ now: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(
            .diffChanged,
            "param '\(name)' changed type from '\(was.rawValue)' to '\(now.rawValue)': stored values are ignored")
    }
}

/// `rulec diff`'s findings.
extension DiagnosticID {
    /// `rulec diff`: a clause, an `on` list, a group or a param's type changed (a note).
    public static let diffChanged = DiagnosticID("diff-changed")
    /// `rulec diff`: a name removed and one added that looks like it, without `was` (a warning).
    public static let diffProbableRename = DiagnosticID("diff-probable-rename")
    /// `rulec diff`: a scenario, group, param or event removed (a warning: history is orphaned).
    public static let diffRemoved = DiagnosticID("diff-removed")
    /// `rulec diff`: a name renamed with `was` (a note: its history moves).
    public static let diffRenamed = DiagnosticID("diff-renamed")
}
