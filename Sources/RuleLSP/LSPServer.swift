import Foundation
import RuleLang

/// `rulec lsp`'s server: reads one JSON-RPC message at a time and returns what to send back
/// (responses, and `textDocument/publishDiagnostics` notifications). No I/O here, so tests
/// and the fuzz target drive it directly; ``LSPCommand`` connects it to standard input and
/// output.
public final class LSPServer {
    /// JSON-RPC error codes the server answers with.
    enum ErrorCode {
        static let parseError = -32700
        static let invalidRequest = -32600
        static let methodNotFound = -32601
        static let invalidParams = -32602
        static let serverNotInitialized = -32002
        static let requestFailed = -32803
    }

    /// The requests about a document, answered by ``LSPFeatures``.
    static let documentRequests = [
        "textDocument/hover", "textDocument/completion", "textDocument/definition", "textDocument/references",
        "textDocument/rename", "textDocument/documentSymbol", "textDocument/formatting", "textDocument/codeAction",
    ]
    /// The requests answered, as `rulec lsp --help` lists them.
    public static let requests = ["initialize", "shutdown"] + documentRequests
    /// The notifications acted on.
    public static let notifications = [
        "initialized", "exit", "textDocument/didOpen", "textDocument/didChange", "textDocument/didSave",
        "textDocument/didClose", "workspace/didChangeWatchedFiles",
    ]

    let workspace = LSPWorkspace()
    /// The version `initialize` reports in `serverInfo`.
    let version: String
    private(set) var initialized = false
    private(set) var shutDown = false
    /// Set by `exit`: the status the process ends with (0 after `shutdown`, else 1).
    public private(set) var exitStatus: Int32?
    /// The diagnostics last sent for each file, so that only changes are sent again.
    private var published: [String: Data] = [:]
    /// The workspace's check whose diagnostics were last published.
    private var publishedGeneration = -1

    /// A server reporting `version` as its own; nothing is read before `initialize`.
    public init(version: String) {
        self.version = version
    }

    /// The messages to send in answer to one message's body.
    public func handle(_ body: Data) -> [Data] {
        guard let message = JSON.parse(body) as? JSONObject else {
            return [LSPServer.error(id: NSNull(), ErrorCode.parseError, "the message is not a JSON object")]
        }
        let id = message["id"]
        let isRequest = id != nil && (id is String || JSON.int(id) != nil)
        if id != nil && !isRequest && !(id is NSNull) {
            return [LSPServer.error(id: NSNull(), ErrorCode.invalidRequest, "'id' must be a number or a string")]
        }
        guard let method = message["method"] as? String else {
            // A response to a request of ours (the server sends none), or not a message at all.
            if message["result"] != nil || message["error"] != nil { return [] }
            return [LSPServer.error(id: id ?? NSNull(), ErrorCode.invalidRequest, "the message has no 'method'")]
        }
        let params = message["params"] as? JSONObject ?? [:]
        guard isRequest, let id else {
            return notification(method, params)
        }
        if method == "initialize" {
            initialize(params)
            return [result(id: id, capabilities())]
        }
        guard initialized else {
            return [LSPServer.error(id: id, ErrorCode.serverNotInitialized, "the server is not initialized yet")]
        }
        if shutDown { return [LSPServer.error(id: id, ErrorCode.invalidRequest, "the server is shut down")] }
        switch method {
        case "shutdown":
            shutDown = true
            return [result(id: id, NSNull())]
        case _ where LSPServer.documentRequests.contains(method):
            let reply: Data
            switch answer(method, params) {
            case .success(let value): reply = result(id: id, value)
            case .failure(let failure): reply = LSPServer.error(id: id, failure.code, failure.message)
            }
            // A file changed on disk, found while answering: its diagnostics follow the answer.
            return [reply] + (workspace.generation == publishedGeneration ? [] : publishDiagnostics())
        default:
            return [LSPServer.error(id: id, ErrorCode.methodNotFound, "'\(method)' is not supported")]
        }
    }

    /// A request that could not be answered.
    struct Failure: Error {
        var code: Int
        var message: String
    }

    private func answer(_ method: String, _ params: JSONObject) -> Result<Any, Failure> {
        guard let document = params["textDocument"] as? JSONObject, let uri = document["uri"] as? String else {
            return .failure(Failure(code: ErrorCode.invalidParams, message: "'textDocument.uri' is missing"))
        }
        let path = LSPWorkspace.path(of: uri)
        let analysis = workspace.analysis()
        guard let file = analysis.file(path) else {
            return .failure(
                Failure(code: ErrorCode.invalidParams, message: "'\(uri)' is not a .rules file of the workspace"))
        }
        let features = LSPFeatures(analysis: analysis, file: file)
        let offset = LSPPosition.offset(in: file, params["position"])
        switch method {
        case "textDocument/documentSymbol": return .success(features.symbols())
        case "textDocument/formatting": return .success(features.formatting())
        case "textDocument/codeAction":
            guard let range = LSPPosition.byteRange(in: file, params["range"]) else { break }
            return .success(features.codeActions(range, uri: uri))
        default:
            guard let offset else { break }
            switch method {
            case "textDocument/hover": return .success(features.hover(at: offset))
            case "textDocument/completion": return .success(features.completion(at: offset))
            case "textDocument/definition": return .success(features.definition(at: offset))
            case "textDocument/references":
                let context = params["context"] as? JSONObject
                let declarations = context?["includeDeclaration"] as? Bool ?? true
                return .success(features.references(at: offset, includeDeclaration: declarations))
            case "textDocument/rename":
                guard let name = params["newName"] as? String else { break }
                return features.rename(at: offset, to: name)
            default: break
            }
        }
        return .failure(Failure(code: ErrorCode.invalidParams, message: "the parameters of '\(method)' are incomplete"))
    }

    private func notification(_ method: String, _ params: JSONObject) -> [Data] {
        if method == "exit" {
            exitStatus = shutDown ? 0 : 1
            return []
        }
        guard initialized, !shutDown else { return [] }
        let document = params["textDocument"] as? JSONObject
        let path = (document?["uri"] as? String).map(LSPWorkspace.path(of:))
        switch method {
        case "initialized":
            break
        case "textDocument/didOpen":
            guard let path, let text = document?["text"] as? String else { return [] }
            // Another language's document (a timeline, say) is not part of the program.
            guard path.hasSuffix(".rules") || document?["languageId"] as? String == "rules" else { return [] }
            workspace.openDocument(path, text: text)
        case "textDocument/didChange":
            guard let path, let changes = params["contentChanges"] as? [JSONObject] else { return [] }
            for change in changes {
                guard let text = change["text"] as? String else { continue }
                if let range = change["range"] {
                    if !workspace.changeDocument(path, range: range, text: text) { return [] }
                } else {
                    workspace.changeDocument(path, text: text)
                }
            }
        case "textDocument/didClose":
            guard let path else { return [] }
            workspace.closeDocument(path)
        case "textDocument/didSave", "workspace/didChangeWatchedFiles":
            workspace.filesChanged()
        default:
            return []
        }
        return publishDiagnostics()
    }

    private func initialize(_ params: JSONObject) {
        initialized = true
        if let folders = params["workspaceFolders"] as? [JSONObject], let uri = folders.first?["uri"] as? String {
            workspace.root = LSPWorkspace.path(of: uri)
        } else if let uri = params["rootUri"] as? String {
            workspace.root = LSPWorkspace.path(of: uri)
        } else if let path = params["rootPath"] as? String {
            workspace.root = path
        }
    }

    private func capabilities() -> JSONObject {
        [
            "capabilities": [
                "textDocumentSync": ["openClose": true, "change": 2, "save": true] as JSONObject,
                "hoverProvider": true,
                "completionProvider": ["triggerCharacters": [" ", "(", ","]] as JSONObject,
                "definitionProvider": true,
                "referencesProvider": true,
                "renameProvider": true,
                "documentSymbolProvider": true,
                "documentFormattingProvider": true,
                "codeActionProvider": ["codeActionKinds": ["quickfix"]] as JSONObject,
            ] as JSONObject,
            "serverInfo": ["name": "rulec", "version": version] as JSONObject,
        ]
    }

    // MARK: - Diagnostics

    /// `textDocument/publishDiagnostics` for every file whose diagnostics changed.
    func publishDiagnostics() -> [Data] {
        let analysis = workspace.analysis()
        publishedGeneration = workspace.generation
        var byFile: [String: [JSONObject]] = [:]
        for file in analysis.files { byFile[file.path] = [] }
        for diagnostic in analysis.result.diagnostics {
            byFile[diagnostic.file.path, default: []].append(LSPServer.diagnostic(diagnostic))
        }
        for path in published.keys where byFile[path] == nil { byFile[path] = [] }
        var messages: [Data] = []
        for (path, diagnostics) in byFile.sorted(by: { $0.key < $1.key }) {
            let body = JSON.data(diagnostics)
            if published[path] == body { continue }
            published[path] = diagnostics.isEmpty && analysis.file(path) == nil ? nil : body
            messages.append(
                notification(
                    "textDocument/publishDiagnostics",
                    ["uri": LSPWorkspace.uri(of: path), "diagnostics": diagnostics] as JSONObject))
        }
        return messages
    }

    /// A diagnostic as the protocol has it: the same message, id and range as `rulec check`,
    /// its notes as related locations (or, without a place, after the message).
    static func diagnostic(_ diagnostic: Diagnostic) -> JSONObject {
        var message = diagnostic.message
        var related: [JSONObject] = []
        for note in diagnostic.notes {
            if let span = note.span {
                related.append([
                    "location": [
                        "uri": LSPWorkspace.uri(of: span.file.path),
                        "range": LSPPosition.range(in: span.file, span.range),
                    ] as JSONObject,
                    "message": note.message,
                ])
            } else {
                message += "\nnote: " + note.message
            }
        }
        var object: JSONObject = [
            "range": LSPPosition.range(in: diagnostic.file, diagnostic.range),
            "severity": diagnostic.severity == .error ? 1 : diagnostic.severity == .warning ? 2 : 3,
            "code": diagnostic.id.rawValue,
            "source": "rulec",
            "message": message,
        ]
        if !related.isEmpty { object["relatedInformation"] = related }
        return object
    }

    // MARK: - Messages

    /// The error answering a frame that carried no message (a bad header).
    public static func parseError(_ reason: String) -> Data {
        error(id: NSNull(), ErrorCode.parseError, reason)
    }

    private func result(id: Any, _ value: Any) -> Data {
        JSON.data(["jsonrpc": "2.0", "id": id, "result": value] as JSONObject)
    }

    private static func error(id: Any, _ code: Int, _ message: String) -> Data {
        JSON.data(
            ["jsonrpc": "2.0", "id": id, "error": ["code": code, "message": message] as JSONObject] as JSONObject)
    }

    private func notification(_ method: String, _ params: JSONObject) -> Data {
        JSON.data(["jsonrpc": "2.0", "method": method, "params": params] as JSONObject)
    }
}
