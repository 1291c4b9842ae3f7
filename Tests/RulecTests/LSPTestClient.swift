import Foundation
import XCTest

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Language Server Protocol client for the tests: runs `rulec lsp` over pipes, frames
/// messages, and waits (at most 20 s) for answers and diagnostics.
final class LSPTestClient {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer: [UInt8] = []
    private var nextID = 1
    /// The last diagnostics published for each URI.
    private(set) var diagnostics: [String: [[String: Any]]] = [:]
    private var published: [String] = []

    init(root: URL) throws {
        process.executableURL = RulecBinary.url
        process.arguments = ["lsp"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let answer = try request("initialize", ["rootUri": root.absoluteString, "capabilities": [:] as [String: Any]])
        XCTAssertNotNil(answer["result"], "initialize: \(answer)")
        notify("initialized", [:])
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    func uri(_ file: URL) -> String { file.absoluteString }

    /// Sends raw bytes (a malformed message, say).
    func sendRaw(_ bytes: [UInt8]) {
        input.fileHandleForWriting.write(Data(bytes))
    }

    func notify(_ method: String, _ params: [String: Any]) {
        send(["jsonrpc": "2.0", "method": method, "params": params])
    }

    /// Sends a request and returns its response (notifications met meanwhile are kept).
    func request(_ method: String, _ params: [String: Any]) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        send(["jsonrpc": "2.0", "id": id, "method": method, "params": params])
        while true {
            let message = try next()
            if let answered = message["id"] as? Int, answered == id { return message }
        }
    }

    /// The result of a request that must succeed.
    func result(_ method: String, _ params: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws
        -> Any
    {
        let answer = try request(method, params)
        XCTAssertNil(answer["error"], "\(method): \(answer)", file: file, line: line)
        return answer["result"] ?? NSNull()
    }

    /// Waits for the next publication of diagnostics for `uri` and returns them.
    func waitForDiagnostics(_ uri: String) throws -> [[String: Any]] {
        while !published.contains(uri) { _ = try next() }
        published.removeAll { $0 == uri }
        return diagnostics[uri] ?? []
    }

    /// The next message that is not a notification.
    func nextResponse() throws -> [String: Any] {
        while true {
            let message = try next()
            if message["method"] == nil { return message }
        }
    }

    /// Ends the session; returns the exit status.
    func shutDown() throws -> Int32 {
        _ = try request("shutdown", [:])
        notify("exit", [:])
        process.waitUntilExit()
        return process.terminationStatus
    }

    private func send(_ message: [String: Any]) {
        let body = try! JSONSerialization.data(withJSONObject: message)
        input.fileHandleForWriting.write(Data("Content-Length: \(body.count)\r\n\r\n".utf8) + body)
    }

    /// The next message from the server (a failure after 20 s without one).
    func next() throws -> [String: Any] {
        let descriptor = output.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(20)
        while true {
            if let message = frame() {
                if message["method"] as? String == "textDocument/publishDiagnostics",
                    let params = message["params"] as? [String: Any], let uri = params["uri"] as? String
                {
                    diagnostics[uri] = params["diagnostics"] as? [[String: Any]] ?? []
                    published.append(uri)
                }
                return message
            }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let waited = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard poll(&poller, 1, waited) > 0 else { throw LSPTestError(text: "no message from rulec lsp in 20 s") }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw LSPTestError(text: "rulec lsp closed its output") }
            buffer += chunk[0..<count]
        }
    }

    private func frame() -> [String: Any]? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, buffer.count - 3)).first(where: { Array(buffer[$0..<$0 + 4]) == separator }) else {
            return nil
        }
        let header = String(decoding: buffer[0..<end], as: UTF8.self)
        guard
            let length = Int(
                header.replacingOccurrences(of: "Content-Length:", with: "").trimmingCharacters(in: .whitespaces)),
            buffer.count >= end + 4 + length
        else { return nil }
        let body = Data(buffer[(end + 4)..<(end + 4 + length)])
        buffer.removeFirst(end + 4 + length)
        return (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }
}

struct LSPTestError: Error, CustomStringConvertible {
    var text: String
    var description: String { text }
}

/// `text` with the protocol's edits applied (positions in UTF-16 code units).
func applying(_ edits: [[String: Any]], to text: String) -> String {
    func offset(_ position: [String: Any]) -> String.Index {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let line = position["line"] as! Int
        var index = text.startIndex
        for previous in lines.prefix(line) { index = text.index(index, offsetBy: previous.count + 1) }
        let utf16 = text.utf16
        return utf16.index(index, offsetBy: position["character"] as! Int)
    }
    var result = text
    // From the last edit to the first, so that earlier positions stay right.
    let sorted = edits.sorted {
        let a = ($0["range"] as! [String: Any])["start"] as! [String: Any]
        let b = ($1["range"] as! [String: Any])["start"] as! [String: Any]
        return (a["line"] as! Int, a["character"] as! Int) > (b["line"] as! Int, b["character"] as! Int)
    }
    for edit in sorted {
        let range = edit["range"] as! [String: Any]
        let start = offset(range["start"] as! [String: Any])
        let end = offset(range["end"] as! [String: Any])
        let lower = result.utf16.index(
            result.startIndex, offsetBy: text.utf16.distance(from: text.startIndex, to: start))
        let upper = result.utf16.index(result.startIndex, offsetBy: text.utf16.distance(from: text.startIndex, to: end))
        result.replaceSubrange(lower..<upper, with: edit["newText"] as! String)
    }
    return result
}
