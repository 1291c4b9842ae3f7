// libFuzzer harness: any bytes as a state file, loaded strictly and with salvage.
// Loading must throw a clear error or succeed; a loaded engine must answer and save.
// Built by Fuzz/run.sh with the runtime's sources; not part of `swift build`.
import Foundation

private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-store-\(getpid())")
private let rules = "scenario S < on x; min_events 2 within 1d; max_exec 3; between 1h >\nparam p: int"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    try? FileManager.default.removeItem(at: directory)
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    for recovery in [FileStore.Recovery.strict, .salvage] {
        let url = directory.appendingPathComponent("state")
        try? bytes.write(to: url)
        let store = FileStore(url: url, options: .init(recovery: recovery, compactionThreshold: 256))
        guard let engine = try? RuleEngine(source: rules, store: store, clock: ManualClock()) else { continue }
        engine.trigger("x")
        _ = engine.tryToExecute("S")
        _ = engine.explain("S").description
        _ = engine.paramValue(named: "p")
        _ = engine.needToDo("t")
        if engine.count("x") < 1 { fatalError("a trigger was not counted") }
    }
    return 0
}
