-- e2b.cancel: cancel tokens (the SDKs' per-call abort signal). A call given
-- { cancel = token } runs with the token active on its own coroutine; every
-- core request it waits on meanwhile is registered with the token, and
-- token:cancel() (from another task) cancels them with the core's
-- e2b_req_cancel. What a canceled request leaves behind is the core's
-- decision, as for any other failure: a run's process group is killed (the
-- run's release), a create's sandbox destroyed (provision's), an upload
-- ends as a failed one. This module only keeps the books: which requests
-- wait under which token, and the few handles that outlive their call (a
-- spawned process) and must hear of the cancel.
--
-- It requires nothing of lua-e2b but its errors, so that e2b.tasks (under both scheduler
-- adapters) can ask it at each wait.
local errors = require("e2b.errors")

local M = {}
local unpack = table.unpack or unpack

local function pack(...)
  return { n = select("#", ...), ... }
end

-- Lua 5.2+ and LuaJIT yield across pcall; PUC 5.1 does not.
local PROTECT = not (_VERSION == "Lua 5.1" and not rawget(_G, "jit"))

local Token = {}
Token.__index = Token

local MAIN = {} -- the main thread's key where coroutine.running() gives nil (5.1)
local active = setmetatable({}, { __mode = "k" }) -- coroutine -> token

local function here()
  return coroutine.running() or MAIN
end

--- A cancel token. Pass it as the `cancel` option of a call; `token:cancel()`
-- ends that call with kind "canceled".
-- @treturn Token
function M.new()
  -- _reqs: requests waited on now; _hooks: handles that outlive their call
  return setmetatable({ _canceled = false, _reqs = setmetatable({}, { __mode = "k" }),
                        _hooks = setmetatable({}, { __mode = "k" }) }, Token)
end

--- Whether v is a cancel token.
function M.is_token(v)
  return getmetatable(v) == Token
end

-- The option checker (e2b.check's shape): nil when v is a token.
function M.checker(v)
  if getmetatable(v) ~= Token then return "must be a cancel token (e2b.cancel_token())" end
end

--- Cancels every call made with this token, now and later: each waits no
-- more and ends with kind "canceled". Cancelling twice does nothing more.
-- @function Token:cancel
function Token:cancel()
  if self._canceled then return end
  self._canceled = true
  for req in pairs(self._reqs) do req:cancel() end
  for _, fn in pairs(self._hooks) do fn() end
end

--- Whether cancel() was called.
-- @function Token:is_canceled
-- @treturn boolean
function Token:is_canceled()
  return self._canceled
end

-- hook(token, owner, fn): fn() runs on cancel (at once when already
-- canceled) while owner is alive; unhook(token, owner) forgets it.
function M.hook(token, owner, fn)
  if token._canceled then return fn() end
  token._hooks[owner] = fn
end

function M.unhook(token, owner)
  token._hooks[owner] = nil
end

-- scope(token, fn, ...) -> fn(...)'s results, with token active on this
-- coroutine meanwhile (nil: the one already active stays).
function M.scope(token, fn, ...)
  if not token then return fn(...) end
  if token._canceled then -- before anything is sent
    return nil, errors.new("canceled", "cancel", "the call's cancel token was canceled", { retryable = false })
  end
  local key = here()
  local prev = active[key]
  active[key] = token
  if not PROTECT then
    -- PUC 5.1 cannot yield across pcall: a call that raises (a callback's
    -- error) leaves the token active on its coroutine until the next
    -- scoped call there sets its own
    local r = pack(fn(...))
    active[key] = prev
    return unpack(r, 1, r.n)
  end
  local r = pack(pcall(fn, ...))
  active[key] = prev -- also when fn raised: later calls here are not the token's
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

-- watch(reqs) -> the active token (nil: none) once reqs are registered
-- with it; when it is canceled already they are canceled at once.
function M.watch(reqs)
  local token = active[here()]
  if not token then return nil end
  for i = 1, #reqs do
    if token._canceled then reqs[i]:cancel() else token._reqs[reqs[i]] = true end
  end
  return token
end

function M.unwatch(token, reqs)
  for i = 1, #reqs do token._reqs[reqs[i]] = nil end
end

return M
