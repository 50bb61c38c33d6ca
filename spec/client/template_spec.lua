-- Templates built in code (e2b.template, client:build_template): the SDKs'
-- Template builder and its build API. Bad input is invalid_argument naming
-- the field before any request; a build uploads only what E2B lacks, streams
-- its log lines, and a failed build returns its reason.
local h = require("spec.helpers")
local e2b = h.e2b

-- A client whose every request would fail as unavailable: an answer of any
-- other kind was decided before anything was sent.
local function offline_client()
  return assert(e2b.client({ api_key = "e2b_offline", api_url = "http://127.0.0.1:1", max_retries = 0 }))
end

-- A context directory with files; -> its path.
local function context(files)
  local dir = os.tmpname()
  os.remove(dir)
  h.host("mkdir -p " .. h.shell_quote(dir))
  for path, bytes in pairs(files) do
    local full = dir .. "/" .. path
    h.host("mkdir -p " .. h.shell_quote(full:match("^(.*)/")))
    h.write_file(full, bytes)
  end
  return dir
end

local function unique(prefix)
  return ("%s-%d-%d"):format(prefix, h.now_ms() % 100000000, math.random(1e6))
end

describe("the template builder", function()
  it("keeps the first bad argument, names its field, and ignores the calls after it", function()
    local t = e2b.template():from_template("base"):run_cmd("true"):copy("../secret", "/x"):run_cmd(42)
    local ok, err = t:check()
    assert.is_nil(ok)
    assert.are.equal("invalid_argument", err.kind)
    assert.are.equal("steps[2].src", err.field)
    for _, case in ipairs({
      { e2b.template():from_template("base"):copy("/etc/passwd", "/x"), "steps[1].src" },
      { e2b.template():from_template("base"):copy("a", "/x", { mode = 8 ^ 5 }), "copy.mode" },
      { e2b.template():from_template("base"):copy("a", "/x", { owner = "me" }), "copy.owner" },
      { e2b.template():from_template("base"):set_envs({ ["A=B"] = "1" }), "steps[1].args[1]" },
      { e2b.template():from_template("not a name"), "from_template" },
      { e2b.template():run_cmd("true"), "from" },
      { e2b.template():from_template("base"):from_image("ubuntu"):set_ready_cmd(""), "set_ready_cmd" },
      { e2b.template():from_template("base"):run_cmd({}), "run_cmd.command" },
      { e2b.template({ context = 1 }), "context" },
      { e2b.template():from_template("base"):run_cmd("echo a\0; rm -rf ~"), "steps[1].args[1]" },
      { e2b.template():from_template("base"):git_clone("https://x/\0y"), "steps[1].args[1]" },
    }) do
      local _, e = case[1]:check()
      assert.are.equal("invalid_argument", e and e.kind, case[2])
      assert.are.equal(case[2], e.field)
    end
  end)

  it("refuses a bad template, name or tag before any request", function()
    local client = offline_client()
    local dir = context({ ["a.txt"] = "a" })
    local good = e2b.template({ context = dir }):from_template("base"):copy("a.txt", "/a.txt")
    for _, case in ipairs({
      { e2b.template():from_template("base"):copy("../x", "/x"), { name = "t" }, "steps[1].src" },
      { good, {}, "name" },
      { good, { name = "a b" }, "name" },
      { good, { name = "t", tags = { "123e4567-e89b-12d3-a456-426614174000" } }, "tags[1]" },
      { good, { name = "t", cpu_count = 0 }, "cpu_count" },
      { good, { name = "t", on_log = "print" }, "on_log" },
      { good, { name = "t", colour = "red" }, "colour" },
      { "not a template", { name = "t" }, "template" },
    }) do
      local info, err = client:build_template(case[1], case[2])
      assert.is_nil(info)
      assert.are.equal("invalid_argument", err.kind, tostring(err))
      assert.are.equal(case[3], err.field)
    end
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("fails a COPY whose source matches no file before any request", function()
    local dir = context({ ["a.txt"] = "a" })
    local t = e2b.template({ context = dir }):from_template("base"):copy("missing/*.txt", "/x/")
    local info, err = offline_client():build_template(t, { name = "t" })
    assert.is_nil(info)
    assert.are.equal("not_found", err.kind, tostring(err))
    assert.matches("missing/%*%.txt", err.message)
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("hashes COPY sources from their bytes, modes and paths: the same files, the same hash", function()
    local dir = context({ ["app/main.lua"] = "print(1)\n", ["app/lib/x.lua"] = "return 1\n", [".hidden"] = "h" })
    local function body(ignore)
      return assert(e2b.template({ context = dir, ignore = ignore }):from_template("base")
        :copy("app", "/app"):copy("*", "/all/"):to_json())
    end
    local first = body()
    local hashes = {}
    for hash in first:gmatch('"filesHash":"(%x+)"') do hashes[#hashes + 1] = hash end
    assert.are.equal(2, #hashes)
    assert.are_not.equal(hashes[1], hashes[2])
    assert.are.equal(first, body())
    assert.are_not.equal(first, body({ "app/lib" })) -- an ignored directory leaves its files out
    h.write_file(dir .. "/app/main.lua", "print(2)\n")
    assert.are_not.equal(first, body())
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("writes the steps and ready commands as the SDKs write them", function()
    local t = e2b.template():from_template("base"):apt_install({ "curl", "git" }):pip_install("numpy")
      :npm_install("tsx", { g = true }):git_clone("https://example.com/r.git", "/src dir", { depth = 1 })
      :make_dir("/a", { mode = tonumber("755", 8) }):set_envs({ B = "2", A = "1" }):set_user("root")
      :set_start_cmd("./serve", e2b.wait_for_port(8000))
    local body = assert(t:to_json())
    for _, want in ipairs({
      'DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y curl git","root"',
      '"pip install numpy","root"', '"npm install -g tsx","root"',
      [["git clone https://example.com/r.git --depth 1 '/src dir'"]], '"mkdir -p -m 0755 /a"',
      '"ENV","args":["A","1","B","2"]',
    }) do
      assert.is_truthy(body:find(want, 1, true), want)
    end
    assert.are.equal('[ -n "$(ss -Htuln sport = :8000)" ]', e2b.wait_for_port(8000))
    assert.are.equal([[curl -s -o /dev/null -w "%{http_code}" 'http://x/?a=1&b' | grep -q "204"]],
      e2b.wait_for_url("http://x/?a=1&b", 204))
    assert.are.equal("[ -f /tmp/ready ]", e2b.wait_for_file("/tmp/ready"))
    assert.are.equal("pgrep nginx > /dev/null", e2b.wait_for_process("nginx"))
    assert.are.equal("sleep 2", e2b.wait_for_timeout(2500))
    local none, err = e2b.wait_for_port(70000)
    assert.is_nil(none)
    assert.are.equal("port", err.field)
    none, err = e2b.wait_for_file("/tmp/a\0b")
    assert.is_nil(none)
    assert.are.equal("invalid_argument", err.kind)
  end)
end)

describe("a build's status", function()
  it("counts a log entry without a message toward the next offset (as an empty line), so none comes twice", function()
    local entries = '{"timestamp":"2025-01-01T00:00:00Z","level":"info","message":"first"},'
      .. '{"timestamp":"2025-01-01T00:00:01Z","level":"warn"},'
      .. '{"timestamp":"2025-01-01T00:00:02Z","level":"info","message":"third"}'
    local url, stop = h.http_server("", { files = { ["/templates/t1/builds/b1/status"] =
      '{"templateID":"t1","buildID":"b1","status":"building","logs":[],"logEntries":[' .. entries .. ']}' } })
    local client = assert(e2b.client({ api_key = "e2b_fake", api_url = url, max_retries = 0 }))
    local st, err = client:template_build_status("t1", "b1")
    stop()
    assert.is_truthy(st, tostring(err))
    assert.are.equal("building", st.status)
    assert.are.same({ "first", "", "third" }, { st.logs[1].message, st.logs[2].message, st.logs[3].message })
    assert.are.equal("warn", st.logs[2].level)
    assert.are.equal(1735689601000, st.logs[2].timestamp)
  end)
end)

describe("client:build_template", function()
  if h.live then return end -- builds cost minutes and money on E2B; e2b-local builds locally
  local client
  setup(function() client = h.client() end)
  after_each(h.cleanup)

  it("builds a template from base with copied files, environment and workdir; its sandboxes have them", function()
    local dir = context({ ["app/hello.txt"] = "hello\0world\n", ["app/sub/n.txt"] = "n" })
    local name, logs, stages = unique("tplspec"), {}, {}
    local t = e2b.template({ context = dir }):from_template("base")
      :copy("app", "/home/user/app")
      :run_cmd("echo built-$GREETING > /home/user/marker", { user = "user" })
      :set_envs({ GREETING = "hi" }):set_workdir("/home/user/app")
    local info, err = client:build_template(t, {
      name = name,
      on_log = function(e) logs[#logs + 1] = e end,
      on_progress = function(ev) stages[#stages + 1] = ev.stage end,
    })
    assert.is_truthy(info, tostring(err))
    assert.are.equal(name, info.name)
    assert.is_string(info.template_id)
    assert.are.same({ "hashed", "requested", "uploaded" }, { stages[1], stages[2], stages[3] })
    assert.is_true(#logs > 0)
    assert.is_string(logs[1].message)
    assert.is_true(client:template_exists(name))
    local sbx = h.sandbox({ template = name })
    assert.are.equal("hello\0world\n", assert(sbx.files:read("/home/user/app/hello.txt")))
    assert.are.equal("n", assert(sbx.files:read("/home/user/app/sub/n.txt")))
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("hashes and archives a large COPY a slice per loop step: another task of the same state runs meanwhile", function()
    local big = ("0123456789abcdef"):rep(4096) -- 64 KiB
    local dir = context({ ["big/a.bin"] = big:rep(512), ["big/b.txt"] = unique("b") }) -- 32 MiB + a few bytes
    h.write_file(dir .. "/big/c.bin", big:rep(512)) -- 64 MiB in all
    local ticks, at = 0, {}
    local t = e2b.template({ context = dir }):from_template("base"):copy("big", "/home/user/big")
    local info, err = e2b.run(function()
      local build = e2b.spawn(function()
        return client:build_template(t, { name = unique("tplbig"),
          on_progress = function(ev) at[ev.stage] = at[ev.stage] or ticks end })
      end)
      while not build:done() do
        e2b.sleep(10)
        ticks = ticks + 1
      end
      return build:wait()
    end)
    assert.is_truthy(info, tostring(err))
    -- a hash computed on the calling thread lets no other task run before it ends
    assert.is_true(at.hashed > 0, "the other task ran while the files were hashed")
    assert.is_true(at.uploaded > at.requested, "the other task ran while the files were archived and sent")
    local sbx = h.sandbox({ template = info.name })
    local sums = assert(sbx:run("cd /home/user/big && sha256sum a.bin c.bin")).stdout
    assert.are.equal(h.host("cd " .. h.shell_quote(dir .. "/big") .. " && sha256sum a.bin c.bin"), sums)
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("builds from a Dockerfile as the SDKs' fromDockerfile reads it: steps as root, then user in /home/user", function()
    local dir = context({ ["app/a.txt"] = "from the context\n", ["Dockerfile"] = table.concat({
      "# syntax=docker/dockerfile:1",
      "FROM e2bdev/base:latest",
      "ARG FLAVOR",
      "ENV GREETING=\"hello there\" LEVEL=3",
      "COPY --chown=user app/a.txt /home/user/app/",
      "RUN echo \"$GREETING\" > /tmp/marker && \\",
      "    id -un >> /tmp/marker && mv /tmp/marker /home/user/marker",
      "EXPOSE 8080",
      "CMD [\"sleep\", \"infinity\"]",
    }, "\n") .. "\n" })
    local t = e2b.template({ context = dir }):from_dockerfile(dir .. "/Dockerfile")
    local body = assert(t:to_json())
    assert.is_truthy(body:find('"startCmd":"sleep infinity","readyCmd":"sleep 20"', 1, true))
    local info, err = client:build_template(t, { name = unique("tpldocker") })
    assert.is_truthy(info, tostring(err))
    local sbx = h.sandbox({ template = info.name })
    assert.are.equal("hello there\nroot\n", assert(sbx.files:read("/home/user/marker")))
    assert.are.equal("from the context\n", assert(sbx.files:read("/home/user/app/a.txt")))
    local r = assert(sbx:run("id -un; pwd; echo \"$LEVEL\"; stat -c %U /home/user/app/a.txt"))
    assert.are.equal("user\n/home/user\n3\nuser\n", r.stdout)
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("refuses a Dockerfile E2B cannot build from, naming the line, before any request", function()
    for _, case in ipairs({
      { "FROM a AS one\nRUN true\nFROM b\n", "line 3: multi%-stage" },
      { "FROM a\nCOPY --from=one /x /y\n", "line 2: COPY %-%-from" },
      { "FROM a\nRUN <<EOF\necho\nEOF\n", "heredocs" },
      { "RUN true\n", "needs a FROM" },
      { "FROM a\nSHELL [\"/bin/zsh\"]\n", "line 2: SHELL" },
    }) do
      local t = e2b.template():from_dockerfile(case[1])
      local _, e = t:check()
      assert.are.equal("invalid_argument", e and e.kind, case[1])
      assert.are.equal("dockerfile", e.field)
      assert.is_truthy(tostring(e):find(case[2]), tostring(e))
      local info, berr = offline_client():build_template(t, { name = "t" })
      assert.is_nil(info)
      assert.are.equal("invalid_argument", berr.kind)
    end
    local _, e = e2b.template():from_dockerfile(42):check()
    assert.are.equal("from_dockerfile", e.field)
  end)

  it("uploads a COPY's files once: a second build of the same files finds them cached", function()
    local dir = context({ ["f.txt"] = unique("content") })
    local function build()
      local stages = {}
      local t = e2b.template({ context = dir }):from_template("base"):copy("f.txt", "/home/user/f.txt")
      local info, err = client:build_template(t, { name = unique("tplcache"),
        on_progress = function(ev) if ev.src and ev.stage ~= "hashed" then stages[#stages + 1] = ev.stage end end })
      assert.is_truthy(info, tostring(err))
      return stages[1]
    end
    assert.are.equal("uploaded", build())
    assert.are.equal("cached", build())
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("archives and uploads a large COPY with bounded memory, bytes exact", function()
    local dir = context({})
    local big = dir .. "/big.bin"
    -- 64 MiB: a 1 MiB pattern of every byte value, repeated
    h.host(("head -c 1048576 /dev/urandom > %s.1 && for i in $(seq 64); do cat %s.1; done > %s && rm %s.1")
      :format(h.shell_quote(big), h.shell_quote(big), h.shell_quote(big), h.shell_quote(big)))
    local want = h.host("sha256sum " .. h.shell_quote(big)):match("^(%x+)")
    -- resident now, and the most this process was ever resident (the kernel's high-water mark)
    local function kib(field)
      local f = io.open("/proc/self/status")
      local v = tonumber(f:read("*a"):match(field .. ":%s*(%d+)"))
      f:close()
      return v
    end
    collectgarbage()
    local reset = assert(io.open("/proc/self/clear_refs", "w")) -- "5": the high-water mark starts again from now
    reset:write("5")
    reset:close()
    local before = kib("VmRSS")
    assert.is_true(kib("VmHWM") - before < 1024)
    local t = e2b.template({ context = dir }):from_template("base"):copy("big.bin", "/home/user/big.bin")
    local info, err = client:build_template(t, { name = unique("tplbig") })
    assert.is_truthy(info, tostring(err))
    local peak = kib("VmHWM")
    assert.is_true(peak - before < 24 * 1024, ("memory grew by %d KiB for a 64 MiB COPY"):format(peak - before))
    local sbx = h.sandbox({ template = info.name })
    local r = assert(sbx:run("sha256sum /home/user/big.bin"))
    assert.are.equal(want, r.stdout:match("^(%x+)"))
    h.host("rm -rf " .. h.shell_quote(dir))
  end)

  it("returns a failed build as kind sandbox with the build's reason, its step and its ids", function()
    local logs = {}
    local t = e2b.template():from_template("base"):run_cmd("true"):run_cmd("echo boom >&2; exit 3")
    local info, err = client:build_template(t, { name = unique("tplfail"),
      on_log = function(e) logs[#logs + 1] = e.message end })
    assert.is_nil(info)
    assert.are.equal("sandbox", err.kind, tostring(err))
    assert.are.equal("build_template", err.op)
    assert.is_string(err.build_id)
    assert.is_string(err.template_id)
    assert.are.equal("2", err.step)
    assert.matches("boom", table.concat(logs, "\n"))
  end)

  it("starts a build in the background and reports its status until it is ready", function()
    local name = unique("tplbg")
    local info = assert(client:build_template(e2b.template():from_template("base"):run_cmd("true"),
      { name = name, background = true }))
    local status
    h.eventually(function()
      status = assert(client:template_build_status(info.template_id, info.build_id))
      return status.status == "ready" or status.status == "error"
    end, 120000)
    assert.are.equal("ready", status.status)
    assert.is_false(client:template_exists(unique("tplnone")))
  end)

  it("ends a canceled build with kind canceled at its next request, and sends nothing for a token canceled before", function()
    local token = e2b.cancel_token()
    local t = e2b.template():from_template("base"):run_cmd("sleep 5")
    local canceled_at
    local info, err = client:build_template(t, { name = unique("tplcancel"), cancel = token,
      on_progress = function(ev)
        if ev.stage == "status" and not canceled_at then
          canceled_at = h.now_ms()
          token:cancel()
        end
      end })
    assert.is_nil(info)
    assert.are.equal("canceled", err.kind, tostring(err))
    assert.is_true(h.now_ms() - canceled_at < 3000) -- its next request, not the build's end (5 s on)
    info, err = offline_client():build_template(t, { name = "t", cancel = token })
    assert.is_nil(info)
    assert.are.equal("canceled", err.kind, tostring(err))
  end)

  it("sends a private image's credentials in the build's body only: never in an error or to_json", function()
    local t = e2b.template():from_image("registry.example.com/private/img:1", { username = "u", password = "S3cret-pw" })
    assert.is_nil(t:to_json():find("S3cret-pw", 1, true))
    local info, err = client:build_template(t, { name = unique("tplpriv") })
    -- e2b-local pulls no image: the build fails, and its reason does not carry the password
    assert.is_nil(info)
    assert.are.equal("sandbox", err.kind, tostring(err))
    assert.is_nil(tostring(err):find("S3cret-pw", 1, true))
    local _, e = e2b.template():from_image("img", { username = "u" }):check()
    assert.are.equal("registry.password", e.field)
  end)

  it("tags a build, lists the template's tags and takes them off again", function()
    local name = unique("tpltags")
    local info = assert(client:build_template(e2b.template():from_template("base"):run_cmd("true"),
      { name = name .. ":v1" }))
    local assigned = assert(client:assign_template_tags(name .. ":v1", { "stable", "prod" }))
    assert.are.equal(info.build_id, assigned.build_id)
    local function tags()
      local out = {}
      for _, t in ipairs(assert(client:template_tags(info.template_id))) do
        assert.are.equal(info.build_id, t.build_id)
        out[#out + 1] = t.tag
      end
      table.sort(out)
      return out
    end
    assert.are.same({ "prod", "stable", "v1" }, tags())
    assert.is_true(client:remove_template_tags(name, "prod"))
    assert.are.same({ "stable", "v1" }, tags())
    local none, err = client:assign_template_tags(name .. ":v1", {})
    assert.is_nil(none)
    assert.are.equal("tags", err.field)
  end)
end)

describe("lua-e2b build", function()
  local tool = require("spec.cli_tool")
  local OFFLINE = { E2B_API_KEY = "e2b_offline", E2B_API_URL = "http://127.0.0.1:1" }

  local dirs = {}
  local function script(text)
    local dir = context({ ["tpl.lua"] = text, ["data.txt"] = "data" })
    dirs[#dirs + 1] = dir
    return dir, dir .. "/tpl.lua"
  end
  after_each(function()
    for _, d in ipairs(dirs) do h.host("rm -rf " .. h.shell_quote(d)) end
    dirs = {}
  end)

  it("refuses a missing name, a file that returns no template and a bad name before any request", function()
    local _, file = script('return e2b.template():from_template("base"):copy("data.txt", "/d.txt")')
    local _, err, code = tool.run({ "build", file }, OFFLINE)
    assert.are.equal(2, code)
    assert.matches("needs %-%-name", err)
    _, err, code = tool.run({ "build", file, "--name", "a b" }, OFFLINE)
    assert.are.equal(1, code)
    assert.matches("invalid_argument.*name", err)
    local _, nofile = script("return 42")
    _, err, code = tool.run({ "build", nofile, "--name", "t" }, OFFLINE)
    assert.are.equal(2, code)
    assert.matches("must return a template", err)
    _, err, code = tool.run({ "build", file, "--name", "t", "--cpu", "0" }, OFFLINE)
    assert.are.equal(2, code)
    assert.matches("%-%-cpu", err)
  end)

  it("reads COPY sources from the file's directory: a source missing there fails before any request", function()
    local _, file = script('return e2b.template():from_template("base"):copy("absent.txt", "/d.txt")')
    local _, err, code = tool.run({ "build", file, "--name", "t" }, OFFLINE)
    assert.are.equal(1, code)
    assert.matches("not_found.*absent%.txt", err)
    -- data.txt is there: the build gets as far as its first request
    local _, good = script('return e2b.template():from_template("base"):copy("data.txt", "/d.txt")')
    _, err, code = tool.run({ "build", good, "--name", "t" }, OFFLINE)
    assert.are.equal(1, code)
    assert.matches("unavailable", err)
  end)

  it("builds against the backend: log lines as they come, then the result; --json prints the result object", function()
    if h.live then return end
    local _, file = script('return e2b.template():from_template("base"):copy("data.txt", "/home/user/d.txt")'
      .. ':run_cmd("echo made-it")')
    local name = unique("tplcli")
    local out, err, code = tool.run({ "build", file, "--name", name })
    assert.are.equal(0, code, err)
    assert.matches("made%-it", out)
    assert.matches("built " .. name:gsub("%-", "%%-") .. " %(template %S+, build %S+%)\n$", out)
    out, err, code = tool.run({ "build", file, "--name", name .. ":v2", "--json" })
    assert.are.equal(0, code, err)
    local res = require("cjson").decode(out)
    assert.are.equal(name .. ":v2", res.name)
    assert.is_string(res.build_id)
    assert.matches("made%-it", err) -- the log lines, on stderr
    local sbx = h.sandbox({ template = name .. ":v2" })
    assert.are.equal("data", assert(sbx.files:read("/home/user/d.txt")))
    h.cleanup()
  end)
end)
