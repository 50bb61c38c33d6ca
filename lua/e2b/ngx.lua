--- e2b.ngx: the OpenResty adapter — e2b.sched's interface on ngx's primitives.
--
-- e2b.rt picks it when `ngx` is present. Nothing here ever blocks the nginx
-- worker (the core loop is only ever stepped with timeout 0):
--   * one pump per worker, an ngx.timer, steps the core loop while anything
--     waits or transfers run, and posts the semaphores of the waiters whose
--     requests progressed;
--   * a waiter parks on its coroutine's ngx.semaphore, with its deadline as
--     the wait's timeout, and posts the pump's semaphore so that what it just
--     queued is sent on this event-loop iteration;
--   * between steps the pump waits on its semaphore, never past the core's
--     next deadline (loop:timeout()). nginx cannot watch curl's sockets, so
--     the core's readiness bridge does (loop:bridge(): a thread that writes
--     one byte to a unix socket when one of them is ready): a light thread
--     of the pump reads that socket through a cosocket and posts the
--     semaphore, so an idle wait costs no CPU (and, with nothing to do,
--     the pump stays 5 s for the next waiter rather than connect again for
--     each request). Without the bridge (not Linux, or it failed to
--     open) it polls while transfers run: 1 ms (nginx's timer
--     resolution) while things happen, backing off to 16 ms when they
--     stop; with none running, only the deadline or a new waiter wakes it;
--   * each step keeps performing while curl's sockets are ready (bounded,
--     in the core), so an upload moves as fast as the socket takes it;
--   * tasks are ngx.thread light threads: they live as long as the request
--     (or timer) that spawned them.
-- The task logic (waits on requests, tasks, orphaned errors, run) is
-- e2b.tasks, shared with e2b.sched; this file supplies how a coroutine
-- parks on ngx's primitives and the pump.
-- bench/README.md has the measurements behind these choices.
-- Waiting is possible wherever nginx can resume a handler later: rewrite,
-- access and content handlers and ngx.timer callbacks. In other phases
-- (init_by_lua, init_worker_by_lua, set_by_lua, header/body filters, log)
-- a wait raises an error naming the phase; start a timer there instead:
--   init_worker_by_lua_block { ngx.timer.at(0, function() ... e2b calls ... end) }
-- @module e2b.ngx
local core = require("e2b.core")
local semaphore = require("ngx.semaphore")
local unpack = table.unpack or unpack -- luacheck: ignore

local ngx = ngx
local now_ms = core.now_ms
local co_running = coroutine.running

local M = { name = "ngx" }

-- One loop per Lua VM, i.e. per worker (a copy of the master's when the
-- module was preloaded in init_by_lua, which is fine: it holds no transfer).
local loop = assert(core.loop())
--- The core loop this adapter steps (one per nginx worker).
-- @field loop
M.loop = loop
--- Monotonic milliseconds (the clock of every deadline).
-- @function now_ms
-- @treturn int
M.now_ms = now_ms

-- Polling, when the readiness bridge is unavailable (bench/README.md has
-- the measurements): for BUSY_MS after anything happened (a notification, a
-- new waiter) the pump steps every MIN_IDLE_MS (nginx timers have 1 ms
-- resolution), then backs off doubling up to MAX_IDLE_MS; with no waiter
-- at all, MAX_IDLE_MS.
local MIN_IDLE_MS, MAX_IDLE_MS, BUSY_MS = 1, 16, 100
local use_bridge = true

-- For spec/ngx only: forces (or lifts) the polling a host without the
-- bridge takes, so that path is tested where the bridge exists. Returns the
-- previous setting; takes effect at the pump's next run.
function M._force_polling(on)
  local old = not use_bridge
  use_bridge = not on
  return old
end

local YIELDABLE = {
  rewrite = true, server_rewrite = true, access = true, content = true, timer = true,
  ssl_cert = true, ssl_session_fetch = true, ssl_client_hello = true, preread = true,
}

local function can_yield()
  return YIELDABLE[ngx.get_phase()] == true
end

local function need_yield(what)
  local phase = ngx.get_phase()
  if not YIELDABLE[phase] then
    error(("e2b: %s cannot wait in nginx's %s phase, which cannot yield (lua-e2b never "
      .. "blocks the worker); call it from a rewrite, access or content handler, or from "
      .. "an ngx.timer.at callback"):format(what, phase), 3)
  end
end

local pack = require("e2b.tasks").pack

-- ---- waiters ----

local S -- the shared task logic (e2b.tasks), over the primitives below
local waiters        -- S.waiters: request id -> array of wait entries
local nwaiting = 0   -- await entries parked and not yet woken
-- coroutine -> its semaphore. nginx reuses the coroutines of finished
-- requests, so a semaphore is drained before each wait (a post may have
-- come after the waiter of an aborted request was killed).
local sems = setmetatable({}, { __mode = "k" })

local function sem_of(co)
  local s = sems[co]
  if not s then
    s = assert(semaphore.new(0))
    sems[co] = s
  end
  return s
end

-- A woken entry's caller resumes from its semaphore.
local function signal(entry)
  if entry.counted then nwaiting = nwaiting - 1 end
  entry.sem:post(1)
end

-- The entry's caller gives up (deadline): it stops counting as a waiter.
local function give_up(entry)
  if S.cancel(entry) and entry.counted then nwaiting = nwaiting - 1 end
end

-- Forgets the entries of waiters that are gone: nginx kills the threads of
-- an aborted request (client gone, ngx.exit from another thread) while they
-- are parked. A parked waiter waits on its semaphore (count < 0) except for
-- the instant between a timeout and its resumption, so an entry whose
-- semaphore has nobody waiting at two sweeps in a row is dead.
local function sweep()
  for id, list in pairs(waiters) do
    for j = #list, 1, -1 do
      local e = list[j]
      if e.woken then
        table.remove(list, j)
      elseif not e.self and e.sem:count() >= 0 then
        if e.strike then
          e.woken = true
          nwaiting = nwaiting - 1
          table.remove(list, j)
        else
          e.strike = true
        end
      else
        e.strike = nil
      end
    end
    if #list == 0 then waiters[id] = nil end
  end
end

-- ---- the pump ----

local pumping = false     -- the pump timer is alive
local pump_sem            -- it idles on this (created in the worker, on first use)
local pump_idle = false   -- it is waiting on pump_sem right now
local pump_kicked = false -- pump_sem was posted since
local bridged = false     -- this pump run reads the readiness bridge
local bridge_failed       -- why the bridge could not be used (then never tried again)
local pump_steps = 0      -- the pump's steps of the loop since the worker started

local SWEEP_MS = 1000
-- With the bridge, how long a pump with nothing to do stays for the next
-- waiter: opening the bridge and connecting to it again for every request
-- would cost more CPU than the request (bench/README.md); idle, it wakes
-- once a SWEEP_MS, which is also how soon it sees a graceful shutdown (a
-- pending timer cannot cut the wait short: nginx fires those early only
-- once nothing else holds the worker, and the pump's own wait does).
local LINGER_MS = 5000

-- How long the pump may wait after a step: never past the core's next
-- deadline (curl's timers, retry backoffs, idle budgets: loop:timeout()).
-- While transfers run without the bridge, also no longer than the poll
-- interval, as data may arrive at any time. With the bridge, or no
-- transfer running, only the deadline (or a post) wakes it.
local function pump_wait_ms(running, poll_ms)
  local due = loop:timeout()
  local wait = SWEEP_MS
  if running > 0 and not (bridged and use_bridge) then wait = poll_ms end
  if due >= 0 and due < wait then wait = due end
  return math.max(wait, 1) -- nginx's timer resolution; a 0 wait would not yield
end

-- Whether the pump has nothing left to do and may end now.
local function pump_done(running, now, idle_since)
  local exiting = ngx.worker.exiting()
  if nwaiting > 0 or (running > 0 and not exiting) then return false end
  return exiting or not (bridged and use_bridge) or now - idle_since >= LINGER_MS
end

local function pump()
  local idle_ms, busy_until, next_sweep = MIN_IDLE_MS, 0, now_ms() + SWEEP_MS
  local idle_since
  while true do
    local ids, running = loop:step(0)
    pump_steps = pump_steps + 1
    if ids then S.deliver(ids) end
    local now = now_ms()
    if now >= next_sweep then
      sweep()
      next_sweep = now + SWEEP_MS
    end
    if nwaiting == 0 and running == 0 then
      idle_since = idle_since or now
    else
      idle_since = nil
    end
    if pump_done(running, now, idle_since or now) then break end
    if ids or pump_kicked then busy_until = now + BUSY_MS end
    pump_kicked = false
    if nwaiting == 0 then
      idle_ms = MAX_IDLE_MS -- transfers nobody waits for yet: keep them moving, slowly
    elseif now < busy_until then
      idle_ms = MIN_IDLE_MS
    else
      idle_ms = math.min(idle_ms * 2, MAX_IDLE_MS)
    end
    -- The waiters just woken run first (their resumptions are queued
    -- before ours); when they wait again they post pump_sem, so the next
    -- step follows at once instead of after the wait.
    pump_idle = true
    pump_sem:wait(pump_wait_ms(running, idle_ms) / 1000)
    pump_idle = false
  end
end

-- ---- the readiness bridge ----

-- Connects a cosocket to the loop's bridge: once per pump run, as a
-- cosocket belongs to the timer that made it. The bridge is opened here,
-- in the worker (its thread does not cross fork). nil when unavailable;
-- the first failure is logged and the worker polls from then on.
local function bridge_connect()
  if bridge_failed or not use_bridge then return nil end
  if not loop.bridge then
    bridge_failed = "the e2b.core in use has no bridge"
    return nil
  end
  local path, err = loop:bridge()
  local sock
  if path then
    sock = ngx.socket.tcp()
    sock:settimeout(1000)
    local ok
    ok, err = sock:connect("unix:" .. path)
    if not ok then sock = nil end
  end
  if not sock then
    bridge_failed = type(err) == "table" and err.message or tostring(err)
    ngx.log(ngx.WARN, "e2b: no readiness bridge (", bridge_failed, "); the pump polls curl's sockets")
  end
  return sock
end

-- The never-ending read: nothing in nginx may time out here (a read
-- timeout is logged as an error), so the longest timeout nginx takes.
local BRIDGE_READ_MS = 0x7fffffff

-- A light thread of the pump: each byte from the bridge (one of curl's
-- sockets is ready) cuts the pump's wait short, as a new waiter does.
local function read_bridge(sock)
  sock:settimeout(BRIDGE_READ_MS)
  while true do
    local data, err
    if sock.receiveany then
      data, err = sock:receiveany(64)
    else
      data, err = sock:receive(1)
    end
    if not data then
      bridged = false -- the bridge is gone (closed): the pump polls again, from now
      if err ~= "closed" then ngx.log(ngx.WARN, "e2b: the readiness bridge failed: ", err) end
    end
    if pump_idle then
      pump_idle = false
      pump_sem:post(1)
    end
    if not data then return end
  end
end

local function run_pump()
  local sock = bridge_connect()
  local reader
  if sock then
    reader = ngx.thread.spawn(read_bridge, sock)
    if not reader then sock:close() end
  end
  bridged = reader ~= nil
  local ok, err = pcall(pump)
  bridged = false
  if reader then ngx.thread.kill(reader) end
  if sock and reader then sock:close() end
  pumping, pump_idle = false, false
  if not ok then ngx.log(ngx.ERR, "e2b: the pump failed: ", tostring(err)) end
end

-- Makes sure the pump runs and steps soon. Returns false when no timer
-- could be started (lua_max_pending_timers): the caller then pumps itself.
local function kick()
  if pumping then
    pump_kicked = true -- counts as activity: a new request is likely in flight
    if pump_idle then
      pump_idle = false -- post once per idle period
      pump_sem:post(1)
    end
    return true
  end
  if not pump_sem then pump_sem = assert(semaphore.new(0)) end
  local ok, err = ngx.timer.at(0, run_pump)
  if not ok then
    ngx.log(ngx.WARN, "e2b: cannot start the pump timer (", err, "); the waiter steps the loop")
    return false
  end
  pumping, pump_kicked = true, true
  return true
end

-- Fallback when no timer is available: the waiter steps the loop itself.
local function self_pump(entry, deadline)
  local idle_ms = MIN_IDLE_MS
  while not entry.woken do
    local ids = loop:step(0)
    if ids then S.deliver(ids) end
    if entry.woken then break end
    if deadline and now_ms() >= deadline then
      give_up(entry)
      return false
    end
    idle_ms = ids and MIN_IDLE_MS or math.min(idle_ms * 2, MAX_IDLE_MS)
    ngx.sleep(idle_ms / 1000)
  end
  entry.sem:wait(0) -- take the post that woke it
  return true
end

-- Parks the calling coroutine on its semaphore until entry is woken or
-- deadline passes. An await (entry.ids) also needs the pump.
local function park(entry, deadline)
  local sem = sem_of(co_running())
  while sem:count() > 0 do sem:wait(0) end
  entry.sem = sem
  if entry.ids then
    nwaiting = nwaiting + 1
    entry.counted = true
    if not kick() then
      entry.self = true
      return self_pump(entry, deadline)
    end
  end
  while true do
    local timeout = 60
    if deadline then
      -- Whole milliseconds: a wait of under 1 ms would not yield at all.
      local left = math.ceil(deadline - now_ms())
      if left <= 0 then
        give_up(entry)
        return false
      end
      timeout = left / 1000
    end
    local posted = sem:wait(timeout)
    if entry.woken then
      if not posted then sem:wait(0) end -- posted just as the timeout fired: take that post
      return true
    end
    -- else a stale post (for a killed waiter of a reused coroutine) or a
    -- timeout: wait on
  end
end

-- ---- tasks ----

local tasks = setmetatable({}, { __mode = "k" }) -- coroutine -> task

local function current_task()
  return tasks[co_running()]
end

local function on_error(e)
  return { error = e, traceback = debug.traceback(tostring(e), 2) }
end

-- A task's thread: it starts once the spawner waits, as e2b.sched's do
-- (it parks on its semaphore, which the spawner posts right away; nginx
-- resumes it when the spawner yields).
local function launch(t, body)
  local th, err = ngx.thread.spawn(function()
    local co = co_running()
    t.co = co
    tasks[co] = t
    local sem = sem_of(co)
    while sem:count() > 0 do sem:wait(0) end
    sem:wait(60)
    local r = pack(xpcall(body, on_error))
    -- shifted by hand: table.remove stops at a nil result (the border), and
    -- (nil, err) would come back as (nil, nil)
    local ok = r[1]
    for i = 1, r.n - 1 do r[i] = r[i + 1] end
    r[r.n] = nil
    r.n = r.n - 1
    tasks[co] = nil -- nginx may reuse the coroutine
    if ok then
      S.finish(t, true, r)
    else
      S.finish(t, false, { r[1].error, n = 1 }, r[1].traceback)
    end
  end)
  if not th then return nil, err end
  sem_of(th):post(1)
  return true
end

S = require("e2b.tasks").new({
  park = park,
  signal = signal,
  launch = launch,
  current = current_task,
  check = need_yield,
  -- Each outermost run waits for the tasks started inside it only (other
  -- requests of the worker have their own); a task spawned outside any
  -- run belongs to none: its unjoined error is logged.
  run_group = function() return { live = 0, orphans = {} } end,
  settle = function(group)
    if group.live == 0 then return end
    group.settler = { woken = false }
    park(group.settler)
  end,
  orphan = function(t)
    ngx.log(ngx.ERR, "e2b: a task failed and nothing waited for it: ", t.traceback)
  end,
})
waiters = S.waiters

--- Parks the calling coroutine until one of the core requests progressed.
-- @function await
-- @param reqs one core request or an array of them
-- @tparam[opt] int deadline monotonic ms (`now_ms`)
-- @treturn boolean true when a request progressed, false when the deadline passed first
-- @raise in an nginx phase that cannot yield
M.await = S.await

--- Sleeps at least 1 ms, nginx's timer resolution (and ngx.sleep(0)
-- needs OpenResty's own nginx patch; Debian's nginx warns on every call).
-- @tparam int ms
-- @raise in an nginx phase that cannot yield
function M.sleep(ms)
  need_yield("e2b.sleep")
  ms = tonumber(ms) or 0
  ngx.sleep(math.max(1, ms) / 1000)
end

--- Runs fn(...) holding a lock shared by every worker of this nginx: a key
-- of a `lua_shared_dict`, taken with `add` and let go after fn (or after
-- opts.ttl_ms, when the worker holding it died). Each worker is a client
-- of its own, so "resume, else create" of one logical id is made one at a
-- time across workers this way (hosts race as the manual says).
-- @tparam table opts { dict = the lua_shared_dict's name, key = string,
--   timeout_ms = how long to wait for the lock (default 60000),
--   ttl_ms = the most it is held (default 120000) }
-- @tparam func fn
-- @param ... fn's arguments
-- @return fn's results; or nil, err (kind "invalid_argument", or "timeout"
--   when the lock was not had in time)
-- @raise fn's error again (the lock let go first), or in a phase that cannot yield
function M.with_lock(opts, fn, ...)
  need_yield("e2b.ngx.with_lock")
  local errors = require("e2b.errors")
  local dict = type(opts) == "table" and type(opts.dict) == "string" and ngx.shared[opts.dict]
  if not dict then return nil, errors.invalid("with_lock", "dict", "must name a lua_shared_dict") end
  if type(opts.key) ~= "string" then return nil, errors.invalid("with_lock", "key", "must be a string") end
  local token = ("%d:%s"):format(ngx.worker.pid(), tostring({}))
  local deadline = ngx.now() * 1000 + (opts.timeout_ms or 60000)
  local pause = 5
  while not dict:add(opts.key, token, (opts.ttl_ms or 120000) / 1000) do
    if ngx.now() * 1000 >= deadline then
      return nil, errors.new("timeout", "with_lock", "the lock " .. opts.key .. " was held past timeout_ms")
    end
    ngx.sleep(pause / 1000)
    pause = math.min(pause * 2, 100)
  end
  local res = { n = 0 }
  local function keep(...) res = { n = select("#", ...), ... } end
  keep(pcall(fn, ...))
  if dict:get(opts.key) == token then dict:delete(opts.key) end
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, res.n)
end

--- The pump's state, after a sweep (a dead wait goes at its second sweep).
-- @treturn table { waiting = parked waits, pumping = boolean, requests = ids waited on,
--   bridged = whether the running pump sleeps on the readiness bridge,
--   bridge_failed = why the worker polls instead, or nil, steps = the pump's steps of the
--   loop so far: each is a wake-up of the worker }
function M.stats()
  sweep()
  local n = 0
  for _ in pairs(waiters) do n = n + 1 end
  return { waiting = nwaiting, pumping = pumping, requests = n, bridged = bridged,
           bridge_failed = bridge_failed, steps = pump_steps }
end

--- Whether a wait here yields: inside any handler that can yield every
-- call yields, so that is a task.
-- @treturn boolean
function M.in_task()
  return can_yield()
end

-- ---- tasks (e2b.tasks; documented here) ----

--- Starts fn(...) as an ngx.thread task.
-- @function spawn
-- @tparam func fn
-- @param ... fn's arguments
-- @treturn Task
-- @raise when fn is not a function, or in a phase that cannot yield
M.spawn = S.spawn

--- A task: an ngx.thread, from `e2b.spawn`; it lives as long as the request
-- (or timer) that spawned it.
-- @type Task

--- Waits for the task.
-- @function wait
-- @return the task function's results
-- @raise the task's error again, with its traceback

--- Whether the task has ended.
-- @function done
-- @treturn boolean

--- Running tasks (the module's functions again, after the Task methods).
-- @section run

--- Runs fn(...) and waits until every task it started has ended.
-- Unlike e2b.sched, "every task" is the tasks started inside this run
-- (other requests of the worker have their own).
-- @function run
-- @tparam func fn
-- @param ... fn's arguments
-- @return fn's results
-- @raise a task's error, or in a phase that cannot yield
M.run = S.run

return M
