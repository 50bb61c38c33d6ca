-- client:create{ mcp = config }: a sandbox with an MCP gateway, as the
-- official SDKs make one (Sandbox.create({ mcp }), getMcpUrl, getMcpToken):
-- the create names the configuration and, without a template, E2B's
-- "mcp-gateway" template; then `mcp-gateway --config <json>` runs as root
-- with a fresh access token in GATEWAY_ACCESS_TOKEN; a failure to start it
-- removes the sandbox. e2b-local has no such template (it answers as E2B
-- does for a missing one), so the gateway here is a stand-in that records
-- what it was given, in a template a second e2b-local builds.
local h = require("spec.helpers")
local cjson = require("cjson")

if h.live then return end

-- The stand-in: writes its configuration and the token where the real
-- gateway keeps its token (/etc/mcp-gateway/.token), and its arguments'
-- count; "fail" in the configuration makes it refuse it.
local GATEWAY = [[#!/bin/sh
mkdir -p /etc/mcp-gateway
case "$2" in *fail*) echo "gateway: bad configuration" >&2; exit 3;; esac
printf '%s' "$2" > /etc/mcp-gateway/config.json
printf '%s' "$GATEWAY_ACCESS_TOKEN" > /etc/mcp-gateway/.token
printf '%s %s %s' "$#" "$1" "$(id -u)" > /etc/mcp-gateway/argv
]]

local SECRET = "ghp-Kq81-never-on-a-command-line"
local CONFIG = { github = { githubPersonalAccessToken = SECRET }, ["exa"] = { apiKey = "k\"\\\n\1\226\130\172" } }

describe("mcp", function()
  local client
  setup(function() client = h.client() end)
  after_each(h.cleanup)

  it("asks for E2B's mcp-gateway template, and a server without it answers not_found", function()
    local before = #assert(client:list({ metadata = { mcpspec = "1" } }))
    local sbx, err = client:create({ mcp = CONFIG, metadata = { mcpspec = "1" } })
    assert.is_nil(sbx)
    assert.are.equal("not_found", err.kind)
    assert.matches("template 'mcp-gateway' not found", err.message, 1, true)
    assert.is_nil(tostring(err):find(SECRET, 1, true))
    assert.are.equal(before, #assert(client:list({ metadata = { mcpspec = "1" } })))
  end)

  it("refuses an mcp configuration that is no table of JSON values, naming the field", function()
    for _, bad in ipairs({ "x", 5, { 1, 2 }, { a = function() end }, { a = 0 / 0 }, { [1] = "a", b = "c" },
                           { a = "\255" } }) do
      local sbx, err = client:create({ mcp = bad })
      assert.is_nil(sbx)
      assert.are.equal("invalid_argument", err.kind)
      assert.are.equal("mcp", err.field)
    end
  end)

  it("starts the gateway with the configuration and a token of its own, and gives its URL and token", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. h.shell_quote(dir)))
    -- root's home is the template's to keep: the stand-in goes on root's login PATH there
    h.write_file(dir .. "/mcp.sh", "mkdir -p /root/bin && cat > /root/bin/mcp-gateway <<'EOF'\n" .. GATEWAY ..
      "EOF\nchmod 755 /root/bin/mcp-gateway\necho 'PATH=/root/bin:$PATH' >> /root/.profile\n")
    local ok, err = pcall(h.with_local_server, "--template mcp-gateway=" .. h.shell_quote(dir .. "/mcp.sh"),
      function(c2)
        local sbx = assert(c2:create({ mcp = CONFIG }))
        assert.are.equal("mcp-gateway", sbx.template)
        -- the URL of its port 50005, path /mcp
        assert.are.equal(sbx:url(50005) .. "/mcp", sbx:mcp_url())
        assert.matches("^https://50005%-" .. sbx.sandbox_id .. "%.", sbx:mcp_url())
        -- the token the gateway was given, a fresh UUID
        local token = assert(sbx:mcp_token())
        assert.matches("^%x+%-%x+%-4%x+%-[89ab]%x+%-%x+$", token)
        local read = function(p) return (assert(sbx.files:read(p, { user = "root" }))) end
        assert.are.equal(token, read("/etc/mcp-gateway/.token"))
        -- run as root, the configuration as one argument after --config, bytes exact
        assert.are.equal("2 --config 0", read("/etc/mcp-gateway/argv"))
        assert.are.same(CONFIG, cjson.decode(read("/etc/mcp-gateway/config.json")))
        -- a handle that did not create it reads the token the gateway keeps
        local again = assert(c2:connect(sbx.sandbox_id))
        assert.are.equal(token, again:mcp_token())
        -- a sandbox made without mcp has no token to give
        local plain = assert(c2:create({ template = "base" }))
        local none_token, terr = plain:mcp_token()
        assert.is_nil(none_token)
        assert.are.equal("not_found", terr.kind)
        -- a gateway that fails to start: the create fails with its stderr, and no sandbox is left
        local before = #assert(c2:list())
        local none, gerr = c2:create({ mcp = { fail = {} } })
        assert.is_nil(none)
        assert.are.equal("sandbox", gerr.kind)
        assert.matches("gateway: bad configuration", gerr.message, 1, true)
        assert.is_true(h.eventually(function() return #assert(c2:list()) == before end, 10000))
        sbx:kill()
        plain:kill()
      end)
    h.host("rm -rf " .. h.shell_quote(dir))
    assert(ok, err)
  end)
end)
