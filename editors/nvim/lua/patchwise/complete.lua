-- Completion as you type, through LSP 3.18 `textDocument/inlineCompletion` (docs/editors.md).
--
-- Neovim 0.12 shows it itself: vim.lsp.inline_completion.enable(), and the accept key calls
-- vim.lsp.inline_completion.get(). Neovim 0.11 has no client for the request, so this module
-- sends it on every change in insert mode (the server debounces, and each request supersedes the
-- one before, whose model call stops), shows the suggestion as ghost text with an extmark (the
-- first line inline at the cursor, the rest as virtual lines) and inserts it on the accept key.

local M = {}

local ns = vim.api.nvim_create_namespace('patchwise.completion')
-- Per buffer: the request in flight { client, id } and the suggestion shown { row, col, text }.
local inflight, shown = {}, {}

local function clear(bufnr)
  vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  shown[bufnr] = nil
end

local function cancel(bufnr)
  local pending = inflight[bufnr]
  if pending then
    pcall(function()
      pending.client:cancel_request(pending.id)
    end)
    inflight[bufnr] = nil
  end
end

local function show(bufnr, row, col, text)
  clear(bufnr)
  local lines = vim.split(text, '\n', { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { lines[i], 'Comment' } }
  end
  vim.api.nvim_buf_set_extmark(bufnr, ns, row, col, {
    virt_text = { { lines[1], 'Comment' } },
    virt_text_pos = 'inline',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
  })
  shown[bufnr] = { row = row, col = col, text = text }
end

--- Asks the server for a suggestion at the cursor (0.11).
local function request(client, bufnr)
  cancel(bufnr)
  clear(bufnr)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = 2 }
  local cursor = vim.api.nvim_win_get_cursor(0)
  local ok, id = client:request('textDocument/inlineCompletion', params, function(err, result)
    inflight[bufnr] = nil
    if err or not result or vim.fn.mode() ~= 'i' then
      return
    end
    local now = vim.api.nvim_win_get_cursor(0)
    if now[1] ~= cursor[1] or now[2] ~= cursor[2] then
      return -- typed on since; a newer request answers
    end
    local items = result.items or result
    local first = items[1]
    if first and first.insertText and first.insertText ~= '' then
      show(bufnr, cursor[1] - 1, cursor[2], first.insertText)
    end
  end, bufnr)
  if ok then
    inflight[bufnr] = { client = client, id = id }
  end
end

--- Inserts the suggestion shown (0.11); false when there is none.
local function accept(bufnr)
  local s = shown[bufnr]
  if not s then
    return false
  end
  clear(bufnr)
  local lines = vim.split(s.text, '\n', { plain = true })
  vim.api.nvim_buf_set_text(bufnr, s.row, s.col, s.row, s.col, lines)
  local last_row = s.row + #lines - 1
  local last_col = (#lines == 1 and s.col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  return true
end

--- Turns completion on for a buffer the patchwise client attached to.
--- opts: { enabled = true, accept_key = '<C-l>' }
function M.attach(client, bufnr, opts)
  if opts.enabled == false then
    return
  end
  local key = opts.accept_key or '<C-l>'
  if vim.lsp.inline_completion and vim.lsp.inline_completion.enable then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr, client_id = client.id })
    vim.keymap.set('i', key, function()
      if not vim.lsp.inline_completion.get() then
        return key
      end
    end, { buffer = bufnr, expr = true, desc = 'patchwise: accept the suggestion' })
    return
  end
  local group = vim.api.nvim_create_augroup('patchwise.completion.' .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ 'TextChangedI', 'TextChangedP' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      request(client, bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      cancel(bufnr)
      clear(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd('CursorMovedI', {
    group = group,
    buffer = bufnr,
    callback = function()
      local s = shown[bufnr]
      local cursor = vim.api.nvim_win_get_cursor(0)
      if s and (cursor[1] - 1 ~= s.row or cursor[2] ~= s.col) then
        clear(bufnr)
      end
    end,
  })
  -- Not an expr mapping: an expr mapping may not change the buffer (textlock).
  vim.keymap.set('i', key, function()
    if not accept(bufnr) then
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(key, true, false, true), 'n', false)
    end
  end, { buffer = bufnr, desc = 'patchwise: accept the suggestion' })
end

--- The suggestion shown in a buffer (0.11), for tests and statuslines.
function M.shown(bufnr)
  return shown[bufnr]
end

return M
