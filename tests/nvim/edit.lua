-- Driven by tests/nvim.rs: in headless Neovim with the patchwise plugin, request code actions on
-- a selection, run "Edit selection…" with an instruction (answered through vim.ui.input),
-- accept the proposal through its code lens, and report the buffer's text.
local out = assert(os.getenv('PATCHWISE_OUT'))
local report = { ok = false }

local ok, err = pcall(function()
  vim.opt.rtp:prepend(assert(os.getenv('PATCHWISE_PLUGIN')))
  local patchwise = require('patchwise')
  patchwise.setup({
    cmd = { assert(os.getenv('PATCHWISE_BIN')), 'serve' },
    init_options = vim.json.decode(assert(os.getenv('PATCHWISE_INIT'))),
  })
  vim.cmd.edit(assert(os.getenv('PATCHWISE_FILE')))
  local bufnr = vim.api.nvim_get_current_buf()
  local client
  assert(vim.wait(30000, function()
    client = patchwise.client(bufnr)
    return client ~= nil and client.initialized
  end, 20), 'patchwise did not attach')

  -- The user's answer to the instruction prompt.
  vim.ui.input = function(_, on_confirm)
    on_confirm(os.getenv('PATCHWISE_INSTRUCTION'))
  end
  local notes = {}
  vim.notify = function(msg)
    table.insert(notes, msg)
  end

  -- Select lines 13-16 and ask for code actions there.
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = 12, character = 0 }, ['end'] = { line = 15, character = 5 } },
    context = { diagnostics = {} },
  }
  local response = assert(client:request_sync('textDocument/codeAction', params, 10000, bufnr))
  assert(not response.err, vim.inspect(response.err))
  local edit_action
  report.actions = {}
  for _, action in ipairs(response.result or {}) do
    table.insert(report.actions, action.title)
    if action.title == 'Edit selection…' then
      edit_action = action
    end
  end
  assert(edit_action, 'no "Edit selection…" action: ' .. vim.inspect(report.actions))
  client:exec_cmd(edit_action.command, { bufnr = bufnr })
  assert(vim.wait(60000, function()
    for _, n in ipairs(notes) do
      if n:find(' ready', 1, true) or n:find('no proposal', 1, true) then
        return true
      end
    end
    return false
  end, 20), 'the edit did not finish')
  report.notes = notes

  -- The pending proposal's code lenses; accept through the "Accept" lens.
  local lenses = assert(client:request_sync('textDocument/codeLens',
    { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }, 10000, bufnr))
  report.lenses = {}
  local accept
  for _, lens in ipairs(lenses.result or {}) do
    table.insert(report.lenses, lens.command.title)
    if lens.command.title == 'Accept' then
      accept = lens.command
    end
  end
  assert(accept, 'no Accept lens; notes: ' .. vim.inspect(notes))
  local before = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
  client:exec_cmd(accept, { bufnr = bufnr })
  assert(vim.wait(30000, function()
    return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n') ~= before
  end, 20), 'the proposal was not applied to the buffer')
  report.buffer = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n') .. '\n'
  report.server = patchwise.view_file_text(bufnr, 10000)
  report.modified = vim.bo[bufnr].modified
  report.ok = true
end)
if not ok then
  report.error = tostring(err)
end
local f = assert(io.open(out, 'w'))
f:write(vim.json.encode(report))
f:close()
vim.cmd('qa!')
