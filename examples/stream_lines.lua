-- stream_lines: follow a long job line by line as it runs, stdout and stderr
-- apart, then report how it ended.
--
--   e2b-local exec -- lua5.4 examples/stream_lines.lua
--   e2b-local exec -- luajit examples/stream_lines.lua
local e2b = require("e2b")

local client = assert(e2b.client{})
local sbx = assert(client:create{ metadata = { example = "stream_lines" } })

-- A "build" that prints progress slowly, warnings on stderr, and a last line
-- without a newline.
local job = [[
for step in 1 2 3 4 5; do
  echo "step $step/5: compiling"
  [ $step = 3 ] && echo "warning: step 3 is slow" >&2
  sleep 0.2
done
printf 'done'
]]

local proc = assert(sbx:spawn(job, { tag = "build" }))
local counts = { stdout = 0, stderr = 0 }
for line, stream in proc:lines({ timeout_ms = 30000 }) do
  counts[stream] = counts[stream] + 1
  print(("[%s] %s"):format(stream, line))
end
local result = assert(proc:wait())
print(("exit %d after %d stdout and %d stderr lines"):format(result.exit_code, counts.stdout, counts.stderr))
proc:close()
assert(sbx:kill())
