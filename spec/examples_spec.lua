-- The plain-Lua examples are part of the product: each runs to completion
-- against the backend under test (a failed assert inside exits non-zero).
-- examples/openresty is run by spec/ngx/openresty_test.lua.
local h = require("spec.helpers")

local function run_example(name)
  -- The examples are Lua 5.4 (<close>). Under another interpreter the
  -- package paths are that interpreter's, and under the sanitizer build the
  -- preloaded runtime would also reach the commands the examples start
  -- (curl hangs with it): there lua5.4 uses its installed rock.
  local own = h.lua_bin == "lua5.4" and not os.getenv("LD_PRELOAD")
  local unset = own and "" or "env -u LUA_PATH -u LUA_CPATH -u LD_PRELOAD "
  local p = assert(io.popen(("%slua5.4 examples/%s 2>&1; echo \"exit=$?\""):format(unset, name), "r"))
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

  it("serve_page.lua serves a page from the sandbox and fetches it through url()", function()
    local out = run_example("serve_page.lua")
    assert.truthy(out:find("\nexit=0\n$"), out)
    assert.truthy(out:find("fetched: <h1>Hello from ", 1, true), out)
  end)
end)
