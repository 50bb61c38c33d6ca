-- bench/cpu_swing.lua: how much this machine's speed moves, before one reads
-- a benchmark's spread. Times the same CPU-bound loop (CPU time, one core)
-- every half second and prints each reading and min / median / max in ms.
-- On this 2-core VM, idle, the loop took 122 to 198 ms from one second to
-- the next (2026-12-06): a wall-time ratio of two clients measured seconds
-- apart carries that swing (bench/burst_paired.mjs pairs them instead).
--   lua5.4 bench/cpu_swing.lua [READINGS=40]
local n = tonumber(arg[1]) or 40
local t = {}
for k = 1, n do
  local c0 = os.clock()
  local x = 0
  for i = 1, 2e7 do x = x + i % 7 end
  t[k] = (os.clock() - c0) * 1000
  os.execute("sleep 0.5")
end
io.write(("%.0f "):rep(n):format(table.unpack(t)), "\n")
table.sort(t)
print(("min / median / max: %.0f / %.0f / %.0f ms"):format(t[1], t[(n + 1) // 2], t[n]))
