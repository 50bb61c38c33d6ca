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

  it("documents every method of client, sandbox, process, files and watch objects", function()
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
    local by_prefix = { task = { wait = true, done = true } }
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

  it("documents every field of volumes and snapshots", function()
    local client = sbx._client
    local name = "docs-spec-" .. tostring(h.core.now_ms())
    local vol = assert(client:create_volume(name))
    assert.are.same({}, missing_from_reference(prefixed("volume.", sorted_keys(vol))))
    assert(client:delete_volume(name))
    local snap = assert(sbx:snapshot(name))
    assert.are.same({}, missing_from_reference(prefixed("snapshot.", sorted_keys(snap))))
    assert(client:delete_snapshot(name))
  end)
end)
