// Starts `rulec lsp` for .rules files and connects VS Code to it: a small Language Server
// Protocol client written against VS Code's API alone (no npm packages). The setting
// `rules.rulecPath` names the rulec binary (default: `rulec` on PATH).
const vscode = require("vscode");
const { spawn } = require("child_process");
const os = require("os");
const nodePath = require("path");

// The setting as VS Code users write paths: `~/` is the home folder, a relative path with a
// slash is the workspace folder's, a bare name is looked up on PATH.
function resolveRulec(setting, folder) {
  if (!setting) return "rulec";
  if (setting === "~" || setting.startsWith("~/")) return nodePath.join(os.homedir(), setting.slice(1));
  if (!nodePath.isAbsolute(setting) && setting.includes("/") && folder) return nodePath.join(folder, setting);
  return setting;
}

function activate(context) {
  const folder = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
  const cwd = folder ? folder.uri.fsPath : undefined;
  const path = resolveRulec(vscode.workspace.getConfiguration("rules").get("rulecPath"), cwd);
  const server = spawn(path, ["lsp"], { cwd });
  // A server that cannot start or stops says so, instead of failing silently (an unhandled
  // 'error' event: `spawn rulec ENOENT`).
  const pending = new Map();
  let stopping = false;
  let gone = false;
  const report = (why) => {
    // Every request waiting for an answer gets none (a provider gives nothing, never hangs).
    gone = true;
    for (const resolve of pending.values()) resolve(null);
    pending.clear();
    vscode.window.showErrorMessage(`Rules: ${why}`);
  };
  server.on("error", (error) => {
    report(error.code === "ENOENT"
      ? `cannot start '${path} lsp': no such program. Install rulec (see the package's README) or set ` +
        "'rules.rulecPath' to its path."
      : `cannot start '${path} lsp': ${error.message}`);
  });
  server.on("exit", (code, signal) => {
    if (!stopping && code !== null) report(`'${path} lsp' stopped (exit status ${code}); reload the window to restart it.`);
    else if (!stopping && signal) report(`'${path} lsp' stopped (${signal}); reload the window to restart it.`);
  });
  server.stdin.on("error", () => {});  // writes after it stopped; reported above
  const diagnostics = vscode.languages.createDiagnosticCollection("rulec");
  let nextId = 1;
  let buffer = Buffer.alloc(0);

  function send(message) {
    const body = Buffer.from(JSON.stringify(Object.assign({ jsonrpc: "2.0" }, message)), "utf8");
    server.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    server.stdin.write(body);
  }
  function request(method, params) {
    if (gone) return Promise.resolve(null);
    const id = nextId++;
    send({ id, method, params });
    return new Promise((resolve) => pending.set(id, resolve));
  }
  server.stdout.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const match = /Content-Length: *(\d+)/i.exec(buffer.slice(0, end).toString("utf8"));
      const length = match ? Number(match[1]) : 0;
      if (buffer.length < end + 4 + length) return;
      const message = JSON.parse(buffer.slice(end + 4, end + 4 + length).toString("utf8"));
      buffer = buffer.slice(end + 4 + length);
      if (message.id !== undefined && pending.has(message.id)) {
        pending.get(message.id)(message.error ? null : message.result);
        pending.delete(message.id);
      } else if (message.method === "textDocument/publishDiagnostics") {
        diagnostics.set(vscode.Uri.parse(message.params.uri), message.params.diagnostics.map(toDiagnostic));
      }
    }
  });

  const range = (r) => new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
  const location = (l) => new vscode.Location(vscode.Uri.parse(l.uri), range(l.range));
  const edit = (e) => new vscode.TextEdit(range(e.range), e.newText);
  function toDiagnostic(d) {
    // VS Code's Error is 0: look the severity up, never `|| default` (0 is falsy).
    const severities = { 1: vscode.DiagnosticSeverity.Error, 2: vscode.DiagnosticSeverity.Warning };
    const severity = d.severity in severities ? severities[d.severity] : vscode.DiagnosticSeverity.Information;
    const result = new vscode.Diagnostic(range(d.range), d.message, severity);
    result.code = d.code;
    result.source = d.source;
    result.relatedInformation = (d.relatedInformation || []).map(
      (r) => new vscode.DiagnosticRelatedInformation(location(r.location), r.message));
    return result;
  }
  function workspaceEdit(changes) {
    const result = new vscode.WorkspaceEdit();
    for (const uri of Object.keys(changes || {})) result.set(vscode.Uri.parse(uri), changes[uri].map(edit));
    return result;
  }
  const at = (document, position) => ({
    textDocument: { uri: document.uri.toString() },
    position: { line: position.line, character: position.character },
  });
  const rules = { language: "rules" };

  send({ id: nextId++, method: "initialize", params: { rootUri: folder ? folder.uri.toString() : null, capabilities: {} } });
  send({ method: "initialized", params: {} });
  const sync = (method) => (document) => {
    if (document.languageId !== "rules") return;
    const params = { textDocument: { uri: document.uri.toString(), languageId: "rules", version: document.version } };
    if (method !== "textDocument/didClose") params.textDocument.text = document.getText();
    if (method === "textDocument/didChange") params.contentChanges = [{ text: document.getText() }];
    send({ method, params });
  };
  vscode.workspace.textDocuments.forEach(sync("textDocument/didOpen"));
  context.subscriptions.push(
    diagnostics,
    vscode.workspace.onDidOpenTextDocument(sync("textDocument/didOpen")),
    vscode.workspace.onDidChangeTextDocument((e) => sync("textDocument/didChange")(e.document)),
    vscode.workspace.onDidSaveTextDocument(sync("textDocument/didSave")),
    vscode.workspace.onDidCloseTextDocument(sync("textDocument/didClose")),
    vscode.languages.registerHoverProvider(rules, {
      provideHover: async (d, p) => {
        const h = await request("textDocument/hover", at(d, p));
        return h ? new vscode.Hover(new vscode.MarkdownString(h.contents.value), h.range && range(h.range)) : null;
      },
    }),
    vscode.languages.registerCompletionItemProvider(rules, {
      provideCompletionItems: async (d, p) => {
        const list = await request("textDocument/completion", at(d, p));
        return ((list && list.items) || []).map((i) => {
          const item = new vscode.CompletionItem(i.label, (i.kind || 1) - 1);
          item.detail = i.detail;
          if (i.insertText) item.insertText = i.insertTextFormat === 2 ? new vscode.SnippetString(i.insertText) : i.insertText;
          if (i.documentation) item.documentation = new vscode.MarkdownString(i.documentation.value);
          return item;
        });
      },
    }, " ", "(", ","),
    vscode.languages.registerDefinitionProvider(rules, {
      provideDefinition: async (d, p) => {
        const l = await request("textDocument/definition", at(d, p));
        return l ? location(l) : null;
      },
    }),
    vscode.languages.registerReferenceProvider(rules, {
      provideReferences: async (d, p, c) => ((await request("textDocument/references",
        Object.assign(at(d, p), { context: { includeDeclaration: c.includeDeclaration } }))) || []).map(location),
    }),
    vscode.languages.registerRenameProvider(rules, {
      provideRenameEdits: async (d, p, newName) => {
        const result = await request("textDocument/rename", Object.assign(at(d, p), { newName }));
        if (!result) throw new Error("rulec lsp refused the rename (a name that collides, or no name here)");
        return workspaceEdit(result.changes);
      },
    }),
    vscode.languages.registerDocumentFormattingEditProvider(rules, {
      provideDocumentFormattingEdits: async (d) =>
        ((await request("textDocument/formatting", { textDocument: { uri: d.uri.toString() }, options: {} })) || []).map(edit),
    }),
    vscode.languages.registerCodeActionsProvider(rules, {
      provideCodeActions: async (d, r) => ((await request("textDocument/codeAction", {
        textDocument: { uri: d.uri.toString() },
        range: { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } },
        context: { diagnostics: [] },
      })) || []).map((a) => {
        const action = new vscode.CodeAction(a.title, vscode.CodeActionKind.QuickFix);
        action.edit = workspaceEdit(a.edit.changes);
        action.isPreferred = a.isPreferred;
        return action;
      }),
    }),
    { dispose: () => { stopping = true; send({ id: nextId++, method: "shutdown" }); send({ method: "exit" }); } },
  );
}

module.exports = { activate, deactivate() {} };
