-- read(url, token) -> e2b-local's counters of what clients cost it (GET
-- /_e2b_local/stats on its plain listener, url = its E2B_API_URL): per
-- listener ("http", "https") connections accepted, TLS handshakes
-- completed and requests. The read is itself one connection and one
-- request on the plain listener, already counted in what it returns.
-- Needs only curl and cjson, so a fresh interpreter without the specs'
-- helpers (an HTTPS-only client) can require it too.
local M = {}

-- get(path, url, token) -> the decoded answer of an admin GET (path
-- "/_e2b_local/faults": the fault rules, with what is left of each count).
function M.get(path, url, token)
  url = url or os.getenv("E2B_API_URL")
  token = token or os.getenv("E2B_LOCAL_ADMIN_TOKEN")
  assert(url and token, "the server's counters need e2b-local (E2B_API_URL, E2B_LOCAL_ADMIN_TOKEN)")
  -- the token goes to curl in a private file, never on its command line
  local header = os.tmpname()
  local f = assert(io.open(header, "w"))
  f:write("X-Admin-Token: ", token, "\n")
  f:close()
  local p = assert(io.popen(("env -u LD_PRELOAD curl -sf -H @%s '%s%s'"):format(header, url, path)))
  local body = p:read("a")
  p:close()
  os.remove(header)
  assert(body ~= "", "the stats call failed")
  return require("cjson").decode(body)
end

function M.read(url, token)
  return M.get("/_e2b_local/stats", url, token)
end

-- cpu_ms(pid) -> the CPU ms (user + system, clock ticks of 10 ms) of a
-- process ("self" for this one) and its parent's pid, from /proc; 0 when
-- it is gone. The benches measure e2b-local (this process's parent) so.
function M.cpu_ms(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return 0 end
  local line = f:read("l")
  f:close()
  local fields = {}
  for w in line:gsub("^.*%) ", ""):gmatch("%S+") do fields[#fields + 1] = w end
  return (tonumber(fields[12]) + tonumber(fields[13])) * 10, tonumber(fields[2])
end

-- tree_cpu_ms(root, excl) -> the CPU ms (user + system, with reaped
-- children, at the kernel's 10 ms tick) of every process under root
-- (e2b-local: its sandboxes included) but excl's subtree (the clients).
function M.tree_cpu_ms(root, excl)
  local parent, ticks = {}, {}
  local ls = assert(io.popen("ls /proc"))
  for name in ls:lines() do
    local pid = tonumber(name)
    local f = pid and io.open("/proc/" .. name .. "/stat")
    local stat = f and f:read("a")
    if f then f:close() end
    local rest = stat and stat:match("%) (.*)$")
    if rest then
      local t = {}
      for w in rest:gmatch("%S+") do t[#t + 1] = w end
      parent[pid] = tonumber(t[2])
      ticks[pid] = t[12] + t[13] + t[14] + t[15]
    end
  end
  ls:close()
  local function under(pid, top)
    while pid and pid > 1 do
      if pid == top then return true end
      pid = parent[pid]
    end
    return false
  end
  local sum = 0
  for pid, t in pairs(ticks) do
    if under(pid, root) and not under(pid, excl) then sum = sum + t end
  end
  return sum * 10
end

return M
