-- luacheck (Debian's lua-check): `luacheck .` from the top of the tree;
-- scripts/test.sh runs it as one suite. The code runs on Lua 5.4 and on
-- LuaJIT/5.1, so the standard globals are the union of both ("max").
std = "max"
max_line_length = 120
include_files = { "lua/**/*.lua", "spec/**/*.lua", "examples/**/*.lua", "bench/**/*.lua", "scripts/**/*.lua",
  ".luacheckrc" }
exclude_files = { "spec/sdk/node_modules/**" }

-- The specs run under busted. They quote long shell commands and keep
-- results they only look at in failure messages, so line length and unused
-- values are not held against them.
files["spec"] = { std = "+busted", max_line_length = false, ignore = { "211", "311", "111/_" } }
-- Code that runs inside nginx (OpenResty) sees the ngx API; rt.lua looks
-- for it to pick the scheduler.
files["lua/e2b/ngx.lua"] = { read_globals = { "ngx" } }
files["lua/e2b/rt.lua"] = { read_globals = { "ngx" } }
files["spec/ngx"] = { std = "+busted+ngx_lua", max_line_length = false }
files["examples/openresty"] = { std = "+ngx_lua" }
files["bench"] = { std = "+ngx_lua" }
