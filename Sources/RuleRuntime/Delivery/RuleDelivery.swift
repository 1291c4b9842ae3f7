import Foundation
import RuleLang

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A name the app's compiled code uses (`rulec gen swift` lists them as `RequiredName.usedByApp`):
/// a delivered rules file that does not define it is refused.
public struct RequiredName: Sendable, Hashable, CustomStringConvertible {
    /// What the name is, and for a param its type.
    public enum Kind: String, Sendable {
        case scenario, group, event, boolParam, intParam, stringParam, durationParam
    }

    /// What the name is.
    public var kind: Kind
    /// The name as written in the rules.
    public var name: String
    /// Where the app's code got it: the bundled rules' `FILE:LINE`.
    public var declaredAt: String

    /// A name of `kind` the app uses, declared at `declaredAt` in the bundled rules.
    public init(_ kind: Kind, _ name: String, declaredAt: String) {
        self.kind = kind
        self.name = name
        self.declaredAt = declaredAt
    }

    /// `scenario 'AskToSubscribe' (used by the app, declared at app.rules:3)`.
    public var description: String {
        let what: String
        switch kind {
        case .scenario, .group, .event: what = kind.rawValue
        case .boolParam: what = "bool param"
        case .intParam: what = "int param"
        case .stringParam: what = "string param"
        case .durationParam: what = "duration param"
        }
        return "\(what) '\(name)' (used by the app, declared at \(declaredAt))"
    }
}

/// Rules delivered after release: checked, staged durably beside the state, and activated at
/// the next launch or at once; the last good rules, or the bundled ones, stay active otherwise.
///
/// ```swift
/// let delivery = RuleDelivery(directory: support, bundled: bundledSources, requiredNames: RequiredName.usedByApp)
/// let engine = try delivery.makeEngine(store: FileStore(url: support.appendingPathComponent("rules.state")))
/// // later, with downloaded bytes:
/// try delivery.stage(data, version: etag)          // active at the next launch
/// try delivery.stage(data, version: etag, activatingIn: engine)   // or at once
/// ```
///
/// A delivered file must be whole: its last line is a seal, `# sealed crc32=XXXXXXXX bytes=N`,
/// giving the CRC-32 and the length of every byte before that line (`rulec seal FILE` writes it).
/// A download cut short or damaged in transit fails it. Tampering is the app's integrity check's
/// to catch (for example a signature check with CryptoKit): the library writes no cryptography.
public final class RuleDelivery: Sendable {
    /// Why delivered bytes were refused; nothing was staged and the active rules stay.
    public enum Refusal: Error, CustomStringConvertible {
        /// More bytes than ``maximumSize``.
        case tooLarge(size: Int, limit: Int)
        /// Not UTF-8: the first bad byte's offset.
        case notUTF8(offset: Int)
        /// The app's integrity check said no.
        case integrityCheckFailed
        /// No seal, or the seal does not match the bytes (cut short or damaged).
        case incomplete(String)
        /// The rules need a newer language than this library reads.
        case newerLanguage(String)
        /// The rules have errors.
        case invalidRules([Diagnostic])
        /// Names the app's code uses that the rules no longer define.
        case missingNames([RequiredName])
        /// The file could not be staged.
        case io(String)
        /// A fetch failed (transport or HTTP status).
        case fetchFailed(String)

        public var description: String {
            switch self {
            case .tooLarge(let size, let limit): return "the rules are \(size) bytes, over the limit of \(limit)"
            case .notUTF8(let offset): return "the rules are not UTF-8 (byte \(offset))"
            case .integrityCheckFailed: return "the app's integrity check refused the rules"
            case .incomplete(let why): return "the rules are incomplete: \(why)"
            case .newerLanguage(let message): return message
            case .invalidRules(let diagnostics):
                return "the rules have errors:\n"
                    + DiagnosticRenderer().render(diagnostics.filter { $0.severity == .error })
            case .missingNames(let names):
                return "the rules lack names the app uses: " + names.map(\.description).joined(separator: "; ")
            case .io(let why): return "the rules could not be staged: \(why)"
            case .fetchFailed(let why): return "the rules could not be fetched: \(why)"
            }
        }
    }

    /// The folder holding the staged file (`delivered.rules`) and its version (`delivered.version`).
    public let directory: URL
    /// The rules bundled with the app: the fallback.
    public let bundled: [SourceFile]
    /// Names the app's code uses.
    public let requiredNames: [RequiredName]
    /// The largest file accepted, in bytes.
    public let maximumSize: Int
    /// The app's check of the downloaded bytes (a signature, a digest it got elsewhere).
    public let integrityCheck: (@Sendable (Data) -> Bool)?

    private let problem = Protected<String?>(nil)

    /// A delivery staging into `directory` (created if missing), falling back to `bundled`.
    public init(
        directory: URL, bundled: [SourceFile], requiredNames: [RequiredName] = [], maximumSize: Int = 512 * 1024,
        integrityCheck: (@Sendable (Data) -> Bool)? = nil
    ) {
        self.directory = directory
        self.bundled = bundled
        self.requiredNames = requiredNames
        self.maximumSize = maximumSize
        self.integrityCheck = integrityCheck
    }

    /// Why the staged rules were not used at the last ``rulesForLaunch()``, if they were not.
    public var lastProblem: String? { problem.withLock { $0 } }

    var stagedURL: URL { directory.appendingPathComponent("delivered.rules") }
    var versionURL: URL { directory.appendingPathComponent("delivered.version") }

    // MARK: - Sealing

    /// `bytes` with a seal as its last line: every existing seal line is removed, wherever it
    /// is (a file edited after it was sealed has its old seal in the middle), so the result has
    /// exactly one.
    public static func seal(_ bytes: [UInt8]) -> [UInt8] {
        var body = withoutSeals(bytes)
        if let last = body.last, last != UInt8(ascii: "\n") { body.append(UInt8(ascii: "\n")) }
        let line = "# sealed crc32=\(CRC32.hex(of: [body[...]])) bytes=\(body.count)\n"
        return body + Array(line.utf8)
    }

    /// The bytes before the seal line, when `bytes` ends with a seal line (whatever it says).
    static func unsealed(_ bytes: [UInt8]) -> [UInt8]? {
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        var start = end
        while start > 0, bytes[start - 1] != UInt8(ascii: "\n") { start -= 1 }
        let line = String(decoding: bytes[start..<end], as: UTF8.self)
        return line.hasPrefix("# sealed ") ? Array(bytes[0..<start]) : nil
    }

    /// `bytes` without any line starting `# sealed `.
    static func withoutSeals(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            if end < bytes.count { end += 1 }
            if !bytes[start..<end].starts(with: sealPrefix) { result += bytes[start..<end] }
            start = end
        }
        return result
    }

    private static let sealPrefix = Array("# sealed ".utf8)

    /// The 1-based line numbers of the seal lines in `bytes`.
    static func sealLines(_ bytes: [UInt8]) -> [Int] {
        var lines: [Int] = []
        var line = 1
        var start = 0
        while start < bytes.count {
            if bytes[start...].starts(with: sealPrefix) { lines.append(line) }
            guard let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else { break }
            start = newline + 1
            line += 1
        }
        return lines
    }

    /// Checks the seal; throws ``Refusal/incomplete(_:)``. A file with more than one seal line
    /// is refused: a download cut right after an older seal left in the middle would pass as
    /// the older rules.
    static func verifySeal(_ bytes: [UInt8]) throws {
        guard let body = unsealed(bytes) else {
            throw Refusal.incomplete(
                "no '# sealed crc32=... bytes=...' last line (cut short, or not sealed with 'rulec seal')")
        }
        let seals = sealLines(bytes)
        if seals.count > 1 {
            throw Refusal.incomplete(
                "\(seals.count) seal lines (lines \(seals.map(String.init).joined(separator: ", "))); "
                    + "a file has exactly one, its last line: seal it again with 'rulec seal --write'")
        }
        let line = String(decoding: bytes[body.count...], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = "# sealed crc32=\(CRC32.hex(of: [body[...]])) bytes=\(body.count)"
        guard line == expected else {
            throw Refusal.incomplete("the seal says '\(line)', the bytes give '\(expected)'")
        }
    }

    // MARK: - Checking

    /// Checks delivered bytes as ``stage(_:version:activatingIn:)`` does, staging nothing;
    /// returns the checked source.
    public func check(_ data: Data) throws -> SourceFile {
        try checked(data).source
    }

    /// The source of `data` and its check, once every check passed.
    func checked(_ data: Data) throws -> (source: SourceFile, result: CheckResult) {
        let bytes = [UInt8](data)
        guard bytes.count <= maximumSize else { throw Refusal.tooLarge(size: bytes.count, limit: maximumSize) }
        if let offset = RuleDelivery.firstInvalidUTF8(bytes) { throw Refusal.notUTF8(offset: offset) }
        if let integrityCheck, !integrityCheck(data) { throw Refusal.integrityCheckFailed }
        try RuleDelivery.verifySeal(bytes)
        let source = SourceFile(path: stagedURL.path, bytes: bytes)
        let result = RuleCompiler.check([source])
        // A newer language is refused before anything else is said of the file.
        if result.program.files.contains(where: { $0.languageVersion > .current }),
            let newer = result.diagnostics.first(where: { $0.id == .languageVersion })
        {
            throw Refusal.newerLanguage(newer.message)
        }
        if result.hasErrors { throw Refusal.invalidRules(result.diagnostics) }
        let missing = missingNames(result.program)
        if !missing.isEmpty { throw Refusal.missingNames(missing) }
        return (source, result)
    }

    /// The names the app uses that `program` does not define (a param: not with the same type).
    /// A former name (`was`) counts as defined: the engine answers it for the declaration that
    /// carries it now.
    func missingNames(_ program: RuleProgram) -> [RequiredName] {
        var scenarios = Set(program.scenarios.map(\.name))
        var groups = Set(program.groups.map(\.name.text))
        var streams = Set(program.knownStreams)
        var params: [String: ValueType] = [:]
        for param in program.params { params[param.name.text] = param.type }
        for rename in program.renames {
            let formers = rename.formerNames.map(\.text)
            switch rename.kind {
            case .scenario: scenarios.formUnion(formers)
            case .group: groups.formUnion(formers)
            case .event: streams.formUnion(formers)
            case .param:
                let type = params[rename.name.text]
                for former in formers where params[former] == nil { params[former] = type }
            }
        }
        return requiredNames.filter { required in
            switch required.kind {
            case .scenario: return !scenarios.contains(required.name)
            case .group: return !groups.contains(required.name)
            case .event: return !streams.contains(required.name)
            case .boolParam: return params[required.name] != .bool
            case .intParam: return params[required.name] != .int
            case .stringParam: return params[required.name] != .string
            case .durationParam: return params[required.name] != .duration
            }
        }
    }

    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    // MARK: - Staging

    /// Checks `data` (size, UTF-8, the app's integrity check, the seal, the rules, the language
    /// and the names the app uses) and stages it durably beside the state: written to a
    /// temporary file, synced, renamed over the staged one, so a kill at any moment leaves the
    /// old staged file or the new one, whole. It becomes active at the next launch
    /// (``makeEngine(store:clock:options:)``), or at once when `engine` is given (through
    /// ``RuleEngine/replaceRules(sources:origin:version:)``). Throws ``Refusal``: nothing changes.
    public func stage(_ data: Data, version: String? = nil, activatingIn engine: RuleEngine? = nil) throws {
        let (source, result) = try checked(data)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Stagings at once (threads, processes) take turns: each writes its pair whole, and the
        // last to finish is the one staged.
        try RuleDelivery.stagingLock.withLock {
            let lockFile = open(
                directory.appendingPathComponent("delivered.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard lockFile >= 0 else { throw Refusal.io("open 'delivered.lock': errno \(errno)") }
            defer { close(lockFile) }
            while flock(lockFile, LOCK_EX) != 0 {
                guard errno == EINTR else { throw Refusal.io("lock 'delivered.lock': errno \(errno)") }
            }
            // Anything but a regular file where the staged file goes (a directory left by
            // something else) is removed: it would block every staging.
            for url in [versionURL, stagedURL] { try RuleDelivery.clearNonFile(at: url) }
            RuleDelivery.removeTemporaryFilesOfDeadProcesses(in: directory)
            // The version first: it names the digest it belongs to, so a kill between the two
            // writes leaves a version that no longer matches the staged file (and is not
            // shown), never a wrong one.
            try RuleDelivery.writeDurably(
                Array("\(RuleDelivery.digest(source.bytes)) \(version ?? "")".utf8), to: versionURL)
            try RuleDelivery.writeDurably(source.bytes, to: stagedURL)
        }
        if let engine { try engine.replaceRules(checked: result, origin: .delivered, version: version) }
    }

    /// Orders the stagings of this process (`flock` orders processes; a lock file's `flock` is
    /// per open file, so two threads need this too).
    static let stagingLock = NSLock()

    /// Removes `delivered.*.tmp-PID-N` files left by stagings whose process was killed.
    static func removeTemporaryFilesOfDeadProcesses(in directory: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix("delivered.") && name.contains(".tmp-") {
            let parts = name.split(separator: "-")
            guard parts.count >= 3, let pid = Int32(parts[parts.count - 2]), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(directory.appendingPathComponent(name).path) }
        }
    }

    /// Removes what is at `url` when it is not a regular file (a directory, a FIFO, a link).
    static func clearNonFile(at url: URL) throws {
        var info = stat()
        guard lstat(url.path, &info) == 0, info.st_mode & S_IFMT != S_IFREG else { return }
        do {
            try FileManager.default.removeItem(atPath: url.path)
        } catch {
            throw Refusal.io("'\(url.path)' is not a regular file and cannot be removed: \(error)")
        }
    }

    /// The staged file's bytes: nil when there is none; a failure (with why) when something
    /// else is there, or it is over ``maximumSize`` (never read then).
    func readStaged() -> Result<[UInt8]?, Refusal> {
        var info = stat()
        guard stat(stagedURL.path, &info) == 0 else {
            return errno == ENOENT ? .success(nil) : .failure(.io("stat 'delivered.rules': errno \(errno)"))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return .failure(.io("'\(stagedURL.path)' is not a regular file"))
        }
        guard Int(info.st_size) <= maximumSize else {
            return .failure(.tooLarge(size: Int(info.st_size), limit: maximumSize))
        }
        let descriptor = open(stagedURL.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return .failure(.io("open 'delivered.rules': errno \(errno)")) }
        defer { close(descriptor) }
        // At most one byte over the limit is read: a file that grew meanwhile is refused too.
        guard let bytes = try? FileStore.read(descriptor, from: 0, count: maximumSize + 1, path: stagedURL.path)
        else { return .failure(.io("read 'delivered.rules': errno \(errno)")) }
        guard bytes.count <= maximumSize else { return .failure(.tooLarge(size: bytes.count, limit: maximumSize)) }
        return .success(bytes)
    }

    /// The digest `delivered.version` names its rules by.
    static func digest(_ bytes: [UInt8]) -> String { CRC32.hex(of: [bytes[...]]) }

    /// The version `delivered.version` gives for the staged rules `bytes`: nil when it names
    /// other rules (a kill between the two writes of a staging), or none.
    func stagedVersion(of bytes: [UInt8]) -> String? {
        // A regular file of a line, read without blocking (never a FIFO or a device).
        var info = stat()
        guard stat(versionURL.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 4096 else {
            return nil
        }
        let descriptor = open(versionURL.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard let data = try? FileStore.read(descriptor, from: 0, count: 4096, path: versionURL.path) else {
            return nil
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let space = text.firstIndex(of: " "), text[..<space] == RuleDelivery.digest(bytes) else { return nil }
        let version = String(text[text.index(after: space)...])
        return version.isEmpty ? nil : version
    }

    static let temporaryNames = Counter()

    /// Writes `bytes` to `url` through a synced temporary file and a rename, then syncs the folder.
    static func writeDurably(_ bytes: [UInt8], to url: URL) throws {
        // A name of its own: stagings in other processes write beside it.
        let temporary = url.path + ".tmp-\(getpid())-\(temporaryNames.next())"
        let system = FileSystemCalls.live
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Refusal.io("open '\(temporary)': errno \(errno)") }
        do {
            // The store's own loop: short writes and EINTR handled.
            try FileStore.writeFully(fd, bytes, path: temporary, system: system)
            guard system.fsync(fd) == 0 else { throw Refusal.io("fsync '\(temporary)': errno \(errno)") }
        } catch {
            close(fd)
            unlink(temporary)
            throw error as? Refusal ?? Refusal.io("\(error)")
        }
        close(fd)
        guard system.rename(temporary, url.path) == 0 else {
            unlink(temporary)
            throw Refusal.io("rename to '\(url.path)': errno \(errno)")
        }
        _ = system.syncDirectory(url.deletingLastPathComponent().path)
    }

    // MARK: - Launching

    /// The rules to run: the staged file when it is present, whole and valid, else the bundled
    /// rules (``lastProblem`` says why, when a staged file was there but not used).
    public func rulesForLaunch() -> (sources: [SourceFile], origin: ActiveRules.Origin, version: String?) {
        let (checked, version) = launchRules()
        return checked.map { ([$0.source], .delivered, version) } ?? (bundled, .bundled, nil)
    }

    /// The staged rules, checked, and their version; nil when there are none or they fail a check.
    private func launchRules() -> (checked: (source: SourceFile, result: CheckResult)?, version: String?) {
        var why: String?
        defer { problem.withLock { $0 = why } }
        let data: Data
        switch readStaged() {
        case .success(nil): return (nil, nil)
        case .success(let bytes?): data = Data(bytes)
        case .failure(let refusal):
            why = "the staged rules were not used: \(refusal); running the bundled rules"
            return (nil, nil)
        }
        do {
            let checked = try checked(data)
            return (checked, stagedVersion(of: checked.source.bytes))
        } catch {
            why = "the staged rules were not used: \(error); running the bundled rules"
            return (nil, nil)
        }
    }

    /// An engine over `store` running the staged rules when they pass every check, else the
    /// bundled ones (``lastProblem`` says why); the staged rules are checked once.
    public func makeEngine(
        store: RuleStore, clock: RuleClock = SystemClock(), options: RuleEngine.Options = RuleEngine.Options()
    ) throws -> RuleEngine {
        let (checked, version) = launchRules()
        if let checked {
            return try RuleEngine(
                checked: checked.result, store: store, clock: clock, options: options, origin: .delivered,
                version: version)
        }
        return try RuleEngine(
            checked: RuleCompiler.check(bundled), store: store, clock: clock, options: options, origin: .bundled)
    }
}
