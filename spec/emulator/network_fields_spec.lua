-- e2b-local refuses the network fields E2B's API refuses (e2b-dev/infra,
-- packages/api: sandbox create), with 400 and nothing created: never more
-- lenient than E2B. Sent raw, as any SDK could send them.
local h = require("spec.helpers")
local cjson = require("cjson")

if h.live then return end

local api = h.api

-- fn(id, put) with a running sandbox, put(rules) its network update;
-- the sandbox is gone afterwards, whatever fn did.
local function with_sandbox(fn)
  local status, text = api("POST", "/sandboxes", cjson.encode({ templateID = "base", timeout = 30 }))
  assert.are.equal(201, status, text)
  local id = cjson.decode(text).sandboxID
  local function put(rules)
    return api("PUT", "/sandboxes/" .. id .. "/network", cjson.encode({ rules = rules }))
  end
  local ok, err = pcall(fn, id, put)
  api("DELETE", "/sandboxes/" .. id)
  assert(ok, err)
end

local function create(fields)
  local body = { templateID = "base", timeout = 30 }
  for k, v in pairs(fields) do body[k] = v end
  local status, text = api("POST", "/sandboxes", cjson.encode(body))
  if status == 201 then api("DELETE", "/sandboxes/" .. cjson.decode(text).sandboxID) end
  return status, text
end

local function rule(headers) return { { transform = { headers = headers } } } end

describe("e2b-local's network fields", function()
  it("refuses a maskRequestHost E2B refuses: not a string, not host[:port], not ASCII", function()
    for _, mask in ipairs({ 5, "a:b:c", "h\195\169.example", "[::1" }) do
      local status, text = create({ secure = true, network = { maskRequestHost = mask } })
      assert.are.equal(400, status, tostring(mask) .. ": " .. tostring(text))
    end
    assert.are.equal(201, (create({ secure = true, network = { maskRequestHost = "masked.example:${PORT}" } })))
  end)

  it("refuses allowPublicTraffic false on a sandbox that is not secure", function()
    local status, text = create({ secure = false, network = { allowPublicTraffic = false } })
    assert.are.equal(400, status, text)
    assert.are.equal(201, (create({ secure = true, network = { allowPublicTraffic = false } })))
  end)

  it("refuses allowOut domain names without denyOut 0.0.0.0/0, at create and update", function()
    for _, fields in ipairs({
      { network = { allowOut = { "example.com" } } },
      { allow_internet_access = false, network = { allowOut = { "example.com" } } },
      { network = { allowOut = { "example.com" }, denyOut = { "10.0.0.0/8" } } },
      { network = { allowOut = { "*.example.com" } } },
    }) do
      local status, text = create(fields)
      assert.are.equal(400, status, text)
    end
    assert.are.equal(201, (create({ network = { allowOut = { "example.com" }, denyOut = { "0.0.0.0/0" } } })))
    local status, text = api("POST", "/sandboxes", cjson.encode({ templateID = "base", timeout = 30 }))
    assert.are.equal(201, status, text)
    local id = cjson.decode(text).sandboxID
    status = api("PUT", "/sandboxes/" .. id .. "/network", cjson.encode({ allowOut = { "example.com" } }))
    local ok_status = api("PUT", "/sandboxes/" .. id .. "/network",
      cjson.encode({ allowOut = { "example.com" }, denyOut = { "0.0.0.0/0" } }))
    api("DELETE", "/sandboxes/" .. id)
    assert.are.equal(400, status)
    assert.are.equal(204, ok_status)
  end)

  it("refuses unspecified addresses (0.0.0.0, ::) in allowOut and denyOut but the catch-all 0.0.0.0/0", function()
    for _, net in ipairs({
      { denyOut = { "0.0.0.0" } }, { denyOut = { "::/0" } }, { denyOut = { "0.0.0.0/8" } },
      { allowOut = { "0.0.0.0/1" }, denyOut = { "0.0.0.0/0" } }, { allowOut = { "::" } },
    }) do
      local status, text = create({ network = net })
      assert.are.equal(400, status, cjson.encode(net) .. ": " .. tostring(text))
    end
    assert.are.equal(201, (create({ network = { allowOut = { "0.0.0.0/0", "::1/0" }, denyOut = { "0.0.0.0/0" } } })))
  end)

  it("refuses an IP address as a network.rules key (E2B takes domain names only), at create and update", function()
    local ips = { "127.0.0.1", "10.1.2.3", "::1", "[::1]", "fe80::1" }
    with_sandbox(function(id, put)
      for _, ip in ipairs(ips) do
        local st, body = create({ network = { rules = { [ip] = rule({ A = "b" }) } } })
        assert.are.equal(400, st, ip .. ": " .. tostring(body))
        assert.matches("network.rules", body, 1, true)
        assert.are.equal(400, (put({ [ip] = rule({ A = "b" }) })), ip)
      end
      -- a name that only looks like part of an address is a domain name, as E2B takes it
      assert.are.equal(201, (create({ network = { rules = { ["1.2.3"] = rule({ A = "b" }) } } })))
      assert.are.equal(204, (put({ ["a.example.com"] = rule({ A = "b" }) })))
      local _, info = api("GET", "/sandboxes/" .. id)
      assert.are.same({ ["a.example.com"] = rule({ A = "b" }) }, cjson.decode(info).network.rules)
    end)
  end)

  it("holds rules to E2B's limits: 10 domains, one rule each, 20 headers, 64-byte names, 2048-byte values", function()
    local eleven = {}
    for i = 1, 11 do eleven[("h%d.example.com"):format(i)] = rule({ A = "b" }) end
    local twenty_one = {}
    for i = 1, 21 do twenty_one[("X-H%d"):format(i)] = "v" end
    local bad = {
      eleven,
      { ["a.example.com"] = { { transform = { headers = { A = "b" } } }, {} } },
      { ["a.example.com"] = rule(twenty_one) },
      { ["a.example.com"] = rule({ [("N"):rep(65)] = "v" }) },
      { ["a.example.com"] = rule({ A = ("v"):rep(2049) }) },
      { [("d"):rep(60) .. "." .. ("d"):rep(60) .. ".example.com"] = rule({ A = "b" }) },
    }
    for i, rules in ipairs(bad) do
      local status, text = create({ network = { rules = rules } })
      assert.are.equal(400, status, ("case %d: %s"):format(i, tostring(text)))
    end
    -- each at the limit is taken
    local ten, twenty = {}, {}
    for i = 1, 10 do ten[("h%d.example.com"):format(i)] = rule({ A = "b" }) end
    for i = 1, 20 do twenty[("X-H%d"):format(i)] = "v" end
    local good = {
      ten,
      { ["a.example.com"] = rule(twenty) },
      { ["a.example.com"] = rule({ [("N"):rep(64)] = ("v"):rep(2048) }) },
    }
    for i, rules in ipairs(good) do
      local status, text = create({ network = { rules = rules } })
      assert.are.equal(201, status, ("case %d: %s"):format(i, tostring(text)))
    end
  end)
  it("refuses network.rules keys that are not DNS names as E2B's API checks them (no wildcards), at create and update", function()
    with_sandbox(function(_, put)
      -- key -> what the message must say about it
      local bad = {
        ["*.example.com"] = "not a valid domain name", ["*."] = "not a valid domain name",
        ["*"] = "not a valid domain name", [""] = "must not be empty", [("a"):rep(129)] = "128",
        [("a"):rep(64) .. ".com"] = "not a valid domain name", ["-a.example.com"] = "not a valid domain name",
        ["a b.com"] = "not a valid domain name", ["a..com"] = "not a valid domain name",
        [".a.com"] = "not a valid domain name", ["a.com.."] = "not a valid domain name",
      }
      for key, says in pairs(bad) do
        local st, body = create({ network = { rules = { [key] = rule({ A = "b" }) } } })
        assert.are.equal(400, st, key .. ": " .. tostring(body))
        local message = cjson.decode(body).message
        assert.matches(says, message, 1, true)
        assert.matches(cjson.encode(key), message, 1, true)
        local pst, pbody = put({ [key] = rule({ A = "b" }) })
        assert.are.equal(400, pst, key .. ": " .. tostring(pbody))
      end
      -- names govalidator.IsDNSName takes are taken
      for _, key in ipairs({ "_dmarc.example.com", "example.com.", "a-.example.com", ("a"):rep(63) .. ".com" }) do
        local st, body = create({ network = { rules = { [key] = rule({ A = "b" }) } } })
        assert.are.equal(201, st, key .. ": " .. tostring(body))
        assert.are.equal(204, (put({ [key] = rule({ A = "b" }) })), key)
      end
    end)
  end)

  it("refuses a malformed E2B placeholder in a rule's header value, and over 32 secrets for one domain", function()
    local function secrets(n, first)
      local hs = { A = first or "" }
      for i = 1, n do
        local name = ("X-S%d"):format(i % 19)
        hs[name] = (hs[name] or "") .. ("${e2b.secrets.s%d}"):format(i)
      end
      return hs
    end
    local bad = {
      { A = "Bearer ${e2b.secrets.key" }, { A = "${e2b.secrets.}" }, { A = "${e2b.secrets.a b}" },
      { A = "${e2b.identity.tokens.}" }, { A = "${e2b.secrets.${e2b.secrets.a}}" },
      { A = "${e2b.secrets.sec_abc}" }, { A = ("${e2b.secrets.%s}"):format(("k"):rep(129)) },
      { A = "${e2b.identity.tokens.aws" }, secrets(33),
    }
    for i, headers in ipairs(bad) do
      local status, text = create({ network = { rules = { ["a.example.com"] = rule(headers) } } })
      assert.are.equal(400, status, ("case %d: %s"):format(i, tostring(text)))
      assert.matches("placeholder", text, 1, true)
    end
    local good = {
      { A = "Bearer ${e2b.secrets.My-Key}", B = "${e2b.identity.tokens.aws}", C = "${other} $e2b.secrets.x}" },
      { A = "${e2b.secrets. padded }" }, secrets(32), secrets(32, "${e2b.secrets.S1}${e2b.secrets.s2}"),
    }
    for i, headers in ipairs(good) do
      local status, text = create({ network = { rules = { ["a.example.com"] = rule(headers) } } })
      assert.are.equal(201, status, ("case %d: %s"):format(i, tostring(text)))
    end
  end)
end)
