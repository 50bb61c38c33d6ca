-- examples/openresty/gateway.lua: POST /run?user=NAME runs the body (a shell
-- line) in sandbox "gateway-NAME", creating it on first use, and streams the
-- command's output to the caller chunk by chunk; the last line is
-- "[exit N]". Every wait yields to nginx (e2b.ngx), so one worker serves
-- many callers at once.
local e2b = require("e2b")

local M = {}

local client -- one per worker, made on first use

local function fail(status, msg)
  ngx.status = status
  ngx.header["Content-Type"] = "text/plain"
  ngx.say(msg)
end

-- The caller's sandbox: found by logical id (running or paused), else made.
-- Every worker is a client of its own: a user's first requests on two
-- workers would race to create it (and both lose, or one fail with
-- conflict). The lock over lua_shared_dict e2b_locks makes "resume, else
-- create" one at a time across this nginx's workers.
local function sandbox_for(user)
  if not client then
    local err
    client, err = e2b.client{}
    if not client then return nil, err end
  end
  local id = "gateway-" .. user
  return require("e2b.ngx").with_lock({ dict = "e2b_locks", key = id }, function()
    local sbx, err = client:resume(id)
    if sbx or err.kind ~= "not_found" then return sbx, err end
    return client:create{
      id = id,
      metadata = { user = user },
      timeout_ms = 15 * 60 * 1000,
      on_close = "leave", -- it outlives this request; E2B's timeout reaps it
    }
  end)
end

function M.run()
  if ngx.req.get_method() ~= "POST" then return fail(405, "POST the command") end
  local user = ngx.var.arg_user
  if not user or not user:match("^[%w_-]+$") or #user > 64 then
    return fail(400, "user must be letters, digits, _ or -")
  end
  ngx.req.read_body()
  local cmd = ngx.req.get_body_data()
  if not cmd or cmd == "" then return fail(400, "the body is the command to run") end

  local sbx, err = sandbox_for(user)
  if not sbx then return fail(502, "sandbox: " .. tostring(err)) end
  local proc
  proc, err = sbx:spawn(cmd, { timeout_ms = 10 * 60 * 1000 })
  if not proc then return fail(502, "spawn: " .. tostring(err)) end

  -- The caller hung up: stop the command and this request.
  ngx.on_abort(function()
    proc:kill()
    ngx.exit(499)
  end)

  ngx.header["Content-Type"] = "text/plain"
  ngx.header["X-Sandbox-Id"] = sbx.sandbox_id
  while true do
    local data, rerr = proc:read()
    if not data then
      if rerr then ngx.print("\n[error ", tostring(rerr), "]\n") end
      break
    end
    ngx.print(data)
    ngx.flush(true)
  end
  local res = proc:wait()
  ngx.print(("[exit %s]\n"):format(res and res.exit_code or "?"))
  proc:close()
  sbx:close()
end

return M
