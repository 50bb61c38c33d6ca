-- Parking (issue 12; spawn's park, and the default past 256 such commands):
-- a kept command that runs on has its own stream closed (a connection on
-- each side) and takes its end from its kept files through
-- the sandbox's watch, with a shared process list for a command killed
-- before it could record a status. What a parked command must still give:
-- exact output and status through every way of reading it, a bounded end
-- when it is SIGKILLed, a fallback when the watch breaks, and the same
-- kill/wait/close/detach and paused/killed-sandbox behaviour as before.
-- Fault injection needs e2b-local.
local h = require("spec.helpers")
local e2b = h.e2b

if h.live then return end

local function parked(proc) return proc._req:process().parked end

-- Waits (bounded) until pred() holds; returns whether it did.
local eventually = h.eventually

local function drain(proc)
  local out, err = {}, {}
  while true do
    local data, stream = proc:read(30000)
    if data == nil then
      assert(stream == nil, tostring(stream))
      break
    end
    if stream == "stderr" then err[#err + 1] = data else out[#out + 1] = data end
  end
  return table.concat(out), table.concat(err)
end

local function seq(n)
  local t = {}
  for i = 1, n do t[i] = tostring(i) end
  return table.concat(t, "\n") .. "\n"
end

-- A command that writes a first piece, waits for its go file, then writes
-- a large stdout, a binary stderr and ends with status 3.
local function held(name)
  local go = "/tmp/go-" .. name
  return ("printf 'first\\0'; while [ ! -e %s ]; do sleep 0.05; done; seq 1 40000; printf 'e\\377rr' >&2; exit 3")
    :format(go), go
end
local OUT = "first\0" .. seq(40000)

-- Spawns cmd in sbx with park = true (and opts) and waits until it parked.
local function spawn_parked(sbx, cmd, opts)
  opts = opts or {}
  opts.park = true
  local proc = assert(sbx:spawn(cmd, opts))
  assert.is_true(eventually(function() return parked(proc) end), "never parked")
  return proc
end

-- Lets a held command go and checks its whole result.
local function finish_held(sbx, proc, go)
  assert(sbx:run("touch " .. go))
  local r = assert(proc:wait(30000))
  assert.are.same({ 3, OUT, "e\255rr" }, { r.exit_code, r.stdout, r.stderr })
  proc:close()
end

describe("a parked kept command", function()
  local sbx
  setup(function() sbx = h.sandbox() end)
  teardown(function()
    h.faults()
    h.cleanup()
  end)

  it("streams its output byte-exact through read() and ends with its exact status", function()
    local cmd, go = held("read")
    local proc = spawn_parked(sbx, cmd)
    assert(sbx:run("touch " .. go))
    local out, err = drain(proc)
    assert.are.equal(OUT, out)
    assert.are.equal("e\255rr", err)
    local r = assert(proc:wait(10000))
    assert.are.equal(3, r.exit_code)
    assert.are.equal("exit status 3", r.status)
    proc:close()
  end)

  it("reads exactly what it writes in bursts, each read sized by what the watch last said", function()
    -- Each burst wakes a read sized by the watch's word; the next burst often
    -- lands before that read is served, so reads get more than they asked for.
    local go = "/tmp/go-bursts"
    local proc = spawn_parked(sbx, ("while [ ! -e %s ]; do sleep 0.05; done; for i in $(seq 1 60); do seq 1 2000; sleep 0.003; done")
      :format(go))
    assert(sbx:run("touch " .. go))
    local out = drain(proc)
    assert.are.equal(seq(2000):rep(60), out)
    assert.are.equal(0, assert(proc:wait(10000)).exit_code)
    proc:close()
  end)

  it("gives wait() its exact output and status, and wait(timeout) times out while parked", function()
    local cmd, go = held("wait")
    local proc = spawn_parked(sbx, cmd)
    local r, e = proc:wait(100)
    assert.is_nil(r)
    assert.are.equal("timeout", e.kind)
    finish_held(sbx, proc, go)
  end)

  it("is read whole by another client that attaches by tag", function()
    local cmd, go = held("attach")
    local tag = "park-" .. h.core.uuid4()
    local proc = spawn_parked(sbx, cmd, { tag = tag })
    proc:detach()
    proc:close()
    local other = assert(h.client():connect(sbx.sandbox_id))
    local again = assert(other:attach(tag))
    assert(sbx:run("touch " .. go))
    local out, err = drain(again)
    assert.are.same({ OUT, "e\255rr" }, { out, err })
    assert.are.equal(3, assert(again:wait(10000)).exit_code)
    again:close()
  end)

  it("is reported killed, as envd says it, when SIGKILL from another command ends it", function()
    local proc = spawn_parked(sbx, "printf a; while :; do sleep 0.05; done # park-sigkill")
    assert(sbx:run("pkill -KILL -f park-sigkill; true", { user = "root" }))
    local r = assert(proc:wait(30000))
    assert.are.same({ -1, "a", "signal: killed" }, { r.exit_code, r.stdout, r.status })
    proc:close()
  end)

  -- Only SIGKILL may end a parkable wrapper without a status: any other
  -- signal sent to it is recorded, so parked and unparked handles end alike
  -- (the wrapper ends by that signal once its command ended).
  it("ends as an unparked one does when another signal is sent to its wrapper", function()
    local got = {}
    for _, sig in ipairs({ "USR1", "ALRM", "40" }) do
      for _, park in ipairs({ true, false }) do
        local go = ("/tmp/go-sig-%s-%s"):format(sig, tostring(park))
        local cmd = ("printf a; while [ ! -e %s ]; do sleep 0.05; done; printf b"):format(go)
        -- Unparked: the default, which may park (few commands here: it does not).
        local proc = park and spawn_parked(sbx, cmd) or assert(sbx:spawn(cmd))
        -- Its first output: the wrapper set its traps and started the command.
        assert.are.equal("a", proc:read(30000))
        assert.are.equal(0, sbx:run(("kill -s %s %d"):format(sig, proc.pid)).exit_code)
        assert(sbx:run("touch " .. go))
        local r = assert(proc:wait(30000))
        got[#got + 1] = { sig, parked(proc), r.exit_code, r.stdout, r.status }
        proc:close()
      end
    end
    assert.are.same({
      { "USR1", true, -1, "b", "signal: user defined signal 1" },
      { "USR1", false, -1, "b", "signal: user defined signal 1" },
      { "ALRM", true, -1, "b", "signal: alarm clock" },
      { "ALRM", false, -1, "b", "signal: alarm clock" },
      { "40", true, -1, "b", "signal: signal 40" },
      { "40", false, -1, "b", "signal: signal 40" },
    }, got)
  end)

  it("never takes a process list that failed for one that says the command is gone", function()
    local cmd, go = held("nolist")
    local proc = spawn_parked(sbx, cmd)
    h.faults({ { match = "POST envd:/process.Process/List", action = "status", status = 503, count = 6 } })
    -- Long enough for several of the shared lists to fail.
    local r, e = proc:wait(5000)
    h.faults()
    assert.is_nil(r, "a failed list ended the command")
    assert.are.equal("timeout", e.kind)
    finish_held(sbx, proc, go)
  end)

  it("is killed by kill() and by close(), and outlives detach()", function()
    local a = assert(sbx:spawn("printf k; sleep 60", { park = true }))
    local b = assert(sbx:spawn("sleep 61", { park = true }))
    local unasked = assert(sbx:spawn("sleep 63"))
    assert.is_true(eventually(function() return parked(a) and parked(b) end), "never parked")
    assert.is_false(parked(unasked), "parked by default with few commands running on")
    assert(unasked:kill())
    assert.are.equal("signal: killed", assert(unasked:wait(30000)).status)
    unasked:close()
    assert.is_true(assert(a:kill()))
    local r = assert(a:wait(30000))
    assert.are.same({ -1, "k", "signal: killed" }, { r.exit_code, r.stdout, r.status })
    a:close()
    b:close()
    assert.is_true(eventually(function() return h.count_procs(sbx, "[s]leep 61") == "0\n" end), "close left it running")
    local c = assert(sbx:spawn("sleep 62", { park = true }))
    assert.is_true(eventually(function() return parked(c) end), "never parked")
    c:detach()
    c:close()
    assert.are_not.equal("0\n", h.count_procs(sbx, "[s]leep 62"))
    assert(sbx:run("pkill -KILL -f 'sleep 62'; true", { user = "root" }))
  end)
end)

describe("a parked kept command whose watch or sandbox goes", function()
  teardown(function()
    h.faults()
    h.cleanup()
  end)

  it("falls back to its own stream when the watch breaks, and still ends exactly", function()
    local sbx = h.sandbox()
    -- The watch of this new sandbox is cut once, after the command parked:
    -- another command's writes make the events that reach the cut.
    h.faults({ { match = "POST envd:/filesystem.Filesystem/WatchDir", action = "drop_mid_stream",
                 after_events = 40, count = 1 } })
    local cmd, go = held("watch")
    local proc = spawn_parked(sbx, cmd)
    -- enough writes that 40 events reach the watch even when a loaded host coalesces them
    local noisy = assert(sbx:spawn("for i in $(seq 1 600); do echo $i; sleep 0.01; done"))
    assert.is_true(eventually(function() return not parked(proc) end), "still parked after the watch broke")
    assert(noisy:wait(30000))
    noisy:close()
    h.faults()
    finish_held(sbx, proc, go)
  end)

  it("ends not_found when its sandbox is killed, long before its idle timeout", function()
    local sbx = h.sandbox()
    local proc = spawn_parked(sbx, "sleep 60", { idle_timeout_ms = 30000 })
    assert(assert(h.client():connect(sbx.sandbox_id)):kill())
    local t0 = h.now_ms()
    local r, e = proc:wait(60000)
    assert.is_nil(r)
    assert.are.equal("not_found", e.kind)
    assert.is_true(h.now_ms() - t0 < 2000)
    proc:close()
  end)

  it("finishes exactly across a memory pause and resume", function()
    local sbx, client = h.sandbox()
    local cmd, go = held("pause")
    local proc = spawn_parked(sbx, cmd)
    assert(sbx:pause({ mode = "memory" }))
    local r, e = proc:wait(500)
    assert.is_nil(r)
    assert.are.equal("timeout", e.kind)
    assert(client:connect(sbx.sandbox_id))
    finish_held(sbx, proc, go)
  end)
end)

describe("e2b-local's log while commands park", function()
  it("says nothing when a client closes a stream it no longer needs, and still reports one cut short", function()
    local log = h.with_local_server("--log-requests", function(client, vars)
      local sbx = assert(client:create({}))
      -- A real failure first: a Start stream cut after its first message.
      h.faults({ { match = "POST envd:/process.Process/Start", action = "drop_mid_stream",
                   after_events = 1, count = 1 } }, 1, vars)
      local cut = assert(sbx:spawn("sleep 0.3; echo cut"))
      assert.are.equal("cut\n", assert(cut:wait(30000)).stdout)
      cut:close()
      h.faults(nil, nil, vars)
      -- A request the log names marks where the ordinary closes begin.
      h.host(("curl -s -o /dev/null '%s/sandboxes/park-log-marker'"):format(vars.E2B_API_URL))
      local proc = spawn_parked(sbx, "sleep 2.5; echo parked")
      local r = assert(proc:wait(30000))
      assert.are.same({ 0, "parked\n" }, { r.exit_code, r.stdout })
      proc:close()
      assert(sbx:kill())
    end)
    local at = assert(log:find("GET /sandboxes/park-log-marker", 1, true), log)
    assert.truthy(log:sub(1, at):find("ended early", 1, true), log)
    assert.is_nil(log:sub(at):find("ended early", 1, true), log)
  end)
end)

-- By default (park not given) a loop's first 256 kept commands that run on
-- keep their streams, and the rest park: thousands of long commands hold a
-- bounded number of streams (track.c's E2B_STREAMS_HELD).
--
-- Hundreds of commands at once must fit the sandboxes' process bound (560
-- tasks each in e2b-local, below a 512 MiB E2B sandbox's), with room: the
-- bound on held streams is the loop's, so the commands alternate between
-- two sandboxes. A kept command that waits is three tasks: the wrapper's
-- bash, its subshell (wrapper.c) and what runs the command. So each waits in
-- bash builtins, blocked opening a FIFO no one writes yet, and the release
-- forks nothing: 132 commands a sandbox peak near 400 tasks. (They waited in
-- `flock -s LOCK echo N`, and at the release every flock forked its echo
-- at once, a fourth task each: about 1060 at the peak in one sandbox on a
-- loaded machine, so some fork failed with EAGAIN and flock exited 71.)
describe("kept commands that run on, by default", function()
  local HELD = 256
  local boxes
  setup(function() boxes = { (h.sandbox()), (h.sandbox()) } end)
  teardown(h.cleanup)
  -- command i's sandbox
  local function box(i) return i % 2 + 1 end

  -- n commands that wait to read a line from the FIFO gate (one in each
  -- sandbox), spawned at once.
  local function blocked(n, gate)
    for _, b in ipairs(boxes) do assert.are.equal(0, b:run("mkfifo " .. gate).exit_code) end
    return e2b.run(function()
      local tasks = {}
      for i = 1, n do
        tasks[i] = e2b.spawn(function()
          return assert(boxes[box(i)]:spawn(("read -r _ < %s; echo %d"):format(gate, i)))
        end)
      end
      local out = {}
      for i = 1, n do out[i] = tasks[i]:wait() end
      return out
    end)
  end

  local function parked_count(procs)
    local c = 0
    for _, p in ipairs(procs) do if parked(p) then c = c + 1 end end
    return c
  end

  -- Opens each sandbox's gate with a line for each of its readers (procs,
  -- and `extra` more in the first sandbox), checks every command's exact
  -- end, then closes the gates (a writer stays until every reader has its
  -- line: one that opens late still finds one).
  local function release(gate, procs, extra)
    local lines = { extra or 0, 0 }
    for i = 1, #procs do lines[box(i)] = lines[box(i)] + 1 end
    local writers = {}
    for k, b in ipairs(boxes) do
      writers[k] = assert(b:spawn("exec cat > " .. gate, { stdin = true, park = false }))
      assert(writers[k]:write(("\n"):rep(lines[k])))
    end
    for i, p in ipairs(procs) do
      local r = assert(p:wait(30000))
      assert.are.same({ 0, i .. "\n" }, { r.exit_code, r.stdout }, r.stderr)
      p:close()
    end
    for _, writer in ipairs(writers) do
      assert(writer:close_stdin())
      assert.are.equal(0, assert(writer:wait(30000)).exit_code)
      writer:close()
    end
  end

  it("keeps the streams of the first 256, parks the rest, and never parks park = false", function()
    local n = HELD + 8
    local procs = blocked(n, "/tmp/held-a")
    local unparked = assert(boxes[1]:spawn("read -r _ < /tmp/held-a; echo none", { park = false }))
    assert.is_true(eventually(function() return parked_count(procs) == n - HELD end, 30000),
      "parked: " .. parked_count(procs))
    -- Every command is past its 2 s by now: no more park, whatever the watch says.
    e2b.sleep(2500)
    assert.are.equal(n - HELD, parked_count(procs))
    assert.is_false(parked(unparked))
    release("/tmp/held-a", procs, 1)
    assert.are.same({ 0, "none\n" }, (function(r) return { r.exit_code, r.stdout } end)(assert(unparked:wait(30000))))
    unparked:close()
  end)

  it("gives a stream back when its command ends and its handle closes, so the next ones keep theirs", function()
    -- As the test above: a stream held past its end would make more of these park.
    local n = HELD + 4
    local procs = blocked(n, "/tmp/held-b")
    assert.is_true(eventually(function() return parked_count(procs) == n - HELD end, 30000),
      "parked: " .. parked_count(procs))
    e2b.sleep(2500)
    assert.are.equal(n - HELD, parked_count(procs))
    release("/tmp/held-b", procs)
  end)
end)
