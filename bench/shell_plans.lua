-- bench/shell_plans.lua: what each shortcut of core/src/kept/shline.c saves
-- end to end. Each pair runs the same work as a kept command string under
-- its shortcut and under the plain plan (eval in a subshell): `true` against
-- `{ true; }`, `ls /` against `ls /;`, `cd /; ls` against `cd /; ls;`
-- (core/tests/test_shline.c proves which plan each gets). Interleaved rounds,
-- the order flipped every round; wall ms per run(); numbers, not assertions.
--   e2b-local exec -- lua5.4 bench/shell_plans.lua [per_round=40] [rounds=10]
local e2b = require("e2b")

local per, rounds = tonumber(arg[1]) or 40, tonumber(arg[2]) or 10
local PAIRS = {
  { "own shell", "true", "{ true; }" },
  { "exec", "ls /", "ls /;" },
  { "list exec", "cd /; ls", "cd /; ls;" },
}

local function now_ms()
  local p = assert(io.popen("date +%s%N"))
  local ns = p:read("n")
  p:close()
  return ns / 1e6
end

local client = assert(e2b.client())
local sbx = assert(client:create())
local times = {}
for r = 1, rounds do
  for _, pair in ipairs(PAIRS) do
    for k = 0, 1 do
      local i = 2 + (r + k) % 2
      local cmd = pair[i]
      local t0 = now_ms()
      for _ = 1, per do assert(sbx:run(cmd)) end
      times[cmd] = times[cmd] or {}
      table.insert(times[cmd], (now_ms() - t0) / per)
    end
  end
end
sbx:kill()

local function quartiles(v)
  table.sort(v)
  return v[#v // 4 + 1], v[#v // 2 + 1], v[(3 * #v) // 4]
end
io.write(("%d rounds of %d runs each; ms per run: median (q1-q3)\n"):format(rounds, per))
for _, pair in ipairs(PAIRS) do
  local a1, a2, a3 = quartiles(times[pair[2]])
  local b1, b2, b3 = quartiles(times[pair[3]])
  io.write(("%-9s %-10s %.2f (%.2f-%.2f)   plain %-12s %.2f (%.2f-%.2f)   saves %.2f\n")
    :format(pair[1], "'" .. pair[2] .. "'", a2, a1, a3, "'" .. pair[3] .. "'", b2, b1, b3, b2 - a2))
end
