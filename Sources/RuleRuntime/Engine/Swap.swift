import Foundation
import RuleLang

/// Which rules an engine runs: where they came from, their digest, and since when.
public struct ActiveRules: Sendable, Equatable, CustomStringConvertible {
    /// Where the rules came from.
    public enum Origin: String, Sendable, Codable {
        /// Given to the engine's initializer or to ``RuleEngine/replaceRules(sources:origin:version:)``.
        case given
        /// The rules bundled with the app (``RuleDelivery``'s fallback).
        case bundled
        /// Rules delivered after release and accepted by ``RuleDelivery``.
        case delivered
    }

    /// Where they came from.
    public var origin: Origin
    /// The files' paths, in order.
    public var paths: [String]
    /// The `# language` the files declare (the newest of them).
    public var language: LanguageVersion
    /// `crc32:XXXXXXXX` over the files' bytes in order: tells two versions of the rules apart
    /// (not a security check: that is the app's integrity check's job).
    public var digest: String
    /// A version label the delivery gave (a server's `ETag`, a build number), if any.
    public var version: String?
    /// When the engine took them, by its clock.
    public var activated: Date

    /// The rules of `program` (already parsed: its files say their language), from `origin`.
    init(program: RuleProgram, origin: Origin, version: String? = nil, activated: Date) {
        self.origin = origin
        paths = program.files.map(\.source.path)
        language = program.files.map(\.languageVersion).max() ?? .initial
        digest = "crc32:" + CRC32.hex(of: program.files.map { $0.source.bytes[...] })
        self.version = version
        self.activated = activated
    }

    /// Everything but the time: `delivered rules.rules (language 1.1, crc32:1a2b3c4d, version 7)`.
    var identity: String {
        var what = "\(origin.rawValue) \(paths.joined(separator: ", ")) (language \(language), \(digest)"
        if let version { what += ", version \(version)" }
        return what + ")"
    }

    /// `delivered rules.rules (language 1.1, crc32:1a2b3c4d, version 7) since 2026-11-25T10:00:00Z`.
    public var description: String { identity + " since " + activated.formatted(.iso8601) }
}

extension RuleEngine {
    /// Which rules the engine runs now: where they came from, their digest, since when.
    public var activeRules: ActiveRules? { locked { $0.active } }

    /// Gives the running engine new rules, checked as one program.
    ///
    /// Any error changes nothing: it throws ``RuleEngineError/invalidRules(_:)`` with the located
    /// diagnostics. Otherwise the swap is atomic under the engine's lock: every call that starts
    /// after it answers with the new rules, and none sees a mix. The state carries over exactly as
    /// a new engine over the same store would take it (grammar.md, "Rules changed over an existing
    /// store"), renames (`was`) included. Handles made before resolve again (a name that is gone
    /// answers false and is listed in ``unknownNames``); ``updates(for:)-(Scenario)`` streams yield again
    /// where the answer changed; params set with `set` keep their stored values, and `provide`
    /// closures keep providing where the new rules declare the param with the same type.
    /// Returns the new rules' warnings (also in ``warnings``).
    @discardableResult
    public func replaceRules(sources: [SourceFile], origin: ActiveRules.Origin = .given, version: String? = nil)
        throws -> [Diagnostic]
    {
        try replaceRules(checked: RuleCompiler.check(sources), origin: origin, version: version)
    }

    /// ``replaceRules(sources:origin:version:)`` with rules already checked.
    ///
    /// In three steps, so that other threads' calls wait only for the last: under the lock, the
    /// store's entries are taken as they are (a copy of an in-memory store's buffer, a read of an
    /// exclusive file) and the core starts a ``SwapJournal`` of what it writes from then on;
    /// outside it, they are decoded for the new rules, as a restart decodes them; under the lock
    /// again, the new core is made from them, what the journal holds is applied in order, and
    /// the cores change places. The old core is freed after the lock is let go. A swap whose
    /// journal cannot say what happened meanwhile (the state was read whole again, the file
    /// written from memory, another swap ran), one over a file other processes share (whose
    /// writes must be taken in in order), and one whose rules move histories under former names
    /// while the journal holds changes, read the store again under the lock, as a restart would.
    @discardableResult
    func replaceRules(checked result: CheckResult, origin: ActiveRules.Origin, version: String?) throws
        -> [Diagnostic]
    {
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        // Compiled before the lock is taken: calls wait only for the state to be carried over.
        let rules = CompiledRules(program: result.program, recentLimit: recentLimit)
        let active: (Date) -> ActiveRules = {
            ActiveRules(program: result.program, origin: origin, version: version, activated: $0)
        }
        let begun = try locked { try $0.beginSwap() }
        betweenSwapSteps?()
        // Read, decoded and made a core here; a failure leaves it to the last step to read the
        // store again. What the running core writes meanwhile is taken from its journal and
        // applied here too, a batch at a time, until little is left for the last step.
        var prepared: PreparedCore?
        if let begun, let state = try? EngineState(begun.read(), streams: rules.streams) {
            prepared = EngineCore.prepare(rules: rules, state: consume state, hooks: begun.hooks)
        }
        if let token = begun?.token {
            for _ in 0..<4 {
                guard var next = prepared.take() else { break }
                guard let batch = locked({ $0.takeJournal(token) }), next.canApply(batch) else { break }
                if !batch.isEmpty {
                    guard (try? next.core.apply(journal: batch)) != nil else { break }
                }
                prepared = next
                if batch.count < 32 { break }
            }
        }
        let (warnings, old) = try locked { (core: inout EngineCore) throws -> ([Diagnostic], EngineCore) in
            let (next, journaled) = try core.finishSwap(
                to: rules, prepared: prepared.take(), token: begun?.token, diagnostics: result.diagnostics,
                active: active)
            if journaled { journaledSwaps += 1 }
            let old = core
            core = next
            return (core.warnings, old)
        }
        // Freed here, after the lock is let go: at 100,000 streams that is most of a millisecond.
        withExtendedLifetime(old) {}
        return warnings
    }

    /// ``replaceRules(sources:origin:version:)`` with one rules text.
    @discardableResult
    public func replaceRules(source: String, path: String = "<rules>") throws -> [Diagnostic] {
        try replaceRules(sources: [SourceFile(path: path, text: source)])
    }
}

extension EngineCore {
    /// Scenario `name`'s index; an unknown name is remembered for ``RuleEngine/unknownNames``.
    @inline(__always)
    mutating func scenario(named name: String) -> Int? {
        if let index = scenarioIndex[name] { return index }
        // A former name (`was`): the app's code, built against older rules, still calls it.
        if let index = rules.formerScenarios[name] { return index }
        noteUnknownScenario(name)
        return nil
    }

    /// Scenario `handle`'s index: remembered by the handle after its first use with these rules.
    @inline(__always)
    mutating func scenario(_ handle: Scenario) -> Int? {
        if let index = handle.cache?.index(for: serial) { return index }
        guard let index = scenario(named: handle.name) else { return nil }
        handle.cache?.remember(index, for: serial)
        return index
    }

    /// Takes `rules` as the active rules; returns the change that records them in the state when
    /// they came from a delivery and differ from the rules recorded there (`rulec state` shows them).
    mutating func activate(_ rules: ActiveRules) -> [StoreChange] {
        active = rules
        guard rules.origin != .given, storedActive?.hasPrefix(rules.identity + " since ") != true else { return [] }
        storedActive = rules.description
        return [EngineState.change(activeRules: rules.description)]
    }

    mutating func noteUnknownScenario(_ name: String) {
        if hooks.unknownScenarios.count < UnknownName.limit, !hooks.unknownScenarios.contains(name) {
            hooks.unknownScenarios.append(name)
        }
    }

    /// Remembers the stream in `slot`, which the rules do not count, for ``RuleEngine/unknownNames``.
    @inline(__always)
    mutating func noteUnknownEvent(_ slot: Int) {
        // The engine's own streams (outcomes, crashes) are known whether the rules read them or not.
        if unknownEventSlots.count < UnknownName.limit, !unknownEventSlots.contains(slot),
            !EngineStream.isReserved(streams.name(slot))
        {
            unknownEventSlots.append(slot)
            hooks.unknownEvents.append(streams.name(slot))
        }
    }

    /// A swap's first step, under the lock: a reader of the store's entries as they are now
    /// (``RecordStore/entriesReader()``, called outside the lock), the hooks as they are, and a
    /// new ``journal`` of what this core writes or takes in from here on. Nil over a file other
    /// processes share (whose writes must be taken in in order) and over a store that cannot say
    /// whether something else wrote it meanwhile (not a ``RecordStore``): that swap reads the
    /// store under the lock (``finishSwap``).
    /// Stores the times re-based in memory (a clock corrected), which otherwise wait for the
    /// next call that writes.
    mutating func storeReBased() {
        if !rebasedUnsaved.isEmpty || !rebasedStreams.isEmpty || !rebasedToDos.isEmpty {
            addRebased()
            commit()
        }
    }

    mutating func beginSwap() throws -> (read: () throws -> StoredEntries, token: Int, hooks: EngineHooks)? {
        // Times re-based in memory (a clock corrected; reads write nothing) are stored first: the
        // new core is made from the store, and would otherwise re-base them again, at the swap's
        // time (found by `ClauseModelTests`).
        storeReBased()
        guard !shared, let records else { return nil }
        let reader: (taken: Int, read: () throws -> StoredEntries)
        do { reader = try records.entriesReader() } catch {
            throw RuleEngineError.store(error as? RuleStoreError ?? .other(error))
        }
        // A swap begun meanwhile replaces this journal with its own: the token tells them apart.
        let token = (journal?.token ?? 0) + 1
        journal = SwapJournal(token: token, storeTaken: reader.taken)
        return (reader.read, token, hooks)
    }

    /// Under the lock: what the journal of swap `token` holds so far, which it then forgets; nil
    /// when it cannot say what happened (another swap's, or broken).
    mutating func takeJournal(_ token: Int) -> [SwapJournal.Entry]? {
        guard let kept = journal, kept.token == token, !kept.broken else { return nil }
        journal?.entries = []
        return kept.entries
    }

    /// The store's entries, as a restart reads them.
    func loadStored() throws -> StoredEntries {
        do {
            return try records?.loadEntries() ?? StoredEntries(try hooks.store.load())
        } catch let error as RuleStoreError {
            throw RuleEngineError.store(error)
        } catch {
            throw RuleEngineError.store(.other(error))
        }
    }

    /// A swap's last step, under the lock: the core ``RuleEngine/replaceRules(checked:origin:version:)``
    /// prepared outside the lock (from the entries ``beginSwap()`` took, for journal `token`, with
    /// the journal's batches taken so far), with the rest of the journal applied and this core's
    /// hooks as they are now; or a core over the store read again now when that cannot be
    /// trusted (or reading or decoding it outside the lock failed: the error is then the one a
    /// restart gets). True with the core when it was the one prepared.
    mutating func finishSwap(
        to rules: CompiledRules, prepared: consuming PreparedCore?, token: Int?, diagnostics: [Diagnostic],
        active: (Date) -> ActiveRules
    ) throws -> (EngineCore, Bool) {
        let journal = self.journal
        self.journal = nil
        // The journal holds every record the store took meanwhile only if the store took no
        // other (the app's own `apply` on it, another engine over the same store object).
        if var next = prepared.take(), let journal, journal.token == token, !journal.broken,
            records.map({ $0.recordsTaken - journal.storeTaken == journal.handed }) == true,
            next.canApply(journal.entries)
        {
            let finished: ()? = try? next.finish(
                hooks: hooks, journal: journal.entries, active: active, diagnostics: diagnostics)
            if finished != nil { return (next.core, true) }
        }
        do {
            let state = try EngineState(try loadStored(), streams: rules.streams)
            var next = EngineCore.prepare(rules: rules, state: consume state, hooks: hooks)
            try next.finish(hooks: nil, journal: [], active: active, diagnostics: diagnostics)
            return (next.core, false)
        } catch let error as RuleEngineError {
            throw error
        } catch {
            throw RuleEngineError.store(.other(error))
        }
    }
}

/// While a swap decodes the stored state outside the engine's lock: every change the running
/// core wrote to the store, or took in from another process, since the swap read the store, in
/// order (each as the bytes of its record and the ranges of its keys and values, a nil value
/// deleting). Changes set whole values, so applying them to the state read is the state a
/// restart would read now.
struct SwapJournal {
    /// Tells one swap's journal from another's (a swap that began after this one replaced it;
    /// one that finished made a new core, which has none).
    let token: Int
    /// ``RecordStore/recordsTaken`` when the store's entries were taken, and the records this
    /// core has handed the store since.
    let storeTaken: Int
    var handed = 0
    typealias Entry = (bytes: [UInt8], changes: [(key: Range<Int>, value: Range<Int>?)])
    var entries: [Entry] = []
    /// True once something happened that changes cannot say: the state read whole again, the
    /// file written from memory.
    var broken = false

    /// Keeps the changes of `record`, an engine's record as stores take it.
    mutating func add(record bytes: [UInt8]) {
        var changes: [(key: Range<Int>, value: Range<Int>?)] = []
        let parsed = bytes.withUnsafeBytes { raw in
            try? RecordFormat.forEachChange(in: raw, from: RecordFormat.recordHeaderSize, to: raw.count) {
                changes.append(($0, $1))
            }
        }
        if parsed == nil { broken = true }
        entries.append((bytes, changes))
    }

    /// `entries` as one record: their bytes end to end, and their changes in order.
    static func joined(_ entries: [Entry]) -> Entry {
        if entries.count == 1 { return entries[0] }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.reduce(0) { $0 + $1.bytes.count })
        var changes: [(key: Range<Int>, value: Range<Int>?)] = []
        for entry in entries {
            let base = bytes.count
            bytes += entry.bytes
            for change in entry.changes {
                changes.append(
                    (
                        change.key.lowerBound + base..<change.key.upperBound + base,
                        change.value.map { $0.lowerBound + base..<$0.upperBound + base }
                    ))
            }
        }
        return (bytes, changes)
    }

    /// Keeps changes another process wrote, as ``EngineCore/apply(written:_:droppingOtherTypes:)`` took them in.
    mutating func add(written bytes: [UInt8], _ changes: [(key: Range<Int>, value: Range<Int>?)]) {
        entries.append((bytes, changes))
    }
}
