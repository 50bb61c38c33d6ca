/* hostio.c — what a command-line tool needs of its own process that Lua
 * has no word for: signals it traps, input it may read without blocking
 * the loop, and its terminal (size, raw mode). Used by `lua-e2b exec` (lua/e2b/cli.lua); nothing in the API
 * depends on it.
 *
 *   core.trap_signals()    HUP, INT, PIPE and TERM only set a flag from now
 *                          on (no SA_RESTART: a wait in the loop returns
 *                          early; a write to a closed pipe fails, EPIPE)
 *   core.take_signal()     -> the number of a trapped signal that came
 *                          since the last take (the lowest first), or nil
 *   core.untrap_signals()  the dispositions from before trap_signals again
 *   core.read_ready(fd, max)
 *                          -> up to max bytes the fd has now (one read(2),
 *                          only when poll(2) says it will not block);
 *                          false when nothing is there yet; nil at the end
 *                          of input (a closed fd reads as empty input);
 *                          nil, message on a read error
 *   core.fd_state(fd)      -> "closed", "tty" or "open": whether the fd
 *                          is there and a terminal (ask before anything
 *                          is opened: a closed 0 is the next open's fd)
 *   core.trap_resize()     SIGWINCH sets a flag from now on (SA_RESTART:
 *                          a resize interrupts nothing); untrap_signals
 *                          ends it too
 *   core.take_resize()     -> true once when the window was resized since
 *                          the last take
 *   core.tty_size(fd)      -> cols, rows of the terminal fd, or nil
 *   core.tty_raw(fd)       the terminal fd in raw mode (keys as bytes, no
 *                          echo, Ctrl-C a byte, no output translation);
 *                          its modes from before are kept -> true, or
 *                          nil, message
 *   core.tty_restore()     the kept modes again (also at exit, should the
 *                          caller never get to it); nothing when none kept
 *
 * Signal dispositions and a terminal's modes are one per process, so they
 * are the binding's global state: a flag per signal, written only by the
 * handler and cleared only by take_signal (take_resize), and the modes of
 * the one terminal made raw. The caller polls take_signal
 * while it waits (its loop steps are bounded); the handler does nothing
 * else, so it is async-signal-safe. */
#include "auxiliar.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

/* The most read_ready reads at once. */
#define READ_READY_MAX (1 << 20)

static const int trapped[] = {SIGHUP, SIGINT, SIGPIPE, SIGTERM};
#define NTRAPPED (sizeof trapped / sizeof trapped[0])

static volatile sig_atomic_t pending[NTRAPPED];
static struct sigaction previous[NTRAPPED];
static int trapping;

static void on_signal(int signo) {
  for (size_t i = 0; i < NTRAPPED; i++)
    if (trapped[i] == signo) pending[i] = 1;
}

static int hostio_trap_signals(lua_State *L) {
  if (!trapping) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NTRAPPED; i++) {
      pending[i] = 0;
      sigaction(trapped[i], &sa, &previous[i]);
    }
    trapping = 1;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static volatile sig_atomic_t resized;
static struct sigaction previous_winch;
static int trapping_winch;

static void on_winch(int signo) {
  (void)signo;
  resized = 1;
}

static int hostio_trap_resize(lua_State *L) {
  if (!trapping_winch) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_winch;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    resized = 0;
    sigaction(SIGWINCH, &sa, &previous_winch);
    trapping_winch = 1;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int hostio_take_resize(lua_State *L) {
  lua_pushboolean(L, resized);
  resized = 0;
  return 1;
}

static int hostio_untrap_signals(lua_State *L) {
  (void)L;
  if (trapping) {
    for (size_t i = 0; i < NTRAPPED; i++) sigaction(trapped[i], &previous[i], NULL);
    trapping = 0;
  }
  if (trapping_winch) {
    sigaction(SIGWINCH, &previous_winch, NULL);
    trapping_winch = 0;
  }
  return 0;
}

/* The one terminal in raw mode, and its modes from before. */
static struct termios kept_modes;
static int kept_fd = -1;

static void restore_tty(void) {
  if (kept_fd >= 0) {
    tcsetattr(kept_fd, TCSADRAIN, &kept_modes);
    kept_fd = -1;
  }
}

static int hostio_tty_size(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  struct winsize ws;
  if (fd < 0 || ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, ws.ws_col);
  lua_pushinteger(L, ws.ws_row);
  return 2;
}

static int hostio_tty_raw(lua_State *L) {
  static int registered;
  int fd = (int)luaL_checkinteger(L, 1);
  luaL_argcheck(L, fd >= 0, 1, "must be a file descriptor");
  luaL_argcheck(L, kept_fd < 0, 1, "a terminal is raw already");
  struct termios t;
  if (tcgetattr(fd, &t) != 0) {
    int e = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "tcgetattr: %s", strerror(e));
    return 2;
  }
  if (!registered) registered = atexit(restore_tty) == 0;
  kept_modes = t;
  cfmakeraw(&t);
  if (tcsetattr(fd, TCSADRAIN, &t) != 0) {
    int e = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "tcsetattr: %s", strerror(e));
    return 2;
  }
  kept_fd = fd;
  lua_pushboolean(L, 1);
  return 1;
}

static int hostio_tty_restore(lua_State *L) {
  (void)L;
  restore_tty();
  return 0;
}

static int hostio_take_signal(lua_State *L) {
  for (size_t i = 0; i < NTRAPPED; i++) {
    if (pending[i]) {
      pending[i] = 0;
      lua_pushinteger(L, trapped[i]);
      return 1;
    }
  }
  lua_pushnil(L);
  return 1;
}

static int hostio_read_ready(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  lua_Integer max = luaL_checkinteger(L, 2);
  luaL_argcheck(L, fd >= 0, 1, "must be a file descriptor");
  luaL_argcheck(L, max > 0 && max <= READ_READY_MAX, 2, "must be 1 .. 1 MiB");
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r = poll(&p, 1, 0);
  if (r < 0 && errno == EINTR) r = 0;
  if (r == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (r < 0 || (p.revents & POLLNVAL)) {
    lua_pushnil(L); /* no such fd: no input */
    return 1;
  }
  char *buf = compat_newuserdata(L, (size_t)max); /* scratch the collector frees */
  ssize_t n = read(fd, buf, (size_t)max);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (n < 0) {
    int e = errno;
    lua_pushnil(L);
    lua_pushfstring(L, "read: %s", strerror(e));
    return 2;
  }
  if (n == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

static int hostio_fd_state(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  if (fd < 0 || (fcntl(fd, F_GETFD) == -1 && errno == EBADF))
    lua_pushliteral(L, "closed");
  else if (isatty(fd))
    lua_pushliteral(L, "tty");
  else
    lua_pushliteral(L, "open");
  return 1;
}

void e2bL_open_hostio(lua_State *L) {
  static const luaL_Reg functions[] = {{"trap_signals", hostio_trap_signals},
                                       {"untrap_signals", hostio_untrap_signals},
                                       {"take_signal", hostio_take_signal},
                                       {"read_ready", hostio_read_ready},
                                       {"fd_state", hostio_fd_state},
                                       {"trap_resize", hostio_trap_resize},
                                       {"take_resize", hostio_take_resize},
                                       {"tty_size", hostio_tty_size},
                                       {"tty_raw", hostio_tty_raw},
                                       {"tty_restore", hostio_tty_restore},
                                       {NULL, NULL}};
  for (const luaL_Reg *f = functions; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, -2, f->name);
  }
}
