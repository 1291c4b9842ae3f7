// libFuzzer harness: any bytes to `rulec lsp`'s message handling. The bytes go three ways:
// through the framing as a stream from the client; as one message's body; and as a document
// an initialized server opens, then hovered, completed, defined, renamed, formatted and
// fixed at positions taken from the bytes. Build and run with Fuzz/run.sh lsp.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLSP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let server = LSPServer(version: "fuzz")
    var framing = LSPFraming()
    framing.feed(bytes)
    while let frame = framing.next() {
        if case .message(let body) = frame { _ = server.handle(body) }
    }
    _ = server.handle(Data(bytes))

    let document = LSPServer(version: "fuzz")
    func send(_ message: [String: Any]) {
        guard let body = try? JSONSerialization.data(withJSONObject: message) else { return }
        _ = document.handle(body)
    }
    send(["jsonrpc": "2.0", "id": 1, "method": "initialize", "params": [:] as [String: Any]])
    let uri = "untitled:fuzz.rules"
    send([
        "jsonrpc": "2.0", "method": "textDocument/didOpen",
        "params": ["textDocument": ["uri": uri, "text": String(decoding: bytes, as: UTF8.self)]],
    ])
    let line = Int(bytes.first ?? 0) % 8
    let character = Int(bytes.last ?? 0) % 64
    let position: [String: Any] = ["line": line, "character": character]
    var id = 2
    for method in [
        "textDocument/hover", "textDocument/completion", "textDocument/definition", "textDocument/references",
        "textDocument/rename", "textDocument/documentSymbol", "textDocument/formatting", "textDocument/codeAction",
    ] {
        send([
            "jsonrpc": "2.0", "id": id, "method": method,
            "params": [
                "textDocument": ["uri": uri], "position": position, "newName": "renamed",
                "range": ["start": position, "end": ["line": line + 1, "character": 0]],
            ] as [String: Any],
        ])
        id += 1
    }
    // An incremental change at the same place, then everything again on the changed text.
    send([
        "jsonrpc": "2.0", "method": "textDocument/didChange",
        "params": [
            "textDocument": ["uri": uri],
            "contentChanges": [["range": ["start": position, "end": position], "text": "é😀;<>("]],
        ] as [String: Any],
    ])
    send([
        "jsonrpc": "2.0", "id": id, "method": "textDocument/completion",
        "params": ["textDocument": ["uri": uri], "position": position],
    ])
    return 0
}
