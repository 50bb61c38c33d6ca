-- e2b-local serves E2B's template-build API (POST /v3/templates, POST
-- /v2/templates/{id}/builds/{build}, GET …/status, the files upload link,
-- tags) and builds locally: a hidden sandbox from a local template, each step
-- run inside it. Driven over raw HTTP, as any SDK drives it; requests are
-- validated as E2B's API validates them (e2b-dev/infra, packages/api).
local h = require("spec.helpers")
local cjson = require("cjson")

if h.live then return end

-- The server the calls go to: the variables of a second e2b-local, or nil
-- for the one these specs run under.
local target = nil

local function json_api(method, path, tbl)
  local status, text = h.api(method, path, tbl and cjson.encode(tbl), target)
  local ok, decoded = pcall(cjson.decode, text or "")
  return status, ok and decoded or text, text
end

local n = 0
local function fresh_name()
  n = n + 1
  return ("tb-%d-%d"):format(h.now_ms() % 100000000, n)
end

-- Requests a build of name and starts it with spec; -> template id, build id.
local function start(name, spec, tags)
  local status, req, text = json_api("POST", "/v3/templates", { name = name, tags = tags })
  assert.are.equal(202, status, text)
  local st2, _, text2 = json_api("POST", ("/v2/templates/%s/builds/%s"):format(req.templateID, req.buildID), spec)
  assert.are.equal(202, st2, text2)
  return req.templateID, req.buildID
end

-- Polls the status route as the SDKs do, with logsOffset; -> final status, all log entries.
-- Like the SDKs, it reads on after the end until a page comes back empty.
local function wait_build(tid, bid)
  local entries, last = {}, nil
  h.eventually(function()
    local status, s, text = json_api("GET", ("/templates/%s/builds/%s/status?logsOffset=%d"):format(tid, bid, #entries))
    assert.are.equal(200, status, text)
    for _, e in ipairs(s.logEntries) do entries[#entries + 1] = e end
    last = s
    return (s.status == "ready" or s.status == "error") and #s.logEntries == 0
  end, 120000)
  return last, entries
end

local function messages(entries)
  local out = {}
  for _, e in ipairs(entries) do out[#out + 1] = e.message end
  return table.concat(out, "\n")
end

local function run_in(template, cmd)
  local sbx = h.sandbox({ template = template })
  local res = assert(sbx:run(cmd))
  return res.stdout
end

describe("e2b-local's template builds", function()
  after_each(h.cleanup)

  it("builds from base: RUN steps run as user by default, as root when asked, and the result is the template", function()
    local name = fresh_name()
    local tid, bid = start(name, {
      fromTemplate = "base",
      steps = {
        { type = "RUN", args = { "echo built > ~/made-by.txt && id -un >> ~/made-by.txt" } },
        { type = "RUN", args = { "id -un > /root/as-root.txt", "root" } },
      },
    })
    local s, entries = wait_build(tid, bid)
    assert.are.equal("ready", s.status, messages(entries))
    assert.matches("[builder 1/2] RUN", messages(entries), 1, true)
    -- the last line says how long, as E2B's builder's does (Go's duration, whole seconds)
    assert.matches("^Build finished, took %d+[hms%d]*s$", entries[#entries].message)
    assert.are.equal("built\nuser\n", run_in(name, "cat ~/made-by.txt"))
    assert.are.equal("root\n", run_in(name, "sudo cat /root/as-root.txt"))
  end)

  it("streams a step's output through the status route in order, each entry once across logsOffset pages", function()
    local tid, bid = start(fresh_name(), {
      fromTemplate = "base",
      steps = { { type = "RUN", args = { "for i in $(seq 1 250); do echo line-$i; done" } } },
    })
    local s, entries = wait_build(tid, bid)
    assert.are.equal("ready", s.status)
    local lines = {}
    for _, e in ipairs(entries) do
      local i = e.message:match("^line%-(%d+)$")
      if i then lines[#lines + 1] = tonumber(i) end
      assert.is_string(e.timestamp)
      assert.is_string(e.level)
    end
    assert.are.equal(250, #lines)
    for i = 1, 250 do assert.are.equal(i, lines[i]) end
  end)

  it("fails a build whose step fails, naming the step in reason.step, with the step's output", function()
    local tid, bid = start(fresh_name(), {
      fromTemplate = "base",
      steps = { { type = "RUN", args = { "true" } }, { type = "RUN", args = { "echo oops >&2; exit 3" } } },
    })
    local s = wait_build(tid, bid)
    assert.are.equal("error", s.status)
    assert.are.equal("2", s.reason.step)
    assert.matches("exit status 3", s.reason.message, 1, true)
  end)

  it("fails a build from an image it cannot pull (no registry, no network), and from an unknown template", function()
    local tid, bid = start(fresh_name(), { fromImage = "ubuntu:22.04" })
    local s = wait_build(tid, bid)
    assert.are.equal("error", s.status)
    assert.matches("failed to pull image 'ubuntu:22.04'", s.reason.message, 1, true)
    tid, bid = start(fresh_name(), { fromTemplate = "no-such-template" })
    s = wait_build(tid, bid)
    assert.are.equal("error", s.status)
    assert.matches("template 'no-such-template' not found", s.reason.message, 1, true)
  end)
end)

-- The files link for hash (a COPY's archive) of template tid. -> status, body
local function files_link(tid, hash)
  return json_api("GET", ("/templates/%s/files/%s"):format(tid, hash))
end

-- Makes a tar (gzip when gz) on the host from shell text run in a fresh
-- directory; -> its path and its sha256 (any 64 hex digits would do).
local function make_tar(setup, gz, members)
  local dir = h.host("mktemp -d"):gsub("%s+$", "")
  local tarball = dir .. ".tar"
  h.host(("cd %s && %s && tar -c%sf %s %s"):format(h.shell_quote(dir), setup, gz and "z" or "",
    h.shell_quote(tarball), members or "."))
  local hash = h.host("sha256sum " .. h.shell_quote(tarball)):match("^(%x+)")
  h.host("rm -rf " .. h.shell_quote(dir))
  return tarball, hash
end

local function upload(url, tarball)
  local out = h.host(("curl -s -o /dev/null -w '%%{http_code}' -X PUT --data-binary @%s %s")
    :format(h.shell_quote(tarball), h.shell_quote(url)))
  return tonumber(out)
end

-- Requests a build, uploads each COPY step's archive, starts it. -> tid, bid
local function start_with_files(name, spec, archives)
  local status, req, text = json_api("POST", "/v3/templates", { name = name })
  assert.are.equal(202, status, text)
  for hash, tarball in pairs(archives) do
    local st, link = files_link(req.templateID, hash)
    assert.are.equal(201, st)
    if not link.present then assert.are.equal(200, upload(link.url, tarball)) end
  end
  local st2, _, text2 = json_api("POST", ("/v2/templates/%s/builds/%s"):format(req.templateID, req.buildID), spec)
  assert.are.equal(202, st2, text2)
  return req.templateID, req.buildID
end

describe("e2b-local's template-build files", function()
  after_each(h.cleanup)

  it("answers the files link: 400 for a hash not of 64 hex digits, 404 for an unknown template, present once uploaded", function()
    local _, req = json_api("POST", "/v3/templates", { name = fresh_name() })
    assert.are.equal(400, (files_link(req.templateID, "abc")))
    assert.are.equal(400, (files_link(req.templateID, ("A"):rep(64))))
    assert.are.equal(404, (files_link("nosuchtemplate", ("a"):rep(64))))
    local tarball, hash = make_tar("echo hi > f", true)
    local st, link = files_link(req.templateID, hash)
    assert.are.equal(201, st)
    assert.is_false(link.present)
    assert.are.equal(200, upload(link.url, tarball))
    st, link = files_link(req.templateID, hash)
    assert.is_true(link.present)
    os.remove(tarball)
  end)

  it("refuses an upload whose token is not its link's (403) and one declared past 1 GiB (413)", function()
    local _, req = json_api("POST", "/v3/templates", { name = fresh_name() })
    local tarball, hash = make_tar("echo never-uploaded-" .. h.now_ms() .. " > f", true)
    local _, link = files_link(req.templateID, hash)
    local _, other = files_link(req.templateID, ("b"):rep(64))
    local forged = link.url:gsub("token=%x+", other.url:match("token=(%x+)"))
    assert.are.equal(403, upload(forged, tarball))
    assert.are.equal(403, upload(link.url:gsub("token=%x+", "token="), tarball))
    local big = h.host(("curl -s -o /dev/null -w '%%{http_code}' -X PUT -H 'Content-Length: 1073741825' "
      .. "--data-binary @%s %s"):format(h.shell_quote(tarball), h.shell_quote(link.url)))
    assert.are.equal(413, tonumber(big))
    assert.is_false(select(2, files_link(req.templateID, hash)).present)
    os.remove(tarball)
  end)

  it("keeps at most 256 uploaded archives: the oldest is no longer present after 256 newer ones", function()
    local _, req = json_api("POST", "/v3/templates", { name = fresh_name() })
    local header = h.key_header()
    local salt = ("%08x"):format(h.now_ms() % 0xffffffff)
    local hash = function(i) return salt .. ("%056x"):format(i) end
    local out = h.host(([[for i in $(seq 0 256); do
        h=%s$(printf '%%056x' $i)
        url=$(curl -s -H @%s %s/templates/%s/files/$h | sed -E 's/.*"url":"([^"]*)".*/\1/')
        printf x | curl -s -o /dev/null -w '%%{http_code}\n' -X PUT --data-binary @- "$url"
      done | sort | uniq -c]]):format(salt, h.shell_quote(header), os.getenv("E2B_API_URL"), req.templateID))
    os.remove(header)
    assert.matches("^%s*257 200%s*$", out)
    assert.is_false(select(2, files_link(req.templateID, hash(0))).present)
    assert.is_true(select(2, files_link(req.templateID, hash(256))).present)
  end)

  it("COPY places a gzip tar's files, owned by the step's user, the mode given", function()
    local gz, gz_hash = make_tar("mkdir -p app/sub && echo one > app/a.txt && echo two > app/sub/b.txt", true)
    local gz2, gz2_hash = make_tar("echo second > p.txt", true)
    local name = fresh_name()
    local tid, bid = start_with_files(name, {
      fromTemplate = "base",
      steps = {
        { type = "COPY", args = { "app", "dest", "", "" }, filesHash = gz_hash },
        { type = "COPY", args = { "p.txt", "/root/p.txt", "root", "0600" }, filesHash = gz2_hash },
      },
    }, { [gz_hash] = gz, [gz2_hash] = gz2 })
    local s, entries = wait_build(tid, bid)
    assert.are.equal("ready", s.status, messages(entries))
    assert.are.equal("one\ntwo\nuser user\n", run_in(name, "cat ~/dest/a.txt ~/dest/sub/b.txt; stat -c '%U %G' ~/dest/sub/b.txt"))
    assert.are.equal("second\n600 root\n", run_in(name, "sudo cat /root/p.txt; sudo stat -c '%a %U' /root/p.txt"))
    os.remove(gz)
    os.remove(gz2)
  end)

  -- E2B's builder unpacks a COPY's archive with `tar -xzf`, so a plain tar
  -- (the SDKs' gzip: false) fails the step there: here too, never leniently
  it("fails a COPY whose archive is a plain tar, as E2B's gzip-only unpacking does", function()
    local plain, plain_hash = make_tar("echo plain > p.txt", false)
    local tid, bid = start_with_files(fresh_name(), {
      fromTemplate = "base",
      steps = { { type = "COPY", args = { "p.txt", "p.txt" }, filesHash = plain_hash } },
    }, { [plain_hash] = plain })
    local s = wait_build(tid, bid)
    assert.are.equal("error", s.status)
    assert.are.equal("1", s.reason.step)
    assert.matches("failed to extract files: exit status 2 (gzip: stdin: not in gzip format)", s.reason.message, 1, true)
    os.remove(plain)
  end)

  it("fails a COPY whose archive has an absolute name or a path through one of its own symlinks, naming the entry", function()
    local abs_dir = h.host("mktemp -d"):gsub("%s+$", "")
    h.host("echo x > " .. h.shell_quote(abs_dir .. "/abs.txt"))
    local abs, abs_hash = make_tar("true", true, "-P " .. h.shell_quote(abs_dir .. "/abs.txt"))
    -- d/out is a symlink to /etc, then d/out/x a file under it (r/x renamed)
    local through, through_hash = make_tar("mkdir -p d r && ln -s /etc d/out && echo x > r/x", true,
      "--transform='s,^r/,d/out/,S' d/out r/x")
    for hash, case in pairs({ [abs_hash] = { abs, "abs.txt" }, [through_hash] = { through, "d/out/x" } }) do
      local tid, bid = start_with_files(fresh_name(), {
        fromTemplate = "base", steps = { { type = "COPY", args = { "d", "d" }, filesHash = hash } },
      }, { [hash] = case[1] })
      local s = wait_build(tid, bid)
      assert.are.equal("error", s.status)
      assert.are.equal("1", s.reason.step)
      assert.matches(case[2], s.reason.message, 1, true)
      os.remove(case[1])
    end
    h.host("rm -rf " .. h.shell_quote(abs_dir))
  end)

  -- Builds a template whose one step COPYs d/* (made by the shell script)
  -- into d; returns its name once the build is ready.
  local function copied(script)
    local tarball, hash = make_tar(script, true)
    local name = fresh_name()
    local tid, bid = start_with_files(name, {
      fromTemplate = "base", steps = { { type = "COPY", args = { "d/*", "d" }, filesHash = hash } },
    }, { [hash] = tarball })
    local s, entries = wait_build(tid, bid)
    os.remove(tarball)
    assert.are.equal("ready", s.status, messages(entries))
    return name
  end

  it("COPY keeps an archive's symlinks as written, absolute, leading out or dangling, as E2B's tar in the sandbox does", function()
    local name = copied("mkdir d && echo t > d/t.txt && ln -s t.txt d/rel && ln -s /etc/hostname d/abs"
      .. " && ln -s ../../outside d/up && ln -s /nowhere/at/all d/dangling")
    assert.are.equal("t\nt.txt\n/etc/hostname\n../../outside\n/nowhere/at/all\n",
      run_in(name, "cd ~/d && cat rel && readlink rel abs up dangling"))
  end)

  it("COPY keeps a directory's mode as written (0500 stays 0500), as E2B's tar in the sandbox does", function()
    local name = copied("mkdir -p d/ro && echo x > d/ro/f && chmod 500 d/ro")
    assert.are.equal("500\nx\n", run_in(name, "stat -c %a ~/d/ro && cat ~/d/ro/f"))
  end)
end)

describe("e2b-local's template-build steps and cache", function()
  after_each(h.cleanup)

  it("WORKDIR makes its directory for the user and later steps start there; USER changes who runs them", function()
    local name = fresh_name()
    local tid, bid = start(name, {
      fromTemplate = "base",
      steps = {
        { type = "WORKDIR", args = { "/home/user/proj/src" } },
        { type = "RUN", args = { "pwd > here; stat -c %U /home/user/proj >> here" } },
        { type = "USER", args = { "root" } },
        { type = "RUN", args = { "id -un >> here" } },
      },
    })
    local s, entries = wait_build(tid, bid)
    assert.are.equal("ready", s.status, messages(entries))
    assert.are.equal("/home/user/proj/src\nuser\nroot\n", run_in(name, "cat ~/proj/src/here"))
  end)

  it("cancels a template's running build when a newer one of it starts, as E2B does; the newer one gets the tags", function()
    local name = fresh_name()
    local old_tid, old_bid = start(name, { fromTemplate = "base", steps = {
      { type = "RUN", args = { "echo old > ~/which" } }, { type = "RUN", args = { "sleep 300" } },
    } })
    h.eventually(function()
      local _, s = json_api("GET", ("/templates/%s/builds/%s/status"):format(old_tid, old_bid))
      for _, e in ipairs(s.logEntries) do
        if e.message:find("[builder 2/2]", 1, true) then return true end
      end
    end)
    local t0 = h.now_ms()
    local tid, bid = start(name, { fromTemplate = "base", steps = { { type = "RUN", args = { "echo new > ~/which" } } } })
    local old = wait_build(old_tid, old_bid)
    assert.are.equal("error", old.status)
    assert.matches("cancelled", old.reason.message, 1, true)
    assert.is_true(h.now_ms() - t0 < 60000)
    assert.are.equal("ready", wait_build(tid, bid).status)
    assert.are.equal("new\n", run_in(name, "cat ~/which"))
  end)

  it("evaluates ENV values as E2B does: $VAR expanded (as root), quotes, backquotes and $( kept as written", function()
    local name = fresh_name()
    local tid, bid = start(name, { fromTemplate = "base", steps = {
      { type = "ENV", args = { "FIRST", "one", "AT", "$HOME/x", "RAW", "a\"b`c$(echo no)\\d" } },
      { type = "ENV", args = { "BOTH", "${FIRST}-two" } },
      { type = "RUN", args = { "printf '%s|%s|%s|%s' \"$FIRST\" \"$AT\" \"$RAW\" \"$BOTH\" > ~/envs" } },
    } })
    local s, entries = wait_build(tid, bid)
    assert.are.equal("ready", s.status, messages(entries))
    assert.are.equal("one|/root/x|a\"b`c$(echo no)\\d|one-two", run_in(name, "cat ~/envs"))
  end)

  it("builds from another built template: its files, ENV and USER carry over", function()
    local first, second = fresh_name(), fresh_name()
    local tid, bid = start(first, { fromTemplate = "base", steps = {
      { type = "RUN", args = { "echo from-first > ~/first.txt" } },
      { type = "ENV", args = { "LAYER", "one" } },
      { type = "USER", args = { "root" } },
    } })
    assert.are.equal("ready", wait_build(tid, bid).status)
    tid, bid = start(second, { fromTemplate = first, steps = {
      { type = "RUN", args = { "echo \"$LAYER $(id -un)\" > /root/second.txt" } },
    } })
    local s, entries = wait_build(tid, bid)
    assert.are.equal("ready", s.status, messages(entries))
    assert.are.equal("from-first\none root\n",
      run_in(second, "cat /home/user/first.txt; sudo cat /root/second.txt"))
  end)

  it("refuses steps E2B refuses or this host cannot do: a user other than root and user, ENV without pairs, unknown types", function()
    for _, case in ipairs({
      { { type = "USER", args = { "alice" } }, "root and user only" },
      { { type = "ENV", args = { "ONLY_KEY" } }, "ENV requires both a key and value arguments" },
      { { type = "HEALTHCHECK", args = { "x" } }, "unsupported step type" },
      { { type = "RUN" }, "RUN requires command argument" },
      { { type = "COPY", args = { "a", "b" } }, "COPY requires files hash to be set" },
    }) do
      local tid, bid = start(fresh_name(), { fromTemplate = "base", steps = { case[1] } })
      local s = wait_build(tid, bid)
      assert.are.equal("error", s.status)
      assert.matches(case[2], s.reason.message, 1, true)
    end
  end)

  it("reuses cached steps: an unchanged prefix is CACHED, a changed or forced step and those after it run again", function()
    local name = fresh_name()
    local tag = tostring(h.now_ms())
    local function steps(second, force)
      return {
        { type = "RUN", args = { "echo " .. tag .. " >> ~/runs" } },
        { type = "RUN", args = { second }, force = force },
        { type = "RUN", args = { "echo third >> ~/runs" } },
      }
    end
    local function build(spec)
      local tid, bid = start(name, spec)
      local s, entries = wait_build(tid, bid)
      assert.are.equal("ready", s.status, messages(entries))
      return messages(entries)
    end
    build({ fromTemplate = "base", steps = steps("echo b >> ~/runs") })
    local again = build({ fromTemplate = "base", steps = steps("echo b >> ~/runs") })
    assert.matches("CACHED [builder 3/3]", again, 1, true)
    assert.are.equal(tag .. "\nb\nthird\n", run_in(name, "cat ~/runs"))
    local changed = build({ fromTemplate = "base", steps = steps("echo c >> ~/runs") })
    assert.matches("CACHED [builder 1/3]", changed, 1, true)
    assert.matches("\n[builder 2/3]", changed, 1, true)
    assert.matches("\n[builder 3/3]", changed, 1, true)
    assert.are.equal(tag .. "\nc\nthird\n", run_in(name, "cat ~/runs"))
    local forced = build({ fromTemplate = "base", steps = steps("echo c >> ~/runs", true) })
    assert.matches("CACHED [builder 1/3]", forced, 1, true)
    assert.matches("\n[builder 2/3]", forced, 1, true)
    assert.are.equal(tag .. "\nc\nthird\n", run_in(name, "cat ~/runs"))
    local all = build({ fromTemplate = "base", force = true, steps = steps("echo c >> ~/runs") })
    assert.is_nil(all:find("CACHED", 1, true))
  end)
end)

describe("e2b-local's built templates across a restart", function()
  it("keeps built templates, their tags and files with --state; an unusable meta.json is removed", function()
    local state = h.host("mktemp -d"):gsub("%s+$", "")
    local name = fresh_name()
    local tid
    local function on(fn)
      return function(client, vars)
        target = vars
        local ok, err = pcall(fn, client)
        target = nil
        assert(ok, err)
      end
    end
    h.with_local_server("--state " .. state, on(function()
      local bid
      tid, bid = start(name, { fromTemplate = "base", steps = { { type = "RUN", args = { "echo kept > ~/kept" } } } },
        { "v1" })
      assert.are.equal("ready", wait_build(tid, bid).status)
    end))
    h.host("mkdir -p " .. h.shell_quote(state .. "/built/bogus") .. " && echo '{' > "
      .. h.shell_quote(state .. "/built/bogus/meta.json"))
    h.with_local_server("--state " .. state, on(function(client)
      local st, alias = json_api("GET", "/templates/aliases/" .. name .. ":v1")
      assert.are.equal(200, st)
      assert.are.equal(tid, alias.templateID)
      local sbx = assert(client:create({ template = name .. ":v1" }))
      local res = assert(sbx:run("cat ~/kept"))
      sbx:kill()
      assert.are.equal("kept\n", res.stdout)
    end))
    assert.are.equal("", h.host("ls " .. h.shell_quote(state .. "/built") .. " | grep bogus || true"))
    h.host("rm -rf " .. h.shell_quote(state))
  end)
end)

describe("e2b-local's template-build API validation", function()
  it("refuses a request without a name, with an invalid name, tag or foreign namespace (400)", function()
    local cases = {
      { {}, "Name is required" },
      { { name = "Bad Name!" }, "Invalid name: invalid template ID" },
      { { name = "ok:bad tag" }, "Invalid name: invalid tag" },
      { { name = "other/ok" }, "namespace 'other' must match your team 'local'" },
      { { name = "ok", tags = { "v1", "a b" } }, "Invalid tag: invalid tag 'a b'" },
      { { name = "ok", tags = { "123e4567-e89b-12d3-a456-426614174000" } }, "tag cannot be a UUID" },
      { { name = "ok", tags = { "123e4567e89b12d3a456426614174000" } }, "tag cannot be a UUID" },
      { { name = 5 }, "Invalid request body" },
      { { name = "ok", cpuCount = 3 }, "CPU count must be 1 or an even number" },
      { { name = "ok", cpuCount = 64 }, "CPU count must be at most 32" },
      { { name = "ok", memoryMB = 64 }, "Memory must be at least 128 MiB" },
      { { name = "ok", memoryMB = 1025 }, "Memory must be divisible by 2" },
    }
    for _, c in ipairs(cases) do
      local status, body, text = json_api("POST", "/v3/templates", c[1])
      assert.are.equal(400, status, text)
      assert.matches(c[2], body.message, 1, true)
    end
  end)

  it("claims the name at request time: the alias exists, its tags are the name's tag and tags, lowercased", function()
    local name = fresh_name()
    local status, req = json_api("POST", "/v3/templates", { name = name:upper() .. ":V1", tags = { "Stable", "v1" } })
    assert.are.equal(202, status)
    assert.are.same({ name }, req.aliases)
    assert.are.same({ "local/" .. name }, req.names)
    table.sort(req.tags)
    assert.are.same({ "stable", "v1" }, req.tags)
    local st, alias = json_api("GET", "/templates/aliases/" .. name)
    assert.are.equal(200, st)
    assert.are.equal(req.templateID, alias.templateID)
    assert.are.equal(404, (json_api("GET", "/templates/aliases/" .. name .. ":nope")))
    assert.are.equal(409, (json_api("POST", "/v3/templates", { name = "base" })))
  end)

  it("deletes a built template by name or id (then it is gone), not while one of its builds runs (409) nor while a sandbox uses it (400)", function()
    local name = fresh_name()
    local tid, bid = start(name, { fromTemplate = "base", steps = { { type = "RUN", args = { "sleep 2" } } } }, { "v1" })
    assert.are.equal(409, (json_api("DELETE", "/templates/" .. name)))
    assert.are.equal("ready", wait_build(tid, bid).status)
    local st, sbx = json_api("POST", "/sandboxes", { templateID = name .. ":v1" })
    assert.are.equal(201, st)
    assert.are.equal(400, (json_api("DELETE", "/templates/" .. tid)))
    json_api("DELETE", "/sandboxes/" .. sbx.sandboxID)
    assert.are.equal(204, (json_api("DELETE", "/templates/" .. tid)))
    assert.are.equal(404, (json_api("GET", "/templates/aliases/" .. name)))
    assert.are.equal(404, (json_api("POST", "/sandboxes", { templateID = name })))
    assert.are.equal(404, (json_api("DELETE", "/templates/" .. name)))
  end)

  it("answers a waiting build's status as waiting, an unknown build as 400, a started build twice as 400", function()
    local _, req = json_api("POST", "/v3/templates", { name = fresh_name() })
    local base = ("/templates/%s/builds/%s"):format(req.templateID, req.buildID)
    local st, s = json_api("GET", base .. "/status")
    assert.are.equal(200, st)
    assert.are.equal("waiting", s.status)
    assert.are.same({}, s.logEntries)
    local unknown = ("/templates/%s/builds/%s/status"):format(req.templateID, "123e4567-e89b-12d3-a456-426614174000")
    local st2, u = json_api("GET", unknown)
    assert.are.equal(400, st2)
    assert.matches("not found", u.message, 1, true)
    assert.are.equal(400, (json_api("GET", ("/templates/%s/builds/not-a-uuid/status"):format(req.templateID))))
    local v2 = "/v2" .. base
    assert.are.equal(500, (json_api("POST", v2, {})))
    assert.are.equal(500, (json_api("POST", v2, { fromTemplate = "base", fromImage = "x" })))
    assert.are.equal(202, (json_api("POST", v2, { fromTemplate = "base" })))
    local again, body = json_api("POST", v2, { fromTemplate = "base" })
    assert.are.equal(400, again)
    assert.are.equal("build is not in waiting state", body.message)
    assert.are.equal(404, (json_api("POST", "/v2/templates/nope/builds/" .. req.buildID, { fromTemplate = "base" })))
  end)
end)
