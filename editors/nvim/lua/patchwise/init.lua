-- patchwise for Neovim: starts `patchwise serve` for normal file buffers and exposes the
-- server's debugging requests.
--
-- Neovim 0.11+: uses vim.lsp.start (one client per root, reused across buffers).
-- Neovim 0.7-0.10: falls back to vim.lsp.start_client + buf_attach_client.
--
--   require('patchwise').setup({
--     cmd = { 'patchwise', 'serve' },          -- the binary (absolute path if not on PATH)
--     filetypes = nil,                         -- nil: every file buffer; or a list
--     root_markers = { '.patchwise', '.git' }, -- the workspace root is the nearest of these
--     init_options = {},                       -- passed as initializationOptions
--     capabilities = nil,                      -- extra client capabilities (deep-merged)
--   })

local M = {}

M.defaults = {
  cmd = { 'patchwise', 'serve' },
  filetypes = nil,
  root_markers = { '.patchwise', '.git' },
  init_options = {},
  capabilities = nil,
}

local function find_root(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.fs and vim.fs.find then
    local found = vim.fs.find(markers, { path = vim.fs.dirname(name), upward = true })[1]
    if found then
      return vim.fs.dirname(found)
    end
    return vim.fs.dirname(name)
  end
  return vim.fn.fnamemodify(name, ':p:h')
end

local function capabilities(extra)
  local caps = vim.lsp.protocol.make_client_capabilities()
  if extra then
    caps = vim.tbl_deep_extend('force', caps, extra)
  end
  return caps
end

local legacy_clients = {}

local function attach(bufnr, opts)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return
  end
  if opts.filetypes and not vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) then
    return
  end
  local root = find_root(bufnr, opts.root_markers)
  local config = {
    name = 'patchwise',
    cmd = opts.cmd,
    root_dir = root,
    init_options = opts.init_options,
    capabilities = capabilities(opts.capabilities),
  }
  if vim.lsp.start then
    vim.lsp.start(config, { bufnr = bufnr })
  else
    local id = legacy_clients[root]
    if not id or not vim.lsp.get_client_by_id(id) then
      id = vim.lsp.start_client(config)
      legacy_clients[root] = id
    end
    if id then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
end

-- Client-side commands the server's code actions refer to. "Edit selection…" carries the
-- target; the instruction comes from the user (vim.ui.input), then the server's `patchwise.edit`
-- runs and leaves a pending proposal (hover shows the diff, code lenses Accept/Reject).
local function register_commands()
  vim.lsp.commands['patchwise.editSelection'] = function(command, ctx)
    local target = (command.arguments or {})[1] or {}
    vim.ui.input({ prompt = 'patchwise instruction: ' }, function(instruction)
      if not instruction or instruction == '' then
        return
      end
      M.edit(target.uri, target.range, instruction, ctx and ctx.bufnr)
    end)
  end
end

--- Runs `patchwise.edit` for a range (LSP positions) and calls `on_done(err, result)`.
function M.edit(uri, range, instruction, bufnr, on_done)
  bufnr = bufnr or vim.uri_to_bufnr(uri)
  local client = M.client(bufnr)
  if not client then
    vim.notify('patchwise is not attached to this buffer', vim.log.levels.ERROR)
    return
  end
  local params = {
    command = 'patchwise.edit',
    arguments = { { uri = uri, range = range, instruction = instruction } },
  }
  local handler = function(err, result)
    if on_done then
      on_done(err, result)
    elseif err then
      vim.notify('patchwise: ' .. err.message, vim.log.levels.WARN)
    else
      vim.notify('patchwise: proposal ready — hover to see the diff, use the code lens to accept')
    end
    if vim.lsp.codelens then
      pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
    end
  end
  if vim.fn.has('nvim-0.11') == 1 then
    client:request('workspace/executeCommand', params, handler, bufnr)
  else
    client.request('workspace/executeCommand', params, handler, bufnr)
  end
end

function M.setup(opts)
  opts = vim.tbl_deep_extend('force', M.defaults, opts or {})
  M.options = opts
  register_commands()
  local group = vim.api.nvim_create_augroup('patchwise', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    callback = function(args)
      attach(args.buf, opts)
    end,
  })
  -- Buffers already open when setup runs.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype ~= '' then
      attach(bufnr, opts)
    end
  end
end

--- The patchwise client attached to a buffer, if any.
function M.client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  return get({ bufnr = bufnr, name = 'patchwise' })[1]
end

--- The server's copy of a buffer's text (`patchwise/viewFileText`), for checking sync.
function M.view_file_text(bufnr, timeout_ms)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return nil, 'patchwise is not attached to this buffer'
  end
  local params = { uri = vim.uri_from_bufnr(bufnr) }
  local response, err
  if client.request_sync and vim.fn.has('nvim-0.11') == 1 then
    response, err = client:request_sync('patchwise/viewFileText', params, timeout_ms or 5000, bufnr)
  else
    response, err = client.request_sync('patchwise/viewFileText', params, timeout_ms or 5000, bufnr)
  end
  if not response then
    return nil, err
  end
  if response.err then
    return nil, response.err.message
  end
  return response.result
end

return M
