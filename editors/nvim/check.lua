-- The headless Neovim check of `rulec lsp` (.ci/run), run as a user runs Neovim: filetype
-- detection on, and editors/nvim/rules.lua (the README's lines) as the user's configuration:
--   XDG_CONFIG_HOME=DIR (DIR/nvim/plugin/rules.lua) RULEC=.build/debug/rulec \
--     nvim --headless -c "luafile editors/nvim/check.lua"
-- It opens a file with a mistake after non-ASCII text, checks that the buffer's filetype is
-- "rules" (Neovim's runtime says "hog") with rulec attached, waits for the diagnostic, checks its
-- line, column and message, asks for a hover and a formatting, and quits with status 1 at the
-- first wrong answer.
local function fail(message)
  io.stderr:write("nvim check: " .. message .. "\n")
  vim.cmd("cquit 1")
end

local function run()
  if vim.g.did_load_filetypes == nil then return fail("filetype detection is off (run without -u NONE)") end
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local path = dir .. "/app.rules"
  local lines = {
    'event launch, "é"',
    'scenario Ask < on "é", lanch; min_events 5; since_first 7d; max_exec 4; between 2d >',
  }
  vim.fn.writefile(lines, path)
  vim.cmd("cd " .. dir)
  vim.cmd("edit " .. path)
  if vim.bo.filetype ~= "rules" then return fail("filetype is '" .. vim.bo.filetype .. "', expected 'rules'") end
  local attached = vim.wait(20000, function() return #vim.lsp.buf_get_clients(0) == 1 end, 50)
  if not attached then return fail("rulec is not attached to the buffer within 20 s") end

  -- The diagnostic: line 2 (0-based 1), on 'lanch'. Neovim gives byte columns: 24 here,
  -- where the server's 23 UTF-16 units are (é is one unit, two bytes).
  local ok = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
  if not ok then return fail("no diagnostic within 20 s") end
  local diagnostic = vim.diagnostic.get(0)[1]
  if diagnostic.lnum ~= 1 or diagnostic.col ~= 24 or diagnostic.end_col ~= 29 then
    return fail(string.format("diagnostic at %d:%d-%d, expected 1:24-29", diagnostic.lnum, diagnostic.col, diagnostic.end_col))
  end
  if not diagnostic.message:find("unknown event 'lanch'; did you mean 'launch'?", 1, true) then
    return fail("diagnostic message: " .. diagnostic.message)
  end

  -- Hover on the scenario's name.
  local params = { textDocument = { uri = vim.uri_from_fname(path) }, position = { line = 1, character = 10 } }
  local answers = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 10000) or {}
  local hover = ""
  for _, answer in pairs(answers) do
    if answer.result and answer.result.contents then hover = answer.result.contents.value or "" end
  end
  if not hover:find("at least 5 events", 1, true) or not hover:find("2d apart", 1, true) then
    return fail("hover: " .. hover)
  end

  -- Formatting gives rulec fmt's layout once the mistake is fixed.
  vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'scenario  Ask<on "é",launch;min_events 5;since_first 7d;max_exec 4;between 2d>' })
  local formatting = vim.lsp.buf_request_sync(0, "textDocument/formatting",
    { textDocument = { uri = vim.uri_from_fname(path) }, options = { tabSize = 2, insertSpaces = true } }, 10000) or {}
  local edits
  for _, answer in pairs(formatting) do edits = answer.result end
  if type(edits) ~= "table" or #edits == 0 then return fail("no formatting edit") end
  vim.lsp.util.apply_text_edits(edits, 0, "utf-16")
  vim.cmd("write")
  local expected = vim.fn.system({ vim.env.RULEC or "rulec", "fmt", path })
  local got = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n"
  if got ~= expected then return fail("formatted:\n" .. got .. "expected:\n" .. expected) end

  vim.fn.delete(dir, "rf")

  -- Opened from a parent folder holding two projects (each with a .git), each declaring 'Ask':
  -- each file has a server of its own rooted at its project, so neither reports 'Ask' twice.
  local parent = vim.fn.tempname()
  for _, project in ipairs({ "one", "two" }) do
    vim.fn.mkdir(parent .. "/" .. project .. "/.git", "p")
    vim.fn.writefile({ "event launch", "scenario Ask < on lanch; min_events 1 >" }, parent .. "/" .. project .. "/app.rules")
  end
  vim.cmd("cd " .. parent)
  local buffers = {}
  for _, project in ipairs({ "one", "two" }) do
    vim.cmd("edit " .. project .. "/app.rules")
    buffers[project] = vim.api.nvim_get_current_buf()
    local ready = vim.wait(20000, function() return #vim.diagnostic.get(buffers[project]) > 0 end, 50)
    if not ready then return fail("no diagnostic in " .. project .. "/app.rules within 20 s") end
  end
  vim.wait(500)
  for project, buffer in pairs(buffers) do
    for _, d in ipairs(vim.diagnostic.get(buffer)) do
      if not d.message:find("unknown event 'lanch'", 1, true) then
        return fail(project .. "/app.rules: " .. d.message)
      end
    end
  end
  local one, two = vim.lsp.buf_get_clients(buffers.one), vim.lsp.buf_get_clients(buffers.two)
  local first, second
  for id in pairs(one) do first = id end
  for id in pairs(two) do second = id end
  if first == nil or first == second then return fail("the two projects share one server") end
  vim.fn.delete(parent, "rf")
  io.stdout:write("nvim check: diagnostic, hover, formatting and a server per project as expected\n")
  vim.cmd("qall!")
end

local ok, message = pcall(run)
if not ok then fail(tostring(message)) end
