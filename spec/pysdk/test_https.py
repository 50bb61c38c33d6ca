"""The SDK over HTTPS, building every URL from E2B_DOMAIN alone: a fresh
Python with only E2B_DOMAIN, E2B_API_KEY and SSL_CERT_FILE works, one
without the CA is refused (verification is real), and a server in the
sandbox is reached at https://<get_host(port)>, as are signed file URLs.
What `e2b-local exec` sets (plain HTTP URLs too) works as well."""

import json
import os
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

from e2b import Sandbox

from conftest import wait_for

CLIENT = """
import json
from e2b import Sandbox
out = {}
try:
    sbx = Sandbox.create(timeout=60)
    out["api"] = sbx.connection_config.api_url
    out["stdout"] = sbx.commands.run("echo hello; id -un").stdout
    out["killed"] = sbx.kill()
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def client(variables):
    """Runs CLIENT in a fresh Python with exactly these variables (and PATH)."""
    env = {"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1", **variables}
    res = subprocess.run([sys.executable, "-c", CLIENT], env=env, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    return json.loads(res.stdout.decode().strip().splitlines()[-1])


def test_only_domain_key_and_ca_are_needed(server):
    env = server.env
    r = client({"E2B_DOMAIN": env["E2B_DOMAIN"], "E2B_API_KEY": env["E2B_API_KEY"], "SSL_CERT_FILE": env["E2B_CA_FILE"]})
    assert r == {"api": f"https://api.{env['E2B_DOMAIN']}", "stdout": "hello\nuser\n", "killed": True}


def test_without_the_ca_the_certificate_is_refused(server):
    r = client({"E2B_DOMAIN": server.env["E2B_DOMAIN"], "E2B_API_KEY": server.env["E2B_API_KEY"]})
    assert "error" in r, r
    assert "certificate" in r["error"].lower() or "unknownissuer" in r["error"].lower(), r["error"]


def test_what_e2b_local_exec_sets_works_too_over_plain_http(server):
    # E2B_API_URL and E2B_SANDBOX_URL win over the domain: no CA needed
    env = server.env
    r = client({name: env[name] for name in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_DOMAIN", "E2B_API_KEY")})
    assert r == {"api": env["E2B_API_URL"], "stdout": "hello\nuser\n", "killed": True}


def test_a_wrong_key_is_refused(server):
    r = client({"E2B_DOMAIN": server.env["E2B_DOMAIN"], "E2B_API_KEY": "e2b_" + "0" * 40,
                "SSL_CERT_FILE": server.env["E2B_CA_FILE"]})
    assert r.get("error", "").startswith("AuthenticationException"), r


def https_get(url):
    """(status, body) of a GET trusting SSL_CERT_FILE, as Python's ssl does."""
    try:
        with urllib.request.urlopen(url, context=ssl.create_default_context(), timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError):
        return 0, b""


SERVER_PY = """
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "host": self.headers["Host"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", 8000), H).serve_forever()
"""


def test_get_host_reaches_a_server_in_the_sandbox_over_https(server):
    host = f"49983-probe.{server.env['E2B_DOMAIN'].split(':')[0]}"
    assert socket.getaddrinfo(host, 443), "*.e2b.localhost must resolve (scripts/setup.sh: libnss-myhostname)"
    sbx = Sandbox.create(timeout=120)
    try:
        sbx.files.write("/home/user/srv.py", SERVER_PY)
        sbx.commands.run("python3 /home/user/srv.py", background=True)
        assert sbx.get_host(8000) == f"8000-{sbx.sandbox_id}.{server.env['E2B_DOMAIN']}"
        url = f"https://{sbx.get_host(8000)}/hello?x=1"
        status, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(https_get(url)),
                                what="the sandbox's server to answer")
        assert json.loads(body) == {"path": "/hello?x=1", "host": sbx.get_host(8000)}
        # a port nothing listens on is an error, not a hang
        status, _ = https_get(f"https://{sbx.get_host(8001)}/")
        assert status >= 400
    finally:
        sbx.kill()


def test_signed_download_and_upload_urls_work_without_the_key(server):
    sbx = Sandbox.create(timeout=60)
    try:
        data = bytes(range(256)) * 4
        sbx.files.write("/home/user/signed.bin", data)
        url = sbx.download_url("/home/user/signed.bin", use_signature_expiration=60)
        assert url.startswith(f"https://49983-{sbx.sandbox_id}.{server.env['E2B_DOMAIN']}/files?")
        assert https_get(url) == (200, data)
        tampered = url.replace("signature=", "signature=x")
        assert https_get(tampered)[0] in (401, 403)
        up = sbx.upload_url("/home/user/up.bin", use_signature_expiration=60)
        boundary = "pysdkboundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"up.bin\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(up, data=body, method="POST",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        with urllib.request.urlopen(req, context=ssl.create_default_context(), timeout=10) as res:
            assert res.status == 200
        assert bytes(sbx.files.read("/home/user/up.bin", format="bytes")) == data
    finally:
        sbx.kill()
