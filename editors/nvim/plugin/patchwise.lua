-- User commands of the patchwise plugin (lua/patchwise/init.lua documents them); they work once
-- require('patchwise').setup() has attached the server to the buffer.
if vim.g.loaded_patchwise then
  return
end
vim.g.loaded_patchwise = true

local function pw()
  return require('patchwise')
end

local command = vim.api.nvim_create_user_command

command('PatchwiseEdit', function(opts)
  local p = pw()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = p.client(bufnr)
  local range = p.line_range(bufnr, opts.line1, opts.line2, client and client.offset_encoding)
  p.ask_and_edit(bufnr, range, opts.args)
end, { range = true, nargs = '*', desc = 'patchwise: edit the selected lines with an instruction' })

command('PatchwiseDevelop', function(opts)
  pw().develop(opts.args)
end, { nargs = '*', desc = 'patchwise: develop a change (plan, steps, checks) as a proposal' })

command('PatchwiseResearch', function(opts)
  pw().research(opts.args)
end, { nargs = '*', desc = 'patchwise: deep research; opens the report' })

command('PatchwiseLibrary', function()
  pw().library()
end, { desc = 'patchwise: open earlier research' })

command('PatchwiseProposals', function()
  pw().proposals()
end, { desc = 'patchwise: pick a pending proposal and go to it' })

command('PatchwiseAccept', function(opts)
  pw().decide('accept', opts.bang)
end, { bang = true, desc = 'patchwise: accept the hunk under the cursor (! the whole proposal)' })

command('PatchwiseReject', function(opts)
  pw().decide('reject', opts.bang)
end, { bang = true, desc = 'patchwise: reject the hunk under the cursor (! the whole proposal)' })

command('PatchwiseDiff', function(opts)
  pw().diff(opts.bang)
end, { bang = true, desc = 'patchwise: diff split against the proposal (! unified diff in a float)' })

command('PatchwiseCancel', function()
  pw().cancel()
end, { desc = 'patchwise: cancel running work' })

-- :PatchwiseViewFileText opens the server's copy of the current buffer in a scratch buffer.
command('PatchwiseViewFileText', function()
  local text, err = pw().view_file_text()
  if not text then
    vim.notify('patchwise: ' .. tostring(err), vim.log.levels.ERROR)
    return
  end
  vim.cmd('new')
  vim.bo.buftype = 'nofile'
  vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(text, '\n', { plain = true }))
end, { desc = 'patchwise: show the server copy of this buffer' })
