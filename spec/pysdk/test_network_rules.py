"""network.rules through the Python SDK: E2B takes exact DNS names as rule
keys, so an IP address, a CIDR and a wildcard are refused with a 400 at
create and at update_network (the SDK's SandboxException carrying the
status), and a refused update leaves the sandbox's rules as they were. The
SDK's own docstring calls keys "host (or CIDR / IP)": it checks nothing
itself, so these refusals are the server's."""

import pytest
from e2b import Sandbox, SandboxException

HEADERS = [{"transform": {"headers": {"X-Injected": "x"}}}]


def refused(call, key):
    with pytest.raises(SandboxException) as err:
        call()
    assert err.value.status_code == 400, err.value
    assert f'network.rules key "{key}"' in str(err.value), err.value
    assert str(err.value).startswith("400: ")
    return str(err.value)


@pytest.mark.parametrize("key", ["127.0.0.1", "10.0.0.0/8", "::1", "*.localhost", "*"])
def test_create_refuses_a_rule_key_that_is_no_exact_domain_name(server, key):
    msg = refused(lambda: Sandbox.create(timeout=30, network={
        "deny_out": ["0.0.0.0/0"], "rules": {key: HEADERS}}), key)
    assert "not a valid domain name" in msg, msg


def test_update_network_refuses_them_and_keeps_the_rules_it_had(server):
    net = {"deny_out": ["0.0.0.0/0"], "allow_out": ["localhost"]}
    sbx = Sandbox.create(timeout=60, network={**net, "rules": {"localhost": HEADERS}})
    try:
        assert sbx.get_info().network["rules"] == {"localhost": HEADERS}
        for key in ("127.0.0.1", "*.localhost"):
            refused(lambda: sbx.update_network({**net, "rules": {key: HEADERS}}), key)
        assert sbx.get_info().network["rules"] == {"localhost": HEADERS}
        # a domain key in any case is one name: two spellings of it are refused
        refused(lambda: sbx.update_network({**net, "rules": {"localhost": HEADERS, "LOCALHOST": HEADERS}}),
                "LOCALHOST")
    finally:
        sbx.kill()
