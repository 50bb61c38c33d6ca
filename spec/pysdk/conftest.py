"""Plumbing of the Python SDK suite: one e2b-local per test module, and the
SDK pointed at it the way a user would, with only E2B_DOMAIN, E2B_API_KEY
and the CA to trust (SSL_CERT_FILE) in the environment.

The SDK's HTTP client (pyqwest, over rustls) loads the trust roots once per
process, so the modules a process runs (pytest-xdist gives each worker a
few) share one CA: it is made once per process, by an e2b-local started and
stopped for that, and copied into each module's state directory, where that
module's e2b-local finds and keeps it. The binary comes from E2B_LOCAL_BIN
(default: the repo's build/emulator/e2b-local).
"""

import atexit
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("E2B_LOCAL_BIN") or os.path.join(HERE, "..", "..", "build", "emulator", "e2b-local")
KEYS = ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_API_KEY", "E2B_LOCAL_ADMIN_TOKEN", "E2B_CA_FILE")
# What could point the SDK elsewhere, or trust other CAs: none of it is
# inherited (a run under `e2b-local exec` sets E2B_API_URL, for one).
FOREIGN = ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DEBUG", "E2B_ACCESS_TOKEN", "E2B_DOMAIN", "E2B_API_KEY",
           "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
           "http_proxy", "ALL_PROXY", "all_proxy")
# What AddressSanitizer, LeakSanitizer or UBSan print on a finding (the
# lines scripts/sanitizer_reports.sh looks for in the busted logs).
SANITIZER_REPORT = re.compile(r"==\d+==ERROR: (AddressSanitizer|LeakSanitizer)|:\d+:\d+: runtime error: "
                              r"|LeakSanitizer has encountered a fatal error")


def wait_for(cond, timeout=15.0, what="a condition"):
    """Polls cond until it returns a truthy value (returned), or fails."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def pids_with_cmdline(fragment):
    """Host pids whose command line holds fragment (bwrap's names the state dir)."""
    needle = fragment.encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if needle in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


class Server:
    """An e2b-local serving a state directory: env holds what it printed."""

    def __init__(self, state, extra_args=()):
        self.state = state
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--state", state, *extra_args],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        self.env = self._read_env()

    def _read_env(self):
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout] + [lines.put(None)],
                         daemon=True).start()
        env = {}
        deadline = time.monotonic() + 15
        while not all(k in env for k in KEYS):
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.proc.kill()
                raise RuntimeError(f"e2b-local did not start ({BIN}; set E2B_LOCAL_BIN):\n{self.stderr()}")
            name, eq, value = line.decode().rstrip("\n").partition("=")
            if eq:
                env[name] = value
        return env

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self):
        """SIGTERM (every sandbox dies with it); its exit code. A sanitizer
        report in its stderr (an ASan build's leak at exit) fails."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        err = self.stderr()
        assert not SANITIZER_REPORT.search(err), f"e2b-local printed a sanitizer report:\n{err}"
        return code


_ca_dir = None


def shared_ca():
    """This process's CA directory (ca.pem, ca.key), made on first use."""
    global _ca_dir
    if _ca_dir is None:
        state = tempfile.mkdtemp(prefix="e2b-local-pysdk-ca-")
        srv = Server(state)
        assert srv.stop() == 0, srv.stderr()
        atexit.register(shutil.rmtree, state, True)
        _ca_dir = os.path.join(state, "tls")
    return _ca_dir


def start_server(extra_args=()):
    """A fresh e2b-local holding this process's CA."""
    state = tempfile.mkdtemp(prefix="e2b-local-pysdk-")
    tls = os.path.join(state, "tls")
    os.mkdir(tls, 0o700)
    for name in ("ca.pem", "ca.key"):
        shutil.copy2(os.path.join(shared_ca(), name), os.path.join(tls, name))
    return Server(state, extra_args)


def use_env(env):
    """The SDK's whole configuration: the domain, the key, the CA."""
    for name in FOREIGN:
        os.environ.pop(name, None)
    os.environ["E2B_DOMAIN"] = env["E2B_DOMAIN"]
    os.environ["E2B_API_KEY"] = env["E2B_API_KEY"]
    os.environ["SSL_CERT_FILE"] = env["E2B_CA_FILE"]


def stop_server(srv):
    """Stops srv and checks it left nothing behind."""
    code = srv.stop()
    err = srv.stderr()
    assert code == 0, f"e2b-local exited with {code}:\n{err}"
    left = pids_with_cmdline(srv.state)
    assert not left, f"processes left after stop: {left}"
    shutil.rmtree(srv.state, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    """The module's e2b-local, the SDK's environment pointed at it."""
    srv = start_server()
    use_env(srv.env)
    yield types.SimpleNamespace(env=srv.env, state=srv.state, srv=srv)
    stop_server(srv)
