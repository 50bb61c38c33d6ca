"""Templates built in code through the Python SDK's Template builder (sync and
async) against e2b-local: a second referee, after the JS SDK, for the
template-build API. The Python SDK archives a copy with its own tarfile (PAX
format, gzip level 9, hard links as link entries, directories as their own
entries), hashes the files its own way, and polls the build's status itself;
the sandboxes started from each build prove what the build left behind."""

import asyncio
import os
import secrets
import shutil
import tempfile

import pytest
from e2b import (
    AsyncSandbox,
    AsyncTemplate,
    BuildException,
    Sandbox,
    SandboxException,
    Template,
    TemplateBuildStatus,
    wait_for_file,
    wait_for_port,
    wait_for_process,
    wait_for_url,
)

from conftest import wait_for


def fresh(prefix):
    return f"{prefix}-{secrets.token_hex(4)}"


def build(template, name, **opts):
    """Template.build, the log lines it reported collected."""
    logs = []
    info = Template.build(template, name, on_build_logs=lambda e: logs.append(str(e.message)), **opts)
    return info, logs


def in_sandbox(template, cmd, **opts):
    sbx = Sandbox.create(template=template, timeout=60)
    try:
        return sbx.commands.run(cmd, **opts).stdout
    finally:
        sbx.kill()


@pytest.fixture
def ctx():
    """A build context: what Python's tarfile makes of it is the point."""
    d = tempfile.mkdtemp(prefix="pysdk-tpl-ctx-")
    os.makedirs(os.path.join(d, "folder", "sub"))
    os.makedirs(os.path.join(d, "folder", "empty"))
    with open(os.path.join(d, "folder", "test.txt"), "w") as f:
        f.write("This is a test file.")
    with open(os.path.join(d, "folder", "sub", "deep.txt"), "w") as f:
        f.write("deep")
    os.symlink("test.txt", os.path.join(d, "folder", "link.txt"))
    # a second name for one inode: tarfile writes it as a hard-link entry
    os.link(os.path.join(d, "folder", "test.txt"), os.path.join(d, "folder", "hard.txt"))
    # a name past ustar's 100 bytes and one not ASCII: PAX extended headers
    long_name = "l" * 150 + ".txt"
    with open(os.path.join(d, "folder", long_name), "w") as f:
        f.write("long")
    with open(os.path.join(d, "folder", "caf\u00e9-\u65e5\u672c.txt"), "w") as f:
        f.write("utf8")
    with open(os.path.join(d, "single.sh"), "w") as f:
        f.write("#!/bin/sh\necho single\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_copy_of_a_python_tarfile_archive_places_every_entry_as_docker_copy_does(server, ctx):
    name = fresh("py-copy")
    t = (Template(file_context_path=ctx)
         .from_template("base")
         .copy("folder", "folder")
         .copy("single.sh", "/home/user/bin/", mode=0o750)
         .copy("folder/sub", "/root/sub", user="root")
         .run_cmd("cat folder/test.txt"))
    info, logs = build(t, name)
    assert info.name == name and info.template_id and info.build_id
    assert "This is a test file." in logs, logs
    assert any(line.startswith("Uploaded 'folder'") for line in logs), logs
    long_name = "l" * 150 + ".txt"
    out = in_sandbox(name, "; ".join([
        "cat ~/folder/test.txt ~/folder/hard.txt ~/folder/sub/deep.txt; echo",
        "readlink ~/folder/link.txt",
        f"cat ~/folder/{long_name} ~/folder/caf\u00e9-\u65e5\u672c.txt; echo",
        "test -d ~/folder/empty && echo empty-dir",
        "stat -c '%a %U' ~/bin/single.sh ~/folder/test.txt",
        "~/bin/single.sh",
        "sudo stat -c '%U %n' /root/sub/deep.txt",
    ]))
    assert out == "\n".join([
        "This is a test file.This is a test file.deep", "test.txt", "longutf8", "empty-dir",
        "750 user", "644 user", "single", "root /root/sub/deep.txt", "",
    ])
    # the same files again: the SDK's hash finds them uploaded, the steps cached
    _, again = build(t, name)
    assert any("Skipping upload of 'folder', already cached" in line for line in again), again
    assert any(line.startswith("CACHED [builder 1/4]") for line in again), again


def test_copy_uncompressed_fails_as_e2bs_gzip_only_unpacking_does(server, ctx):
    # E2B's builder unpacks every COPY archive with `tar -xzf`: the SDK's
    # gzip=False plain tar fails the step there, and so here
    t = Template(file_context_path=ctx).from_template("base").copy("folder/sub", "sub", gzip=False)
    with pytest.raises(BuildException, match=r"failed to extract files: exit status 2 \(gzip: stdin: not in gzip format\)"):
        build(t, fresh("py-plain"))
    # gzip is no part of the files hash, so the plain archive stays uploaded
    # under it (as in E2B's store): only a forced upload replaces it
    gz = Template(file_context_path=ctx).from_template("base").copy("folder/sub", "sub", gzip=True)
    with pytest.raises(BuildException, match="not in gzip format"):
        build(gz, fresh("py-gz"))
    name = fresh("py-forced")
    build(Template(file_context_path=ctx).from_template("base").copy("folder/sub", "sub", force_upload=True), name)
    assert in_sandbox(name, "cat ~/sub/deep.txt") == "deep"


def test_copy_keeps_symlinks_as_written_wherever_they_point(server, ctx):
    # E2B's builder unpacks with tar inside the sandbox, which keeps a link
    # leading out of the copied files (here: absolute, to the build host)
    os.symlink("/etc/passwd", os.path.join(ctx, "folder", "out"))
    os.symlink(os.path.join(ctx, "folder", "test.txt"), os.path.join(ctx, "folder", "abs"))
    name = fresh("py-links")
    build(Template(file_context_path=ctx).from_template("base").copy("folder", "folder"), name)
    assert in_sandbox(name, "readlink ~/folder/out ~/folder/abs ~/folder/link.txt") == \
        f"/etc/passwd\n{ctx}/folder/test.txt\ntest.txt\n"


def test_envs_symlink_workdir_user_and_start_command_reach_the_sandbox(server):
    name = fresh("py-defaults")
    t = (Template()
         .from_image("e2bdev/base")
         .set_envs({"GREETING": "hello", "OTHER": "x"})
         .run_cmd('echo "$GREETING from $(whoami)" > ~/greeting')
         .run_cmd("echo target > ~/.target")
         .make_symlink(".target", ".link")
         .make_symlink(".target", ".link", force=True)
         .set_workdir("/root/work")
         .set_user("root")
         .run_cmd("pwd > here")
         .set_start_cmd("echo \"$(whoami) $GREETING\" > /tmp/started-by; exec sleep 600",
                        wait_for_file("/tmp/started-by")))
    build(t, name)
    sbx = Sandbox.create(template=name, timeout=60, envs={"OTHER": "y"})
    try:
        run = lambda cmd, **o: sbx.commands.run(cmd, **o).stdout  # noqa: E731
        assert run("cat /tmp/started-by") == "root hello\n"  # ready when create returned
        assert run("whoami; pwd; cat here") == "root\n/root/work\n/root/work\n"
        assert run('echo "$GREETING $OTHER"') == "hello y\n"
        assert run("cat ~/greeting; readlink ~/.link; cat ~/.link", user="user") == \
            "hello from user\n.target\ntarget\n"
        sbx.files.write("/root/work/by-default.txt", "x")
        assert run("stat -c %U /root/work/by-default.txt") == "root\n"
    finally:
        sbx.kill()


def line_of(marker):
    """The line of this file that holds marker (a comment on a builder call)."""
    with open(__file__, encoding="utf-8") as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(marker)]
    assert len(hits) == 1, marker
    return hits[0]


def innermost_line(err):
    tb = err.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_lineno


def test_a_failing_step_raises_build_exception_at_the_builder_call_of_that_step(server):
    # the SDK reads reason.step as the step's number (base, 1.., finalize) and
    # raises with the stack trace it kept for that builder call
    t = (Template().from_template("base")
         .run_cmd("true")
         .run_cmd("echo broken >&2; exit 7")  # <- failing step 2
         .run_cmd("true"))
    with pytest.raises(BuildException, match="exit status 7") as err:
        build(t, fresh("py-fail"))
    assert innermost_line(err.value) == line_of("# <- failing step 2")
    img = (Template()
           .from_image("ubuntu:22.04")  # <- failing base
           .run_cmd("true"))
    with pytest.raises(BuildException, match=r"failed to pull image 'ubuntu:22\.04'") as err:
        build(img, fresh("py-img"))
    assert innermost_line(err.value) == line_of("# <- failing base")
    with pytest.raises(BuildException, match="invalid username: 'root123'"):
        build(Template().from_template("base").run_cmd("whoami", user="root123"), fresh("py-user"))


def test_exists_tags_assign_get_remove_and_a_sandbox_by_name_and_tag(server):
    name = fresh("py-tags")
    assert Template.exists(name) is False
    info, _ = build(Template().from_template("base").run_cmd("echo v1 > ~/v"), f"{name}:v1", tags=["stable"])
    assert sorted(info.tags) == ["stable", "v1"]
    assert Template.exists(name) is True and Template.exists("base") is True
    assert Template.exists(f"{name}:stable") is True and Template.exists(f"{name}:nope") is False
    info2, _ = build(Template().from_template("base").run_cmd("echo v2 > ~/v"), f"{name}:v2")
    assert in_sandbox(f"{name}:v1", "cat ~/v") == "v1\n"
    assigned = Template.assign_tags(f"{name}:v2", "production")
    assert assigned.build_id == info2.build_id and assigned.tags == ["production"]
    by_tag = {t.tag: t.build_id for t in Template.get_tags(name)}
    assert by_tag == {"v1": info.build_id, "stable": info.build_id, "v2": info2.build_id,
                      "production": info2.build_id}
    Template.remove_tags(name, ["stable"])
    assert sorted(t.tag for t in Template.get_tags(name)) == ["production", "v1", "v2"]
    assert in_sandbox(f"{name}:production", "cat ~/v") == "v2\n"
    with pytest.raises(SandboxException, match="not found"):
        Sandbox.create(template=f"{name}:stable", timeout=30)


def test_build_in_background_then_get_build_status_follows_it_to_ready(server):
    name = fresh("py-bg")
    t = Template().from_template("base").run_cmd("sleep 2; echo slept").set_start_cmd("echo started", "true")
    info = Template.build_in_background(t, name)
    first = Template.get_build_status(info)
    assert first.status in (TemplateBuildStatus.WAITING, TemplateBuildStatus.BUILDING)
    assert first.build_id == info.build_id and first.template_id == info.template_id
    logs = list(first.log_entries)

    def finished():
        st = Template.get_build_status(info, logs_offset=len(logs))
        logs.extend(st.log_entries)
        return st if st.status not in (TemplateBuildStatus.WAITING, TemplateBuildStatus.BUILDING) else None

    last = wait_for(finished, timeout=60, what="the build to finish")
    assert last.status == TemplateBuildStatus.READY, last.reason
    while more := Template.get_build_status(info, logs_offset=len(logs)).log_entries:  # the rest, as the SDK reads it
        logs.extend(more)
    text = [e.message for e in logs]
    assert "slept" in text, text
    assert all(e.level in ("debug", "info", "warn", "error") for e in logs)


def test_async_template_builds_copies_and_reports_status(server, ctx):
    name = fresh("py-async")

    async def body():
        logs = []
        t = (AsyncTemplate(file_context_path=ctx)
             .from_template("base")
             .copy("folder/sub", "/tmp/sub")
             .set_envs({"MODE": "async"})
             .run_cmd('echo "$MODE" > ~/mode'))
        info = await AsyncTemplate.build(t, name, on_build_logs=lambda e: logs.append(str(e.message)))
        assert any(line.startswith("Uploaded 'folder/sub'") for line in logs), logs
        assert (await AsyncTemplate.get_build_status(info)).status == TemplateBuildStatus.READY
        assert await AsyncTemplate.exists(name) is True
        assert [t.tag for t in await AsyncTemplate.get_tags(name)] == ["default"]
        sbx = await AsyncSandbox.create(template=name, timeout=60)
        try:
            out = await sbx.commands.run('cat /tmp/sub/deep.txt; echo; cat ~/mode; echo "$MODE"')
            assert out.stdout == "deep\nasync\nasync\n"
        finally:
            await sbx.kill()
        bg = await AsyncTemplate.build_in_background(
            AsyncTemplate().from_template(name).run_cmd("echo two >> ~/mode"), name)
        while (st := await AsyncTemplate.get_build_status(bg)).status in (TemplateBuildStatus.WAITING,
                                                                          TemplateBuildStatus.BUILDING):
            await asyncio.sleep(0.1)
        assert st.status == TemplateBuildStatus.READY, st.reason

    asyncio.run(asyncio.wait_for(body(), 120))
    assert in_sandbox(name, "cat ~/mode") == "async\ntwo\n"


@pytest.mark.parametrize("ready", ["port", "url", "process"])
def test_start_cmd_with_the_sdks_ready_checks_serves_when_create_returns(server, ready):
    port = 8000 + secrets.randbelow(1000)
    check = {"port": wait_for_port(port), "url": wait_for_url(f"http://localhost:{port}/ok.txt", 200),
             "process": wait_for_process("python3")}[ready]
    name = fresh(f"py-ready-{ready}")
    t = (Template()
         .from_template("base")
         .run_cmd("mkdir -p ~/www && echo served > ~/www/ok.txt")
         .set_workdir("/home/user/www")
         .set_start_cmd(f"sleep 1; exec /usr/bin/python3 -m http.server {port}", check))
    build(t, name)
    sbx = Sandbox.create(template=name, timeout=60)
    try:
        # no waiting here: create returns once the ready check passed (the
        # start command is a shell for its first second, python3 after it)
        cmd = "pgrep -u user -x python3 >/dev/null && echo python3 as user"
        if ready != "process":  # a process can be there before its port is
            cmd += f"; curl -s -o /dev/null -w '%{{http_code}}\\n' http://localhost:{port}/ok.txt"
        out = sbx.commands.run(cmd).stdout
        assert out == "python3 as user\n" + ("" if ready == "process" else "200\n"), out
    finally:
        sbx.kill()


def test_copy_options_resolve_symlinks_lists_items_ignores_and_skip_cache(server, ctx):
    with open(os.path.join(ctx, ".dockerignore"), "w") as f:
        f.write("# not sent\n**/deep.txt\n")
    with open(os.path.join(ctx, "folder", "x.sh"), "w") as f:
        f.write("not sent either")
    base = fresh("py-opts-base")
    build(Template().from_template("base").run_cmd("echo base > ~/from-base"), f"{base}:v1")
    name = fresh("py-opts")
    t = (Template(file_context_path=ctx, file_ignore_patterns=["**/*.sh"])
         .from_template(f"{base}:v1")
         .copy("folder/link.txt", "resolved.txt", resolve_symlinks=True)
         .copy(["folder/test.txt", "folder/sub"], "/tmp/many/")
         .copy("folder", "/tmp/all")
         .copy_items([{"src": "folder/empty", "dest": "/tmp/items/empty"},
                      {"src": "folder/hard.txt", "dest": "/tmp/items/", "mode": 0o600}])
         .skip_cache()
         .run_cmd("date +%s%N > ~/stamp"))
    build(t, name)
    out = in_sandbox(name, "; ".join([
        "cat ~/from-base", "test -L ~/resolved.txt || cat ~/resolved.txt; echo",
        "ls -A /tmp/many /tmp/all/sub", "ls /tmp/all | grep -c .", "stat -c %a /tmp/items/hard.txt", "test -d /tmp/items/empty && echo empty",
    ]))
    # a directory's contents merge into dest, as Docker's COPY; deep.txt
    # (.dockerignore) and x.sh (file_ignore_patterns) never left the host
    assert out == ("base\nThis is a test file.\n/tmp/all/sub:\n\n/tmp/many:\ntest.txt\n"
                   "7\n600\nempty\n"), out
    first = in_sandbox(name, "cat ~/stamp")
    _, again = build(t, name)
    assert any(line.startswith("CACHED [builder 6/7]") for line in again), "\n".join(again)
    assert not any(line.startswith("CACHED [builder 7/7]") for line in again), again
    assert in_sandbox(name, "cat ~/stamp") != first


def test_resources_are_checked_as_e2b_checks_them(server):
    with pytest.raises(BuildException, match="400: CPU count must be 1 or an even number"):
        Template.build(Template().from_template("base"), fresh("py-cpu"), cpu_count=3)
    with pytest.raises(BuildException, match="400: Memory must be divisible by 2"):
        Template.build(Template().from_template("base"), fresh("py-mem"), memory_mb=513)
    info = Template.build(Template().from_template("base"), fresh("py-res"), cpu_count=2, memory_mb=1024)
    assert Template.exists(info.name)
