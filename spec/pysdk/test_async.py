"""The same surface through the async client (AsyncSandbox): each test runs
its coroutine on a fresh event loop (the SDK's transports are bound to no
loop), so no pytest plugin is needed."""

import asyncio
import secrets

import pytest
from e2b import (
    AsyncSandbox,
    CommandExitException,
    FileNotFoundException,
    FilesystemEventType,
    NotFoundException,
    SandboxNotFoundException,
    SandboxQuery,
    SandboxState,
)

ALL_BYTES = bytes(range(256))


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def eventually(cond, what, timeout=15.0):
    """Awaits cond() until truthy (returned), or fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (got := await cond()):
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return got


def test_create_with_metadata_envs_and_timeout_then_info_and_kill(server):
    async def body():
        tag = secrets.token_hex(4)
        sbx = await AsyncSandbox.create(timeout=90, metadata={"tag": tag}, envs={"FROM_SANDBOX": "yes"})
        try:
            assert sbx.envd_api_url == f"https://49983-{sbx.sandbox_id}.{server.env['E2B_DOMAIN']}"
            assert await sbx.is_running()
            info = await sbx.get_info()
            assert (info.metadata, info.state, info.template_id) == ({"tag": tag}, SandboxState.RUNNING, "base")
            assert (info.end_at - info.started_at).total_seconds() == pytest.approx(90, abs=2)
            assert (await sbx.commands.run("echo $FROM_SANDBOX")).stdout == "yes\n"
            await sbx.set_timeout(200)
            assert ((await sbx.get_info()).end_at - info.end_at).total_seconds() > 100
        finally:
            assert await sbx.kill() is True
        assert await sbx.kill() is False
        assert await AsyncSandbox.kill(sbx.sandbox_id) is False
        with pytest.raises(SandboxNotFoundException):
            await AsyncSandbox.get_info(sbx.sandbox_id)
        with pytest.raises(NotFoundException):
            await AsyncSandbox.connect(sbx.sandbox_id)

    run(body())


def test_commands_output_failure_background_stdin_envs_cwd_and_root(server):
    async def body():
        sbx = await AsyncSandbox.create(timeout=120)
        try:
            r = await sbx.commands.run("echo out; echo err >&2")
            assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 0)
            with pytest.raises(CommandExitException) as err:
                await sbx.commands.run("echo why >&2; exit 5")
            assert (err.value.exit_code, err.value.stderr) == (5, "why\n")
            r = await sbx.commands.run("id -un; pwd; echo $X", user="root", cwd="/tmp", envs={"X": "per-command"})
            assert r.stdout == "root\n/tmp\nper-command\n"
            out = []
            h = await sbx.commands.run("cat; echo END", background=True, stdin=True, on_stdout=out.append)
            await sbx.commands.send_stdin(h.pid, "to stdin\n")
            await h.close_stdin()
            r = await h.wait()
            assert r.stdout == "to stdin\nEND\n" == "".join(out)
            h = await sbx.commands.run("sleep 600", background=True)
            assert h.pid in [p.pid for p in await sbx.commands.list()]
            assert await h.kill() is True
            with pytest.raises(CommandExitException):
                await h.wait()
        finally:
            await sbx.kill()

    run(body())


def test_files_bytes_exact_directory_operations_and_watch(server):
    async def body():
        sbx = await AsyncSandbox.create(timeout=120)
        try:
            data = ALL_BYTES + b"\x00\xc3\x28\xff" + ALL_BYTES
            await sbx.files.write("/home/user/all.bin", data)
            assert bytes(await sbx.files.read("/home/user/all.bin", format="bytes")) == data
            assert await sbx.files.make_dir("/home/user/d") is True
            await sbx.files.write("/home/user/d/a.txt", "a")
            assert [e.name for e in await sbx.files.list("/home/user/d")] == ["a.txt"]
            await sbx.files.rename("/home/user/d/a.txt", "/home/user/d/b.txt")
            assert await sbx.files.exists("/home/user/d/b.txt")
            assert not await sbx.files.exists("/home/user/d/a.txt")
            await sbx.files.remove("/home/user/d")
            with pytest.raises(FileNotFoundException):
                await sbx.files.read("/home/user/d/b.txt")
            events = []
            await sbx.files.make_dir("/home/user/w")
            handle = await sbx.files.watch_dir("/home/user/w", on_event=events.append)
            try:
                await sbx.files.write("/home/user/w/x.txt", "x")

                async def created():
                    return any(e.name == "x.txt" and e.type == FilesystemEventType.CREATE for e in events)

                await eventually(created, "the create event")
            finally:
                await handle.stop()
        finally:
            await sbx.kill()

    run(body())


def test_list_by_metadata_paginates_and_pause_then_connect_resumes(server):
    async def body():
        tag = secrets.token_hex(4)
        boxes = [await AsyncSandbox.create(timeout=120, metadata={"tag": tag}) for _ in range(2)]
        try:
            pager = AsyncSandbox.list(query=SandboxQuery(metadata={"tag": tag}), limit=1)
            seen = []
            while pager.has_next:
                seen += [s.sandbox_id for s in await pager.next_items()]
            assert sorted(seen) == sorted(b.sandbox_id for b in boxes)
            sbx = boxes[0]
            await sbx.files.write("/home/user/kept", "kept")
            assert await sbx.pause() is True
            assert (await sbx.get_info()).state == SandboxState.PAUSED
            back = await AsyncSandbox.connect(sbx.sandbox_id)
            assert (await back.get_info()).state == SandboxState.RUNNING
            assert await back.files.read("/home/user/kept") == "kept"
        finally:
            for b in boxes:
                await AsyncSandbox.kill(b.sandbox_id)

    run(body())
