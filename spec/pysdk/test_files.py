"""files through the sync client: bytes exact both ways, the directory
operations, watching a directory, and the errors for missing paths."""

import hashlib
import os

import pytest
from e2b import FileNotFoundException, FilesystemEventType, FileType, NotFoundException, Sandbox

from conftest import wait_for

ALL_BYTES = bytes(range(256))


@pytest.fixture(scope="module")
def sbx(server):
    box = Sandbox.create(timeout=300)
    yield box
    box.kill()


def test_every_byte_value_round_trips_exactly(sbx):
    # NUL, invalid UTF-8 (lone continuation bytes, 0xff), CR/LF as they are
    data = ALL_BYTES + b"\x00\x00\xc3\x28\xff\xfe\r\n\r" + ALL_BYTES[::-1]
    info = sbx.files.write("/home/user/all.bin", data)
    assert info.path == "/home/user/all.bin"
    assert info.type == FileType.FILE
    assert bytes(sbx.files.read("/home/user/all.bin", format="bytes")) == data
    # what the sandbox itself sees is the same
    want = hashlib.sha256(data).hexdigest()
    assert sbx.commands.run("sha256sum all.bin").stdout.split()[0] == want


def test_octet_stream_and_gzip_uploads_keep_the_bytes(sbx):
    data = os.urandom(300_000) + ALL_BYTES
    sbx.files.write("/home/user/raw.bin", data, use_octet_stream=True)
    assert bytes(sbx.files.read("/home/user/raw.bin", format="bytes")) == data
    sbx.files.write("/home/user/gz.bin", data, gzip=True)
    assert bytes(sbx.files.read("/home/user/gz.bin", format="bytes")) == data


def test_a_file_written_by_a_command_reads_back_exactly(sbx):
    sbx.commands.run("printf '\\000\\377\\376a\\200' > /home/user/made.bin")
    assert bytes(sbx.files.read("/home/user/made.bin", format="bytes")) == b"\x00\xff\xfea\x80"


def test_text_relative_paths_empty_files_and_streams(sbx):
    sbx.files.write("notes.txt", "héllo\nwörld")
    assert sbx.files.read("/home/user/notes.txt") == "héllo\nwörld"
    sbx.files.write("/home/user/empty", b"")
    assert bytes(sbx.files.read("/home/user/empty", format="bytes")) == b""
    chunks = sbx.files.read("/home/user/all.bin", format="stream")
    assert b"".join(chunks).startswith(ALL_BYTES)


def test_write_makes_parents_owned_by_the_user_and_overwrites(sbx):
    sbx.files.write("/home/user/a/b/c.txt", "first version, longer")
    sbx.files.write("/home/user/a/b/c.txt", "second")
    assert sbx.files.read("/home/user/a/b/c.txt") == "second"
    assert sbx.commands.run("stat -c %U /home/user/a /home/user/a/b /home/user/a/b/c.txt").stdout == "user\n" * 3


def test_several_files_in_one_upload(sbx):
    infos = sbx.files.write_files([
        {"path": "/home/user/multi/one.bin", "data": b"\x00one"},
        {"path": "/home/user/multi/two.txt", "data": "two"},
    ])
    assert sorted(i.path for i in infos) == ["/home/user/multi/one.bin", "/home/user/multi/two.txt"]
    assert bytes(sbx.files.read("/home/user/multi/one.bin", format="bytes")) == b"\x00one"
    assert sbx.files.read("/home/user/multi/two.txt") == "two"


def test_list_exists_make_dir_rename_remove_and_get_info(sbx):
    assert sbx.files.make_dir("/home/user/d1") is True
    assert sbx.files.make_dir("/home/user/d1") is False  # already there
    assert sbx.files.exists("/home/user/d1")
    sbx.files.write("/home/user/d1/f.txt", "12345")
    sbx.files.make_dir("/home/user/d1/sub")
    entries = sbx.files.list("/home/user/d1")
    assert [(e.name, e.type) for e in entries] == [("f.txt", FileType.FILE), ("sub", FileType.DIR)]
    f = [e for e in entries if e.name == "f.txt"][0]
    assert (f.path, f.size, f.owner) == ("/home/user/d1/f.txt", 5, "user")
    info = sbx.files.get_info("/home/user/d1/f.txt")
    assert (info.name, info.size, info.type) == ("f.txt", 5, FileType.FILE)
    moved = sbx.files.rename("/home/user/d1/f.txt", "/home/user/d1/sub/g.txt")
    assert moved.path == "/home/user/d1/sub/g.txt"
    assert not sbx.files.exists("/home/user/d1/f.txt")
    assert sbx.files.read("/home/user/d1/sub/g.txt") == "12345"
    deep = sbx.files.list("/home/user/d1", depth=2)
    assert [e.path for e in deep] == ["/home/user/d1/sub", "/home/user/d1/sub/g.txt"]
    sbx.files.remove("/home/user/d1")
    assert not sbx.files.exists("/home/user/d1")


def test_missing_paths_are_file_not_found(sbx):
    with pytest.raises(FileNotFoundException):
        sbx.files.read("/home/user/no-such-file")
    with pytest.raises(FileNotFoundException):
        sbx.files.list("/home/user/no-such-dir")
    with pytest.raises(NotFoundException):
        sbx.files.get_info("/home/user/no-such-file")
    with pytest.raises(NotFoundException):
        sbx.files.rename("/home/user/no-such-file", "/home/user/x")
    assert sbx.files.exists("/home/user/no-such-file") is False


def test_watch_dir_reports_create_write_and_remove(sbx):
    sbx.files.make_dir("/home/user/watched")
    handle = sbx.files.watch_dir("/home/user/watched")
    try:
        sbx.files.write("/home/user/watched/new.txt", "x")
        sbx.commands.run("echo more >> /home/user/watched/new.txt; rm /home/user/watched/new.txt")
        seen = []

        def removed():
            seen.extend(handle.get_new_events())
            return any(e.type == FilesystemEventType.REMOVE for e in seen)

        wait_for(removed, what="the remove event")
        kinds = {e.type for e in seen if e.name == "new.txt"}
        assert {FilesystemEventType.CREATE, FilesystemEventType.WRITE, FilesystemEventType.REMOVE} <= kinds
    finally:
        handle.stop()
