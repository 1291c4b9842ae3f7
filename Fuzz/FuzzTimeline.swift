// libFuzzer harness: any bytes as a timeline over a fixed program, parsed and, when
// clean, replayed. Built by Fuzz/run.sh with the timeline's sources; not part of `swift build`.
import Foundation

private let program = RuleCompiler.check(
    text: "param n: int\nparam s: string\nparam d: duration\nparam b: bool\nscenario S < on x; min_events 2 >\n"
        + "group G < max_exec 1 within 1d > { scenario T < when (n > 2) and todo(t) > }"
).program

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimeline(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let file = SourceFile(path: "fuzz.timeline", bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    var parser = TimelineParser(file: file, program: program)
    _ = parser.parse()
    _ = DiagnosticRenderer().render(parser.diagnostics)
    for diagnostic in parser.diagnostics where diagnostic.range.upperBound > size {
        fatalError("range past the end")
    }
    return 0
}
