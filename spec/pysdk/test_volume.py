"""The volume content API through the Python SDK's Volume (sync) and
AsyncVolume: files read and written with the volume's own token at the
SDK's default address (https://api.<domain>), bytes exact (a file-like
object goes up as a chunked stream), shared with a sandbox that mounts the
volume; the SDK's exception types for a missing path, a wrong token and a
refused request."""

import asyncio
import io
import os
import secrets

import pytest
from e2b import (
    AsyncVolume,
    AuthenticationException,
    NotFoundException,
    Sandbox,
    Volume,
    VolumeException,
    VolumePathNotFoundException,
)

ALL_BYTES = bytes(range(256)) * 300


def new_volume(prefix):
    return Volume.create(f"{prefix}-{secrets.token_hex(4)}")


def test_write_read_list_stat_make_dir_metadata_and_remove(server):
    vol = new_volume("pyv")
    try:
        assert vol.token and vol.volume_id
        d = vol.make_dir("/notes")
        assert (d.type.value if hasattr(d.type, "value") else d.type) == "directory" and d.path == "/notes"
        w = vol.write_file("/notes/a.txt", "hello\n", mode=0o640)
        assert w.size == 6 and w.path == "/notes/a.txt" and w.mode & 0o777 == 0o640
        assert vol.read_file("/notes/a.txt") == "hello\n"
        vol.write_file("/notes/b.bin", ALL_BYTES)
        assert vol.read_file("/notes/b.bin", format="bytes") == ALL_BYTES
        # a stream: chunked on the wire, the bytes the same
        vol.write_file("/notes/c.bin", io.BytesIO(ALL_BYTES[::-1]))
        assert b"".join(vol.read_file("/notes/c.bin", format="stream")) == ALL_BYTES[::-1]
        with pytest.raises(VolumeException, match="409"):
            vol.write_file("/notes/a.txt", "again")
        vol.write_file("/notes/a.txt", "again", force=True)
        assert vol.read_file("/notes/a.txt") == "again"

        assert [e.name for e in vol.list("/")] == ["notes"]
        assert sorted(e.path for e in vol.list("/", depth=2)) == ["/notes", "/notes/a.txt", "/notes/b.bin",
                                                                  "/notes/c.bin"]
        assert vol.get_info("/notes/b.bin").size == len(ALL_BYTES)
        assert vol.exists("/notes/a.txt") is True and vol.exists("/notes/none") is False

        m = vol.update_metadata("/notes/a.txt", mode=0o600, uid=0, gid=0)
        assert m.mode & 0o777 == 0o600 and m.uid == 0
        host = os.path.join(server.state, "volumes", vol.volume_id, "data", "notes", "a.txt")
        assert os.stat(host).st_mode & 0o7777 == 0o600
        with pytest.raises(VolumeException, match="400"):
            vol.update_metadata("/notes/a.txt", mode=0o4755)

        with pytest.raises(VolumePathNotFoundException):
            vol.make_dir("/x/y/z")
        assert vol.make_dir("/x/y/z", force=True).path == "/x/y/z"
        with pytest.raises(VolumeException, match="409"):
            vol.make_dir("/x")
        vol.remove("/x")
        assert vol.exists("/x") is False
        with pytest.raises(VolumePathNotFoundException):
            vol.remove("/x")
        with pytest.raises(VolumePathNotFoundException):
            vol.read_file("/nope")
        assert isinstance(VolumePathNotFoundException("x"), NotFoundException)
        with pytest.raises(VolumeException, match="400"):
            vol.read_file("/../etc/passwd")
        with pytest.raises(VolumeException, match="400"):
            vol.remove("/")
        with pytest.raises(VolumePathNotFoundException):
            vol.write_file("/m/n/f.txt", "x")
        vol.write_file("/m/n/f.txt", "made", force=True)
        assert vol.read_file("/m/n/f.txt") == "made"
    finally:
        assert Volume.destroy(vol.volume_id) is True


def test_only_the_volumes_own_token_is_accepted(server):
    vol, other = new_volume("pyt"), new_volume("pyo")
    try:
        vol.write_file("/f", "x")
        wrong = Volume(vol.volume_id, vol.name, other.token)
        with pytest.raises(AuthenticationException, match="401"):
            wrong.read_file("/f")
        with pytest.raises(AuthenticationException, match="401"):
            wrong.write_file("/g", "y")
        assert vol.exists("/g") is False
        connected = Volume.connect(vol.volume_id)
        assert connected.volume_id == vol.volume_id and connected.name == vol.name
        assert Volume.get_info(vol.volume_id).name == vol.name
        assert {vol.volume_id, other.volume_id} <= {v.volume_id for v in Volume.list()}
        with pytest.raises(NotFoundException):
            Volume.get_info("nosuchvolume")
        assert Volume.destroy("nosuchvolume") is False
        with pytest.raises(VolumePathNotFoundException):
            Volume("nosuchvolume", "x", vol.token).get_info("/f")
    finally:
        Volume.destroy(vol.volume_id)
        Volume.destroy(other.volume_id)


def test_a_mounting_sandbox_and_the_async_volume_see_the_same_files(server):
    vol = new_volume("pys")
    try:
        vol.write_file("/from-api.txt", "api\n")
        sbx = Sandbox.create(timeout=60, volume_mounts={"/mnt/v": vol})
        try:
            assert sbx.commands.run("cat /mnt/v/from-api.txt").stdout == "api\n"
            sbx.commands.run("mkdir -p /mnt/v/d && printf sbx > /mnt/v/d/from-sbx.txt")
            assert vol.read_file("/d/from-sbx.txt") == "sbx"
        finally:
            sbx.kill()

        async def body():
            avol = AsyncVolume(vol.volume_id, vol.name, vol.token)
            assert await avol.read_file("/d/from-sbx.txt") == "sbx"
            await avol.write_file("/d/async.bin", ALL_BYTES)
            assert await avol.read_file("/d/async.bin", format="bytes") == ALL_BYTES
            assert sorted(e.name for e in await avol.list("/d")) == ["async.bin", "from-sbx.txt"]
            with pytest.raises(VolumePathNotFoundException):
                await avol.get_info("/d/none")

        asyncio.run(asyncio.wait_for(body(), 60))
    finally:
        Volume.destroy(vol.volume_id)
