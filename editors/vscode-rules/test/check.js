// Runs extension.js under Node with a small stub of the `vscode` API and a real `rulec lsp`
// (RulecTests.VSCodeExtensionTests, in CI): the extension starts the server, publishes the
// diagnostics of a broken file, and answers hover, completion and formatting through the
// providers it registered.   RULEC=.build/debug/rulec node editors/vscode-rules/test/check.js
"use strict";
const Module = require("module");
const fs = require("fs");
const os = require("os");
const path = require("path");
const url = require("url");
const { execFileSync } = require("child_process");

function fail(message) {
  process.stderr.write("vscode check: " + message + "\n");
  process.exit(1);
}
setTimeout(() => fail("no answer within 60 s"), 60000).unref();

// --- The stub: only what extension.js touches, recording what it registers. ---
class Uri {
  constructor(href) { this.href = href; this.fsPath = href.startsWith("file:") ? url.fileURLToPath(href) : href; }
  static parse(text) { return new Uri(text); }
  static file(p) { return new Uri(url.pathToFileURL(p).href); }
  toString() { return this.href; }
}
class Position { constructor(line, character) { this.line = line; this.character = character; } }
class Range {
  constructor(a, b, c, d) { this.start = new Position(a, b); this.end = new Position(c, d); }
}
const registered = {};
const collections = [];
const listeners = {};
const disposable = { dispose() {} };
const register = (kind) => (selector, provider) => {
  if (!selector || selector.language !== "rules") fail(kind + " registered for " + JSON.stringify(selector));
  registered[kind] = provider;
  return disposable;
};
const listen = (event) => (callback) => { listeners[event] = callback; return disposable; };
const shown = [];
const vscode = {
  Uri, Position, Range,
  window: { showErrorMessage: (message) => { shown.push(message); return Promise.resolve(undefined); } },
  Location: class { constructor(uri, range) { this.uri = uri; this.range = range; } },
  TextEdit: class { constructor(range, newText) { this.range = range; this.newText = newText; } },
  Diagnostic: class { constructor(range, message, severity) { Object.assign(this, { range, message, severity }); } },
  DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
  DiagnosticRelatedInformation: class { constructor(location, message) { Object.assign(this, { location, message }); } },
  Hover: class { constructor(contents, range) { this.contents = contents; this.range = range; } },
  MarkdownString: class { constructor(value) { this.value = value; } },
  CompletionItem: class { constructor(label, kind) { this.label = label; this.kind = kind; } },
  SnippetString: class { constructor(value) { this.value = value; } },
  WorkspaceEdit: class {
    constructor() { this.entries = new Map(); }
    set(uri, edits) { this.entries.set(uri.toString(), edits); }
  },
  CodeAction: class { constructor(title, kind) { this.title = title; this.kind = kind; } },
  CodeActionKind: { QuickFix: "quickfix" },
  workspace: {
    getConfiguration: (section) => ({ get: (key) => (section === "rules" && key === "rulecPath" ? rulecSetting : undefined) }),
    workspaceFolders: [],
    textDocuments: [],
    onDidOpenTextDocument: listen("open"),
    onDidChangeTextDocument: listen("change"),
    onDidSaveTextDocument: listen("save"),
    onDidCloseTextDocument: listen("close"),
  },
  languages: {
    createDiagnosticCollection: (name) => {
      const collection = { name, entries: new Map(), set(uri, list) { this.entries.set(uri.toString(), list); }, dispose() {} };
      collections.push(collection);
      return collection;
    },
    registerHoverProvider: register("hover"),
    registerCompletionItemProvider: register("completion"),
    registerDefinitionProvider: register("definition"),
    registerReferenceProvider: register("references"),
    registerRenameProvider: register("rename"),
    registerDocumentFormattingEditProvider: register("formatting"),
    registerCodeActionsProvider: register("codeActions"),
  },
};
const load = Module._load;
Module._load = function (request, parent, isMain) {
  return request === "vscode" ? vscode : load.call(this, request, parent, isMain);
};

// --- A workspace with one file, open in the editor. ---
if (!process.env.RULEC) fail("set RULEC to the rulec binary");
// `check.js missing`: the setting names a program that is not there, relative to the workspace.
const missing = process.argv[2] === "missing";
const rulecSetting = missing ? "./no-such-rulec" : process.env.RULEC;
const folder = fs.mkdtempSync(path.join(os.tmpdir(), "rulec-vscode-"));
process.on("exit", () => fs.rmSync(folder, { recursive: true, force: true }));
const file = path.join(folder, "app.rules");
const broken = 'event launch, "é"\nscenario Ask < on "é", lanch; min_events 5; since_first 7d; max_exec 4; between 2d >\n';
fs.writeFileSync(file, broken);
const document = {
  uri: Uri.file(file), languageId: "rules", version: 1, text: broken,
  getText() { return this.text; },
};
vscode.workspace.workspaceFolders = [{ uri: Uri.file(folder) }];
vscode.workspace.textDocuments = [document];

const subscriptions = [];
require(path.join(__dirname, "..", "extension.js")).activate({ subscriptions });

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(what, test) {
  for (let k = 0; k < 400; k++) {
    const value = test();
    if (value) return value;
    await wait(50);
  }
  fail("no " + what + " within 20 s");
}
function apply(text, edits) {
  const lines = text.split("\n");
  const offset = (p) => lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  const sorted = edits.slice().sort((a, b) => offset(b.range.start) - offset(a.range.start));
  for (const e of sorted) text = text.slice(0, offset(e.range.start)) + e.newText + text.slice(offset(e.range.end));
  return text;
}

async function checkMissing() {
  // The user is told why, naming the path as resolved against the workspace folder, and the
  // providers answer nothing instead of waiting for a server that never came.
  const message = await waitFor("error message", () => shown[0]);
  const expected = "Rules: cannot start '" + path.join(folder, "no-such-rulec") + " lsp': no such program.";
  if (!message.startsWith(expected) || !message.includes("rules.rulecPath")) fail("message: " + message);
  const hover = await registered.hover.provideHover(document, new Position(1, 10));
  if (hover !== undefined && hover !== null) fail("hover without a server: " + JSON.stringify(hover));
  process.stdout.write("vscode check: a missing rulec is reported\n");
}

(async () => {
  if (missing) return checkMissing();
  for (const kind of ["hover", "completion", "definition", "references", "rename", "formatting", "codeActions"]) {
    if (!registered[kind]) fail("no " + kind + " provider registered");
  }
  // The diagnostic of the misspelt event: line 1, UTF-16 columns 23-28 ('é' is one unit).
  const list = await waitFor("diagnostics", () => collections.length && collections[0].entries.get(document.uri.toString()));
  if (list.length !== 1) fail("expected 1 diagnostic, got " + JSON.stringify(list));
  const d = list[0];
  if (d.range.start.line !== 1 || d.range.start.character !== 23 || d.range.end.character !== 28) {
    fail("diagnostic at " + JSON.stringify(d.range));
  }
  if (!d.message.includes("unknown event 'lanch'; did you mean 'launch'?") || d.severity !== vscode.DiagnosticSeverity.Error) {
    fail("diagnostic: " + d.message + " severity " + d.severity);
  }
  // Hover on the scenario's name.
  const hover = await registered.hover.provideHover(document, new Position(1, 10));
  if (!hover || !hover.contents.value.includes("at least 5 events") || !hover.contents.value.includes("2d apart")) {
    fail("hover: " + JSON.stringify(hover));
  }
  // Completion in a body: the clause keywords.
  document.text = "scenario B <  >\n";
  document.version = 2;
  listeners.change({ document });
  const items = await registered.completion.provideCompletionItems(document, new Position(0, 12));
  const labels = items.map((i) => i.label);
  if (!labels.includes("min_events") || !labels.includes("between")) fail("completion: " + labels.join(", "));
  // Formatting gives rulec fmt's layout.
  const messy = 'event launch, "é"\nscenario  Ask<on "é",launch;min_events 5;since_first 7d;max_exec 4;between 2d>\n';
  document.text = messy;
  document.version = 3;
  listeners.change({ document });
  const edits = await registered.formatting.provideDocumentFormattingEdits(document);
  fs.writeFileSync(file, messy);
  const expected = execFileSync(process.env.RULEC, ["fmt", file]).toString("utf8");
  const got = apply(messy, edits);
  if (got !== expected) fail("formatted:\n" + got + "expected:\n" + expected);
  // Closing: the extension shuts the server down.
  for (const s of subscriptions) s.dispose();
  process.stdout.write("vscode check: diagnostics, hover, completion and formatting as expected\n");
})().catch((error) => fail(String(error && error.stack || error)));
