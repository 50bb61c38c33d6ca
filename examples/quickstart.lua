-- quickstart: create a sandbox, run commands, move files, kill it.
--
--   e2b-local exec -- lua5.4 examples/quickstart.lua      (local, no account)
--   e2b-local exec -- luajit examples/quickstart.lua      (LuaJIT / Lua 5.1 too)
--   E2B_API_KEY=e2b_... lua5.4 examples/quickstart.lua     (E2B cloud)
local e2b = require("e2b")

-- Shows bytes readably: control characters and non-ASCII as escapes.
local function show(bytes)
  return '"' .. bytes:gsub("[%c\128-\255\\\"]", function(c)
    local named = { ["\n"] = "\\n", ["\t"] = "\\t", ["\\"] = "\\\\", ['"'] = '\\"' }
    return named[c] or ("\\x%02x"):format(c:byte())
  end) .. '"'
end

local client = assert(e2b.client{})
print(("lua-e2b %s -> %s"):format(e2b.VERSION, client.api_url))

assert(client:probe())

-- An owned sandbox is killed by kill() below, by close(), or when the handle
-- is collected (Lua 5.4 can also say `local sbx <close> = ...`).
local sbx = assert(client:create{ metadata = { example = "quickstart" } })
print(("created sandbox %s (id %s, template %s)"):format(sbx.sandbox_id, sbx.id, sbx.template))

-- A shell command: stdout, stderr and the exit code, byte for byte.
local r = assert(sbx:run("echo hello from $(hostname); echo oops >&2; exit 3"))
print(("run: exit %d, stdout %s, stderr %s"):format(r.exit_code, show(r.stdout), show(r.stderr)))

-- An argv command with its own environment and working directory.
r = assert(sbx:run({ "sh", "-c", 'printf "%s in %s" "$GREETING" "$PWD"' },
  { env = { GREETING = "hi" }, cwd = "/tmp" }))
print("argv run: " .. r.stdout)

-- Bytes go in and come out exactly: NUL and invalid UTF-8 included.
local blob = "line 1\n\0binary\255\254 no final newline"
assert(sbx.files:write("/home/user/blob.bin", blob))
local back = assert(sbx.files:read("/home/user/blob.bin"))
assert(back == blob, "bytes changed on the way")
print("files: read back " .. show(back))
-- A command starts in the user's home, so a relative path also holds where
-- sandboxes run without isolation (`e2b-local --no-isolation`: there an
-- absolute path inside a command string is the host's).
r = assert(sbx:run("wc -c < blob.bin"))
print(("files: wrote %d bytes, the sandbox counts %s"):format(#blob, r.stdout:gsub("%s+$", "")))
local st = assert(sbx.files:stat("/home/user/blob.bin"))
print(("stat: %s is a %s of %d bytes, %s"):format(st.path, st.type, st.size, st.permissions))

-- stdin bytes, then EOF.
r = assert(sbx:run("tr a-z A-Z", { stdin = "shout this\n" }))
io.write("stdin: " .. r.stdout)

-- Two commands at once in two tasks: about one second, not two.
local t0 = os.time()
e2b.run(function()
  local a = e2b.spawn(function() return assert(sbx:run("sleep 1; echo first")).stdout end)
  local b = e2b.spawn(function() return assert(sbx:run("sleep 1; echo second")).stdout end)
  io.write("tasks: " .. a:wait() .. "tasks: " .. b:wait())
end)
print(("two 1 s commands took about %d s"):format(os.time() - t0))

-- A long-lived process: read its output as it comes, then stop it.
local proc = assert(sbx:spawn("for i in 1 2 3; do echo tick $i; sleep 0.2; done; sleep 60"))
local seen = ""
while not seen:find("tick 3") do
  local data = assert(proc:read(5000))
  io.write("spawn: " .. data)
  seen = seen .. data
end
assert(proc:kill())
proc:close()

assert(sbx:kill())
print("killed " .. sbx.sandbox_id .. "; describe now says: " ..
  tostring(select(2, client:describe(sbx.sandbox_id))))
