-- Driven by tests/nvim.rs: completion as you type in headless Neovim with the patchwise plugin,
-- against the real server and a scripted fill-in-the-middle model. As a user would: on line 2,
-- enter insert mode and type (the keys go through Neovim's input queue, so the plugin's
-- autocommands and its accept mapping run as they do for a person), wait for the ghost text,
-- type on into it, accept it with the accept key, leave insert mode. The report holds the ghost
-- text's extmarks at each step, the buffer and the server's copy of it, and every request the
-- client sent.
--
-- Insert mode needs Neovim's main loop to read the typed keys, so after the setup the script
-- runs as a coroutine that yields to the loop while it waits (a timer resumes it).
local out = assert(os.getenv('PATCHWISE_OUT'))
local report = { ok = false, requests = {} }

local function finish(err)
  if err then
    report.error = tostring(err)
  end
  local f = assert(io.open(out, 'w'))
  f:write(vim.json.encode(report))
  f:close()
  vim.cmd('qa!')
end

local function lines_of(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n') .. '\n'
end

-- The plugin's ghost text: each extmark of its namespace, its inline text and virtual lines.
local ns = vim.api.nvim_create_namespace('patchwise.completion')
local function ghost(bufnr)
  local shown = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
    local details = mark[4]
    local inline = ''
    for _, chunk in ipairs(details.virt_text or {}) do
      inline = inline .. chunk[1]
    end
    local lines = {}
    for _, line in ipairs(details.virt_lines or {}) do
      local text = ''
      for _, chunk in ipairs(line) do
        text = text .. chunk[1]
      end
      table.insert(lines, text)
    end
    table.insert(shown, { row = mark[2], col = mark[3], pos = details.virt_text_pos, inline = inline, lines = lines })
  end
  return shown
end

local co
local function resume()
  local ok, err = coroutine.resume(co)
  if not ok then
    finish(debug.traceback(co, err))
  end
end

-- Yields to the main loop until `predicate` holds.
local function wait(ms, what, predicate)
  local deadline = vim.uv.hrtime() + ms * 1e6
  while not predicate() do
    if vim.uv.hrtime() > deadline then
      error('timed out waiting for ' .. what .. '; report so far: ' .. vim.json.encode(report), 0)
    end
    vim.defer_fn(resume, 20)
    coroutine.yield()
  end
end

co = coroutine.create(function()
  vim.opt.rtp:prepend(assert(os.getenv('PATCHWISE_PLUGIN')))
  local patchwise = require('patchwise')
  patchwise.setup({
    cmd = { assert(os.getenv('PATCHWISE_BIN')), 'serve' },
    init_options = vim.json.decode(assert(os.getenv('PATCHWISE_INIT'))),
  })
  -- Every request the client sends to the server, in order.
  vim.api.nvim_create_autocmd('LspRequest', {
    callback = function(args)
      local request = args.data.request
      if request.type == 'pending' then
        table.insert(report.requests, request.method)
      end
    end,
  })
  vim.cmd.edit(assert(os.getenv('PATCHWISE_FILE')))
  local bufnr = vim.api.nvim_get_current_buf()
  local client
  wait(30000, 'the server to attach and the accept key to be mapped', function()
    client = patchwise.client(bufnr)
    local map = vim.fn.maparg('<C-l>', 'i', false, true)
    return client ~= nil and client.initialized and map.buffer == 1
  end)
  report.nvim = tostring(vim.version())
  -- Neovim 0.12's own client (vim.lsp.inline_completion) or the plugin's extmarks (0.11).
  report.path = vim.lsp.inline_completion and 'native' or 'extmark'
  report.omnifunc = vim.bo[bufnr].omnifunc
  report.original = lines_of(bufnr)

  -- Line 2 is the empty body of a function: append to it and type its first letter.
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.api.nvim_input('Aa')
  wait(60000, 'the ghost text', function()
    return #ghost(bufnr) > 0
  end)
  report.mode_shown = vim.api.nvim_get_mode().mode
  report.ghost = ghost(bufnr)
  -- Ghost text is not text: the buffer holds only what was typed.
  report.line_shown = vim.api.nvim_buf_get_lines(bufnr, 1, 2, false)[1]

  -- Typing the suggestion's next letter moves it on with the cursor.
  vim.api.nvim_input('x')
  wait(60000, 'the ghost text after the typed letter', function()
    local shown = ghost(bufnr)
    return #shown > 0 and shown[1].col == 6
  end)
  report.ghost_narrowed = ghost(bufnr)

  -- The accept key inserts it.
  local before = lines_of(bufnr)
  vim.api.nvim_input('<C-l>')
  wait(10000, 'the accept key to insert the suggestion', function()
    return lines_of(bufnr) ~= before
  end)
  report.mode_accepted = vim.api.nvim_get_mode().mode
  report.cursor_accepted = vim.api.nvim_win_get_cursor(0)

  -- Leaving insert mode clears whatever ghost text a later request showed.
  vim.api.nvim_input('<Esc>')
  wait(10000, 'normal mode', function()
    return vim.api.nvim_get_mode().mode == 'n'
  end)
  report.ghost_left = #ghost(bufnr)
  report.typing_requests = vim.deepcopy(report.requests)
  report.buffer = lines_of(bufnr)
  report.server = patchwise.view_file_text(bufnr, 10000)

  -- The suggestion never comes as completion items: the server offers none, so no omnifunc is
  -- set, and a completion request the user's own setup might send is not answered with it.
  vim.api.nvim_win_set_cursor(0, { 2, 5 })
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local response = client:request_sync('textDocument/completion', params, 10000, bufnr)
  report.completion = {
    answered = response ~= nil,
    error = response and response.err and response.err.code,
    result = response and response.result and vim.json.encode(response.result),
  }
  report.completion_provider = client.server_capabilities.completionProvider ~= nil
  report.ok = true
  finish()
end)

-- The Rust side kills Neovim after three minutes; this says where it stood before that.
vim.defer_fn(function()
  finish('the script did not finish in 150 s')
end, 150000)
resume()
