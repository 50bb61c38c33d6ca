/* git.c — core.git_check, core.git_status and core.git_failure_kind:
 * libe2b's git rules (core/src/git.c) for e2b.git, which builds each argv
 * from values git_check accepted, presents the table git_status makes of
 * `git status --porcelain=v2 --branch -z` and gives a failed clone, pull or
 * push the kind git_failure_kind names. */
#include "auxiliar.h"

#include <string.h>

static const char *const KIND_NAMES[] = {"ref", "url", "path", "line", "text", "key", NULL};

/* git_check(kind, value) -> nil | why value may not be used (never quoting it) */
static int core_git_check(lua_State *L) {
  int kind = luaL_checkoption(L, 1, NULL, KIND_NAMES);
  size_t len;
  const char *v = luaL_checklstring(L, 2, &len);
  const char *why = e2b_git_check((e2b_git_value)kind, v, len);
  if (!why) return 0;
  lua_pushstring(L, why);
  return 1;
}

static void set_str(lua_State *L, const char *name, const char *v, size_t len) {
  if (!v) return;
  lua_pushlstring(L, v, len);
  lua_setfield(L, -2, name);
}

static void set_bool(lua_State *L, const char *name, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, name);
}

/* Appends one entry to the array at -1: path, orig, index and worktree
 * letters, and what they mean (staged, unstaged, untracked, conflict). */
static int push_entry(void *ud, const e2b_git_entry *e) {
  lua_State *L = ud;
  size_t n = lua_rawlen(L, -1);
  lua_createtable(L, 0, 8);
  set_str(L, "path", e->path, e->path_len);
  set_str(L, "orig_path", e->orig, e->orig_len);
  set_str(L, "index", &e->xy[0], 1);
  set_str(L, "worktree", &e->xy[1], 1);
  int untracked = e->kind == '?', ignored = e->kind == '!', conflict = e->kind == 'u';
  set_bool(L, "untracked", untracked);
  set_bool(L, "ignored", ignored);
  set_bool(L, "conflict", conflict);
  set_bool(L, "staged", !untracked && !ignored && !conflict && e->xy[0] != '.');
  set_bool(L, "unstaged", !untracked && !ignored && (conflict || e->xy[1] != '.'));
  lua_rawseti(L, -2, (lua_Integer)n + 1);
  return 0;
}

/* git_status(bytes) -> { oid, branch, upstream, ahead, behind, detached,
 * files = {...} } | nil, why the bytes are not git's */
static int core_git_status(lua_State *L) {
  size_t len;
  const char *buf = luaL_checklstring(L, 1, &len);
  e2b_git_head h;
  const char *why;
  lua_newtable(L);
  if (e2b_git_status_parse(buf, len, &h, push_entry, L, &why) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, why ? why : "unreadable status");
    return 2;
  }
  lua_createtable(L, 0, 7);
  lua_insert(L, -2);
  lua_setfield(L, -2, "files");
  set_str(L, "oid", h.oid, h.oid_len);
  set_str(L, "branch", h.branch, h.branch_len);
  set_str(L, "upstream", h.upstream, h.upstream_len);
  lua_pushinteger(L, h.ahead);
  lua_setfield(L, -2, "ahead");
  lua_pushinteger(L, h.behind);
  lua_setfield(L, -2, "behind");
  set_bool(L, "detached", h.detached);
  return 1;
}

/* git_failure_kind(output) -> "auth" | "sandbox": what a failed clone, pull
 * or push was, by libe2b's reading of git's output */
static int core_git_failure_kind(lua_State *L) {
  size_t len;
  const char *out = luaL_checklstring(L, 1, &len);
  lua_pushstring(L, e2b_code_name(e2b_git_failure_code(out, len)));
  return 1;
}

/* Adds git_check, git_status and git_failure_kind to the module table on top of the stack. */
void e2bL_open_git(lua_State *L) {
  lua_pushcfunction(L, core_git_failure_kind);
  lua_setfield(L, -2, "git_failure_kind");
  lua_pushcfunction(L, core_git_check);
  lua_setfield(L, -2, "git_check");
  lua_pushcfunction(L, core_git_status);
  lua_setfield(L, -2, "git_status");
}
