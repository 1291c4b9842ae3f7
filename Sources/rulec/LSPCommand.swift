import Foundation
import RuleLSP
import RuleLang

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `rulec lsp`: the language server on standard input and output.
enum LSPCommand: Command {
    static let summary = "the language server for editors (stdio)"
    static let options = CommandOptions(
        name: "lsp",
        title:
            "rulec lsp: a Language Server Protocol 3.17 server for .rules files, on standard input and output\n(JSON-RPC with Content-Length framing).",
        operands: "",
        about: """
            The workspace folder's .rules files are checked as one program, as
            'rulec check DIR' checks them (.rulecignore included); open documents are
            checked as the editor holds them, the others as they are on disk.

            Requests: \(LSPServer.requests.joined(separator: ", ")).
            Notifications: \(LSPServer.notifications.joined(separator: ", ")).
            Diagnostics are published as the documents change, with rulec check's
            messages, ids and ranges; fix-its are quick fixes (textDocument/codeAction).
            Positions count UTF-16 code units, as the protocol says.
            """,
        options: [],
        exitStatus: """
            Exit status: 0 after 'shutdown' then 'exit', 1 when the input ends or
            'exit' comes without 'shutdown', 64 wrong usage.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        guard parsed.operands.isEmpty else { return CLI.misuse("'rulec lsp' takes no operands", usage: usage) }
        return serve(input: STDIN_FILENO, output: FileHandle.standardOutput)
    }

    /// Serves until `exit` or the end of the input.
    static func serve(input: Int32, output: FileHandle) -> Int32 {
        let server = LSPServer(version: CLI.version)
        var framing = LSPFraming()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return server.exitStatus ?? 1 }
            framing.feed(buffer[0..<count])
            while let frame = framing.next() {
                let replies: [Data]
                switch frame {
                case .message(let body): replies = server.handle(body)
                case .malformed(let reason): replies = [LSPServer.parseError(reason)]
                }
                for reply in replies { output.write(LSPFraming.frame(reply)) }
                if let status = server.exitStatus { return status }
            }
        }
    }
}
