--- e2b.sched: the plain-Lua adapter — tasks on coroutines, one core loop.
--
-- Every wait of lua-e2b goes through the small interface below (await,
-- sleep, spawn, run, in_task, now_ms); e2b.ngx implements the same interface
-- for OpenResty. Here:
--   * inside a task a wait yields to the scheduler;
--   * outside any task a wait drives the scheduler itself until its condition
--     holds, so other tasks still progress and the caller simply blocks;
--   * it works in rounds: each resumes the tasks ready when it began, then
--     steps the core loop, so a task that never waits (sleep(0) in a loop)
--     cannot hold up anyone's requests;
--   * when nothing is runnable the core waits on its own sockets (an epoll
--     set of curl's sockets, events.c), so an idle wait costs no CPU.
-- The task logic (waits on requests, tasks, orphaned errors, run) is
-- e2b.tasks, shared with e2b.ngx; this file supplies how a caller parks
-- and drives the loop.
-- Applications use e2b.run, e2b.spawn and e2b.sleep; the rest of this
-- interface is for writing another adapter (docs/manual.md, "Schedulers").
-- @module e2b.sched
local core = require("e2b.core")

local tasks = require("e2b.tasks")

local pack = tasks.pack
local now_ms = core.now_ms

local M = { name = "lua" }

local loop = assert(core.loop())
--- The core loop this adapter steps (one per Lua state).
-- @field loop
M.loop = loop

local live = {}         -- coroutine -> task, for tasks not yet finished
-- Tasks to resume and the value each gets, in two arrays (a value may be
-- nil) counted by nready: no table per wake-up, and the arrays are reused.
local ready_t, ready_v, nready = {}, {}, 0
local spare_t, spare_v = nil, nil
local timers = {}       -- wait entries with a deadline
-- Every task belongs to this one group: e2b.run waits for all of them and
-- reports the first error nobody joined.
local all = { live = 0, orphans = {} }

local S -- the shared task logic (e2b.tasks), over the primitives below

-- A woken entry resumes its task on the next round; a blocking caller's
-- drive loop sees entry.woken itself.
local function push_ready(t, value)
  nready = nready + 1
  ready_t[nready], ready_v[nready] = t, value
end

local function signal(entry)
  local t = entry.task
  if t and t.parked == entry then
    t.parked = nil
    push_ready(t, entry.value)
  end
end

local function add_timer(entry)
  if entry.deadline then timers[#timers + 1] = entry end
end

local function expire_timers(now)
  local nearest
  local i, n = 1, #timers
  while i <= n do
    local e = timers[i]
    if e.woken then
      timers[i] = timers[n]; timers[n] = nil; n = n - 1
    elseif e.deadline <= now then
      S.wake(e, false)
      timers[i] = timers[n]; timers[n] = nil; n = n - 1
    else
      if not nearest or e.deadline < nearest then nearest = e.deadline end
      i = i + 1
    end
  end
  return nearest
end

-- What a resume returned: results are packed only once the task ended (a
-- task that yielded leaves nothing to keep); an ended task lets go of its
-- coroutine, since a caller may hold thousands of finished tasks.
local function resumed(t, ok, ...)
  local co = t.co
  if coroutine.status(co) == "dead" then
    local results = pack(...)
    live[co] = nil
    t.co = nil -- a finished task keeps its results, not its coroutine and stack
    S.finish(t, ok, results, not ok and debug.traceback(co, tostring(results[1])) or nil)
  elseif not t.parked then
    push_ready(t, nil)
  end
end

local function resume(t, value)
  return resumed(t, coroutine.resume(t.co, value))
end

-- One scheduling round: resumes the tasks ready when it began. A task
-- woken meanwhile (or yielding again at once, as sleep(0) does) waits for
-- the next round, after the loop was stepped, so no task, however busy,
-- holds up anyone's requests.
local function run_round()
  if nready == 0 then return end
  local ts, vs, n = ready_t, ready_v, nready
  ready_t, ready_v, nready = spare_t or {}, spare_v or {}, 0
  spare_t, spare_v = nil, nil -- a nested drive() must not take the same arrays
  for i = 1, n do
    local t, value = ts[i], vs[i]
    ts[i], vs[i] = nil, nil
    if not t.finished then resume(t, value) end
  end
  spare_t, spare_v = ts, vs
end

-- How long the next step may wait on the core's sockets: not at all while a
-- task is ready, else until the nearest deadline (at most a second).
local function step_timeout(nearest)
  if nready > 0 then return 0 end
  if not nearest then return 1000 end
  return math.max(0, math.min(1000, nearest - now_ms()))
end

-- Every round steps the loop: without waiting while tasks are ready, on
-- the core's sockets (no CPU) when every task waits.
local function drive(cond)
  while true do
    run_round()
    if cond() then return end
    local nearest = expire_timers(now_ms())
    if cond() then return end -- the caller's own deadline just passed
    local ids, running = loop:step(step_timeout(nearest))
    if not ids and running == 0 and #timers == 0 and nready == 0 and not cond() then
      -- Every waiter waits on something that can no longer happen.
      error("e2b: deadlock: every task is waiting and nothing is in flight", 2)
    end
    if ids then S.deliver(ids) end
    expire_timers(now_ms())
  end
end
--- Runs tasks and the loop until cond() is true: how a wait outside any
-- task blocks while other tasks still progress.
-- @function drive
-- @tparam func cond
-- @raise "e2b: deadlock: ..." when every task waits and nothing is in flight
M.drive = drive

local function current_task()
  local co = coroutine.running()
  return co and live[co] or nil
end

--- Whether the caller runs inside a task (so a wait yields).
-- @treturn boolean
function M.in_task()
  return current_task() ~= nil
end

--- Monotonic milliseconds (the clock of every deadline).
-- @function now_ms
-- @treturn int
M.now_ms = now_ms

-- Parks the caller on entry: yields inside a task, drives outside one.
local function park(entry, deadline)
  entry.deadline = deadline or entry.deadline
  local t = current_task()
  add_timer(entry)
  if t then
    entry.task = t
    t.parked = entry
    coroutine.yield()
    return entry.value
  end
  drive(function() return entry.woken end)
  return entry.value
end

S = tasks.new({
  park = park,
  signal = signal,
  current = current_task,
  default_group = all,
  run_group = function() return all end,
  settle = function(group) drive(function() return group.live == 0 end) end,
  launch = function(t, body)
    t.co = coroutine.create(body)
    live[t.co] = t
    push_ready(t, nil)
    return true
  end,
})

--- Parks the caller until one of the core requests progressed: yields
-- inside a task, drives the loop outside one.
-- @function await
-- @param reqs one core request or an array of them
-- @tparam[opt] int deadline monotonic ms (`now_ms`)
-- @treturn boolean true when a request progressed, false when the deadline passed first
M.await = S.await

--- Sleeps ms milliseconds: yields inside a task, blocks outside one.
-- sleep(0) in a task lets the other ready tasks and the loop run once.
-- @tparam int ms
function M.sleep(ms)
  ms = tonumber(ms) or 0
  if ms <= 0 and current_task() then
    coroutine.yield() -- ready again for the next round, after the loop stepped
    return
  end
  park({ deadline = now_ms() + math.max(0, ms) })
end

--- Starts fn(...) as a task; it first runs when the caller next waits.
-- @function spawn
-- @tparam func fn
-- @param ... fn's arguments
-- @treturn Task
-- @raise when fn is not a function
M.spawn = S.spawn

--- A task: a coroutine the scheduler runs, from `e2b.spawn`.
-- @type Task

--- Waits for the task (yielding inside a task).
-- @function wait
-- @return the task function's results
-- @raise the task's error again, with its traceback

--- Whether the task has ended.
-- @function done
-- @treturn boolean

--- Running tasks (the module's functions again, after the Task methods).
-- @section run

--- Runs fn(...) as a task and drives the loop until every task has ended.
-- Nested inside a task it is spawn(fn, ...):wait().
-- @function run
-- @tparam func fn
-- @param ... fn's arguments
-- @return fn's results
-- @raise a task's error; "e2b.run: a task failed: ..." for one nobody waited for
M.run = S.run

return M
