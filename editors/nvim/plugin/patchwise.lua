-- :PatchwiseViewFileText opens the server's copy of the current buffer in a scratch buffer.
vim.api.nvim_create_user_command('PatchwiseViewFileText', function()
  local text, err = require('patchwise').view_file_text()
  if not text then
    vim.notify('patchwise: ' .. tostring(err), vim.log.levels.ERROR)
    return
  end
  vim.cmd('new')
  vim.bo.buftype = 'nofile'
  vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(text, '\n', { plain = true }))
end, {})
