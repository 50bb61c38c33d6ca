-- structure.lua: checks the shape rules of docs/architecture.md on the C
-- and Lua sources, and the document's file tables against the tree, so a
-- change that breaks one is caught by the suite, not by a reviewer. Run
-- from the top of a checkout: `lua5.4 scripts/structure.lua`.
-- Prints one line per rule ("ok" or "FAIL" with the places) and exits 1
-- when any rule fails. It reads the files as text: comments and string
-- literals are blanked first, and a function is a top-level `{` whose
-- header has a parameter list.

local MAX_FUNCTION_LINES = 80
local MAX_BINDING_FILE_LINES = 500
local TREES = { "core", "codec", "bindings", "emulator" }

local function tracked_sources()
  local files = {}
  local p = assert(io.popen("git ls-files -- " .. table.concat(TREES, " ") .. " 2>/dev/null"))
  for path in p:lines() do
    if path:match("%.[ch]$") and not path:match("/tests/") and not path:match("^emulator/fuzz/") then
      files[#files + 1] = path
    end
  end
  p:close()
  assert(#files > 0, "structure.lua: no C sources (run it from the top of a git checkout)")
  table.sort(files)
  return files
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- Blanks comments, string and character literals, keeping every newline so
-- line numbers stay true.
local function strip(text)
  local out, i, n = {}, 1, #text
  local function keep_lines(s) return (s:gsub("[^\n]", " ")) end
  while i <= n do
    local c, d = text:sub(i, i), text:sub(i, i + 1)
    if d == "/*" then
      local j = text:find("*/", i + 2, true) or n - 1
      out[#out + 1] = keep_lines(text:sub(i, j + 1))
      i = j + 2
    elseif d == "//" then
      local j = text:find("\n", i, true) or n + 1
      i = j
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n and text:sub(j, j) ~= c do
        if text:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      out[#out + 1] = c .. keep_lines(text:sub(i + 1, j - 1)) .. c
      i = j + 1
    elseif c == "#" and (i == 1 or text:sub(i - 1, i - 1) == "\n") then
      -- preprocessor lines (and their continuations) hold no function bodies
      local j = i
      repeat
        local e = text:find("\n", j, true) or n + 1
        local cont = text:sub(e - 1, e - 1) == "\\"
        j = e + 1
      until not cont or j > n
      out[#out + 1] = keep_lines(text:sub(i, j - 2)) .. (j - 1 <= n and "\n" or "")
      i = j
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The functions a stripped file defines: name, first line of the body,
-- length in lines (the `{` line to the `}` line), and whether it is static.
local function functions(code)
  local found, depth, header, line, open = {}, 0, {}, 1, nil
  for i = 1, #code do
    local c = code:sub(i, i)
    if c == "\n" then line = line + 1 end
    if c == "{" then
      if depth == 0 then
        local h = table.concat(header)
        local name = h:match("([%a_][%w_]*)%s*%b()%s*$")
        if name and not h:match("=") and not h:match("^%s*typedef") then
          open = { name = name, first = line, static = h:match("^%s*static%f[%W]") ~= nil }
        end
      end
      depth = depth + 1
    elseif c == "}" then
      depth = depth - 1
      if depth == 0 then
        if open then
          open.lines = line - open.first + 1
          found[#found + 1] = open
          open = nil
        end
        header = {}
      end
    elseif depth == 0 then
      if c == ";" then header = {} else header[#header + 1] = c end
    end
  end
  return found
end

local function lines_of(text)
  local _, n = text:gsub("\n", "")
  return n
end

-- Strongly connected components of more than one node (Tarjan).
local function circles(nodes, edges)
  local index, low, stack, on, out, counter = {}, {}, {}, {}, {}, 0
  local function visit(v)
    counter = counter + 1
    index[v], low[v] = counter, counter
    stack[#stack + 1], on[v] = v, true
    for w in pairs(edges[v] or {}) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        comp[#comp + 1] = w
      until w == v
      if #comp > 1 then
        table.sort(comp)
        out[#out + 1] = comp
      end
    end
  end
  for _, v in ipairs(nodes) do
    if not index[v] then visit(v) end
  end
  return out
end

local function component(path) return path:match("^([^/]+)/") end

local function public_header(path) return path:match("/include/") ~= nil end

-- Resolves `#include "name"` from path: beside it, then anywhere in the
-- tree by suffix (the include directories CMake sets).
local function resolve(path, name, by_path)
  local dir = path:match("^(.*)/") or "."
  local beside = (dir .. "/" .. name):gsub("/[^/]+/%.%./", "/")
  if by_path[beside] then return beside end
  local hit
  for p in pairs(by_path) do
    if p:sub(-#name - 1) == "/" .. name and (not hit or #p < #hit) then hit = p end
  end
  return hit
end

local files = tracked_sources()
local by_path, code, raw = {}, {}, {}
for _, path in ipairs(files) do
  by_path[path] = true
  raw[path] = read(path)
  code[path] = strip(raw[path])
end

local results = {}
local function rule(name, problems)
  results[#results + 1] = { name = name, problems = problems }
end

do -- 1. short functions
  local long = {}
  for _, path in ipairs(files) do
    for _, f in ipairs(functions(code[path])) do
      if f.lines > MAX_FUNCTION_LINES then
        long[#long + 1] = string.format("%s:%d %s is %d lines", path, f.first, f.name, f.lines)
      end
    end
  end
  rule("no function in core/, codec/, bindings/ or emulator/ is over " .. MAX_FUNCTION_LINES .. " lines", long)
end

do -- 2. small binding files
  local big = {}
  for _, path in ipairs(files) do
    if component(path) == "bindings" and path:match("%.c$") then
      local n = lines_of(raw[path])
      if n > MAX_BINDING_FILE_LINES then big[#big + 1] = string.format("%s is %d lines", path, n) end
    end
  end
  rule("each binding file is at most " .. MAX_BINDING_FILE_LINES .. " lines", big)
end

local includes = {}
for _, path in ipairs(files) do
  includes[path] = {}
  for name in raw[path]:gmatch('#%s*include%s*"([^"]+)"') do
    local target = resolve(path, name, by_path)
    if target then includes[path][target] = true end
  end
end

do -- 3. no include circles
  local found = {}
  for _, c in ipairs(circles(files, includes)) do found[#found + 1] = table.concat(c, " <-> ") end
  rule("no header includes itself through others", found)
end

do -- 4. components meet only at their public headers
  local reach = {}
  for _, path in ipairs(files) do
    for target in pairs(includes[path]) do
      if component(target) ~= component(path) and not public_header(target) then
        reach[#reach + 1] = path .. " includes " .. target
      end
    end
  end
  rule("no file includes another component's private header", reach)
end

do -- 5. no call circles between files
  local owner = {}
  for _, path in ipairs(files) do
    if path:match("%.c$") then
      for _, f in ipairs(functions(code[path])) do
        if not f.static then owner[f.name] = owner[f.name] or path end
      end
    end
  end
  local calls, sources = {}, {}
  for _, path in ipairs(files) do
    if path:match("%.c$") then
      sources[#sources + 1] = path
      calls[path] = {}
      for word in code[path]:gmatch("[%a_][%w_]*") do
        local target = owner[word]
        if target and target ~= path then
          calls[path][target] = calls[path][target] or {}
          calls[path][target][word] = true
        end
      end
    end
  end
  -- each circle with the calls that close it, so the fix is plain to see
  local found = {}
  for _, c in ipairs(circles(sources, calls)) do
    found[#found + 1] = table.concat(c, ", ")
    local inside = {}
    for _, f in ipairs(c) do inside[f] = true end
    for _, f in ipairs(c) do
      for target, names in pairs(calls[f]) do
        if inside[target] then
          local list = {}
          for name in pairs(names) do list[#list + 1] = name end
          table.sort(list)
          found[#found + 1] = string.format("  %s -> %s: %s", f, target, table.concat(list, " "))
        end
      end
    end
  end
  rule("no two files call each other, directly or through others", found)
end

-- The document against the tree. docs/architecture.md has one file table
-- per layer (the table under each heading below); e2b-local's files are in
-- emulator/README.md's tables, which the document points to. Every source
-- file must have a row (a `.h` may share its `.c`'s), and every file a row
-- names must exist, so the document cannot drift from the code unseen.
local ARCH, EMU_README = "docs/architecture.md", "emulator/README.md"
local LAYERS = {
  { dir = "core/src/", doc = ARCH, heading = "## The core", pattern = "%.[ch]$" },
  { dir = "bindings/", doc = ARCH, heading = "## The binding", pattern = "%.[ch]$" },
  { dir = "lua/e2b/", doc = ARCH, heading = "## The Lua layer", pattern = "%.lua$" },
  { dir = "lua/", doc = ARCH, heading = "## The Lua layer", pattern = "^lua/[^/]+%.lua$" },
  { dir = "emulator/src/", doc = EMU_README, heading = "## How it works", pattern = "%.[ch]$" },
}

local function git_files(dir)
  local out = {}
  local p = assert(io.popen("git ls-files -- " .. dir .. " 2>/dev/null"))
  for path in p:lines() do out[#out + 1] = path end
  p:close()
  return out
end

-- The names in backquotes in the table rows of one `## ` section of a
-- markdown text (a row is a line that starts with `|`).
local function table_names(text, heading)
  local start = text:find("\n" .. heading, 1, true)
  if not start then return nil end
  local stop = text:find("\n## ", start + 1, true) or #text
  local names = {}
  for line in text:sub(start, stop):gmatch("[^\n]+") do
    if line:match("^|") then
      local first = line:match("^|([^|]*)|")
      for name in (first or ""):gmatch("`([^`]+)`") do names[name] = true end
    end
  end
  return names
end

local function layer_problems(layer, text, problems)
  local names = table_names(text, layer.heading)
  if not names then
    problems[#problems + 1] = string.format("%s has no section %q", layer.doc, layer.heading)
    return
  end
  for _, path in ipairs(git_files(layer.dir)) do
    if path:match(layer.pattern) and (layer.dir ~= "lua/" or not path:find("/", 5, true)) then
      local base = path:match("[^/]+$")
      local sibling = base:match("^(.*)%.h$")
      if not names[base] and not (sibling and names[sibling .. ".c"]) then
        problems[#problems + 1] = string.format(
          "%s is in no file table: add a row for `%s` to the table under %q in %s",
          path, base, layer.heading, layer.doc)
      end
    end
  end
  for name in pairs(names) do
    if name:match("^[%w_]+%.[ch]$") or name:match("^[%w_]+%.lua$") then
      local known = false
      for _, other in ipairs(LAYERS) do -- a section may hold the files of several dirs
        if other.doc == layer.doc and other.heading == layer.heading then
          for _, path in ipairs(git_files(other.dir)) do
            if path:match("[^/]+$") == name then known = true end
          end
        end
      end
      if not known then
        problems[#problems + 1] = string.format("%s names `%s` under %q, which is no file of %s",
          layer.doc, name, layer.heading, layer.dir)
      end
    end
  end
end

do -- 6. every source file has a row in the document's file tables, and every row a file
  local problems = {}
  for _, layer in ipairs(LAYERS) do layer_problems(layer, read(layer.doc), problems) end
  local once, seen = {}, {}
  for _, p in ipairs(problems) do
    if not seen[p] then seen[p], once[#once + 1] = true, p end
  end
  problems = once
  table.sort(problems)
  rule("every file of core/src, bindings, lua and emulator/src has a row in "
    .. ARCH .. " (emulator/src: " .. EMU_README .. "), and every row names a file", problems)
end

do -- 7. paths, links and e2b_ names the document names exist
  local problems, text = {}, read(ARCH)
  for path in text:gmatch("`([%w_.%-]+/[%w_./%-]*%.%a+)`") do
    if not io.open(path, "rb") then problems[#problems + 1] = ARCH .. " names " .. path .. ", which does not exist" end
  end
  for target in text:gmatch("%]%(([^)#]+)[^)]*%)") do
    if not target:match("^%a+:") and not io.open("docs/" .. target, "rb") then
      problems[#problems + 1] = ARCH .. " links to " .. target .. ", which does not exist"
    end
  end
  local words = {} -- every identifier of the C sources
  for _, path in ipairs(files) do
    for word in raw[path]:gmatch("[%a_][%w_]*") do words[word] = true end
  end
  for name in text:gmatch("`([eE]2[bB]_[%w_][%w_.]*)`") do
    for word in name:gmatch("[%a_][%w_]*") do
      if not words[word] then
        problems[#problems + 1] = ARCH .. " names " .. name .. ", which no C source defines or uses"
      end
    end
  end
  -- a row of the core's table says what its files hold: an e2b_/E2B_ name in
  -- it is in one of them, or in a file the row names beside it
  local folder
  for line in text:sub(text:find("\n## The core", 1, true), text:find("\n## Kept command output", 1, true))
      :gmatch("[^\n]+") do
    folder = line:match("^| %*%*`([^`]+/)`%*%*") or folder
    local first, rest = line:match("^|([^|]*)|(.*)$")
    if folder and first and not first:find("**", 1, true) then
      local held = {}
      for name in line:gmatch("`([%w_]+%.[ch])`") do
        for _, dir in ipairs({ folder, "core/src/", "core/src/transport/", "core/src/control/",
          "core/src/envd/", "core/src/kept/", "core/src/template/" }) do
          local f = io.open(dir .. name, "rb")
          if f then held[#held + 1] = f:read("a") f:close() break end
        end
      end
      local src = table.concat(held, "\n")
      for name in rest:gmatch("`([eE]2[bB]_[%w_]+)") do
        if not src:find("%f[%w_]" .. name .. "%f[^%w_]") then
          problems[#problems + 1] = string.format("%s's row for %s names %s, which none of the files it names holds",
            ARCH, first:gsub("^%s+", ""):gsub("%s+$", ""), name)
        end
      end
    end
  end
  rule("every path, link and e2b_ name in " .. ARCH .. " exists, and the core's rows name their own", problems)
end

do -- 8. mem.c calls nothing else in libe2b (any file may call it without a circle)
  local defined, problems = {}, {}
  for _, path in ipairs(files) do
    if path:match("^core/src/.*%.c$") and path ~= "core/src/mem.c" then
      for _, f in ipairs(functions(code[path])) do
        if not f.static then defined[f.name] = path end
      end
    end
  end
  local seen = {}
  for word in (code["core/src/mem.c"] or ""):gmatch("[%a_][%w_]*") do
    if defined[word] and not seen[word] then
      seen[word] = true
      problems[#problems + 1] = "core/src/mem.c calls " .. word .. " (" .. defined[word] .. ")"
    end
  end
  rule("core/src/mem.c calls no other file of libe2b", problems)
end

do -- 9. the transport is one chain: each file of core/src/transport/ calls only those below it
  -- The order docs/architecture.md gives ("Shape rules"); a file not listed
  -- is outside the chain and may call any of it (op.c, prepare.c).
  local CHAIN = { "step.c", "req.c", "transfer.c", "queue.c", "upload.c", "loop.c", "bridge.c", "events.c" }
  local rank, owner, problems = {}, {}, {}
  for i, name in ipairs(CHAIN) do rank["core/src/transport/" .. name] = i end
  for _, path in ipairs(files) do
    if rank[path] then
      for _, f in ipairs(functions(code[path])) do
        if not f.static then owner[f.name] = path end
      end
    end
  end
  for path, r in pairs(rank) do
    local seen = {}
    for word in (code[path] or ""):gmatch("[%a_][%w_]*") do
      local target = owner[word]
      if target and target ~= path and rank[target] < r and not seen[word] then
        seen[word] = true
        problems[#problems + 1] = string.format("%s calls %s (%s), which is above it", path, word, target)
      end
    end
  end
  table.sort(problems)
  rule("core/src/transport calls one way: " .. table.concat(CHAIN, " -> "), problems)
end

-- Lua sources with comments and string literals blanked (long brackets
-- included), so a name in a comment or a message is not read as code.
local function lua_code(text)
  text = text:gsub("%-%-%[(=*)%[.-%]%1%]", "")
  text = text:gsub("%[(=*)%[.-%]%1%]", '""')
  text = text:gsub("%-%-[^\n]*", "")
  text = text:gsub('"[^"\n]*"', '""'):gsub("'[^'\n]*'", "''")
  return text
end

local lua_files = {}
for _, path in ipairs(git_files("lua")) do
  if path:match("%.lua$") then lua_files[#lua_files + 1] = path end
end

do -- 10. a Lua module reads no other module's `_` fields
  local problems = {}
  for _, path in ipairs(lua_files) do
    local src = lua_code(read(path))
    local own = {}
    for name in src:gmatch("[.:](_[%a][%w_]*)%s*=[^=]") do own[name] = true end
    for name in src:gmatch("function%s+[%w_.]+[.:](_[%a][%w_]*)") do own[name] = true end
    for name in src:gmatch("[{,]%s*(_[%a][%w_]*)%s*=[^=]") do own[name] = true end
    -- each `._name` / `:_name` with what stands before it (`a._b._c` is two reads)
    for at, name in src:gmatch("()[.:](_[%a][%w_]*)") do
      local obj = src:sub(1, at - 1):match("([%w_]+)%s*$") or src:sub(1, at - 1):match("(%S)%s*$")
      if obj ~= "self" and not own[name] and not name:match("^__") then
        problems[#problems + 1] = string.format("%s reads %s.%s, a field another module keeps private", path, obj, name)
      end
    end
  end
  rule("no Lua module reads another module's `_` fields", problems)
end

do -- 11. client.lua -> sandbox.lua -> process.lua, files.lua is the only direction of require
  local order = { ["e2b.client"] = 1, ["e2b.sandbox"] = 2, ["e2b.process"] = 3, ["e2b.files"] = 3 }
  local problems = {}
  for _, path in ipairs(lua_files) do
    local mod = path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/", ".")
    local src = read(path):gsub("%-%-[^\n]*", "")
    for target in src:gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
      if order[mod] and order[target] and order[target] <= order[mod] and target ~= mod then
        problems[#problems + 1] =
          string.format("%s requires %s (the order is client, sandbox, process/files)", path, target)
      end
    end
  end
  rule("client.lua -> sandbox.lua -> process.lua/files.lua is the only direction of require", problems)
end

do -- 12. bench/README.md: every script has a row, every source comment that cites it a design row
  local BENCH = "bench/README.md"
  local text, problems = read(BENCH), {}
  local index = {} -- every backquoted name in the rows of the first table
  for line in text:sub(1, (text:find("\n## ", 1, true) or #text)):gmatch("[^\n]+") do
    if line:match("^|") then
      for name in line:gmatch("`([^`]+)`") do index[name] = true end
    end
  end
  local design = {}
  local start = text:find("\n## Measurements behind design choices", 1, true)
  for line in text:sub(start or #text):gmatch("[^\n]+") do
    if line:match("^|") then
      local where = line:match("^|[^|]*|([^|]*)|") or ""
      local cited -- the file a name after it belongs to: `file.c` (`NAME`)
      for name in where:gmatch("`([^`]+)`") do
        design[name] = true
        if name:match("^[%w_./-]+%.%a+$") then
          local f = io.open(name, "rb")
          if f then f:close() end
          cited = f and name
          if not cited then
            problems[#problems + 1] = BENCH .. "'s design rows cite " .. name .. ", which does not exist"
          end
        elseif cited and name:match("^[%a_][%w_]*$")
            and not read(cited):find("%f[%w_]" .. name .. "%f[^%w_]") then
          problems[#problems + 1] =
            BENCH .. "'s design rows name " .. name .. " in " .. cited .. ", which does not hold it"
        end
      end
    end
  end
  for _, path in ipairs(git_files("bench")) do
    local base = path:match("^bench/([^/]+)$")
    if base and base:match("%.[%a]+$") and not base:match("%.md$") and not index[base] then
      problems[#problems + 1] = path .. " is in no row of " .. BENCH .. "'s first table: add it to its benchmark's row"
    end
  end
  for name in pairs(index) do
    if name:match("^[%w_]+%.%a+$") and not io.open("bench/" .. name, "rb") then
      problems[#problems + 1] = BENCH .. " names " .. name .. ", which is not in bench/"
    end
  end
  local p = assert(io.popen("git grep -l -F bench/README.md -- core bindings codec emulator lua 2>/dev/null"))
  for path in p:lines() do
    if not design[path] then
      problems[#problems + 1] = path .. " cites " .. BENCH .. ": add a row naming `" .. path
        .. "` to its table \"Measurements behind design choices\", with the numbers"
    end
  end
  p:close()
  table.sort(problems)
  rule("every bench script is in " .. BENCH .. ", and every source that cites it has its numbers there", problems)
end

do -- 13. a C source names only .c files that exist (files move; comments must follow)
  local exists, problems = {}, {}
  for _, path in ipairs(git_files(".")) do exists[path:match("[^/]+$")] = true end
  for _, path in ipairs(files) do
    local seen = {}
    for name in raw[path]:gmatch("%f[%w_]([%a_][%w_]*%.c)%f[^%w_]") do
      if not exists[name] and not seen[name] then
        seen[name] = true
        problems[#problems + 1] = path .. " names " .. name .. ", which is no file of the tree"
      end
    end
  end
  table.sort(problems)
  rule("every .c file a C source names exists", problems)
end

local failed = 0
for _, r in ipairs(results) do
  if #r.problems == 0 then
    print("ok     " .. r.name)
  else
    failed = failed + 1
    print("FAIL   " .. r.name)
    for _, p in ipairs(r.problems) do print("         " .. p) end
  end
end
print(string.format("%d rules passed, %d failed", #results - failed, failed))
os.exit(failed == 0 and 0 or 1)
