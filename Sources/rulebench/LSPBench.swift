import Foundation
import RuleLSP
import RuleLang

// The goals of issue 22: rulec lsp's answers, timed in process (the server without its pipes).

/// A server over the files of a folder, driven by messages as an editor sends them.
private final class Session {
    let server = LSPServer(version: "bench")
    var id = 0

    init(folder: URL) {
        send("initialize", ["rootUri": folder.absoluteString, "capabilities": [:] as [String: Any]])
        send("initialized", [:], notification: true)
    }

    @discardableResult
    func send(_ method: String, _ params: [String: Any], notification: Bool = false) -> [Data] {
        var message: [String: Any] = ["jsonrpc": "2.0", "method": method, "params": params]
        if !notification {
            id += 1
            message["id"] = id
        }
        return server.handle(try! JSONSerialization.data(withJSONObject: message))
    }
}

/// The position of `needle`'s first character in `text` (an ASCII line).
private func position(of needle: String, in text: String) -> [String: Int] {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    for (number, line) in lines.enumerated() {
        if let range = line.range(of: needle) {
            return ["line": number, "character": line.distance(from: line.startIndex, to: range.lowerBound)]
        }
    }
    return ["line": 0, "character": 0]
}

func lspBenchmarks(_ goals: inout [Goal]) throws {
    // A one-character edit in the 10,000-scenario workspace (the front end's two files), as an
    // incremental change, until its diagnostics come back; beside a check of the same files.
    let folder = temporaryPath("lsp-workspace")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let sources = frontEndSources()
    for source in sources {
        try Data(source.bytes).write(to: folder.appendingPathComponent(source.path))
    }
    let big = Session(folder: folder)
    let uri = folder.appendingPathComponent(sources[0].path).absoluteString
    let text = String(decoding: sources[0].bytes, as: UTF8.self)
    big.send("textDocument/didOpen", ["textDocument": ["uri": uri, "text": text]], notification: true)
    // 'min_events 0' of the first scenario becomes 'min_events x' (an error), and back: each
    // edit changes the diagnostics, so each one is published.
    let at = position(of: "min_events 0", in: text)
    var broken = false
    var published = 0
    func edit(_ session: Session, _ uri: String, _ place: [String: Int]) {
        broken.toggle()
        let start = ["line": place["line"]!, "character": place["character"]! + 11]
        let end = ["line": place["line"]!, "character": place["character"]! + 12]
        published +=
            session.send(
                "textDocument/didChange",
                [
                    "textDocument": ["uri": uri],
                    "contentChanges": [["range": ["start": start, "end": end], "text": broken ? "x" : "0"]],
                ] as [String: Any], notification: true
            ).count
    }
    let rounds = interleaved(
        rounds: 11, batch: 1,
        [
            { edit(big, uri, at) },
            { _ = RuleCompiler.check(sources) },
        ])
    line("lsp: edit to diagnostics, 10,000 scenarios", rounds.samples[0].summary + "; \(published) published")
    line("  rulec check of the same files", rounds.samples[1].summary)
    let editRatio = rounds.ratio(0, to: 1)
    line("  edit / check, per round", editRatio.ratioSummary)
    goals.append(Goal(key: "lsp_edit_vs_check", value: editRatio.median, unit: "x", limit: 1.5, atMost: true))

    // examples/app.rules: an edit, a completion and a hover.
    let app = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/app.rules")
    let appFolder = temporaryPath("lsp-app")
    try? FileManager.default.createDirectory(at: appFolder, withIntermediateDirectories: true)
    let appText = try String(contentsOf: app, encoding: .utf8)
    let appURI = appFolder.appendingPathComponent("app.rules").absoluteString
    try appText.write(to: appFolder.appendingPathComponent("app.rules"), atomically: true, encoding: .utf8)
    let small = Session(folder: appFolder)
    small.send("textDocument/didOpen", ["textDocument": ["uri": appURI, "text": appText]], notification: true)
    let appAt = position(of: "min_events 5", in: appText)
    published = 0
    let edits = measure(rounds: 31, batch: 1) { edit(small, appURI, appAt) }
    line("lsp: edit to diagnostics, examples/app.rules", edits.summary + "; \(published) published")
    goals.append(Goal(key: "lsp_edit_small_ms", value: edits.median / 1e6, unit: "ms", limit: 5, atMost: true))
    let on = position(of: "on launch", in: appText)
    let completions = measure(rounds: 31, batch: 10) {
        small.send(
            "textDocument/completion",
            ["textDocument": ["uri": appURI], "position": ["line": on["line"]!, "character": on["character"]! + 3]])
    }
    line("lsp: completion in 'on', examples/app.rules", completions.summary)
    goals.append(Goal(key: "lsp_completion_ms", value: completions.median / 1e6, unit: "ms", limit: 2, atMost: true))
    let name = position(of: "Upgrade", in: appText)
    let hovers = measure(rounds: 31, batch: 10) {
        small.send("textDocument/hover", ["textDocument": ["uri": appURI], "position": name])
    }
    line("lsp: hover on a scenario, examples/app.rules", hovers.summary)
    goals.append(Goal(key: "lsp_hover_ms", value: hovers.median / 1e6, unit: "ms", limit: 2, atMost: true))

    // References and rename at scale: one name used 300,000 times on one line of a file of
    // about 1 MiB (the server's limit), answers and their JSON included.
    let scaleFolder = temporaryPath("lsp-scale")
    try? FileManager.default.createDirectory(at: scaleFolder, withIntermediateDirectories: true)
    let uses = Array(repeating: "x", count: 300_000).joined(separator: ", ")
    var scaleText = "event x\nscenario A < on \(uses); min_events 1 >\n"
    scaleText += "# " + String(repeating: "-", count: max(0, 1_000_000 - scaleText.utf8.count)) + "\n"
    let scaleURI = scaleFolder.appendingPathComponent("scale.rules").absoluteString
    try scaleText.write(to: scaleFolder.appendingPathComponent("scale.rules"), atomically: true, encoding: .utf8)
    let scale = Session(folder: scaleFolder)
    scale.send("textDocument/didOpen", ["textDocument": ["uri": scaleURI, "text": scaleText]], notification: true)
    let declaration = ["line": 0, "character": 6]
    var answered = 0
    let references = measure(rounds: 5, batch: 1) {
        answered = scale.send(
            "textDocument/references",
            [
                "textDocument": ["uri": scaleURI], "position": declaration,
                "context": ["includeDeclaration": true],
            ] as [String: Any]
        ).reduce(0) { $0 + $1.count }
    }
    line("lsp: references, 300,000 uses on one line (\(scaleText.utf8.count) bytes)", references.summary)
    let renames = measure(rounds: 5, batch: 1) {
        scale.send("textDocument/rename", ["textDocument": ["uri": scaleURI], "position": declaration, "newName": "y"])
    }
    line("lsp: rename, the same (\(answered) bytes of answer)", renames.summary)
    let slowest = max(references.median, renames.median) / 1e6
    goals.append(Goal(key: "lsp_references_rename_300k_ms", value: slowest, unit: "ms", limit: 1000, atMost: true))
    try? FileManager.default.removeItem(at: scaleFolder)
}
