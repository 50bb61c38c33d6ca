-- Running the lua-e2b tool (bin/lua-e2b) as a subprocess from a spec, with
-- this process's package paths (and, under a sanitizer build, its runtime
-- preloaded as h.fresh_lua does). Shared by spec/cli_spec.lua and
-- spec/cli_unix_spec.lua.
local h = require("spec.helpers")

local M = {}

-- The command line that runs the tool with args and env (false unsets).
function M.cmd(args, env)
  local words = { "env" }
  for k, v in pairs(env or {}) do
    words[#words + 1] = v == false and ("-u " .. k) or (k .. "=" .. h.shell_quote(v))
  end
  local preload = os.getenv("LD_PRELOAD")
  if preload then words[#words + 1] = "LD_PRELOAD=" .. h.shell_quote(preload) .. " ASAN_OPTIONS=detect_leaks=0" end
  words[#words + 1] = "LUA_PATH=" .. h.shell_quote(package.path)
  words[#words + 1] = "LUA_CPATH=" .. h.shell_quote(package.cpath)
  words[#words + 1] = h.lua_bin .. " bin/lua-e2b"
  for _, a in ipairs(args) do words[#words + 1] = h.shell_quote(a) end
  return table.concat(words, " ")
end

-- start(args, stdin_redirect, env) -> a running tool: pid, a pipe of its
-- stdout (p), and finish() -> rest of stdout, stderr, exit code. The tool's
-- pid is its shell's (the shell execs it); the status comes back through a
-- file, as Lua 5.1's pipes do not return it.
function M.start(args, stdin_redirect, env)
  local errf, codef = os.tmpname(), os.tmpname()
  local inner = "echo $$; exec " .. M.cmd(args, env) .. " " .. (stdin_redirect or "") .. " 2>" .. errf
  local p = assert(io.popen("env -u LD_PRELOAD sh -c " .. h.shell_quote(
    "sh -c " .. h.shell_quote(inner) .. "; echo $? >" .. codef), "r"))
  local t = { pid = tonumber(p:read("l")), p = p }
  function t.finish()
    local out = p:read("a")
    p:close()
    local err, code = h.read_file(errf), tonumber(h.read_file(codef))
    os.remove(errf)
    os.remove(codef)
    return out, err, code
  end
  return t
end

-- run(args, env, stdin_redirect) -> stdout, stderr, exit code (stdout and
-- stderr byte-exact); stdin_redirect is shell text such as "< file".
function M.run(args, env, stdin_redirect)
  return M.start(args, stdin_redirect, env).finish()
end

return M
