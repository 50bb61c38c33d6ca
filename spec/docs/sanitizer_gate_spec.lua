-- The sanitized pass of scripts/test.sh fails a spec file whose log holds a
-- sanitizer report, even when every test of it printed `ok`: a leak
-- LeakSanitizer finds as the Lua process (or e2b-local) exits comes after
-- the last TAP line, where no count of `ok` and `not ok` sees it. The
-- reading is scripts/sanitizer_reports.sh's (and, for the servers a spec
-- starts itself, spec/helpers.lua's); these feed them captured logs.

-- Paths relative to the checkout, wherever busted was started.
local root = debug.getinfo(1, "S").source:match("^@(.-)spec/docs/sanitizer_gate_spec%.lua$") or ""

local TAP_OK = "ok 1 - a spec that passed\nok 2 - another\n1..2\n"

-- A report in the shape gcc's LeakSanitizer prints at the end of a spec
-- file's log (frames as they read with the binding kept mapped).
local LEAK = [[
=================================================================
==2840217==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 96 byte(s) in 1 object(s) allocated from:
    #0 0x7f3c2b8fd9c7 in malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x7f3c2a1d5e2b in e2b_alloc core/src/mem.c:19
    #2 0x7f3c2a1f0c11 in sbx_info_parse core/src/control/info.c:88

SUMMARY: AddressSanitizer: 96 byte(s) leaked in 1 allocation(s).
]]

local USE_AFTER_FREE = [[
=================================================================
==51==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x55d1 bp 0x7ffd sp 0x7ffc
READ of size 1 at 0x602000000010 thread T0
    #0 0x55d1 in envd_frame emulator/src/agent/agent_relay.c:140
SUMMARY: AddressSanitizer: heap-use-after-free emulator/src/agent/agent_relay.c:140 in envd_frame
]]

local UB = "core/src/codec.c:41:17: runtime error: left shift of 255 by 24 places cannot be represented in type 'int'\n"
  .. "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior core/src/codec.c:41:17\n"

-- LeakSanitizer's tracer crashed (google/sanitizers#1353): nothing was checked.
local NO_CHECK = "==77==LeakSanitizer has encountered a fatal error.\n"

local function write(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

-- The script's output and exit status for these logs.
local function scan(...)
  local args = {}
  for i, path in ipairs({ ... }) do args[i] = "'" .. path .. "'" end
  local p = assert(io.popen("sh '" .. root .. "scripts/sanitizer_reports.sh' " .. table.concat(args, " ")
    .. " 2>&1; echo \"status=$?\""))
  local out = p:read("a")
  p:close()
  local status = tonumber(out:match("status=(%d+)\n$"))
  return out:gsub("status=%d+\n$", ""), status
end

describe("the sanitized busted pass (scripts/sanitizer_reports.sh)", function()
  local made = {}
  local function log(text)
    made[#made + 1] = write(text)
    return made[#made]
  end
  after_each(function()
    for _, path in ipairs(made) do os.remove(path) end
    made = {}
  end)

  it("fails a file whose tests all passed when LeakSanitizer reports at its exit, naming it", function()
    local clean, leaky = log(TAP_OK), log(TAP_OK .. LEAK)
    local out, status = scan(clean, leaky)
    assert.equal(1, status)
    assert.truthy(out:find("sanitizer report in " .. leaky .. ":\n", 1, true), out)
    assert.falsy(out:find(clean, 1, true), out)
    -- the report is in the output, from its first line to its summary
    assert.truthy(out:find("in sbx_info_parse core/src/control/info.c:88", 1, true), out)
    assert.truthy(out:find("SUMMARY: AddressSanitizer: 96 byte(s) leaked", 1, true), out)
  end)

  it("fails on AddressSanitizer's errors and UBSan's runtime errors", function()
    for _, report in ipairs({ USE_AFTER_FREE, UB }) do
      local path = log("ok 1 - x\n" .. report .. "1..1\n")
      local out, status = scan(path)
      assert.equal(1, status, report)
      -- the report's first line is shown
      assert.truthy(out:find(report:match("[^\n]*[Ee][Rr][Rr][Oo][Rr][^\n]*"), 1, true), out)
    end
  end)

  it("tells a leak check that did not run (test.sh runs that file once more) from a report", function()
    local unchecked = log("ok 1 - x\n1..1\nTracer caught signal 11: addr=0x450 pc=0x7f86 sp=0x7f86\n" .. NO_CHECK)
    local out, status = scan(unchecked)
    assert.equal(3, status, out)
    assert.truthy(out:find("leak check did not run in " .. unchecked .. ":\n", 1, true), out)
    -- beside a report, the report decides
    local _, both = scan(unchecked, log(TAP_OK .. LEAK))
    assert.equal(1, both)
  end)

  it("passes a log that only names the sanitizers (a test's title, an expected message)", function()
    local path = log("ok 1 - LeakSanitizer: detected memory leaks is what this title says\n"
      .. "# ERROR: AddressSanitizer in a comment, runtime error: without a source position\n1..1\n")
    local out, status = scan(path)
    assert.equal(0, status, out)
    assert.equal("", out)
  end)

  it("reads the same in the log of a server a spec starts itself (helpers' serve_local)", function()
    local h = require("spec.helpers")
    for _, report in ipairs({ LEAK, USE_AFTER_FREE, UB, NO_CHECK }) do
      local found = h.sanitizer_report("09:00:00.000 e2b-local: stopped\n" .. report)
      assert.truthy(found and found:find(report:match("[^\n]*[Ee][Rr][Rr][Oo][Rr][^\n]*"), 1, true), report)
    end
    assert.is_nil(h.sanitizer_report("ok 1 - LeakSanitizer: detected memory leaks\nruntime error: x\n"))
  end)

  it("fails when a log is missing (a run that wrote none is no clean run)", function()
    local out, status = scan(root .. "spec/docs/no-such-log.log")
    assert.equal(2, status)
    assert.truthy(out:find("cannot read", 1, true), out)
  end)
end)
