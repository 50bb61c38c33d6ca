--- e2b.git: git in a sandbox (docs/manual.md, "sbx.git").
-- Every call runs git as an argv array (no shell) built from values libe2b
-- accepted (core.git_check), and reads `git status` through libe2b's reader
-- (core.git_status). Credentials travel as two environment variables of that
-- one git process and reach git only through a credential helper given on
-- its command line by name (`-c credential.helper=...` holds no secret): never
-- argv, the remote URL, .git/config, a credential store or an error.
-- @module e2b.git
local check = require("e2b.check")
local core = require("e2b.core")
local errors = require("e2b.errors")
local rt = require("e2b.rt")

local M = {}

--- Git in one sandbox: `sbx.git`. `repo` arguments are the repository's
-- directory in the sandbox. Every method takes, in its last table argument,
-- `user`, `cwd`, `env` (added to git's environment) and `timeout_ms` as
-- `Sandbox:run` does, and returns nil, err on failure: a git that exits
-- non-zero gives kind "sandbox" with err.exit_code, err.stdout and err.stderr
-- (kind "auth" for a clone, pull or push the remote refused for credentials).
-- @type Git
local Git = rt.class(M, "Git")

-- The token's username when only a token is given (GitHub's convention; any
-- username works for a token there).
local TOKEN_USER = "x-access-token"
-- Answers `get` with the two variables of this call; ignores store and erase.
local HELPER = "credential.helper=!f() { test \"$1\" = get || exit 0; cat >/dev/null; "
  .. "printf 'username=%s\\npassword=%s\\n' \"$E2B_GIT_USERNAME\" \"$E2B_GIT_PASSWORD\"; }; f"

local COMMON = { user = "nonempty", cwd = "nonempty", env = "string_map", timeout_ms = "positive_ms" }
local CREDS = { username = "string", password = "string", token = "string" }

local function spec_of(...)
  local spec = {}
  for _, t in ipairs({ COMMON, ... }) do
    for k, v in pairs(t) do spec[k] = v end
  end
  return spec
end

-- M.new(port) -> git; port: e2b.sandbox's envd port (git asks only its run)
function M.new(port)
  return setmetatable({ _port = port }, Git)
end

-- A libe2b check of one value: nil | err naming the field.
local function value(op, field, kind, v, optional)
  if v == nil and optional then return nil end
  if type(v) ~= "string" then return errors.invalid(op, field, "must be a string") end
  local why = core.git_check(kind, v)
  if why then return errors.invalid(op, field, why) end
end

-- Checks { field, kind, value, optional } rows in order: nil | the first err.
local function values(op, rows)
  for _, r in ipairs(rows) do
    local err = value(op, r[1], r[2], r[3], r[4])
    if err then return err end
  end
end

-- The credentials of o: nil (none) | { username, password } | nil, err.
local function credentials(op, o)
  if o.token ~= nil and o.password ~= nil then
    return nil, errors.invalid(op, "token", "give token or password, not both")
  end
  if o.password ~= nil and o.username == nil then
    return nil, errors.invalid(op, "password", "needs username")
  end
  local secret = o.password or o.token
  if o.username ~= nil and secret == nil then
    return nil, errors.invalid(op, "username", "needs password or token")
  end
  if secret == nil then return nil end
  local user = o.username or TOKEN_USER
  local err = value(op, "username", "line", user) or value(op, o.token and "token" or "password", "line", secret)
  if err then return nil, err end
  return { username = user, password = secret }
end

local function scrub(s, secret)
  if type(s) ~= "string" or not secret then return s end
  local out, at = {}, 1
  while true do
    local i, j = s:find(secret, at, true)
    if not i then break end
    out[#out + 1] = s:sub(at, i - 1) .. "***"
    at = j + 1
  end
  out[#out + 1] = s:sub(at)
  return table.concat(out)
end

-- The ops that talk to a remote: a failure may be one of credentials.
local REMOTE_OPS = { clone = true, pull = true, push = true }

-- The err of a git that exited non-zero: its last line of stderr, bounded;
-- kind "auth" when libe2b reads a remote's refusal of credentials in it.
local function exit_error(op, r, secret)
  local stderr = scrub(r.stderr, secret)
  local last = stderr:match("([^\n]+)\n*$") or ""
  if #last > 300 then last = last:sub(1, 300) .. "..." end
  local kind = REMOTE_OPS[op] and core.git_failure_kind(r.stderr .. "\n" .. (r.stdout or "")) or "sandbox"
  return errors.new(kind, op, ("git exited with %d: %s"):format(r.exit_code, last), {
    exit_code = r.exit_code, stdout = scrub(r.stdout, secret), stderr = stderr, retryable = false })
end

-- Runs git [-c helper] [-C repo] argv... : result | nil, err (a non-zero
-- exit is an error unless allowed[exit_code]).
function Git:_run(op, repo, argv, o, creds, allowed)
  local env = { GIT_TERMINAL_PROMPT = "0" }
  for k, v in pairs(o.env or {}) do env[k] = v end
  local cmd = { "git" }
  if creds then
    env.E2B_GIT_USERNAME, env.E2B_GIT_PASSWORD = creds.username, creds.password
    for _, a in ipairs({ "-c", "credential.helper=", "-c", HELPER }) do cmd[#cmd + 1] = a end
  end
  if repo then cmd[#cmd + 1], cmd[#cmd + 2] = "-C", repo end
  for _, a in ipairs(argv) do cmd[#cmd + 1] = a end
  local secret = creds and creds.password
  local r, err = self._port.run(cmd, { env = env, user = o.user, cwd = o.cwd, timeout_ms = o.timeout_ms,
                                      keep_output = false })
  if not r then
    if type(err) == "table" then
      for _, k in ipairs({ "message", "stdout", "stderr" }) do err[k] = scrub(err[k], secret) end
    end
    return nil, err
  end
  if r.exit_code ~= 0 and not (allowed and allowed[r.exit_code]) then return nil, exit_error(op, r, secret) end
  return r
end

-- Options of op checked against spec_of(...): o | nil, err.
local function opts_of(op, opts, ...)
  return check.options(op, opts, spec_of(...))
end

--- Creates a repository (`git init`).
-- @tparam string path its directory
-- @tparam[opt] table opts
-- @tparam[opt] boolean opts.bare a bare repository
-- @tparam[opt] string opts.initial_branch the first branch's name
-- @treturn table the run's result
-- @return or nil, err
function Git:init(path, opts)
  local o, err = opts_of("init", opts, { bare = "boolean", initial_branch = "string" })
  if not o then return nil, err end
  err = values("init", { { "path", "path", path }, { "initial_branch", "ref", o.initial_branch, true } })
  if err then return nil, err end
  local argv = { "init" }
  if o.initial_branch then argv[#argv + 1] = "--initial-branch=" .. o.initial_branch end
  if o.bare then argv[#argv + 1] = "--bare" end
  argv[#argv + 1] = "--"
  argv[#argv + 1] = path
  return self:_run("init", nil, argv, o)
end

--- Clones a repository (`git clone`).
-- @tparam string url the repository (https://, ssh, file://, a path); a
--   password in it is refused: pass username and password, or token
-- @tparam[opt] table opts
-- @tparam[opt] string opts.path the directory (default: git's, from the URL)
-- @tparam[opt] string opts.branch clone this branch only
-- @tparam[opt] int opts.depth history depth, positive
-- @tparam[opt] string opts.username with password (or token)
-- @tparam[opt] string opts.password needs username
-- @tparam[opt] string opts.token a token; the username defaults to "x-access-token"
-- @treturn table the run's result
-- @return or nil, err
function Git:clone(url, opts)
  local o, err = opts_of("clone", opts, CREDS, { path = "string", branch = "string", depth = "positive" })
  if not o then return nil, err end
  err = values("clone", { { "url", "url", url }, { "path", "path", o.path, true },
                          { "branch", "ref", o.branch, true } })
  if err then return nil, err end
  local creds, cerr = credentials("clone", o)
  if cerr then return nil, cerr end
  local argv = { "clone" }
  if o.branch then
    for _, a in ipairs({ "--branch", o.branch, "--single-branch" }) do argv[#argv + 1] = a end
  end
  if o.depth then argv[#argv + 1] = ("--depth=%d"):format(o.depth) end
  argv[#argv + 1] = "--"
  argv[#argv + 1] = url
  argv[#argv + 1] = o.path
  return self:_run("clone", nil, argv, o, creds)
end

-- The lists and flags status adds to what core.git_status read.
local function summarize(st)
  st.staged, st.unstaged, st.untracked, st.conflicts = {}, {}, {}, {}
  for _, f in ipairs(st.files) do
    if f.staged then st.staged[#st.staged + 1] = f.path end
    if f.unstaged then st.unstaged[#st.unstaged + 1] = f.path end
    if f.untracked then st.untracked[#st.untracked + 1] = f.path end
    if f.conflict then st.conflicts[#st.conflicts + 1] = f.path end
  end
  st.clean = #st.files == 0
  return st
end

--- The repository's status (`git status --porcelain=v2 --branch -z`, read by libe2b).
-- @tparam string repo
-- @tparam[opt] table opts
-- @treturn table { branch (nil when detached), oid (nil before the first commit),
--   upstream, ahead, behind, detached, clean, files = { { path, orig_path (renames),
--   index, worktree (git's letters, "." unchanged), staged, unstaged, untracked,
--   conflict } }, staged, unstaged, untracked, conflicts (lists of paths) }
-- @return or nil, err
function Git:status(repo, opts)
  local o, err = opts_of("status", opts)
  if not o then return nil, err end
  err = value("status", "path", "path", repo)
  if err then return nil, err end
  local r, rerr = self:_run("status", repo, { "status", "--porcelain=v2", "--branch", "-z" }, o)
  if not r then return nil, rerr end
  local st, why = core.git_status(r.stdout)
  if not st then return nil, errors.new("protocol", "status", "git status: " .. why, { retryable = false }) end
  return summarize(st)
end

--- Stages changes (`git add`).
-- @tparam string repo
-- @tparam[opt] table opts
-- @tparam[opt] {string,...} opts.files these paths only
-- @tparam[opt=true] boolean opts.all without files: every change, deletions too (`-A`); false: `.`
-- @treturn table the run's result
-- @return or nil, err
function Git:add(repo, opts)
  local o, err = opts_of("add", opts, { files = "string_list", all = "boolean" })
  if not o then return nil, err end
  err = value("add", "path", "path", repo)
  for i, f in ipairs(o.files or {}) do err = err or value("add", ("files[%d]"):format(i), "path", f) end
  if err then return nil, err end
  local argv = { "add" }
  if o.files and #o.files > 0 then
    argv[2] = "--"
    for _, f in ipairs(o.files) do argv[#argv + 1] = f end
  else
    argv[2] = o.all == false and "." or "-A"
  end
  return self:_run("add", repo, argv, o)
end

--- Commits what is staged (`git commit -m`).
-- @tparam string repo
-- @tparam string message
-- @tparam[opt] table opts
-- @tparam[opt] string opts.author_name author and committer name for this commit
-- @tparam[opt] string opts.author_email author and committer email for this commit
-- @tparam[opt] boolean opts.allow_empty commit even with nothing staged
-- @treturn table the run's result
-- @return or nil, err
function Git:commit(repo, message, opts)
  local o, err = opts_of("commit", opts, { author_name = "string", author_email = "string", allow_empty = "boolean" })
  if not o then return nil, err end
  err = values("commit", { { "path", "path", repo }, { "message", "text", message },
    { "author_name", "line", o.author_name, true }, { "author_email", "line", o.author_email, true } })
  if err then return nil, err end
  local argv = {}
  if o.author_name then argv[#argv + 1], argv[#argv + 2] = "-c", "user.name=" .. o.author_name end
  if o.author_email then argv[#argv + 1], argv[#argv + 2] = "-c", "user.email=" .. o.author_email end
  for _, a in ipairs({ "commit", "-m", message }) do argv[#argv + 1] = a end
  if o.allow_empty then argv[#argv + 1] = "--allow-empty" end
  return self:_run("commit", repo, argv, o)
end

--- The local branches.
-- @tparam string repo
-- @tparam[opt] table opts
-- @treturn table { branches = { name... }, current = name (nil when detached) }
-- @return or nil, err
function Git:branches(repo, opts)
  local o, err = opts_of("branches", opts)
  if not o then return nil, err end
  err = value("branches", "path", "path", repo)
  if err then return nil, err end
  local r, rerr = self:_run("branches", repo, { "branch", "--format=%(HEAD)%(refname:short)" }, o)
  if not r then return nil, rerr end
  local out = { branches = {} }
  for mark, name in r.stdout:gmatch("([* ])([^\n]*)\n") do
    if name:sub(1, 1) ~= "(" then -- "(HEAD detached at ...)" is no branch
      out.branches[#out.branches + 1] = name
      if mark == "*" then out.current = name end
    end
  end
  return out
end

-- A call on one branch: checks repo and name, runs argv.
function Git:_on_branch(op, repo, name, opts, argv_of, extra)
  local o, err = opts_of(op, opts, extra or {})
  if not o then return nil, err end
  err = values(op, { { "path", "path", repo }, { "branch", "ref", name } })
  if err then return nil, err end
  return self:_run(op, repo, argv_of(o), o)
end

--- Creates a branch and checks it out (`git checkout -b`).
-- @tparam string repo
-- @tparam string branch
-- @tparam[opt] table opts
-- @treturn table the run's result
-- @return or nil, err
function Git:create_branch(repo, branch, opts)
  return self:_on_branch("create_branch", repo, branch, opts, function() return { "checkout", "-b", branch } end)
end

--- Checks out a branch (`git checkout BRANCH --`).
-- @tparam string repo
-- @tparam string branch
-- @tparam[opt] table opts
-- @treturn table the run's result
-- @return or nil, err
function Git:checkout(repo, branch, opts)
  return self:_on_branch("checkout", repo, branch, opts, function() return { "checkout", branch, "--" } end)
end

--- Deletes a branch (`git branch -d`, or `-D` with force).
-- @tparam string repo
-- @tparam string branch
-- @tparam[opt] table opts
-- @tparam[opt] boolean opts.force delete even when not merged
-- @treturn table the run's result
-- @return or nil, err
function Git:delete_branch(repo, branch, opts)
  return self:_on_branch("delete_branch", repo, branch, opts,
    function(o) return { "branch", o.force and "-D" or "-d", branch } end, { force = "boolean" })
end

--- Adds a remote (`git remote add`).
-- @tparam string repo
-- @tparam string name
-- @tparam string url
-- @tparam[opt] table opts
-- @tparam[opt] boolean opts.fetch fetch it afterwards
-- @tparam[opt] boolean opts.overwrite set the URL when the remote exists
-- @treturn table the last run's result
-- @return or nil, err
function Git:remote_add(repo, name, url, opts)
  local o, err = opts_of("remote_add", opts, { fetch = "boolean", overwrite = "boolean" })
  if not o then return nil, err end
  err = values("remote_add", { { "path", "path", repo }, { "name", "ref", name }, { "url", "url", url } })
  if err then return nil, err end
  local existing, gerr
  if o.overwrite then
    existing, gerr = self:remote_get(repo, name, { user = o.user, cwd = o.cwd })
    if gerr then return nil, gerr end
  end
  local argv = existing and { "remote", "set-url", name, url } or { "remote", "add", name, url }
  local r, rerr = self:_run("remote_add", repo, argv, o)
  if not r or not o.fetch then return r, rerr end
  return self:_run("remote_add", repo, { "fetch", name }, o)
end

--- A remote's URL (`git remote get-url`).
-- @tparam string repo
-- @tparam string name
-- @tparam[opt] table opts
-- @treturn ?string the URL, or nil (and no err) when there is no such remote
-- @return or nil, err
function Git:remote_get(repo, name, opts)
  local o, err = opts_of("remote_get", opts)
  if not o then return nil, err end
  err = values("remote_get", { { "path", "path", repo }, { "name", "ref", name } })
  if err then return nil, err end
  local r, rerr = self:_run("remote_get", repo, { "remote", "get-url", name }, o, nil, { [2] = true })
  if not r then return nil, rerr end
  if r.exit_code ~= 0 then return nil end
  return (r.stdout:gsub("\n$", ""))
end

-- push and pull: [remote [branch]], with credentials.
function Git:_sync(op, repo, opts, extra)
  local o, err = opts_of(op, opts, CREDS, { remote = "string", branch = "string" }, extra)
  if not o then return nil, err end
  err = values(op, { { "path", "path", repo }, { "remote", "ref", o.remote, true },
                     { "branch", "ref", o.branch, true } })
  if err then return nil, err end
  if o.branch and not o.remote then return nil, errors.invalid(op, "branch", "needs remote") end
  local creds, cerr = credentials(op, o)
  if cerr then return nil, cerr end
  local argv = { op }
  if op == "push" and o.remote and o.set_upstream ~= false then argv[#argv + 1] = "--set-upstream" end
  argv[#argv + 1] = o.remote
  argv[#argv + 1] = o.branch
  return self:_run(op, repo, argv, o, creds)
end

--- Pushes (`git push [--set-upstream] [remote [branch]]`).
-- @tparam string repo
-- @tparam[opt] table opts
-- @tparam[opt] string opts.remote default: the branch's upstream
-- @tparam[opt] string opts.branch needs remote
-- @tparam[opt=true] boolean opts.set_upstream with remote: make it the branch's upstream
-- @tparam[opt] string opts.username with password (or token)
-- @tparam[opt] string opts.password needs username
-- @tparam[opt] string opts.token a token; the username defaults to "x-access-token"
-- @treturn table the run's result
-- @return or nil, err
function Git:push(repo, opts)
  return self:_sync("push", repo, opts, { set_upstream = "boolean" })
end

--- Pulls (`git pull [remote [branch]]`).
-- @tparam string repo
-- @tparam[opt] table opts
-- @tparam[opt] string opts.remote default: the branch's upstream
-- @tparam[opt] string opts.branch needs remote
-- @tparam[opt] string opts.username with password (or token)
-- @tparam[opt] string opts.password needs username
-- @tparam[opt] string opts.token a token; the username defaults to "x-access-token"
-- @treturn table the run's result
-- @return or nil, err
function Git:pull(repo, opts)
  return self:_sync("pull", repo, opts)
end

local CONFIG_SPEC = { scope = check.oneof("global", "local", "system"), path = "string" }

-- The argv head of a config call: { "config", "--SCOPE" } [, repo] | nil, err.
local function config_scope(op, o)
  local scope = o.scope or "global"
  if scope == "local" and o.path == nil then
    return nil, nil, errors.invalid(op, "path", "needed with scope \"local\"")
  end
  local err = scope == "local" and value(op, "path", "path", o.path)
  if err then return nil, nil, err end
  return { "config", "--" .. scope }, scope == "local" and o.path or nil
end

--- Sets a config value (`git config --SCOPE -- key value`).
-- @tparam string key section.name
-- @tparam string value
-- @tparam[opt] table opts
-- @tparam[opt="global"] string opts.scope "global", "local" or "system"
-- @tparam[opt] string opts.path the repository (needed with scope "local")
-- @treturn table the run's result
-- @return or nil, err
function Git:set_config(key, v, opts)
  local o, err = opts_of("set_config", opts, CONFIG_SPEC)
  if not o then return nil, err end
  err = value("set_config", "key", "key", key) or (v ~= "" and value("set_config", "value", "text", v)) or nil
  if err then return nil, err end
  local argv, repo, serr = config_scope("set_config", o)
  if not argv then return nil, serr end
  for _, a in ipairs({ "--", key, v }) do argv[#argv + 1] = a end
  return self:_run("set_config", repo, argv, o)
end

--- A config value (`git config --SCOPE --get -- key`).
-- @tparam string key section.name
-- @tparam[opt] table opts as set_config's
-- @treturn ?string the value, or nil (and no err) when it is not set
-- @return or nil, err
function Git:get_config(key, opts)
  local o, err = opts_of("get_config", opts, CONFIG_SPEC)
  if not o then return nil, err end
  err = value("get_config", "key", "key", key)
  if err then return nil, err end
  local argv, repo, serr = config_scope("get_config", o)
  if not argv then return nil, serr end
  for _, a in ipairs({ "--get", "--", key }) do argv[#argv + 1] = a end
  local r, rerr = self:_run("get_config", repo, argv, o, nil, { [1] = true })
  if not r then return nil, rerr end
  if r.exit_code ~= 0 then return nil end
  return (r.stdout:gsub("\n$", ""))
end

--- Sets user.name and user.email.
-- @tparam string name
-- @tparam string email
-- @tparam[opt] table opts as set_config's
-- @treturn table the last run's result
-- @return or nil, err
function Git:configure_user(name, email, opts)
  local err = values("configure_user", { { "name", "line", name }, { "email", "line", email } })
  if err then return nil, err end
  local r, serr = self:set_config("user.name", name, opts)
  if not r then return nil, serr end
  return self:set_config("user.email", email, opts)
end

return M
