-- The reference cannot drift from the code: every public function, method
-- and field of the e2b module, found at run time, has an entry in the
-- Reference of docs/manual.md, and every public function an LDoc comment
-- (a `---` block) in lua/; every method the reference names exists.
local h = require("spec.helpers")
local e2b = h.e2b

-- Paths relative to the checkout, wherever busted was started.
local root = debug.getinfo(1, "S").source:match("^@(.-)spec/docs/docs_spec%.lua$") or ""

local function slurp(path)
  local f = assert(io.open(root .. path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

local reference = assert(slurp("docs/manual.md"):match("\n## Reference\n(.*)$"),
  "docs/manual.md has no '## Reference' section")

-- Whether `name appears in the reference, followed by something that ends
-- the name ("client:create" does not count for "client:create_volume").
local function in_reference(name)
  local from = 1
  while true do
    local s, e = reference:find("`" .. name, from, true)
    if not s then return false end
    if not reference:sub(e + 1, e + 1):match("[%w_]") then return true end
    from = e + 1
  end
end

local function missing_from_reference(names)
  local missing = {}
  for _, n in ipairs(names) do
    if not in_reference(n) then missing[#missing + 1] = n end
  end
  table.sort(missing)
  return missing
end

local function sorted_keys(t, pred)
  local out = {}
  for k, v in pairs(t) do
    if type(k) == "string" and k:sub(1, 1) ~= "_" and (not pred or pred(v)) then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

local function is_function(v) return type(v) == "function" end

local function lines_of(path)
  local lines = {}
  for line in (slurp(path) .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  return lines
end

local function escape(s) return (s:gsub("%p", "%%%0")) end

-- Whether the definition of T.name / T:name in file carries an LDoc block
-- (a comment block above it whose first line starts with "---"), or the
-- file names it with an @function tag.
local function has_ldoc(path, T, name)
  local lines = lines_of(path)
  local defs = {
    "^%s*function%s+" .. escape(T) .. "[.:]" .. escape(name) .. "%s*%(",
    "^%s*" .. escape(T) .. "%." .. escape(name) .. "%s*=",
  }
  for i, line in ipairs(lines) do
    for _, pat in ipairs(defs) do
      if line:match(pat) then
        local j = i - 1
        while j >= 1 and lines[j]:match("^%s*%-%-") do j = j - 1 end
        if j + 1 < i and lines[j + 1]:match("^%s*%-%-%-") then return true end
      end
    end
  end
  for _, line in ipairs(lines) do
    if line:match("@function%s+" .. escape(name) .. "%s*$") then return true end
  end
  return false
end

local function undocumented_functions(path, T, names)
  local out = {}
  for _, n in ipairs(names) do
    if not has_ldoc(path, T, n) then out[#out + 1] = ("%s (%s %s)"):format(n, path, T) end
  end
  return out
end

local function prefixed(prefix, names)
  local out = {}
  for i, n in ipairs(names) do out[i] = prefix .. n end
  return out
end

-- Methods of a class: its method table's functions, minus metamethods.
local function methods(class)
  return sorted_keys(class, is_function)
end

local CLASSES = {
  { prefix = "client:", class = require("e2b.client").Client, file = "lua/e2b/client.lua", T = "Client" },
  { prefix = "sbx:", class = require("e2b.sandbox").Sandbox, file = "lua/e2b/sandbox.lua", T = "Sandbox" },
  { prefix = "proc:", class = require("e2b.process").Process, file = "lua/e2b/process.lua", T = "Process" },
  { prefix = "sbx.files:", class = require("e2b.files").Files, file = "lua/e2b/files.lua", T = "Files" },
  { prefix = "watch:", class = require("e2b.watch").Watch, file = "lua/e2b/watch.lua", T = "Watch" },
  { prefix = "sbx.git:", class = require("e2b.git").Git, file = "lua/e2b/git.lua", T = "Git" },
  { prefix = "vol:", class = require("e2b.volume").Volume, file = "lua/e2b/volume.lua", T = "Volume" },
  { prefix = "t:", class = require("e2b.template").Template, file = "lua/e2b/template.lua", T = "Template" },
}

-- e2b.ngx needs nginx to load: its functions are read from its source.
local function ngx_functions()
  local names, seen = {}, {}
  local text = slurp("lua/e2b/ngx.lua")
  -- public names only: a leading underscore is the module's own
  for n in text:gmatch("\nfunction M%.(%a[%w_]*)%s*%(") do
    if not seen[n] then seen[n], names[#names + 1] = true, n end
  end
  for n in text:gmatch("\nM%.(%a[%w_]*)%s*=") do
    if not seen[n] then seen[n], names[#names + 1] = true, n end
  end
  table.sort(names)
  return names
end

describe("the reference (docs/manual.md and the LDoc comments)", function()
  it("documents every field and function of the e2b module", function()
    local names = prefixed("e2b.", sorted_keys(e2b))
    assert.are.same({}, missing_from_reference(names))
    assert.are.same({}, undocumented_functions("lua/e2b.lua", "M", sorted_keys(e2b, is_function)))
  end)

  it("documents every function and table of e2b.errors", function()
    assert.are.same({}, missing_from_reference(prefixed("e2b.errors.", sorted_keys(e2b.errors))))
    assert.are.same({}, undocumented_functions("lua/e2b/errors.lua", "M", sorted_keys(e2b.errors)))
  end)

  it("documents every method of client, sandbox, process, files, watch and git objects", function()
    for _, c in ipairs(CLASSES) do
      local names = methods(c.class)
      assert.is_true(#names >= 3, c.prefix)
      assert.are.same({}, missing_from_reference(prefixed(c.prefix, names)))
      assert.are.same({}, undocumented_functions(c.file, c.T, names))
    end
  end)

  it("documents every method of a task", function()
    local task
    e2b.run(function()
      task = e2b.spawn(function() end)
      task:wait()
    end)
    local names = methods(getmetatable(task).__index)
    assert.are.same({ "done", "wait" }, names)
    assert.are.same({}, missing_from_reference(prefixed("task:", names)))
    assert.are.same({}, undocumented_functions("lua/e2b/sched.lua", "Task", names))
    assert.are.same({}, undocumented_functions("lua/e2b/ngx.lua", "Task", names))
  end)

  it("documents every method of a cancel token", function()
    local names = methods(getmetatable(e2b.cancel_token()).__index)
    assert.are.same({ "cancel", "is_canceled" }, names)
    assert.are.same({}, missing_from_reference(prefixed("token:", names)))
    assert.are.same({}, undocumented_functions("lua/e2b/cancel.lua", "Token", names))
  end)

  it("documents both scheduler adapters' interface", function()
    local sched = require("e2b.sched")
    assert.are.same({}, missing_from_reference(prefixed("adapter.", sorted_keys(sched))))
    assert.are.same({}, undocumented_functions("lua/e2b/sched.lua", "M", sorted_keys(sched, is_function)))
    local ngx_names = ngx_functions()
    assert.is_true(#ngx_names >= 6)
    assert.are.same({}, missing_from_reference(prefixed("adapter.", ngx_names)))
    assert.are.same({}, undocumented_functions("lua/e2b/ngx.lua", "M", ngx_names))
  end)

  it("names no method the code does not have", function()
    local by_prefix = { task = { wait = true, done = true }, token = getmetatable(e2b.cancel_token()).__index }
    for _, c in ipairs(CLASSES) do
      by_prefix[c.prefix:sub(1, -2)] = c.class
    end
    local stale = {}
    for obj, name in reference:gmatch("`([%w_.]+):([%w_]+)%(") do
      local class = by_prefix[obj]
      if class == nil or class[name] == nil then stale[#stale + 1] = obj .. ":" .. name end
    end
    assert.are.same({}, stale)
  end)

  it("documents the fields of a client", function()
    local client = h.client()
    assert.are.same({}, missing_from_reference(prefixed("client.", sorted_keys(client))))
  end)

  it("documents the fields of an argument error", function()
    local _, err = e2b.client{ timeout_ms = -1 }
    assert.are.equal("invalid_argument", err.kind)
    assert.are.same({}, missing_from_reference(prefixed("err.", sorted_keys(err))))
  end)
end)

-- ---- the manual's tables against the code ----

local manual = slurp("docs/manual.md")

-- The rows of the first table after marker: arrays of trimmed cells (an
-- escaped \| stays in its cell).
local function table_after(text, marker)
  local at = assert(text:find(marker, 1, true), marker)
  local rows, started = {}, false
  for line in text:sub(at):gmatch("[^\n]*") do
    if line:sub(1, 1) == "|" then
      started = true
      if not line:match("^|%-") then
        local cells = {}
        for cell in line:gsub("\\|", "\1"):gmatch("|([^|]*)") do
          cells[#cells + 1] = cell:gsub("\1", "|"):match("^%s*(.-)%s*$")
        end
        if cells[#cells] == "" then cells[#cells] = nil end
        rows[#rows + 1] = cells
      end
    elseif started and line ~= "" then
      break
    end
  end
  assert.is_true(#rows > 2, marker)
  table.remove(rows, 1) -- the header
  return rows
end

-- The default a cell states: a number when it starts with one or names one
-- in parentheses ("64 MiB" in bytes), else the first quoted string, else nil
-- ("none", "env ...", prose).
local function stated(cell)
  local n, unit = cell:match("^(%d+)%s*(%a*)")
  if not n then n = cell:match("%((%d+)%)") end
  if n then return tonumber(n) * (unit == "MiB" and 1048576 or 1) end
  return cell:match('^[^"]-"([^"]*)"')
end

local D = h.core.DEFAULTS

-- What the code uses when an option is left out, by "scope.option": the
-- core's published defaults and a client's own resolved fields.
local function code_defaults()
  local c = assert(e2b.client{})
  return {
    ["client.request_timeout_ms"] = c.request_timeout_ms, ["client.budget_ms"] = c.budget_ms,
    ["client.max_retries"] = D.max_retries, ["client.max_concurrent"] = D.max_inflight,
    ["client.page_size"] = D.page_size, ["client.template"] = D.template, ["client.domain"] = D.domain,
    ["client.timeout_ms"] = c._timeout_ms, ["client.network"] = c._network, ["client.user"] = c._user,
    ["client.on_close"] = c._on_close, ["client.ready_timeout_ms"] = D.ready_timeout_ms,
    ["create.timeout_ms"] = c._timeout_ms, ["create.network"] = c._network,
    ["create.ready_timeout_ms"] = D.ready_timeout_ms, ["create.on_close"] = c._on_close,
    ["create.setup.timeout_ms"] = D.setup_timeout_ms,
    ["command.idle_timeout_ms"] = D.idle_timeout_ms, ["command.max_output"] = D.max_output,
    ["command.user"] = c._user,
  }
end

-- Stated defaults that name no value of the code (a shape, or a choice the
-- code makes by testing for the other value).
local NOMINAL = {
  ["client.owner"] = "a pattern: <user>@<hostname>",
  ["command.env_mode"] = 'the code tests for "replace"',
  ["command.keep"] = 'the code tests for "tail" and "none"',
  ["command.tag"] = "a pattern: e2b-<uuid>",
}

-- "client `x`", "client/create `x`, ...", "command / attach `x`" -> scope.x
local function where_to_change(cell)
  local scope, name = cell:match("^(%a+)[^`]*`([%w_.]+)`")
  if scope == "client" or scope == "create" or scope == "command" then return scope .. "." .. name end
end

describe("the manual's defaults and kinds (docs/manual.md against the code)", function()
  it("states every client, create and command default as the code has it", function()
    local expected, wrong, checked = code_defaults(), {}, 0
    local function check(key, value)
      if value == nil or NOMINAL[key] then return end
      checked = checked + 1
      if expected[key] == nil then
        wrong[#wrong + 1] = key .. ": the manual states " .. tostring(value) .. ", the spec knows no code value"
      elseif expected[key] ~= value then
        wrong[#wrong + 1] = ("%s: the manual states %s, the code uses %s"):format(key, tostring(value),
          tostring(expected[key]))
      end
    end
    for scope, marker in pairs({ client = "`e2b.client(opts)` options:",
                                 create = "`client:create(opts)` options",
                                 command = "Command options (`sbx:run` and `sbx:spawn`):" }) do
      for _, row in ipairs(table_after(manual, marker)) do
        check(scope .. "." .. assert(row[1]:match("^`([%w_]+)`"), row[1]), stated(row[3]))
      end
    end
    for _, row in ipairs(table_after(manual, "### Defaults")) do
      local key = row[3] and where_to_change(row[3])
      if key then check(key, stated(row[2])) end
    end
    assert.are.same({}, wrong)
    assert.is_true(checked >= 25, "only " .. checked .. " defaults were read: the tables' shape changed?")
  end)

  it("lists exactly the error kinds the core returns, as e2b.errors does", function()
    local in_manual = {}
    for _, row in ipairs(table_after(manual, "| kind | when |")) do
      in_manual[#in_manual + 1] = assert(row[1]:match("^`([%w_]+)`$"), row[1])
    end
    table.sort(in_manual)
    local core_kinds = {}
    for _, k in ipairs(h.core.KINDS) do core_kinds[#core_kinds + 1] = k end
    table.sort(core_kinds)
    assert.is_true(#core_kinds >= 12)
    assert.are.same(core_kinds, in_manual)
    assert.are.same(core_kinds, sorted_keys(e2b.errors.KINDS))
  end)
end)

-- Every --flag in text (lower case: --OPTION is a placeholder), as a
-- sorted array.
local function flags_in(text)
  local set = {}
  for f in text:gmatch("%f[%w-]%-%-(%l[%l%d-]*)") do set["--" .. f] = true end
  return sorted_keys(set)
end

describe("the CLI's manual page (docs/cli.md against lua-e2b's help)", function()
  local cli = require("e2b.cli")

  -- What `lua-e2b ARGS...` prints on stdout, run in-process.
  local function help(args)
    local parts = {}
    local out = { write = function(self, ...)
      for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
      return self
    end }
    assert.are.equal(0, cli.main(args, { stdout = out, stderr = out }))
    return table.concat(parts)
  end

  it("names every flag `--help` and `help VERB` print, and no other", function()
    local texts = { help({ "--help" }) }
    for _, c in ipairs(cli.COMMANDS) do
      local text = help({ "help", c.name })
      texts[#texts + 1] = text
      -- and each verb's help names every option it takes
      for name in pairs(c.opts) do
        assert.truthy(text:find("--" .. name, 1, true), ("help %s: --%s"):format(c.name, name))
      end
    end
    local printed = flags_in(table.concat(texts, "\n"))
    assert.is_true(#printed >= 20, "only " .. #printed .. " flags found in the help")
    assert.are.same(printed, flags_in(slurp("docs/cli.md")))
  end)

  it("names every verb the tool has", function()
    local page = slurp("docs/cli.md")
    for _, c in ipairs(cli.COMMANDS) do
      assert.truthy(page:find("\n| `" .. c.name .. "[ `]"), c.name .. " missing from docs/cli.md's table")
    end
  end)
end)

if h.live then return end

describe("the reference's records (against e2b-local)", function()
  local sbx
  setup(function() sbx = h.sandbox() end)
  teardown(h.cleanup)

  -- The keys of a table that the reference row of `row` must mention.
  local function row_mentions(row, keys)
    local line = reference:match("\n(|%s*`" .. escape(row) .. "[^\n]*)")
    assert.truthy(line, row)
    local missing = {}
    for _, k in ipairs(keys) do
      if not line:find(k, 1, true) then missing[#missing + 1] = k end
    end
    return missing
  end

  it("documents every field of sandboxes, processes and their results", function()
    assert.are.same({}, missing_from_reference(prefixed("sbx.", sorted_keys(sbx))))
    assert.are.same({}, missing_from_reference(prefixed("info.", sorted_keys(assert(sbx:info())))))
    local metrics
    assert(h.eventually(function()
      metrics = assert(sbx:metrics())
      return #metrics > 0
    end, 30000))
    assert.are.same({}, missing_from_reference(prefixed("metric.", sorted_keys(metrics[1]))))

    local r = assert(sbx:run("printf out; printf err >&2; exit 3"))
    assert.are.same({}, missing_from_reference(prefixed("result.", sorted_keys(r))))
    r = assert(sbx:run("head -c 3000 /dev/zero", { max_output = 1000, keep = "tail" }))
    assert.are.equal(2000, r.bytes_dropped)
    assert.are.same({}, missing_from_reference(prefixed("result.", sorted_keys(r))))

    local proc = assert(sbx:spawn("printf tty", { pty = { cols = 80, rows = 24 } }))
    assert.are.same({}, missing_from_reference(prefixed("proc.", sorted_keys(proc))))
    r = assert(proc:wait())
    proc:close()
    assert.are.same({}, missing_from_reference(prefixed("result.", sorted_keys(r))))

    proc = assert(sbx:spawn({ "sleep", "30" }, { tag = "docs-spec" }))
    assert.are.same({}, row_mentions("proc:offsets()", sorted_keys(proc:offsets())))
    local list = assert(sbx:processes())
    assert.are.same({}, row_mentions("sbx:processes()", sorted_keys(list[1])))
    proc:close()

    local _, err = sbx:run("echo partial; sleep 30", { timeout_ms = 300 })
    assert.are.equal("timeout", err.kind)
    assert.are.same({}, missing_from_reference(prefixed("err.", sorted_keys(err))))
  end)

  it("documents every field of file entries and write results", function()
    local written = assert(sbx.files:write("/home/user/docs-spec.txt", "x"))
    assert.are.same({}, row_mentions("sbx.files:write(", sorted_keys(written)))
    local entry = assert(sbx.files:stat("/home/user/docs-spec.txt"))
    assert.are.same({}, missing_from_reference(prefixed("entry.", sorted_keys(entry))))
    local list = assert(sbx.files:list("/home/user"))
    for _, e in ipairs(list) do
      assert.are.same({}, missing_from_reference(prefixed("entry.", sorted_keys(e))))
    end
  end)

  it("documents every field of a log line", function()
    local lines = assert(sbx._client:logs(sbx.sandbox_id))
    assert.is_true(#lines > 0)
    assert.are.same({}, missing_from_reference(prefixed("log.", sorted_keys(lines[1]))))
  end)

  it("documents every field of volumes and snapshots", function()
    local client = sbx._client
    local name = "docs-spec-" .. tostring(h.core.now_ms())
    local vol = assert(client:create_volume(name))
    assert.are.same({}, missing_from_reference(prefixed("volume.", sorted_keys(vol))))
    local content = assert(client:volume(name))
    assert.are.same({}, missing_from_reference(prefixed("vol.", sorted_keys(content))))
    assert(content:mkdir("/d"))
    local mounter = assert(client:create({ volumes = { ["/mnt/v"] = name } }))
    assert(mounter:run("ln -s /etc/hostname /mnt/v/d/link"))
    assert(mounter:kill())
    for _, e in ipairs(assert(content:list("/d"))) do
      assert.are.same({}, missing_from_reference(prefixed("vol_entry.", sorted_keys(e))))
    end
    assert.are.same({}, missing_from_reference(prefixed("vol_entry.", sorted_keys(assert(content:stat("/d"))))))
    assert(client:delete_volume(name))
    local snap = assert(sbx:snapshot(name))
    assert.are.same({}, missing_from_reference(prefixed("snapshot.", sorted_keys(snap))))
    assert(client:delete_snapshot(name))
  end)
end)
