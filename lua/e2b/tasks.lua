-- e2b.tasks: the task logic both scheduler adapters share, written once
-- (hiredis' adapters/ are the model): waits on core requests (who waits
-- for which request, waking them when it progressed), tasks (start, finish,
-- join), the errors of tasks nobody joined, and e2b.run. e2b.sched (plain
-- Lua) and e2b.ngx (OpenResty) are thin adapters: they supply how a caller
-- parks and is resumed and how a task's thread starts, and drive the loop.
--
--   local S = require("e2b.tasks").new(prim)
--
-- prim (the adapter's primitives):
--   park(entry, deadline) -> boolean  parks the caller until S.wake(entry)
--       (true) or the monotonic deadline passes (false; the adapter calls
--       S.cancel(entry) then). entry.ids lists the request ids of an await.
--   signal(entry)       entry was woken: resume its parked caller (later).
--   launch(t, body) -> ok, err  runs body() as task t's thread, not before
--       the caller next waits; when it ends the adapter calls
--       S.finish(t, ok, results, traceback).
--   current() -> task   the caller's task, or nil.
--   run_group() -> group  the group the tasks of an outermost run join.
--   settle(group)       parks the caller until group.live == 0.
--   default_group       the group of tasks spawned outside any task (or nil).
--   orphan(t)           optional: a failed task with no group nobody joined.
--   check(what)         optional: raises when the caller cannot wait here.
-- A group is { live = count, orphans = { failed tasks nobody joined } }.
local cancel = require("e2b.cancel")
local unpack = table.unpack or unpack

local M = {}

function M.pack(...)
  return { n = select("#", ...), ... }
end
local pack = M.pack

local function nop() end

function M.new(prim)
  local check = prim.check or nop
  local S = {}

  -- ---- waits on core requests ----

  local waiters = {} -- request id -> array of wait entries
  S.waiters = waiters

  local function register(entry)
    local ids = entry.ids
    for i = 1, #ids do
      local list = waiters[ids[i]]
      if not list then list = {}; waiters[ids[i]] = list end
      list[#list + 1] = entry
    end
  end

  local function unregister(entry)
    local ids = entry.ids
    if not ids then return end
    for i = 1, #ids do
      local list = waiters[ids[i]]
      if list then
        for j = #list, 1, -1 do
          if list[j] == entry then table.remove(list, j) end
        end
        if #list == 0 then waiters[ids[i]] = nil end
      end
    end
  end

  -- Wakes a parked entry with value (true: what it waited for happened).
  function S.wake(entry, value)
    if entry.woken then return end
    entry.woken = true
    entry.value = value
    unregister(entry)
    prim.signal(entry)
  end
  local wake = S.wake

  -- The entry's own caller gives up (its deadline passed): no resumption.
  -- Returns false when it had been woken already.
  function S.cancel(entry)
    if entry.woken then return false end
    entry.woken = true
    entry.value = false
    unregister(entry)
    return true
  end

  -- Wakes whoever waits on these request ids (the loop notified them).
  function S.deliver(ids)
    for i = 1, #ids do
      local list = waiters[ids[i]]
      if list then
        waiters[ids[i]] = nil
        for j = 1, #list do wake(list[j], true) end
      end
    end
  end

  function S.await(reqs, deadline)
    check("a lua-e2b call")
    if type(reqs) ~= "table" then reqs = { reqs } end
    -- a call made with a cancel token: its token may cancel these meanwhile
    local token = cancel.watch(reqs)
    local ids = {}
    for i = 1, #reqs do
      if token and reqs[i]:done() then return true end -- canceled already
      ids[i] = reqs[i]:id()
    end
    local entry = { ids = ids, woken = false }
    register(entry)
    local woke = prim.park(entry, deadline)
    if token then cancel.unwatch(token, reqs) end
    return woke
  end

  -- ---- tasks ----

  local Task = {}
  Task.__index = Task
  S.Task = Task

  local function take_orphan(t)
    local g = t.group
    if not g then return end
    for i, o in ipairs(g.orphans) do
      if o == t then table.remove(g.orphans, i) return end
    end
  end

  -- Called by the adapter when task t's function returned (ok) or raised.
  function S.finish(t, ok, results, traceback)
    t.finished = true
    if ok then
      t.results = results
    else
      t.error, t.traceback = results[1], traceback
    end
    local joiners = t.joiners
    t.joiners = nil -- wait() on a finished task returns at once
    if not ok and #joiners == 0 then
      if t.group then
        t.group.orphans[#t.group.orphans + 1] = t
      elseif prim.orphan then
        prim.orphan(t)
      end
    end
    for i = 1, #joiners do wake(joiners[i], true) end
    local g = t.group
    if g then g.live = g.live - 1 end
    if g and g.live == 0 and g.settler then wake(g.settler, true) end
  end

  local function start(group, fn, args)
    local t = setmetatable({ joiners = {}, group = group, finished = false }, Task)
    if group then group.live = group.live + 1 end
    local ok, err = prim.launch(t, function() return fn(unpack(args, 1, args.n)) end)
    if not ok then
      if group then group.live = group.live - 1 end
      error("e2b.spawn: " .. tostring(err), 3)
    end
    return t
  end

  function S.spawn(fn, ...)
    assert(type(fn) == "function", "e2b.spawn: fn must be a function")
    check("e2b.spawn")
    local parent = prim.current()
    local group = parent and parent.group
    if not parent then group = prim.default_group end
    return start(group, fn, pack(...))
  end

  function Task:wait()
    if not self.finished then
      check("task:wait")
      local entry = { woken = false }
      self.joiners[#self.joiners + 1] = entry
      prim.park(entry)
    end
    if self.error ~= nil then
      take_orphan(self)
      error(self.traceback or self.error, 0)
    end
    return unpack(self.results, 1, self.results.n)
  end

  function Task:done()
    return self.finished == true
  end

  function S.run(fn, ...)
    assert(type(fn) == "function", "e2b.run: fn must be a function")
    check("e2b.run")
    if prim.current() then
      -- Nested inside a task: the outer run owns the other tasks.
      return S.spawn(fn, ...):wait()
    end
    local group = prim.run_group()
    local main = start(group, fn, pack(...))
    prim.settle(group)
    local orphan = table.remove(group.orphans, 1)
    if orphan and orphan ~= main then
      error("e2b.run: a task failed: " .. (orphan.traceback or tostring(orphan.error)), 0)
    end
    return main:wait()
  end

  return S
end

return M
