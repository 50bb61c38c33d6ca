#!/usr/bin/env python3
"""Drives `lua-e2b exec --pty` (or `connect`) as a person at a terminal
would, for spec/client/cli_unix_spec.lua: the tool runs on a pseudo-terminal
of its own (its controlling terminal, so a resize sends it SIGWINCH); this
side is the terminal. Every step waits for what it expects, up to a deadline.

  pty_driver.py STATE_DIR TOOL_COMMAND SCRIPT

TOOL_COMMAND is a shell command line; it runs between two `stty -g` saved in
STATE_DIR/before and STATE_DIR/after (the terminal's modes before and after
the tool). SCRIPT is one of the scenarios below. Prints one JSON object of
what was seen; the Lua spec judges it."""
import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

DEADLINE_S = 30


class Failed(Exception):
    def __init__(self, what, seen):
        super().__init__(what)
        self.what, self.seen = what, seen


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Term:
    def __init__(self, state, command):
        self.seen = b""
        pid, fd = pty.fork()
        if pid == 0:
            set_size(0, 30, 100)
            sh = 'stty -g > "$1/before"; %s; c=$?; stty -g > "$1/after"; exit $c' % command
            os.execvp("sh", ["sh", "-c", sh, "sh", state])
        self.pid, self.fd = pid, fd

    def read_some(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        self.seen += data
        return True

    def wait_for(self, needle, resend=None):
        """Reads until needle was seen after the current point (resending
        resend every second while it is not)."""
        start = len(self.seen)
        end = time.monotonic() + DEADLINE_S
        last = 0.0
        while needle not in self.seen[start:]:
            now = time.monotonic()
            if now > end:
                raise Failed("never saw %r" % needle, self.seen)
            if resend is not None and now - last >= 1:
                self.type(resend)
                last = now
            if not self.read_some(0.2):
                raise Failed("ended before %r" % needle, self.seen)

    def type(self, text):
        os.write(self.fd, text)

    def lflag(self):
        # On Linux the master reports the slave's modes.
        return termios.tcgetattr(self.fd)[3]

    def tool_pid(self):
        """The tool: the child of the sh that runs TOOL_COMMAND."""
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end:
            try:
                with open("/proc/%d/task/%d/children" % (self.pid, self.pid)) as f:
                    kids = f.read().split()
                if kids:
                    return int(kids[0])
            except OSError:
                pass
            self.read_some(0.1)
        raise Failed("no tool process", self.seen)

    def finish(self):
        while self.read_some(1):
            pass
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


def session(t, out):
    """A command typed, its output; raw mode while it runs; a resize."""
    t.wait_for(b"READY42", resend=b"echo READY$((6*7))\r")
    lf = t.lflag()
    out["raw"] = not (lf & (termios.ICANON | termios.ECHO | termios.ISIG))
    t.type(b"stty size; echo SIZE$((1+1))\r")
    t.wait_for(b"SIZE2")
    out["size"] = "30 100" in t.seen.decode("latin-1")
    # Ctrl-C is a key for the sandbox's terminal, not a signal to the tool
    t.type(b"sleep 300; echo SLEPT\r")
    t.wait_for(b"SLEPT\r\n")  # the line's echo: bash runs it now
    t.wait_for(b"$ ", resend=b"\x03")  # the prompt again: the sleep was interrupted
    t.wait_for(b"AFTER3", resend=b"echo AFTER$((1+2))\r")
    set_size(t.fd, 40, 120)
    t.wait_for(b"40 120", resend=b"stty size\r")
    out["resized"] = True
    # bytes exact both ways: a UTF-8 key in, a control byte and UTF-8 out
    # (the terminal here is raw: nothing is translated on this side)
    t.type("echo X\u20acY | od -An -tx1\r".encode())
    t.wait_for(b"58 e2 82 ac 59 0a")
    t.type(b"printf 'X\\342\\202\\254\\001Y\\n'\r")
    t.wait_for(b"X\xe2\x82\xac\x01Y")
    t.type(b"exit 7\r")


def signalled(t, out):
    """SIGTERM to the tool mid-session: the terminal is restored."""
    t.wait_for(b"READY42", resend=b"echo READY$((6*7))\r")
    os.kill(t.tool_pid(), signal.SIGTERM)


def command_alone(t, out):
    """The command given runs to its end by itself."""


def main():
    state, command, script = sys.argv[1], sys.argv[2], sys.argv[3]
    t = Term(state, command)
    out = {}
    try:
        {"session": session, "signalled": signalled, "command": command_alone}[script](t, out)
    except Failed as e:
        os.kill(t.pid, signal.SIGKILL)
        print(json.dumps({"error": e.what, "seen": e.seen.decode("latin-1")}))
        return
    out["code"] = t.finish()
    with open(os.path.join(state, "before")) as f:
        before = f.read()
    with open(os.path.join(state, "after")) as f:
        out["restored"] = before == f.read()
    out["seen"] = t.seen.decode("latin-1")
    print(json.dumps(out))


main()
