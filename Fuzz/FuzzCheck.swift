// libFuzzer harness: any bytes through the parser, checker and renderer.
// Build and run with Fuzz/run.sh check; not part of `swift build`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCheck(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let result = RuleCompiler.check([SourceFile(path: "fuzz.rules", bytes: bytes)])
    _ = DiagnosticRenderer().render(result.diagnostics)
    for diagnostic in result.diagnostics where diagnostic.range.upperBound > bytes.count {
        fatalError("range past the end")
    }
    return 0
}
