/// What a `was` renames.
public enum RenameKind: String, Sendable, Codable {
    case scenario, group, param, event

    /// Scenarios and groups share one namespace (`RuleEngine`'s `reset` takes either).
    var namespace: Int {
        switch self {
        case .scenario, .group: return 0
        case .param: return 1
        case .event: return 2
        }
    }
}

/// A declaration with former names: `scenario Subscribe was AskToSubscribe < ... >`.
public struct Rename: Sendable {
    /// What is renamed.
    public var kind: RenameKind
    /// The name it has now.
    public var name: Name
    /// The names it had, newest first.
    public var formerNames: [Name]
    /// The file declaring it.
    public var file: SourceFile
    /// For a scenario: true when it counts its own stream (it has no `on`), which is renamed with it.
    public var countsOwnStream = false
}

extension RuleProgram {
    /// Every declaration with a `was`, in declaration order.
    public var renames: [Rename] {
        var result: [Rename] = []
        func scenario(_ decl: ScenarioDecl, _ file: SourceFile) {
            guard !decl.formerNames.isEmpty else { return }
            let hasOn = decl.clauses.contains { if case .on = $0.kind { return true } else { return false } }
            result.append(
                Rename(
                    kind: .scenario, name: decl.name, formerNames: decl.formerNames, file: file, countsOwnStream: !hasOn
                ))
        }
        for file in files {
            for declaration in file.declarations {
                switch declaration {
                case .scenario(let decl): scenario(decl, file.source)
                case .group(let decl):
                    if !decl.formerNames.isEmpty {
                        result.append(
                            Rename(kind: .group, name: decl.name, formerNames: decl.formerNames, file: file.source))
                    }
                    for member in decl.members { scenario(member, file.source) }
                case .param(let decl):
                    if !decl.formerNames.isEmpty {
                        result.append(
                            Rename(kind: .param, name: decl.name, formerNames: decl.formerNames, file: file.source))
                    }
                case .event(let decl):
                    for (name, former) in zip(decl.names, decl.formerNames) where !former.isEmpty {
                        result.append(Rename(kind: .event, name: name, formerNames: former, file: file.source))
                    }
                }
            }
        }
        return result
    }
}

/// The checks of renames and of language versions, over a whole program.
enum VersionAndRenameChecks {
    /// Errors for files needing a newer language than `target`, constructs newer than their
    /// file declares, and `was` names that are live, claimed twice, or in a cycle.
    static func run(_ program: RuleProgram, target: LanguageVersion) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        let renames = program.renames
        for file in program.files {
            if let language = file.language, language.version > target, language.version <= .current {
                diagnostics.append(
                    Diagnostic(
                        Message.languageAboveTarget(language.version, target), .error,
                        at: SourceSpan(file.source, language.range)))
            }
            let declared = file.languageVersion
            // Every construct newer than the file declares, each where it is (recorded by the
            // parser as it made them).
            let newer = file.newerConstructs.filter { declared < $0.construct.version }
            for use in newer.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
                let (what, version, range) = (use.what, use.construct.version, use.range)
                let fix =
                    file.language.map { FixIt(range: $0.range, replacement: "# language \(version)") }
                    ?? FixIt(
                        range: file.source.contentStart..<file.source.contentStart,
                        replacement: "# language \(version)\n")
                diagnostics.append(
                    Diagnostic(
                        Message.constructNeedsLanguage(what, version, declared: declared), .error,
                        at: SourceSpan(file.source, range), fixIts: [fix]))
            }
            for range in lateLanguageLines(file.source) {
                diagnostics.append(
                    Diagnostic(Message.languageLineNotFirst, .warning, at: SourceSpan(file.source, range)))
            }
        }
        if renames.isEmpty { return diagnostics }
        // Live names by namespace, and the renames by their new name.
        var live: [Set<String>] = [[], [], []]
        for scenario in program.scenarios { live[0].insert(scenario.name) }
        for group in program.groups { live[0].insert(group.name.text) }
        for param in program.params { live[1].insert(param.name.text) }
        // Streams declared (events, and scenarios' own streams); a former name merely read
        // somewhere is the checker's to report, at the read ("renamed to ...; read the new name").
        for event in program.events { live[2].insert(event.text) }
        for scenario in program.scenarios { live[2].insert(scenario.name) }
        var formerOf: [[String: [String]]] = [[:], [:], [:]]
        for rename in renames {
            formerOf[rename.kind.namespace][rename.name.text, default: []] += rename.formerNames.map(\.text)
        }
        var claimed: [[String: SourceSpan]] = [[:], [:], [:]]
        for rename in renames {
            let space = rename.kind.namespace
            for old in rename.formerNames {
                let span = SourceSpan(rename.file, old.range)
                if old.text == rename.name.text {
                    diagnostics.append(Diagnostic(Message.renameCycle([old.text, old.text]), .error, at: span))
                } else if live[space].contains(old.text) {
                    // `A was B` and `B was A` (or longer): a cycle, reported once, by its least name.
                    if let cycle = path(from: old.text, to: rename.name.text, formerOf[space]) {
                        if cycle.allSatisfy({ rename.name.text <= $0 }) {
                            diagnostics.append(
                                Diagnostic(Message.renameCycle([rename.name.text] + cycle), .error, at: span))
                        }
                    } else {
                        diagnostics.append(
                            Diagnostic(
                                Message.renameOfLiveName(kindWord(space, old.text, program), old.text), .error, at: span
                            ))
                    }
                } else if let first = claimed[space][old.text] {
                    diagnostics.append(
                        Diagnostic(
                            Message.renameClaimedTwice(old.text), .error, at: span,
                            notes: [DiagnosticNote("first claimed here", at: first)]))
                } else {
                    claimed[space][old.text] = span
                }
            }
        }
        return diagnostics
    }

    /// The `# language` comment lines of `file` after its first line: they declare nothing.
    static func lateLanguageLines(_ file: SourceFile) -> [SourceRange] {
        var ranges: [SourceRange] = []
        file.bytes.withUnsafeBytes { bytes in
            let count = bytes.count
            let firstLineEnd = bytes[file.contentStart...].firstIndex(of: UInt8(ascii: "\n")) ?? count
            // Looked for eight bytes at a time: only a '#' can start a comment (the checker's
            // throughput, rulebench `check_vs_jsondecoder`, paid a byte-at-a-time pass).
            var at = firstLineEnd
            while at < count {
                if count - at >= 8 {
                    let word = bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self) ^ 0x2323_2323_2323_2323
                    if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 == 0 {
                        at += 8
                        continue
                    }
                }
                if bytes[at] != UInt8(ascii: "#") {
                    at += 1
                    continue
                }
                // A '#' with only blanks before it on its line, then the word `language`.
                var start = at
                while start > 0 && (bytes[start - 1] == UInt8(ascii: " ") || bytes[start - 1] == UInt8(ascii: "\t")) {
                    start -= 1
                }
                var end = at
                while end < count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
                if start == 0 || bytes[start - 1] == UInt8(ascii: "\n") {
                    let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(at + 1)..<end]), as: UTF8.self)
                    if line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).first == "language" {
                        ranges.append(at..<end)
                    }
                }
                at = end
            }
        }
        return ranges
    }

    /// The names from `start` through former names to `goal` (both included), if there is a way.
    static func path(from start: String, to goal: String, _ formerOf: [String: [String]]) -> [String]? {
        var seen: Set<String> = [start]
        var stack: [[String]] = [[start]]
        while let trail = stack.popLast() {
            if trail.last == goal { return trail }
            for next in formerOf[trail.last!] ?? [] where seen.insert(next).inserted || next == goal {
                stack.append(trail + [next])
            }
        }
        return nil
    }

    static func kindWord(_ space: Int, _ name: String, _ program: RuleProgram) -> String {
        switch space {
        case 0: return program.groups.contains { $0.name.text == name } ? "group" : "scenario"
        case 1: return "param"
        default: return "stream"
        }
    }
}

extension RuleFile {
    /// The first range `find` gives for a clause of this file, in source order (each scenario's
    /// clauses, each group's and its members'), read in place: no list of bodies is made.
    package func firstInClauses(_ find: (Clause) -> SourceRange?) -> SourceRange? {
        func search(_ clauses: [Clause]) -> SourceRange? {
            for clause in clauses { if let found = find(clause) { return found } }
            return nil
        }
        for declaration in declarations {
            switch declaration {
            case .scenario(let scenario): if let found = search(scenario.clauses) { return found }
            case .group(let group):
                if let found = search(group.clauses) { return found }
                for member in group.members { if let found = search(member.clauses) { return found } }
            case .param, .event: continue
            }
        }
        return nil
    }
}
