-- "set filetype", not "setfiletype": Neovim 0.7 detects *.rules as "hog" first.
vim.cmd([[autocmd BufRead,BufNewFile *.rules set filetype=rules]])
-- One server per project: the nearest folder above the file with a .git or a Package.swift.
local function root(file)
  local dir = vim.fn.fnamemodify(file, ":p:h")
  local git = vim.fn.finddir(".git", dir .. ";")
  if git ~= "" then return vim.fn.fnamemodify(git, ":p:h:h") end
  local package = vim.fn.findfile("Package.swift", dir .. ";")
  return package ~= "" and vim.fn.fnamemodify(package, ":p:h") or dir
end
local clients = {}
vim.api.nvim_create_autocmd("FileType", { pattern = "rules", callback = function(args)
  local dir = root(vim.api.nvim_buf_get_name(args.buf))
  clients[dir] = clients[dir] or vim.lsp.start_client({
    name = "rulec", cmd = { vim.env.RULEC or "rulec", "lsp" }, root_dir = dir })
  vim.lsp.buf_attach_client(args.buf, clients[dir])
end })
