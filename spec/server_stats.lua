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

return M
