"""commands through the sync client: output and exit codes, the exception
for a failing command, background commands, stdin, environment, working
directory and user."""

import pytest
from e2b import CommandExitException, Sandbox, TimeoutException

from conftest import wait_for


@pytest.fixture(scope="module")
def sbx(server):
    box = Sandbox.create(timeout=300, envs={"FROM_SANDBOX": "sandbox", "BOTH": "sandbox"})
    yield box
    box.kill()


def test_run_returns_stdout_stderr_and_exit_code_zero(sbx):
    r = sbx.commands.run("echo out; echo err >&2")
    assert (r.stdout, r.stderr, r.exit_code, r.error) == ("out\n", "err\n", 0, None)


def test_a_non_zero_exit_raises_command_exit_exception_with_code_and_output(sbx):
    with pytest.raises(CommandExitException) as err:
        sbx.commands.run("echo partial; echo broke >&2; exit 7")
    e = err.value
    assert (e.exit_code, e.stdout, e.stderr) == (7, "partial\n", "broke\n")
    assert "7" in str(e)


def test_callbacks_see_the_output_as_it_comes(sbx):
    out, err = [], []
    r = sbx.commands.run("printf 'a\\n'; printf 'b\\n' >&2; printf 'c\\n'", on_stdout=out.append, on_stderr=err.append)
    assert "".join(out) == "a\nc\n" == r.stdout
    assert "".join(err) == "b\n" == r.stderr


def test_multibyte_utf8_output_is_exact(sbx):
    r = sbx.commands.run("printf 'h\\xc3\\xa9llo \\xe2\\x82\\xac \\xf0\\x9f\\x98\\x80'")
    assert r.stdout == "héllo € 😀"


def test_user_by_default_root_on_request_in_the_home_directory(sbx):
    r = sbx.commands.run("id -un; pwd")
    assert r.stdout == "user\n/home/user\n"
    r = sbx.commands.run("id -un; id -u; pwd", user="root")
    assert r.stdout == "root\n0\n/root\n"


def test_cwd_is_where_the_command_starts(sbx):
    sbx.files.make_dir("/home/user/work/deeper")
    assert sbx.commands.run("pwd", cwd="/home/user/work/deeper").stdout == "/home/user/work/deeper\n"
    assert sbx.commands.run("pwd", cwd="/tmp").stdout == "/tmp\n"


def test_environment_sandbox_envs_then_per_command_envs_win(sbx):
    r = sbx.commands.run('echo "$FROM_SANDBOX $BOTH $ONLY_HERE"', envs={"BOTH": "command", "ONLY_HERE": "x y"})
    assert r.stdout == "sandbox command x y\n"
    assert sbx.commands.run('echo "[$ONLY_HERE]"').stdout == "[]\n"


def test_background_command_runs_alongside_and_wait_returns_its_result(sbx):
    h = sbx.commands.run("sleep 0.3; echo done; exit 0", background=True)
    assert h.pid > 0
    assert h.pid in [p.pid for p in sbx.commands.list()]
    r = h.wait()
    assert (r.stdout, r.exit_code) == ("done\n", 0)
    assert h.pid not in [p.pid for p in sbx.commands.list()]


def test_waiting_on_a_failing_background_command_raises(sbx):
    h = sbx.commands.run("echo nope >&2; exit 3", background=True)
    with pytest.raises(CommandExitException) as err:
        h.wait()
    assert (err.value.exit_code, err.value.stderr) == (3, "nope\n")


def test_stdin_reaches_a_background_command_until_closed(sbx):
    h = sbx.commands.run("cat; echo END", background=True, stdin=True)
    sbx.commands.send_stdin(h.pid, "line one\n")
    h.send_stdin(b"\x00bytes\n")
    h.close_stdin()
    r = h.wait()
    assert r.stdout == "line one\n\x00bytes\nEND\n"


def test_kill_ends_a_background_command(sbx):
    h = sbx.commands.run("sleep 600", background=True)
    wait_for(lambda: h.pid in [p.pid for p in sbx.commands.list()], what="the command to be listed")
    assert sbx.commands.kill(h.pid) is True
    with pytest.raises(CommandExitException) as err:
        h.wait()
    assert err.value.exit_code != 0
    assert h.pid not in [p.pid for p in sbx.commands.list()]
    assert sbx.commands.kill(h.pid) is False


def test_connect_follows_a_running_command(sbx):
    h = sbx.commands.run("read line; echo got:$line", background=True, stdin=True)
    again = sbx.commands.connect(h.pid)
    sbx.commands.send_stdin(h.pid, "hello\n")
    assert again.wait().stdout == "got:hello\n"


def test_the_command_timeout_ends_the_command(sbx):
    with pytest.raises(TimeoutException):
        sbx.commands.run("sleep 30", timeout=1)
    wait_for(lambda: "sleep 30" not in sbx.commands.run("ps -eo args").stdout, what="the sleep to be gone")


def test_envd_names_the_sandbox_in_every_command_and_in_envs(server, sbx):
    # envd's own variables (E2B_SANDBOX, E2B_SANDBOX_ID, E2B_TEMPLATE_ID):
    # the sandbox's envs cannot replace them, a command's envs can
    line = 'echo "$E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID"'
    template = sbx.get_info().template_id
    assert sbx.commands.run(line).stdout == f"true {sbx.sandbox_id} {template}\n"
    assert sbx.commands.run(line, user="root").stdout == f"true {sbx.sandbox_id} {template}\n"
    spoof = Sandbox.create(timeout=60, envs={"E2B_SANDBOX_ID": "spoofed", "E2B_SANDBOX": "false", "MINE": "1"})
    try:
        assert spoof.commands.run(line + '" $MINE"').stdout == f"true {spoof.sandbox_id} {template} 1\n"
        assert spoof.commands.run(line, envs={"E2B_SANDBOX_ID": "per-command"}).stdout == f"true per-command {template}\n"
    finally:
        spoof.kill()
