-- The plain-Lua examples are part of the product: each runs to completion
-- against the backend under test (a failed assert inside exits non-zero).
-- examples/openresty is run by spec/ngx/openresty_test.lua.
local h = require("spec.helpers")

-- env: "NAME=value ..." for the example (another server's variables).
local function run_example(name, lua, env)
  -- The examples run on Lua 5.4 and LuaJIT alike. Under another interpreter
  -- than this one the package paths are that interpreter's, and under the
  -- sanitizer build the preloaded runtime would also reach the commands the
  -- examples start (curl hangs with it): there the interpreter uses its
  -- installed rock.
  lua = lua or "lua5.4"
  local own = h.lua_bin == lua and not os.getenv("LD_PRELOAD")
  local unset = own and "" or "-u LUA_PATH -u LUA_CPATH -u LD_PRELOAD "
  local p = assert(io.popen(("env %s%s %s examples/%s 2>&1; echo \"exit=$?\""):format(unset, env or "", lua, name), "r"))
  local out = p:read("a")
  p:close()
  return out
end

describe("examples", function()
  it("quickstart.lua runs end to end", function()
    local out = run_example("quickstart.lua")
    assert.truthy(out:find("\nexit=0\n$"), out)
    assert.truthy(out:find("created sandbox", 1, true), out)
  end)

  it("quickstart.lua runs end to end under e2b-local --no-isolation (where bubblewrap cannot run)", function()
    if h.live then return end
    local vars, stop = h.serve_local("--no-isolation")
    local env = {}
    for _, k in ipairs({ "E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_API_KEY", "E2B_CA_FILE" }) do
      env[#env + 1] = k .. "=" .. h.shell_quote(vars[k] or "")
    end
    local out = run_example("quickstart.lua", nil, table.concat(env, " "))
    stop()
    assert.truthy(out:find("\nexit=0\n$"), out)
    assert.truthy(out:find("the sandbox counts 33\n", 1, true), out)
    assert.truthy(out:find("spawn: tick 3\n", 1, true), out)
  end)

  it("quickstart.lua runs on LuaJIT too", function()
    local out = run_example("quickstart.lua", "luajit")
    assert.truthy(out:find("\nexit=0\n$"), out)
    assert.truthy(out:find("killed ", 1, true), out)
  end)

  it("stream_lines.lua follows a job line by line, stdout and stderr apart, on LuaJIT too", function()
    assert.truthy(run_example("stream_lines.lua", "luajit"):find("\nexit=0\n$"))
    local out = run_example("stream_lines.lua")
    assert.truthy(out:find("\nexit=0\n$"), out)
    assert.truthy(out:find("[stdout] step 5/5: compiling\n", 1, true), out)
    assert.truthy(out:find("[stderr] warning: step 3 is slow\n", 1, true), out)
    assert.truthy(out:find("[stdout] done\nexit 0 after 6 stdout and 1 stderr lines", 1, true), out)
  end)

  it("serve_page.lua serves a page from the sandbox and fetches it through url(), on LuaJIT too", function()
    local out = run_example("serve_page.lua", "luajit")
    assert.truthy(out:find("\nexit=0\n$"), out)
    out = run_example("serve_page.lua")
    assert.truthy(out:find("\nexit=0\n$"), out)
    assert.truthy(out:find("fetched: <h1>Hello from ", 1, true), out)
  end)
end)
