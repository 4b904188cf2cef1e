-- Driven by tests/nvim.rs: opens a file in headless Neovim with the patchwise plugin (which
-- starts the server through vim.lsp.start), edits it in many ways, and writes a JSON report
-- comparing the buffer's text with the server's `patchwise/viewFileText`.
local out = assert(os.getenv('PATCHWISE_OUT'))
local report = { ok = false, steps = {} }

local function write_report()
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(report))
  f:close()
end

local function buffer_text(bufnr)
  if vim.lsp._buf_get_full_text then
    return vim.lsp._buf_get_full_text(bufnr)
  end
  local eol = vim.bo[bufnr].fileformat == 'dos' and '\r\n' or '\n'
  local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), eol)
  if vim.bo[bufnr].eol then
    text = text .. eol
  end
  return text
end

local ok, err = pcall(function()
  vim.opt.rtp:prepend(assert(os.getenv('PATCHWISE_PLUGIN')))
  local extra = nil
  if os.getenv('PATCHWISE_ENCODING') then
    extra = { general = { positionEncodings = { os.getenv('PATCHWISE_ENCODING') } } }
  end
  local patchwise = require('patchwise')
  patchwise.setup({ cmd = { assert(os.getenv('PATCHWISE_BIN')), 'serve' }, capabilities = extra })
  vim.cmd.edit(assert(os.getenv('PATCHWISE_FILE')))
  local bufnr = vim.api.nvim_get_current_buf()
  local client
  local attached = vim.wait(30000, function()
    client = patchwise.client(bufnr)
    return client ~= nil and client.initialized
  end, 20)
  assert(attached, 'patchwise did not attach to the buffer')
  report.encoding = client.offset_encoding

  local function check(step)
    local server, e = patchwise.view_file_text(bufnr, 20000)
    local mine = buffer_text(bufnr)
    table.insert(report.steps, { step = step, equal = server == mine, server = server, buffer = mine, error = e })
  end

  check('open')
  vim.api.nvim_buf_set_text(bufnr, 0, 0, 0, 0, { '// 😀 héllo 日本 e\u{301} ' })
  vim.cmd('normal! Goappended 🎉 line')
  vim.cmd('normal! ggjdd')
  check('insert and delete')
  vim.api.nvim_buf_set_lines(bufnr, 1, 2, false, { 'replaced', '\tTWO 👨‍👩‍👧 lines' })
  vim.cmd('silent! %s/fn/function/g')
  vim.cmd('normal! ggJ')
  check('replace, substitute, join')
  for i = 1, 200 do
    local line = (i * 7) % vim.api.nvim_buf_line_count(bufnr)
    local len = #vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1]
    -- A byte column must start a character: move back to the start of the one it hits.
    local text = vim.api.nvim_buf_get_lines(bufnr, line, line + 1, false)[1]
    local col = (i * 13) % (len + 1)
    if col < len then
      col = col + vim.str_utf_start(text, col + 1)
    end
    local pieces = { 'x', 'ü', '😀', '', '日' }
    vim.api.nvim_buf_set_text(bufnr, line, col, line, col, { pieces[(i % #pieces) + 1] })
  end
  check('200 rapid insertions')
  vim.cmd('normal! ggdG')
  check('delete everything')
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'fresh', 'content 😀' })
  check('set all lines')
  report.ok = true
end)
if not ok then
  report.error = tostring(err)
end
write_report()
vim.cmd('qa!')
