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

return M
