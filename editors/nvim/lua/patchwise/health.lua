-- :checkhealth patchwise — the binary is found, its version, the server answers `initialize`,
-- and the coder model is reachable (`patchwise doctor` in the workspace).
local M = {}

local health = vim.health

local function lsp_message(body)
  local json = vim.json.encode(body)
  return ('Content-Length: %d\r\n\r\n%s'):format(#json, json)
end

function M.check()
  health.start('patchwise')
  local patchwise = require('patchwise')
  local opts = patchwise.options or patchwise.defaults
  if not patchwise.options then
    health.warn("require('patchwise').setup() has not run: the server starts for no buffer")
  end
  local bin = opts.cmd[1]
  local path = vim.fn.exepath(bin)
  if path == '' then
    health.error(('binary not found: %q'):format(bin), {
      'install patchwise (cargo install --path . in the repository) or set cmd = { "/path/to/patchwise", "serve" } in setup()',
    })
    return
  end
  health.ok('binary: ' .. path)

  local version = vim.system({ path, '--version' }, { text = true }):wait(10000)
  if version.code == 0 then
    health.ok('version: ' .. vim.trim(version.stdout))
  else
    health.error('`patchwise --version` failed: ' .. vim.trim(version.stderr or ''))
  end

  -- :checkhealth shows its own buffer: any patchwise client counts.
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local client = get({ name = 'patchwise' })[1]
  if client then
    local info = client.server_info or {}
    health.ok(('server running: %s %s, root %s'):format(
      info.name or 'patchwise',
      info.version or '',
      client.root_dir or client.config.root_dir or '(none)'
    ))
  else
    health.info('no patchwise client running; starting `patchwise serve` once to check it answers')
    local output = {}
    local proc = vim.system({ path, 'serve' }, {
      stdin = true,
      stdout = function(_, data)
        if data then
          table.insert(output, data)
        end
      end,
    })
    local function answered(id)
      return vim.wait(15000, function()
        return table.concat(output):find('"id":' .. id, 1, true) ~= nil
      end, 20)
    end
    proc:write(lsp_message({ jsonrpc = '2.0', id = 1, method = 'initialize', params = { processId = vim.NIL, rootUri = vim.NIL, capabilities = vim.empty_dict() } }))
    local ok = answered(1) and table.concat(output):find('"serverInfo"', 1, true) ~= nil
    -- One message at a time: the server handles requests concurrently.
    proc:write(lsp_message({ jsonrpc = '2.0', id = 2, method = 'shutdown' }))
    answered(2)
    proc:write(lsp_message({ jsonrpc = '2.0', method = 'exit' }))
    proc:write(nil)
    if not pcall(function()
      proc:wait(5000)
    end) then
      proc:kill(9)
    end
    if ok then
      health.ok('the server answers `initialize`')
    else
      health.error('`patchwise serve` did not answer initialize: ' .. table.concat(output):sub(1, 400))
    end
  end

  local root = client and (client.root_dir or client.config.root_dir) or vim.fn.getcwd()
  local doctor = vim.system({ path, 'doctor' }, { text = true, cwd = root }):wait(60000)
  local lines = vim.split(vim.trim(doctor.stdout or ''), '\n')
  if doctor.code == 0 then
    health.ok('model reachable: `patchwise doctor` in ' .. root .. ' — ' .. (lines[#lines] or 'ok'))
  else
    health.warn('`patchwise doctor` in ' .. root .. ' reports a problem: ' .. (lines[#lines] or ''), {
      'run `patchwise doctor` there for the details; configure a provider in .patchwise/config.toml',
    })
  end
end

return M
