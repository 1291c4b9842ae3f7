-- "set filetype", not "setfiletype": Neovim 0.7 detects *.rules as "hog" first.
vim.cmd([[autocmd BufRead,BufNewFile *.rules set filetype=rules]])
vim.api.nvim_create_autocmd("FileType", { pattern = "rules", callback = function(args)
  vim.g.rulec_client = vim.g.rulec_client or vim.lsp.start_client({
    name = "rulec", cmd = { vim.env.RULEC or "rulec", "lsp" }, root_dir = vim.fn.getcwd() })
  vim.lsp.buf_attach_client(args.buf, vim.g.rulec_client)
end })
