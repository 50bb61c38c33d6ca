-- scripts/rock_test.lua: what `luarocks test` runs (rockspec test section),
-- by the interpreter of the rock's Lua version. It runs this checkout's
-- specs (lua/, and the core.so `luarocks make` left in build.luarocks/ or
-- else the installed one) with busted under `e2b-local exec`, since the
-- specs only ever talk to a loopback e2b-local.
--
-- e2b-local: $E2B_LOCAL_BIN, else the one `luarocks make` just built, else
-- `e2b-local` on PATH. Arguments: busted's (default: every spec this Lua
-- can parse; the others use Lua 5.4 syntax and are listed as skipped).
local args = { ... }

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function ok_status(a, b, c) -- os.execute's result in 5.1 and 5.2+
  if type(a) == "number" then return a == 0 end
  return a == true and b == "exit" and c == 0
end

local lua = arg and arg[-1] or "lua"
local e2b_local = os.getenv("E2B_LOCAL_BIN")
if not e2b_local or e2b_local == "" then
  e2b_local = exists("build.luarocks/emulator/e2b-local") and "build.luarocks/emulator/e2b-local" or "e2b-local"
end

local specs = {}
if #args == 0 then
  local list = assert(io.popen("find spec -name '*_spec.lua' -not -path '*/node_modules/*' | sort"))
  for file in list:lines() do
    if loadfile(file) then
      specs[#specs + 1] = file
    else
      io.stderr:write("rock_test: skipped (Lua 5.4 syntax): ", file, "\n")
    end
  end
  list:close()
  args = specs
end

-- build.luarocks/ holds what the last `luarocks make` built, maybe for
-- another Lua: its core.so is used only when this interpreter can load it.
local cpath = (os.getenv("LUA_CPATH") or "") .. ";;"
if package.loadlib("build.luarocks/lib/e2b/core.so", "luaopen_e2b_core") then
  cpath = "build.luarocks/lib/?.so;" .. cpath
end
local path = "lua/?.lua;lua/?/init.lua;" .. (os.getenv("LUA_PATH") or "") .. ";;"
local words = { quote(e2b_local), "exec --", "env", "LUA_PATH=" .. quote(path), "LUA_CPATH=" .. quote(cpath),
  "busted", "--lua=" .. quote(lua) }
for _, a in ipairs(args) do words[#words + 1] = quote(a) end
local command = table.concat(words, " ")
io.stderr:write("rock_test: ", command, "\n")
os.exit(ok_status(os.execute(command)) and 0 or 1)
