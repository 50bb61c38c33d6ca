-- bench/wrapper.lua: what keeping a command's output costs inside the
-- sandbox. Captures the argv and E2B_PROC of a live kept wrapper from /proc,
-- then replays it in the sandbox beside `bash -l -c true` (all the SDK's
-- run("true") costs there) and `bash -l -c '(true)'`; numbers, not assertions.
--   e2b-local exec -- lua5.4 bench/wrapper.lua [runs=300] [trace]
local ROOT = arg[0]:match("^(.*)/bench/[^/]*$") or "."
local e2b = require("e2b")

local runs = tonumber(arg[1]) or 300
local mode = arg[2] == "trace" and "trace" or ""

local client = assert(e2b.client())
local sbx = assert(client:create())
local dir = "/tmp/wrapper-bench"
-- $$ is the wrapper (a command string runs in its subshell).
assert(sbx:run(("mkdir -p %s && cat /proc/$$/cmdline >%s/argv && cat /proc/$$/environ >%s/environ")
  :format(dir, dir, dir)))
local script = assert(io.open(ROOT .. "/bench/wrapper_cost.sh", "rb"))
assert(sbx.files:write(dir .. "/cost.sh", script))
script:close()
local res, err = sbx:run(("bash %s/cost.sh %s %d %s"):format(dir, dir, runs, mode), { timeout_ms = 900000 })
sbx:kill()
if not res then
  io.stderr:write(tostring(err), "\n", err and err.stderr or "", "\n")
  os.exit(1)
end
io.write(res.stdout)
