import Foundation
import RuleLang

/// The `.rules` files of an editor's workspace, checked as one program as `rulec check DIR`
/// checks them (the same `.rulecignore` and file rules): the open documents as the editor
/// holds them, the others as they are on disk, re-read when they change there.
final class LSPWorkspace {
    /// The workspace folder, when the client named one.
    var root: String?
    /// The text of each open document, by path.
    private(set) var open: [String: [UInt8]] = [:]
    /// The files found under `root`, until a change of files makes it look again.
    private var discovered: [String]?
    /// What each file held on disk when last read, and how to tell it changed.
    private var disk: [String: (stamp: [Int], bytes: [UInt8])] = [:]
    /// The last check, while nothing changed.
    private var current: Analysis?
    /// Counts the checks made: a new one may have new diagnostics to publish.
    private(set) var generation = 0

    /// One check of the workspace.
    final class Analysis {
        /// Every file checked, in the order checked.
        let files: [SourceFile]
        /// The check's program and diagnostics.
        let result: CheckResult
        /// Every name written in the files, built when a request first needs it (never for the
        /// diagnostics an edit sends).
        private(set) lazy var names = NameIndex(result.program)

        init(files: [SourceFile], result: CheckResult) {
            self.files = files
            self.result = result
        }

        /// The checked file at `path`.
        func file(_ path: String) -> SourceFile? { files.first { $0.path == path } }
    }

    // MARK: - Documents

    func openDocument(_ path: String, text: String) {
        changeDocument(path, text: text)
    }

    func changeDocument(_ path: String, text: String) {
        open[path] = Array(text.utf8)
        current = nil
    }

    /// Applies one incremental change (a range and its new text) to an open document.
    func changeDocument(_ path: String, range: Any?, text: String) -> Bool {
        guard let bytes = open[path] else { return false }
        let file = SourceFile(path: path, bytes: bytes)
        guard let replaced = LSPPosition.byteRange(in: file, range) else { return false }
        open[path] = Array(bytes[..<replaced.lowerBound]) + Array(text.utf8) + Array(bytes[replaced.upperBound...])
        current = nil
        return true
    }

    func closeDocument(_ path: String) {
        open[path] = nil
        current = nil
    }

    /// Files were created, changed or deleted on disk: look again.
    func filesChanged() {
        discovered = nil
        current = nil
    }

    // MARK: - Checking

    /// The workspace checked now: the open documents and every `.rules` file under the root.
    func analysis() -> Analysis {
        if let current, !diskChanged() { return current }
        var paths = discover()
        for path in open.keys.sorted() where !paths.contains(path) { paths.append(path) }
        var sources: [SourceFile] = []
        for path in paths {
            if let bytes = open[path] ?? readFromDisk(path) { sources.append(SourceFile(path: path, bytes: bytes)) }
        }
        // A file no longer in the workspace (deleted, or opened and closed) is not watched on:
        // its stamp would differ forever and re-check the workspace at every request.
        let onDisk = Set(paths).subtracting(open.keys)
        disk = disk.filter { onDisk.contains($0.key) }
        let analysis = Analysis(files: sources, result: RuleCompiler.check(sources))
        current = analysis
        generation += 1
        return analysis
    }

    /// The `.rules` files under the root, as `rulec check ROOT` finds them.
    private func discover() -> [String] {
        if let discovered { return discovered }
        var found: [String] = []
        if let root {
            var search = DirectorySearch()
            found = search.files(in: root)
        }
        discovered = found
        return found
    }

    /// True when a file read from disk changed there since (or went away).
    private func diskChanged() -> Bool {
        for (path, entry) in disk where open[path] == nil {
            if LSPWorkspace.stamp(path) != entry.stamp { return true }
        }
        return false
    }

    private func readFromDisk(_ path: String) -> [UInt8]? {
        let stamp = LSPWorkspace.stamp(path)
        if let entry = disk[path], entry.stamp == stamp { return entry.bytes }
        // A file replaced by a FIFO, socket or device since it was found is not read.
        guard !stamp.isEmpty, DirectorySearch.notRegular(path) == nil,
            let data = FileManager.default.contents(atPath: path)
        else {
            disk[path] = nil
            return nil
        }
        disk[path] = (stamp, [UInt8](data))
        return [UInt8](data)
    }

    /// What tells a file's contents changed: its modification time, size and inode.
    private static func stamp(_ path: String) -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        #if canImport(Darwin)
            let time = info.st_mtimespec
        #else
            let time = info.st_mtim
        #endif
        return [Int(time.tv_sec), Int(time.tv_nsec), Int(info.st_size), Int(info.st_ino)]
    }

    // MARK: - URIs

    /// The path of a `file:` URI (any other URI is its own path).
    static func path(of uri: String) -> String {
        guard uri.hasPrefix("file:"), let url = URL(string: uri), url.isFileURL else { return uri }
        return url.standardizedFileURL.path
    }

    /// The `file:` URI of a path (a path that is a URI already stays one).
    static func uri(of path: String) -> String {
        guard path.hasPrefix("/") else { return path }
        return URL(fileURLWithPath: path).absoluteString
    }
}

/// What a name written in the rules stands for.
enum NameKind: String {
    case scenario, group, param, event, function, todo
}

/// One name as written: a declaration or a use.
struct NameOccurrence {
    var kind: NameKind
    var text: String
    var file: SourceFile
    var range: SourceRange
    var isDeclaration: Bool
    /// The scenario or group whose body it is in, if any.
    var owner: String?
    /// For a former name (`was NAME`), the name it became.
    var formerOf: String? = nil
}

/// Every name the program's files write, with what each stands for.
struct NameIndex {
    private(set) var occurrences: [NameOccurrence] = []
    /// The program's scenario and group names: which one an `executions(...)` argument names.
    private let scenarios: Set<String>
    private let groups: Set<String>

    init(_ program: RuleProgram) {
        scenarios = Set(program.scenarios.map(\.name))
        groups = Set(program.groups.map(\.name.text))
        for file in program.files {
            let source = file.source
            for declaration in file.declarations {
                switch declaration {
                case .scenario(let scenario):
                    add(scenario, source)
                case .group(let group):
                    declare(.group, group.name, was: group.formerNames, source)
                    addClauses(group.clauses, source, owner: group.name.text)
                    for member in group.members { add(member, source) }
                case .param(let param):
                    declare(.param, param.name, was: param.formerNames, source)
                case .event(let events):
                    for (index, name) in events.names.enumerated() {
                        declare(
                            .event, name, was: index < events.formerNames.count ? events.formerNames[index] : [], source
                        )
                    }
                }
            }
        }
    }

    private mutating func note(
        _ kind: NameKind, _ text: String, _ range: SourceRange, _ file: SourceFile, declaration: Bool = false,
        owner: String? = nil, formerOf: String? = nil
    ) {
        occurrences.append(
            NameOccurrence(
                kind: kind, text: text, file: file, range: range, isDeclaration: declaration, owner: owner,
                formerOf: formerOf))
    }

    /// A declaration, and its former names (`was`), which stand for it.
    private mutating func declare(_ kind: NameKind, _ name: Name, was former: [Name], _ file: SourceFile) {
        note(kind, name.text, name.range, file, declaration: true)
        for old in former { note(kind, old.text, old.range, file, formerOf: name.text) }
    }

    private mutating func add(_ scenario: ScenarioDecl, _ file: SourceFile) {
        declare(.scenario, scenario.name, was: scenario.formerNames, file)
        addClauses(scenario.clauses, file, owner: scenario.name.text)
    }

    private mutating func addClauses(_ clauses: [Clause], _ file: SourceFile, owner: String) {
        for clause in clauses {
            switch clause.kind {
            case .on(let names):
                for name in names { note(.event, name.text, name.range, file, owner: owner) }
            case .when(let expr):
                addExpression(expr, file, owner: owner)
            default: break
            }
        }
    }

    private mutating func addExpression(_ expr: Expr, _ file: SourceFile, owner: String) {
        switch expr.kind {
        case .name(let text):
            if BuiltinValue(rawValue: text) == nil { note(.param, text, expr.range, file, owner: owner) }
        case .unary(_, let operand), .parenthesized(let operand):
            addExpression(operand, file, owner: owner)
        case .binary(_, let left, let right):
            addExpression(left, file, owner: owner)
            addExpression(right, file, owner: owner)
        case .call(let function, let argument, _, let outcome, _, _):
            // A filter's names are the event's properties, which are not indexed.
            note(.function, function.text, function.range, file, owner: owner)
            let kind: NameKind
            switch BuiltinFunction(rawValue: function.text)?.argument {
            case .stream? where outcome != nil: kind = .scenario
            case .stream? where EngineStream.isReserved(argument.text): return
            case .stream?, .property?: kind = .event  // `sum(purchase.amount)`: the event part
            case .scenarioOrGroup?:
                kind = groups.contains(argument.text) && !scenarios.contains(argument.text) ? .group : .scenario
            case .todo?: kind = .todo
            case .salt?, nil: return
            }
            note(kind, argument.text, argument.range, file, owner: owner)
        default: break
        }
    }
    /// The name written at byte `offset` of `file`.
    func occurrence(in file: SourceFile, at offset: Int) -> NameOccurrence? {
        // The name under the cursor, or the one the cursor has just passed.
        occurrences.first { $0.file.path == file.path && ($0.range.contains(offset) || $0.range.upperBound == offset) }
    }

    /// The declaration a name stands for: of its kind, or, for an event no `event` declares,
    /// the scenario that counts its own stream of that name.
    func declaration(of name: NameOccurrence) -> NameOccurrence? {
        if let current = name.formerOf {
            return occurrences.first { $0.isDeclaration && $0.kind == name.kind && $0.text == current }
        }
        let kinds: [NameKind] = name.kind == .event ? [.event, .scenario] : [name.kind]
        for kind in kinds {
            if let found = occurrences.first(where: { $0.isDeclaration && $0.kind == kind && $0.text == name.text }) {
                return found
            }
        }
        return nil
    }

    /// Every occurrence standing for the same thing as `name` (its declaration first).
    func references(of name: NameOccurrence) -> [NameOccurrence] {
        let target = declaration(of: name)
        let kind = target?.kind ?? name.kind
        let text = target?.text ?? name.text
        let declaredEvent = occurrences.contains { $0.isDeclaration && $0.kind == .event && $0.text == text }
        return occurrences.filter { other in
            // The declaration's former names stand for it too.
            if let current = other.formerOf { return current == text && other.kind == kind }
            guard other.text == text else { return false }
            if other.kind == kind { return true }
            // A scenario counting its own stream: uses of the stream are uses of the scenario's name.
            return kind == .scenario && other.kind == .event && !declaredEvent
        }.sorted {
            ($0.isDeclaration ? 0 : 1, $0.file.path, $0.range.lowerBound) < (
                $1.isDeclaration ? 0 : 1, $1.file.path, $1.range.lowerBound
            )
        }
    }
}
