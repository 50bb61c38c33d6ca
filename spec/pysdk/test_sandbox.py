"""The sandbox lifecycle through the sync client (Sandbox): create, info,
list, timeouts, pause and connect, kill, and the errors for a sandbox that
is not there."""

import datetime
import secrets

import pytest
from e2b import (
    NotFoundException,
    Sandbox,
    SandboxException,
    SandboxNotFoundException,
    SandboxQuery,
    SandboxState,
)

from conftest import wait_for


def test_create_carries_metadata_envs_and_timeout_into_the_sandbox(server):
    tag = secrets.token_hex(4)
    sbx = Sandbox.create(timeout=120, metadata={"suite": "pysdk", "tag": tag}, envs={"GREETING": "hi there"})
    try:
        assert sbx.sandbox_id.isalnum() and sbx.sandbox_id == sbx.sandbox_id.lower()
        assert sbx.connection_config.api_url == f"https://api.{server.env['E2B_DOMAIN']}"
        assert sbx.envd_api_url == f"https://49983-{sbx.sandbox_id}.{server.env['E2B_DOMAIN']}"
        assert sbx.is_running()
        assert sbx.commands.run("echo $GREETING").stdout == "hi there\n"
        info = sbx.get_info()
        assert info.sandbox_id == sbx.sandbox_id
        assert info.template_id == "base"
        assert info.metadata == {"suite": "pysdk", "tag": tag}
        assert info.state == SandboxState.RUNNING
        left = (info.end_at - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        assert 100 < left <= 121, left
        assert (info.end_at - info.started_at).total_seconds() == pytest.approx(120, abs=2)
    finally:
        sbx.kill()


def test_an_unknown_template_is_refused(server):
    name = "no-such-template-" + secrets.token_hex(3)
    with pytest.raises(SandboxException, match=f"404: template '{name}' not found"):
        Sandbox.create(template=name, timeout=30)


def test_set_timeout_moves_the_end_both_ways(server):
    sbx = Sandbox.create(timeout=60)
    try:
        first = sbx.get_info().end_at
        sbx.set_timeout(300)
        later = sbx.get_info().end_at
        assert (later - first).total_seconds() > 200
        sbx.set_timeout(30)
        sooner = sbx.get_info().end_at
        assert (sooner - datetime.datetime.now(datetime.timezone.utc)).total_seconds() <= 31
    finally:
        sbx.kill()


def test_list_filters_by_metadata_and_state_and_paginates(server):
    tag = secrets.token_hex(4)
    boxes = [Sandbox.create(timeout=120, metadata={"tag": tag, "n": str(i)}) for i in range(3)]
    try:
        other = Sandbox.create(timeout=120, metadata={"tag": "other-" + tag})
        found = Sandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items()
        assert sorted(s.sandbox_id for s in found) == sorted(b.sandbox_id for b in boxes)
        assert all(s.metadata["tag"] == tag and s.state == SandboxState.RUNNING for s in found)
        # one at a time: three pages, then no more
        pager = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}), limit=1)
        seen = []
        while pager.has_next:
            page = pager.next_items()
            assert len(page) <= 1
            seen += [s.sandbox_id for s in page]
        assert sorted(seen) == sorted(b.sandbox_id for b in boxes)
        # a paused one is listed as paused, and only under that state
        boxes[0].pause()
        paused = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}, state=[SandboxState.PAUSED])).next_items()
        assert [s.sandbox_id for s in paused] == [boxes[0].sandbox_id]
        running = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}, state=[SandboxState.RUNNING])).next_items()
        assert sorted(s.sandbox_id for s in running) == sorted(b.sandbox_id for b in boxes[1:])
        other.kill()
    finally:
        for b in boxes:
            Sandbox.kill(b.sandbox_id)


def test_pause_then_connect_keeps_files_and_a_running_process(server):
    sbx = Sandbox.create(timeout=120)
    try:
        sbx.files.write("/home/user/kept.txt", "still here")
        sleeper = sbx.commands.run("sleep 600", background=True)
        assert sbx.pause() is True
        assert sbx.get_info().state == SandboxState.PAUSED
        with pytest.raises(Exception):
            sbx.commands.run("true", request_timeout=3)
        back = Sandbox.connect(sbx.sandbox_id, timeout=120)
        assert back.sandbox_id == sbx.sandbox_id
        assert back.get_info().state == SandboxState.RUNNING
        assert back.files.read("/home/user/kept.txt") == "still here"
        assert sleeper.pid in [p.pid for p in back.commands.list()]
    finally:
        Sandbox.kill(sbx.sandbox_id)


def test_connect_to_a_running_sandbox_hands_back_a_working_one(server):
    sbx = Sandbox.create(timeout=120)
    try:
        other = Sandbox.connect(sbx.sandbox_id)
        assert other.commands.run("echo same").stdout == "same\n"
        assert sbx.get_info().state == SandboxState.RUNNING
    finally:
        sbx.kill()


def test_kill_then_info_is_not_found_and_kill_again_is_false(server):
    sbx = Sandbox.create(timeout=60)
    assert sbx.kill() is True
    with pytest.raises(SandboxNotFoundException):
        sbx.get_info()
    assert isinstance(SandboxNotFoundException("x"), NotFoundException)
    assert Sandbox.kill(sbx.sandbox_id) is False
    assert sbx.kill() is False
    assert sbx.sandbox_id not in [s.sandbox_id for s in Sandbox.list().next_items()]


def test_a_missing_sandbox_is_not_found_everywhere(server):
    gone = "a" * 20
    assert Sandbox.kill(gone) is False
    with pytest.raises(SandboxNotFoundException):
        Sandbox.get_info(gone)
    with pytest.raises(NotFoundException):
        Sandbox.connect(gone)
    with pytest.raises(NotFoundException):
        Sandbox.set_timeout(gone, 60)


def test_the_deadline_removes_the_sandbox(server):
    sbx = Sandbox.create(timeout=2)
    sid = sbx.sandbox_id

    def gone():
        try:
            Sandbox.get_info(sid)
            return False
        except SandboxNotFoundException:
            return True

    wait_for(gone, timeout=20, what="the sandbox to pass its deadline")
    assert Sandbox.kill(sid) is False


def test_context_manager_kills_on_exit(server):
    with Sandbox.create(timeout=60) as sbx:
        sid = sbx.sandbox_id
        assert sbx.commands.run("true").exit_code == 0
    assert Sandbox.kill(sid) is False


def test_mcp_at_create_is_accepted_and_the_sdk_kills_the_sandbox_when_its_gateway_cannot_start(server):
    tag = secrets.token_hex(4)
    with pytest.raises(SandboxException, match="Failed to start MCP gateway") as err:
        Sandbox.create(template="base", timeout=60, metadata={"tag": tag}, mcp={"exa": {"apiKey": "not-a-real-key"}})
    assert "mcp-gateway" in str(err.value), err.value
    assert Sandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items() == []
    # without a template the SDK asks for E2B's mcp-gateway template, not served here
    with pytest.raises(SandboxException, match="404: template 'mcp-gateway' not found"):
        Sandbox.create(timeout=30, mcp={"exa": {"apiKey": "k"}})
