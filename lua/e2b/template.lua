--- e2b.template: templates built in code, the official SDKs' `Template`.
-- A builder (`e2b.template()`) records a base, steps and a start command;
-- `client:build_template(t, opts)` builds it on E2B. The rules (names, each
-- step's arguments, COPY sources, their hash and tar, the build's body) are
-- libe2b's (template.c, template/files.c); this module presents them.
--
-- Builder methods return the builder, so calls chain. A bad argument does
-- not raise: the builder keeps the first one, ignores the calls after it,
-- and `t:check()` or `client:build_template(t)` returns it as `nil, err`
-- (kind invalid_argument, naming the field) before anything is sent.
-- @module e2b.template
local cancel = require("e2b.cancel")
local check = require("e2b.check")
local core = require("e2b.core")
local errors = require("e2b.errors")
local rt = require("e2b.rt")

local M = {}

local Template = rt.class(M, "Template")

local OP = "template"

--- A new, empty template builder.
-- @tparam[opt] table opts { context = directory COPY sources are relative to
--   (default "."), ignore = { patterns of paths left out of every COPY } }
-- @treturn e2b.template.Template
function M.new(opts)
  local self = setmetatable({ _spec = { steps = {} }, _force_next = false }, Template)
  if opts ~= nil and type(opts) ~= "table" then
    self._err = errors.invalid(OP, "opts", "must be a table")
    return self
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "context" and k ~= "ignore" then
      self._err = errors.invalid(OP, tostring(k), "unknown option")
      return self
    end
  end
  if opts.context ~= nil and (type(opts.context) ~= "string" or opts.context:find("\0", 1, true)) then
    self._err = errors.invalid(OP, "context", "must be a string without NUL bytes")
  elseif opts.ignore ~= nil and not self:_strings(opts.ignore, "ignore") then
    return self
  end
  self._spec.context = opts.context or "."
  self._spec.ignore = opts.ignore
  return self
end

-- Records the first error; every later call is then ignored.
function Template:_fail(field, what)
  if not self._err then self._err = errors.invalid(OP, field, what) end
  return self
end

function Template:_strings(v, field)
  if type(v) ~= "table" then self:_fail(field, "must be an array of strings") return false end
  for i = 1, #v do
    if type(v[i]) ~= "string" then self:_fail(field, "must be an array of strings") return false end
  end
  return true
end

-- A list of strings from a string or an array, or nil (after _fail).
function Template:_list(v, field)
  if type(v) == "string" then return { v } end
  if type(v) == "table" and self:_strings(v, field) and #v > 0 then return v end
  self:_fail(field, "must be a string or a non-empty array of strings")
end

-- opts checked against allowed (name -> Lua type): the table, or nil.
function Template:_opts(opts, method, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then return self:_fail(method .. ".opts", "must be a table") and nil end
  for k, v in pairs(opts) do
    local want = allowed[k]
    if not want then return self:_fail(method .. "." .. tostring(k), "unknown option") and nil end
    if type(v) ~= want then return self:_fail(method .. "." .. k, "must be a " .. want) and nil end
  end
  return opts
end

-- Appends a step the core accepts.
function Template:_step(step)
  if self._err then return self end
  for k, a in ipairs(step.args) do -- libe2b reads C strings: a NUL would cut the value short
    if a:find("\0", 1, true) then
      return self:_fail(("steps[%d].args[%d]"):format(#self._spec.steps + 1, k), "must not hold a NUL byte")
    end
  end
  step.force = step.force or self._force_next
  local steps = self._spec.steps
  local ok, err = core.template_step_check(step, #steps + 1)
  if not ok then
    self._err = err
    return self
  end
  steps[#steps + 1] = step
  return self
end

--- The first bad argument the builder was given.
-- @treturn boolean true
-- @return or nil, err (invalid_argument naming the field)
function Template:check()
  if self._err then return nil, self._err end
  return core.template_check(self._spec)
end

-- ---- the base ----

local function base(field, value)
  return function(self, arg)
    if self._err then return self end
    if arg ~= nil and (type(arg) ~= "string" or arg == "" or arg:find("\0", 1, true)) then
      return self:_fail(field, "must be a non-empty string without NUL bytes")
    end
    self._spec.from_image, self._spec.from_template, self._spec.registry = nil, nil, nil
    self._spec[field == "from_template" and "from_template" or "from_image"] = value(arg)
    if self._force_next then self._spec.force = true end
    if field == "from_template" then
      local ok, err = core.template_name_check(arg, "from_template")
      if not ok then self._err = err end
    end
    return self
  end
end

local function image(name, default)
  return function(v) return name .. ":" .. (v or default) end
end

--- Builds on another template (by name, as `client:create{ template = }` takes it).
-- @function Template:from_template
-- @tparam string name
Template.from_template = base("from_template", function(v) return v end)
local plain_image = base("from_image", function(v) return v end)

-- The image, then its registry's credentials (every field a string; which
-- ones the type needs is libe2b's to check, naming the field, never its value).
function Template:_registry(method, img, creds, rtype, fields)
  plain_image(self, img)
  if self._err or creds == nil then return self end
  if type(creds) ~= "table" then return self:_fail(method .. ".credentials", "must be a table") end
  local reg = { type = rtype }
  for k, v in pairs(creds) do
    local to = fields[k]
    if not to then return self:_fail(method .. "." .. tostring(k), "unknown option") end
    if type(v) ~= "string" or v:find("\0", 1, true) then
      return self:_fail(method .. "." .. k, "must be a string without NUL bytes")
    end
    reg[to] = v
  end
  self._spec.registry = reg
  return self
end

--- Builds on a Docker image, from a private registry when credentials are given.
-- @tparam string img e.g. "python:3.12"
-- @tparam[opt] table credentials { username =, password = } (both required)
function Template:from_image(img, credentials)
  return self:_registry("from_image", img, credentials, "registry", { username = "username", password = "password" })
end

-- A Dockerfile's text: the file at s when s names one, else s itself (as
-- the SDKs decide); one byte past the core's bound is read, so it refuses.
local DOCKERFILE_MAX = 1024 * 1024
local function dockerfile_text(s)
  if s:find("\n") or s:find("\0", 1, true) then return s end
  local f = io.open(s, "rb")
  local text = f and f:read(DOCKERFILE_MAX + 1)
  if f then f:close() end
  return type(text) == "string" and text or s
end

--- Builds from a Dockerfile (the SDKs' `fromDockerfile`): its FROM image is the base,
-- RUN, COPY/ADD (`--chown` the user), ENV/ARG, WORKDIR and USER become steps (run as root
-- from `/`, then as `user` in `/home/user` unless the file sets them), CMD/ENTRYPOINT the
-- start command (ready after 20 s, as the SDKs wait). A second stage, `COPY --from`,
-- heredocs, SHELL and ONBUILD are refused (field `dockerfile`, the message naming the line).
-- @tparam string content_or_path the Dockerfile's text, or the path of one
-- @treturn Template self
function Template:from_dockerfile(content_or_path)
  if self._err then return self end
  if type(content_or_path) ~= "string" then
    return self:_fail("from_dockerfile", "must be a string (a Dockerfile's text or its path)")
  end
  local d, err = core.dockerfile_parse(dockerfile_text(content_or_path))
  if not d then
    self._err = err
    return self
  end
  self:from_image(d.from_image)
  for _, s in ipairs(d.steps) do
    if s.type == "COPY" then
      self:copy(s.args[1], s.args[2], { user = s.args[3] })
    else
      self:_step({ type = s.type, args = s.args })
    end
  end
  if d.start_cmd then self:set_start_cmd(d.start_cmd, M.wait_for_timeout(20000)) end
  return self
end

--- Builds on an image in AWS ECR.
-- @tparam string img the full ECR image path
-- @tparam table credentials { access_key_id =, secret_access_key =, region = } (all required)
function Template:from_aws_registry(img, credentials)
  if credentials == nil then return self:_fail("from_aws_registry.credentials", "are required") end
  return self:_registry("from_aws_registry", img, credentials, "aws",
    { access_key_id = "access_key_id", secret_access_key = "secret_access_key", region = "region" })
end

--- Builds on an image in Google's registries (GCR, Artifact Registry).
-- @tparam string img the full image path
-- @tparam table credentials { service_account_json = the service account's JSON text }
--   or { service_account_file = a path to read it from }
function Template:from_gcp_registry(img, credentials)
  if type(credentials) ~= "table" then return self:_fail("from_gcp_registry.credentials", "must be a table") end
  local creds = credentials
  if credentials.service_account_file ~= nil then
    local path = credentials.service_account_file
    local f = type(path) == "string" and io.open(path, "rb")
    if not f then return self:_fail("from_gcp_registry.service_account_file", "cannot be read") end
    creds = { service_account_json = f:read("*a") }
    f:close()
  end
  return self:_registry("from_gcp_registry", img, creds, "gcp", { service_account_json = "service_account_json" })
end
--- E2B's own base image, `e2bdev/base`.
-- @function Template:from_base_image
Template.from_base_image = base("from_image", function() return "e2bdev/base" end)
--- `debian:VARIANT` (default "stable").
-- @function Template:from_debian_image
Template.from_debian_image = base("from_image", image("debian", "stable"))
--- `ubuntu:VARIANT` (default "latest").
-- @function Template:from_ubuntu_image
Template.from_ubuntu_image = base("from_image", image("ubuntu", "latest"))
--- `python:VERSION` (default "3").
-- @function Template:from_python_image
Template.from_python_image = base("from_image", image("python", "3"))
--- `node:VARIANT` (default "lts").
-- @function Template:from_node_image
Template.from_node_image = base("from_image", image("node", "lts"))
--- `oven/bun:VARIANT` (default "latest").
-- @function Template:from_bun_image
Template.from_bun_image = base("from_image", image("oven/bun", "latest"))

-- ---- steps ----

--- Runs a shell command (or several, joined with `&&`) while building.
-- @tparam string|{string,...} command
-- @tparam[opt] table opts { user = who runs it }
function Template:run_cmd(command, opts)
  local cmds = self:_list(command, "run_cmd.command")
  opts = self:_opts(opts, "run_cmd", { user = "string" })
  if not cmds or not opts then return self end
  local args = { table.concat(cmds, " && ") }
  if opts.user and opts.user ~= "" then args[2] = opts.user end
  return self:_step({ type = "RUN", args = args })
end

local function octal(mode)
  return ("%04o"):format(mode)
end

--- Copies files from the context directory into the template.
-- @tparam string|{string,...} src relative to the context; a glob pattern or a
--   directory (with everything under it)
-- @tparam string dest in the template (a trailing `/`: into that directory)
-- @tparam[opt] table opts { user = owner, mode = permission bits (a number, 0o755),
--   force_upload = upload even when E2B has these files, resolve_symlinks = copy
--   what links point to }
function Template:copy(src, dest, opts)
  local srcs = self:_list(src, "copy.src")
  opts = self:_opts(opts, "copy", { user = "string", mode = "number", force_upload = "boolean",
                                    resolve_symlinks = "boolean" })
  if not srcs or not opts then return self end
  if type(dest) ~= "string" then return self:_fail("copy.dest", "must be a string") end
  if opts.mode and (opts.mode ~= math.floor(opts.mode) or opts.mode < 0 or opts.mode > 4095) then
    return self:_fail("copy.mode", "must be permission bits from 0 to 0o7777")
  end
  for _, s in ipairs(srcs) do
    self:_step({ type = "COPY", args = { s, dest, opts.user or "", opts.mode and octal(opts.mode) or "" },
                 force_upload = opts.force_upload, resolve_symlinks = opts.resolve_symlinks,
                 force = opts.force_upload })
  end
  return self
end

--- Copies several items, each { src =, dest =, user =, mode =, force_upload =, resolve_symlinks = }.
-- @tparam {table,...} items
function Template:copy_items(items)
  if type(items) ~= "table" then return self:_fail("copy_items", "must be an array of tables") end
  for _, it in ipairs(items) do
    if type(it) ~= "table" then return self:_fail("copy_items", "must be an array of tables") end
    self:copy(it.src, it.dest, { user = it.user, mode = it.mode, force_upload = it.force_upload,
                                 resolve_symlinks = it.resolve_symlinks })
  end
  return self
end

--- Sets environment variables for the build's later steps.
-- @tparam table envs name -> value
function Template:set_envs(envs)
  if type(envs) ~= "table" then return self:_fail("set_envs", "must be a table of strings") end
  local keys = {}
  for k, v in pairs(envs) do
    if type(k) ~= "string" or type(v) ~= "string" then return self:_fail("set_envs", "must be a table of strings") end
    keys[#keys + 1] = k
  end
  if #keys == 0 then return self end
  table.sort(keys)
  local args = {}
  for _, k in ipairs(keys) do
    args[#args + 1] = k
    args[#args + 1] = envs[k]
  end
  return self:_step({ type = "ENV", args = args })
end

--- The working directory of later steps (and of the sandbox).
-- @tparam string path
function Template:set_workdir(path)
  if type(path) ~= "string" then return self:_fail("set_workdir", "must be a string") end
  return self:_step({ type = "WORKDIR", args = { path } })
end

--- The user of later steps (and of the sandbox).
-- @tparam string user
function Template:set_user(user)
  if type(user) ~= "string" then return self:_fail("set_user", "must be a string") end
  return self:_step({ type = "USER", args = { user } })
end

--- Every later step (and the base, when set after this) runs whatever E2B's cache holds.
function Template:skip_cache()
  self._force_next = true
  return self
end

--- The command the sandbox starts with, and the command that says it is ready.
-- @tparam string command
-- @tparam string ready a shell command that succeeds once ready (see `wait_for_port` and the others)
function Template:set_start_cmd(command, ready)
  if type(command) ~= "string" or command == "" then
    return self:_fail("set_start_cmd.command", "must be a non-empty string")
  end
  if type(ready) ~= "string" or ready == "" then
    return self:_fail("set_start_cmd.ready", "must be a non-empty string")
  end
  if (command .. ready):find("\0", 1, true) then return self:_fail("set_start_cmd", "must not hold a NUL byte") end
  self._spec.start_cmd, self._spec.ready_cmd = command, ready
  return self
end

--- The ready command alone (without a start command).
-- @tparam string ready
function Template:set_ready_cmd(ready)
  if type(ready) ~= "string" or ready == "" or ready:find("\0", 1, true) then
    return self:_fail("set_ready_cmd", "must be a non-empty string without NUL bytes")
  end
  self._spec.ready_cmd = ready
  return self
end

-- ---- steps written as commands, as the SDKs write them ----

-- A word for sh, as libe2b quotes it; a value holding a NUL stays as it is,
-- for _step to refuse (no command line can carry it).
local function quote(s)
  return core.template_quote(s) or s
end

local function quoted(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = quote(v) end
  return table.concat(out, " ")
end

--- Installs Debian packages (apt-get, as root).
-- @tparam string|{string,...} packages
-- @tparam[opt] table opts { no_install_recommends = bool, fix_missing = bool }
function Template:apt_install(packages, opts)
  local list = self:_list(packages, "apt_install.packages")
  opts = self:_opts(opts, "apt_install", { no_install_recommends = "boolean", fix_missing = "boolean" })
  if not list or not opts then return self end
  return self:run_cmd({ "apt-get update", "DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y "
    .. (opts.no_install_recommends and "--no-install-recommends " or "")
    .. (opts.fix_missing and "--fix-missing " or "") .. quoted(list) }, { user = "root" })
end

local function installer(field, tool, dev_flag)
  return function(self, packages, opts)
    local allowed = { g = "boolean" }
    if dev_flag then allowed.dev = "boolean" end
    opts = self:_opts(opts, field, allowed)
    local list = packages == nil and {} or self:_list(packages, field .. ".packages")
    if not list or not opts then return self end
    local cmd, global = tool, opts.g
    if field == "pip_install" then
      global = opts.g ~= false
      if not global then cmd = cmd .. " --user" end
      if #list == 0 then list = { "." } end
    else
      if global then cmd = cmd .. " -g" end
      if opts.dev then cmd = cmd .. " " .. dev_flag end
    end
    if #list > 0 then cmd = cmd .. " " .. quoted(list) end
    return self:run_cmd(cmd, { user = global and "root" or nil })
  end
end

--- Installs Python packages with pip (default as root; opts.g = false: --user).
-- @function Template:pip_install
-- @tparam[opt] string|{string,...} packages (none: the current directory)
-- @tparam[opt] table opts { g = bool }
Template.pip_install = installer("pip_install", "pip install")
--- Installs Node packages with npm (opts.g: globally, as root; opts.dev: --save-dev).
-- @function Template:npm_install
Template.npm_install = installer("npm_install", "npm install", "--save-dev")
--- Installs packages with bun (opts.g: globally, as root; opts.dev: --dev).
-- @function Template:bun_install
Template.bun_install = installer("bun_install", "bun install", "--dev")

--- Clones a git repository.
-- @tparam string url
-- @tparam[opt] string path where to
-- @tparam[opt] table opts { branch =, depth =, user = }
function Template:git_clone(url, path, opts)
  if type(url) ~= "string" or url == "" then return self:_fail("git_clone.url", "must be a non-empty string") end
  if path ~= nil and type(path) ~= "string" then return self:_fail("git_clone.path", "must be a string") end
  opts = self:_opts(opts, "git_clone", { branch = "string", depth = "number", user = "string" })
  if not opts then return self end
  local cmd = "git clone " .. quote(url)
  if opts.branch then cmd = cmd .. " --branch " .. quote(opts.branch) .. " --single-branch" end
  if opts.depth then
    if opts.depth ~= math.floor(opts.depth) or opts.depth < 1 then
      return self:_fail("git_clone.depth", "must be a positive integer")
    end
    cmd = cmd .. (" --depth %d"):format(opts.depth)
  end
  if path then cmd = cmd .. " " .. quote(path) end
  return self:run_cmd(cmd, { user = opts.user })
end

local function path_cmd(field, build, allowed)
  return function(self, a, b, opts)
    if not allowed.two then opts, b = b, nil end
    local paths = self:_list(a, field .. ".path")
    local o = self:_opts(opts, field, allowed.opts)
    if not paths or not o then return self end
    if allowed.two and type(b) ~= "string" then return self:_fail(field .. ".dest", "must be a string") end
    if o.mode and (o.mode ~= math.floor(o.mode) or o.mode < 0 or o.mode > 4095) then
      return self:_fail(field .. ".mode", "must be permission bits from 0 to 0o7777")
    end
    return self:run_cmd(build(paths, b, o), { user = o.user })
  end
end

--- Removes paths (opts: recursive, force, user).
-- @function Template:remove
Template.remove = path_cmd("remove", function(paths, _, o)
  return "rm" .. (o.recursive and " -r" or "") .. (o.force and " -f" or "") .. " " .. quoted(paths)
end, { opts = { recursive = "boolean", force = "boolean", user = "string" } })
--- Makes directories with their parents (opts: mode (a number), user).
-- @function Template:make_dir
Template.make_dir = path_cmd("make_dir", function(paths, _, o)
  return "mkdir -p" .. (o.mode and (" -m " .. octal(o.mode)) or "") .. " " .. quoted(paths)
end, { opts = { mode = "number", user = "string" } })
--- Renames src to dest (opts: force, user).
-- @function Template:rename
Template.rename = path_cmd("rename", function(paths, dest, o)
  return "mv " .. quote(paths[1]) .. " " .. quote(dest) .. (o.force and " -f" or "")
end, { two = true, opts = { force = "boolean", user = "string" } })
--- Makes a symbolic link at dest to src (opts: force, user).
-- @function Template:make_symlink
Template.make_symlink = path_cmd("make_symlink", function(paths, dest, o)
  return "ln -s" .. (o.force and " -f" or "") .. " " .. quote(paths[1]) .. " " .. quote(dest)
end, { two = true, opts = { force = "boolean", user = "string" } })

-- ---- ready commands ----

local function is_int(v) return type(v) == "number" and v == math.floor(v) end
local function text(v) return type(v) == "string" and v ~= "" end
local function bad(field, what) return nil, errors.invalid("template", field, what) end
-- v (a non-empty string, else invalid_argument naming field) as one word of
-- sh, libe2b's quoting: the word, or nil, err.
local function word(field, v)
  if not text(v) then return bad(field, "must be a non-empty string") end
  return core.template_quote(v)
end

--- A ready command: something listens on port (as `ss` sees it).
-- @tparam int port
-- @treturn string
-- @return or nil, err
function M.wait_for_port(port)
  if not is_int(port) or port < 1 or port > 65535 then return bad("port", "must be an integer from 1 to 65535") end
  return ('[ -n "$(ss -Htuln sport = :%d)" ]'):format(port)
end

--- A ready command: url answers with status (default 200), as curl sees it.
-- @tparam string url
-- @tparam[opt=200] int status
-- @treturn string
-- @return or nil, err
function M.wait_for_url(url, status)
  if not text(url) then return bad("url", "must be a non-empty string") end
  if status ~= nil and (not is_int(status) or status < 100 or status > 599) then
    return bad("status", "must be an HTTP status from 100 to 599")
  end
  local q, err = core.template_quote(url)
  if not q then return nil, err end
  return ('curl -s -o /dev/null -w "%%{http_code}" %s | grep -q "%d"'):format(q, status or 200)
end

--- A ready command: a process of that name runs (pgrep).
-- @tparam string name
-- @treturn string
-- @return or nil, err
function M.wait_for_process(name)
  local q, err = word("name", name)
  if not q then return nil, err end
  return "pgrep " .. q .. " > /dev/null"
end

--- A ready command: the file exists.
-- @tparam string path
-- @treturn string
-- @return or nil, err
function M.wait_for_file(path)
  local q, err = word("path", path)
  if not q then return nil, err end
  return "[ -f " .. q .. " ]"
end

--- A ready command: sleep ms milliseconds (at least one second).
-- @tparam int ms
-- @treturn string
-- @return or nil, err
function M.wait_for_timeout(ms)
  if not is_int(ms) or ms < 0 then return bad("ms", "must be a non-negative integer (milliseconds)") end
  return ("sleep %d"):format(math.max(1, math.floor(ms / 1000)))
end

--- The body E2B would get (COPY hashes computed from the files).
-- @treturn string JSON
-- @return or nil, err
function Template:to_json()
  local hashes, err = M._hashes(self)
  if not hashes then return nil, err end
  return core.template_json(self._spec, hashes, false)
end

-- hashes(t, port?, on_progress?) -> { [i] = hex or false } for every step |
-- nil, err; with a port, each hash is a request the loop computes a slice per
-- step (the caller's task waits, every other one runs on), else computed here
-- at once.
function M._hashes(t, port, on_progress)
  local ok, err = t:check()
  if not ok then return nil, err end
  local hashes = {}
  for i, step in ipairs(t._spec.steps) do
    hashes[i] = false
    if step.type == "COPY" then
      local a
      if port then
        a, err = port.call("template_hash", t._spec, i)
        hashes[i] = a and a.hash
        if a and on_progress then on_progress({ stage = "hashed", src = step.args[1], hash = a.hash }) end
      else
        hashes[i], err = core.template_hash(t._spec, i)
      end
      if not hashes[i] then return nil, err end
    end
  end
  return hashes
end

-- ---- building ----

local POLL_MS = 200 -- how often a running build's status and logs are asked for (the SDKs' pace)

local BUILD_OPTS = {
  name = "nonempty", tags = "string_list", cpu_count = "positive", memory_mb = "positive",
  min_free_disk_mb = "count", skip_cache = "boolean", on_log = "function", on_progress = "function",
  background = "boolean", cancel = "cancel",
}

-- The server's log entries to on_log, in order; the count handed out.
local function deliver(answer, on_log)
  for _, e in ipairs(answer.logs) do
    if on_log then on_log({ timestamp = e.timestamp, level = e.level, message = e.message }) end
  end
  return #answer.logs
end

-- Asks for the build's status until it ends; its logs go to on_log as they come.
local function follow(port, ids, o)
  local offset, answer, err = 0
  repeat
    answer, err = port.call("template_status", ids.template_id, ids.build_id, offset)
    if not answer then return nil, err end
    offset = offset + deliver(answer, o.on_log)
    if o.on_progress then o.on_progress({ stage = "status", status = answer.status }) end
    local ended = answer.status == "ready" or answer.status == "error"
    if not ended then rt.adapter.sleep(POLL_MS) end
  until ended
  local last = answer
  while #last.logs > 0 do -- the logs written as it ended
    last, err = port.call("template_status", ids.template_id, ids.build_id, offset)
    if not last then return nil, err end
    offset = offset + deliver(last, o.on_log)
  end
  if answer.status == "ready" then return true end
  return nil, errors.new("sandbox", "build_template", answer.reason or "the build failed (E2B gave no reason)",
    { template_id = ids.template_id, build_id = ids.build_id, step = answer.reason_step, retryable = false })
end

-- Each COPY's files: uploaded unless E2B has them (or force_upload).
local function upload(port, t, ids, hashes, o)
  for i, step in ipairs(t._spec.steps) do
    if step.type == "COPY" then
      local link, err = port.call("template_file_link", ids.template_id, hashes[i])
      if not link then return nil, err end
      local send = link.url and (step.force_upload or not link.present)
      if send then
        local ok
        ok, err = port.call("template_upload", t._spec, i, link.url, link.headers)
        if not ok then return nil, err end
      end
      if o.on_progress then o.on_progress({ stage = send and "uploaded" or "cached", src = step.args[1] }) end
    end
  end
  return true
end

-- build(t, port, opts): port.call(name, ...) is the client's core call `name`.
function M.build(t, port, opts)
  if getmetatable(t) ~= Template then return bad("template", "must be an e2b.template builder") end
  local o, err = check.options("build_template", opts, BUILD_OPTS)
  if not o then return nil, err end
  if not o.name then return nil, errors.invalid("build_template", "name", "is required") end
  local ok
  ok, err = core.template_name_check(o.name, "name")
  if not ok then return nil, err end
  for i, tag in ipairs(o.tags or {}) do
    ok, err = core.template_name_check(tag, ("tags[%d]"):format(i), true)
    if not ok then return nil, err end
  end
  return cancel.scope(o.cancel, M._course, t, port, o)
end

-- The build's course once its options are good: hashes, request, uploads,
-- start, then its end (under o.cancel's scope: each request is the token's).
function M._course(t, port, o)
  local hashes, err = M._hashes(t, port, o.on_progress) -- bad steps and missing files fail here, before any request
  if not hashes then return nil, err end
  local ids
  ids, err = port.call("template_request", { name = o.name, tags = o.tags, cpu_count = o.cpu_count,
                                             memory_mb = o.memory_mb, min_free_disk_mb = o.min_free_disk_mb })
  if not ids then return nil, err end
  if o.on_progress then
    o.on_progress({ stage = "requested", template_id = ids.template_id, build_id = ids.build_id })
  end
  local ok
  ok, err = upload(port, t, ids, hashes, o)
  if ok then ok, err = port.call("template_start", ids.template_id, ids.build_id, t._spec, hashes, o.skip_cache) end
  if not ok then return nil, err end
  local info = { template_id = ids.template_id, build_id = ids.build_id, name = o.name, tags = ids.tags }
  if o.background then return info end
  ok, err = follow(port, ids, o)
  if not ok then return nil, err end
  return info
end

return M
