-- sbx.git: git in a sandbox, against a bare repository in the same sandbox
-- (file:// URLs), and credentials that never reach a command line, a config
-- file, the shell history or an error.
local h = require("spec.helpers")

local REMOTE = "/tmp/remote.git"
local URL = "file://" .. REMOTE
local SEED = "/home/user/seed"
local TOKEN = "tok-Zq81-secret-never-shown"

describe("git", function()
  local sbx, git
  setup(function()
    sbx = h.sandbox()
    git = sbx.git
    assert(git:init(REMOTE, { bare = true, initial_branch = "main" }))
    assert(git:init(SEED, { initial_branch = "main" }))
    assert(git:configure_user("Seed Writer", "seed@example.com", { scope = "local", path = SEED }))
    assert(sbx.files:write(SEED .. "/README", "hello\n"))
    assert(git:add(SEED))
    assert(git:commit(SEED, "first"))
    assert(git:remote_add(SEED, "origin", URL))
    assert(git:push(SEED, { remote = "origin", branch = "main", set_upstream = true }))
  end)
  teardown(h.cleanup)

  local function sh(cmd)
    return assert(sbx:run(cmd)).stdout
  end

  it("clones a branch at a depth and the status shows a clean tree tracking it", function()
    assert(git:clone(URL, { path = "/home/user/c1", branch = "main", depth = 1 }))
    assert.are.equal("hello\n", assert(sbx.files:read("/home/user/c1/README")))
    assert.are.equal("1\n", sh("git -C /home/user/c1 rev-list --count HEAD"))
    local st = assert(git:status("/home/user/c1"))
    assert.are.equal("main", st.branch)
    assert.are.equal("origin/main", st.upstream)
    assert.are.equal(0, st.ahead)
    assert.are.equal(0, st.behind)
    assert.is_false(st.detached)
    assert.is_true(st.clean)
    assert.are.equal(0, #st.files)
  end)

  it("status parses staged, unstaged, untracked and renamed paths, and ahead counts", function()
    local dir = "/home/user/c2"
    assert(git:clone(URL, { path = dir }))
    assert(git:configure_user("C Two", "c2@example.com", { scope = "local", path = dir }))
    assert(sbx.files:write(dir .. "/staged file.txt", "s\n"))
    assert(sbx.files:write(dir .. "/new\nline", "u\n"))
    assert(git:add(dir, { files = { "staged file.txt" } }))
    assert(git:commit(dir, "two"))
    sh("cd " .. dir .. " && echo more >> README && git mv 'staged file.txt' moved.txt && echo x > loose")
    local st = assert(git:status(dir))
    assert.are.equal(1, st.ahead)
    assert.is_false(st.clean)
    local by = {}
    for _, f in ipairs(st.files) do by[f.path] = f end
    assert.is_true(by["README"].unstaged and not by["README"].staged)
    assert.are.equal("M", by["README"].worktree)
    assert.is_true(by["moved.txt"].staged)
    assert.are.equal("staged file.txt", by["moved.txt"].orig_path)
    assert.are.equal("R", by["moved.txt"].index)
    assert.is_true(by["new\nline"].untracked)
    assert.is_true(by["loose"].untracked)
    assert.are.same({ "moved.txt" }, st.staged)
    assert.are.same({ "README" }, st.unstaged)
    table.sort(st.untracked)
    assert.are.same({ "loose", "new\nline" }, st.untracked)
  end)

  it("commits with the author given, and add -A takes deletions too", function()
    local dir = "/home/user/c3"
    assert(git:clone(URL, { path = dir }))
    sh("rm " .. dir .. "/README")
    assert(git:add(dir))
    assert(git:commit(dir, "gone\n\nbody; $(touch /tmp/pwned) `id`",
      { author_name = "Ada L", author_email = "ada@example.com" }))
    assert.are.equal("Ada L <ada@example.com>\ngone\n\nbody; $(touch /tmp/pwned) `id`\n",
      sh("git -C " .. dir .. " log -1 --format='%an <%ae>%n%B' | sed '$d'"))
    assert.are.equal("no\n", sh("test -e /tmp/pwned && echo yes || echo no"))
    assert.is_true(assert(git:status(dir)).clean)
  end)

  it("lists, creates, checks out and deletes branches", function()
    local dir = "/home/user/c4"
    assert(git:clone(URL, { path = dir }))
    assert(git:create_branch(dir, "feature/x"))
    local b = assert(git:branches(dir))
    assert.are.equal("feature/x", b.current)
    table.sort(b.branches)
    assert.are.same({ "feature/x", "main" }, b.branches)
    assert(git:checkout(dir, "main"))
    assert.are.equal("main", assert(git:branches(dir)).current)
    assert(git:delete_branch(dir, "feature/x"))
    assert.are.same({ "main" }, assert(git:branches(dir)).branches)
    local _, err = git:checkout(dir, "no-such-branch")
    assert.are.equal("sandbox", err.kind)
    assert.are.equal(128, err.exit_code)
    assert.matches("no%-such%-branch", err.stderr)
  end)

  it("adds and reads remotes; a missing remote is nil", function()
    local dir = "/home/user/c5"
    assert(git:clone(URL, { path = dir }))
    assert.are.equal(URL, assert(git:remote_get(dir, "origin")))
    assert(git:remote_add(dir, "mirror", "file:///tmp/elsewhere.git"))
    assert.are.equal("file:///tmp/elsewhere.git", assert(git:remote_get(dir, "mirror")))
    assert(git:remote_add(dir, "mirror", URL, { overwrite = true, fetch = true }))
    assert.are.equal(URL, assert(git:remote_get(dir, "mirror")))
    local url, err = git:remote_get(dir, "absent")
    assert.is_nil(url)
    assert.is_nil(err)
  end)

  it("pushes from one clone and pulls into another", function()
    local a, b = "/home/user/pa", "/home/user/pb"
    assert(git:clone(URL, { path = a }))
    assert(git:clone(URL, { path = b }))
    assert(git:configure_user("P A", "pa@example.com", { scope = "local", path = a }))
    assert(sbx.files:write(a .. "/pushed.txt", "from a\n"))
    assert(git:add(a))
    assert(git:commit(a, "from a"))
    assert(git:push(a))
    assert(git:pull(b))
    assert.are.equal("from a\n", assert(sbx.files:read(b .. "/pushed.txt")))
  end)

  it("configures the user globally and reads config back", function()
    assert(git:configure_user("Global Name", "global@example.com"))
    assert.are.equal("Global Name", assert(git:get_config("user.name")))
    assert.are.equal("global@example.com", assert(git:get_config("user.email", { scope = "global" })))
    assert.is_nil((git:get_config("no.such-key")))
  end)

  it("refuses bad arguments naming the field, before running git", function()
    local cases = {
      { "clone", "url", function() return git:clone("-u/tmp/x") end },
      { "clone", "url", function() return git:clone("https://u:" .. TOKEN .. "@example.com/r.git") end },
      { "clone", "branch", function() return git:clone(URL, { branch = "--upload-pack=x" }) end },
      { "clone", "depth", function() return git:clone(URL, { depth = 0 }) end },
      { "clone", "password", function() return git:clone(URL, { password = TOKEN }) end },
      { "clone", "token", function() return git:clone(URL, { token = TOKEN, password = TOKEN }) end },
      { "commit", "message", function() return git:commit("/tmp", "") end },
      { "commit", "author_name", function() return git:commit("/tmp", "m", { author_name = "a\nb" }) end },
      { "create_branch", "branch", function() return git:create_branch("/tmp", "a..b") end },
      { "remote_add", "name", function() return git:remote_add("/tmp", "-x", URL) end },
      { "set_config", "key", function() return git:set_config("nodot", "v") end },
      { "set_config", "path", function() return git:set_config("a.b", "v", { scope = "local" }) end },
      { "status", "path", function() return git:status("") end },
    }
    for _, c in ipairs(cases) do
      local ok, err = c[3]()
      assert.is_nil(ok)
      assert.are.equal("invalid_argument", err.kind)
      assert.are.equal(c[1], err.op)
      assert.are.equal(c[2], err.field)
      assert.is_nil(tostring(err):find(TOKEN, 1, true))
    end
  end)

  describe("a remote that wants credentials", function()
    -- Git's smart HTTP as a host with private repositories answers it: 401
    -- with a Basic challenge to every request, 403 under /forbidden/. In
    -- the sandbox, on its own loopback.
    local SERVER = [[
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self):
        if self.path.startswith("/forbidden/"):
            self.send_response(403)
        else:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = answer
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print("port", s.server_address[1], flush=True)
s.serve_forever()
]]
    local base, server
    setup(function()
      server = assert(sbx:spawn({ "python3", "-u", "-c", SERVER }))
      local out = ""
      while not base do
        local data = server:read(10000)
        assert(data, "the sandbox's git server did not start: " .. out)
        out = out .. data
        local port = out:match("port (%d+)")
        base = port and ("http://127.0.0.1:%s"):format(port)
      end
    end)
    teardown(function() if server then server:kill() end end)

    local function assert_auth(what, ok, err)
      assert.is_nil(ok, what)
      assert.are.equal("auth", err.kind, what .. ": " .. tostring(err))
      assert.is_true(err.exit_code ~= 0, what)
      assert.is_string(err.stderr, what)
      assert.is_nil(tostring(err):find(TOKEN, 1, true), what)
      assert.is_nil(err.stderr:find(TOKEN, 1, true), what)
    end

    it("clone, push and pull fail with kind auth without credentials, with refused ones and on 403", function()
      assert_auth("clone, none", git:clone(base .. "/r.git", { path = "/home/user/priv1" }))
      assert_auth("clone, refused", git:clone(base .. "/r.git", { path = "/home/user/priv2", token = TOKEN }))
      assert_auth("clone, 403", git:clone(base .. "/forbidden/r.git", { path = "/home/user/priv3", username = "bob",
                                                                       password = TOKEN }))
      local dir = "/home/user/priv4"
      assert(git:clone(URL, { path = dir }))
      assert(git:remote_add(dir, "private", base .. "/r.git"))
      for _, op in ipairs({ "push", "pull" }) do
        assert_auth(op .. ", none", git[op](git, dir, { remote = "private", branch = "main" }))
        assert_auth(op .. ", refused", git[op](git, dir, { remote = "private", branch = "main", username = "bob",
                                                          password = TOKEN }))
      end
    end)

    it("any other failure of a clone stays kind sandbox", function()
      local ok, err = git:clone("file:///tmp/no-such-repo.git", { path = "/home/user/none" })
      assert.is_nil(ok)
      assert.are.equal("sandbox", err.kind)
    end)
  end)

  describe("credentials", function()
    -- A remote helper for "fake::" URLs: it asks git's credential machinery
    -- for a password as git-remote-https would, records what it was given
    -- and what `ps` shows meanwhile, approves the credential (as a
    -- successful fetch does: a "store" helper would now write it) and fails.
    local HELPER = [[#!/bin/sh
printf 'protocol=https\nhost=example.com\n\n' | git credential fill > /tmp/cred.out 2>&1
ps -eo args > /tmp/ps.out
git credential approve < /tmp/cred.out
echo "fatal: fake remote refuses" >&2
exit 1
]]
    local ENV = { PATH = "/home/user/bin:/usr/local/bin:/usr/bin:/bin" }

    setup(function()
      assert(sbx.files:write("/home/user/bin/git-remote-fake", HELPER))
      sh("chmod 755 /home/user/bin/git-remote-fake")
      -- a user who lets git store credentials: ours must never be stored
      assert(git:set_config("credential.helper", "store"))
    end)

    local function assert_nowhere(err)
      assert.is_nil(tostring(err):find(TOKEN, 1, true))
      assert.is_nil((err.stderr or ""):find(TOKEN, 1, true))
      assert.matches("fake remote refuses", err.stderr)
      assert.matches("password=" .. TOKEN, sh("cat /tmp/cred.out"), 1, true)
      assert.is_nil(sh("cat /tmp/ps.out"):find(TOKEN, 1, true))
      assert.matches("git%-remote%-fake", sh("cat /tmp/ps.out"))
      -- the pattern from a file: on grep's command line it would find itself
      assert(sbx.files:write("/tmp/token.pat", TOKEN .. "\n"))
      local leaks = sh("cd /home/user && grep -rlF -f /tmp/token.pat .bash_history .git-credentials "
        .. ".gitconfig .config /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; true")
      assert.are.equal("", leaks)
    end

    it("clone gives a token to git's credential helper only, never argv, config or history", function()
      local ok, err = git:clone("fake::https://example.com/r.git",
        { path = "/home/user/fake1", token = TOKEN, env = ENV })
      assert.is_nil(ok)
      assert.are.equal("sandbox", err.kind)
      assert.matches("username=x%-access%-token", sh("cat /tmp/cred.out"))
      assert_nowhere(err)
    end)

    it("push and pull give username and password the same way and leave .git/config clean", function()
      local dir = "/home/user/fake2"
      assert(git:clone(URL, { path = dir }))
      assert(git:remote_add(dir, "origin", "fake::https://example.com/r.git", { overwrite = true }))
      for _, op in ipairs({ "push", "pull" }) do
        sh("rm -f /tmp/cred.out /tmp/ps.out")
        local ok, err = git[op](git, dir, { remote = "origin", branch = "main", username = "bob",
                                            password = TOKEN, env = ENV })
        assert.is_nil(ok)
        assert.matches("username=bob", sh("cat /tmp/cred.out"))
        assert_nowhere(err)
        assert.is_nil(sh("cat " .. dir .. "/.git/config"):find(TOKEN, 1, true))
      end
    end)
  end)
end)
