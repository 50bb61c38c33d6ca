// Commands through the unchanged SDK: Process.Start/Connect/List/SendInput/
// CloseStdin/SendSignal as e2b-local serves them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { CommandExitError, Sandbox } from './sdk.mjs'
import { sleep, useServer } from './helpers.mjs'

const S = useServer()

async function sandbox(opts = {}) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, ...opts })
}

test('commands.run returns stdout, stderr and exit code 0', async () => {
  const sbx = await sandbox()
  const r = await sbx.commands.run('echo out; echo err >&2')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'out\n')
  assert.equal(r.stderr, 'err\n')
  await sbx.kill()
})

test('a non-zero exit throws CommandExitError carrying code and output', async () => {
  const sbx = await sandbox()
  await assert.rejects(sbx.commands.run('echo partial; exit 7'), (e) => {
    assert.ok(e instanceof CommandExitError)
    assert.equal(e.exitCode, 7)
    assert.equal(e.stdout, 'partial\n')
    assert.equal(e.error, 'exit status 7')
    return true
  })
  await sbx.kill()
})

test('output is byte exact: NUL bytes, multi-byte UTF-8, no final newline', async () => {
  const sbx = await sandbox()
  const r = await sbx.commands.run("printf 'a\\000b\\303\\251c'")
  assert.equal(r.stdout, 'a\u0000b\u00e9c')
  const big = await sbx.commands.run('head -c 300000 /dev/zero | tr "\\0" x')
  assert.equal(big.stdout.length, 300000)
  assert.ok(/^x+$/.test(big.stdout))
  await sbx.kill()
})

test('commands run as user by default and as root on request, in the home directory', async () => {
  const sbx = await sandbox()
  const u = await sbx.commands.run('id -un; pwd; echo $HOME')
  assert.equal(u.stdout, 'user\n/home/user\n/home/user\n')
  const r = await sbx.commands.run('id -un; pwd', { user: 'root' })
  assert.equal(r.stdout, 'root\n/root\n')
  const c = await sbx.commands.run('pwd', { cwd: '/tmp' })
  assert.equal(c.stdout, '/tmp\n')
  await sbx.kill()
})

test('environment: sandbox envs, then per-command envs win', async () => {
  const sbx = await sandbox({ envs: { A: 'sandbox', B: 'sandbox' } })
  const r = await sbx.commands.run('echo $A $B', { envs: { B: 'command' } })
  assert.equal(r.stdout, 'sandbox command\n')
  // the environment the command started with (before bash -l's profile runs)
  const env = await sbx.commands.run("tr '\\0' '\\n' < /proc/$$/environ | sort")
  for (const line of ['A=sandbox', 'B=sandbox', 'HOME=/home/user', 'USER=user', 'LOGNAME=user', 'SHELL=/bin/bash'])
    assert.ok(env.stdout.split('\n').includes(line), `${line} in\n${env.stdout}`)
  assert.match(env.stdout, /^PATH=\/usr\/local\/sbin:\/usr\/local\/bin:\/usr\/sbin:\/usr\/bin:\/sbin:\/bin$/m)
  await sbx.kill()
})

test('background command receives stdin and ends after closeStdin', async () => {
  const sbx = await sandbox()
  const h = await sbx.commands.run('cat; echo done', { background: true, stdin: true })
  assert.ok(h.pid > 0)
  await sbx.commands.sendStdin(h.pid, 'hello ')
  await sbx.commands.sendStdin(h.pid, 'world\n')
  await sbx.commands.closeStdin(h.pid)
  assert.equal((await h.wait()).stdout, 'hello world\ndone\n')
  await sbx.kill()
})

test('commands.list shows running commands and kill ends them', async () => {
  const sbx = await sandbox()
  const h = await sbx.commands.run('sleep 600', { background: true })
  const list = await sbx.commands.list()
  const item = list.find((p) => p.pid === h.pid)
  assert.ok(item, 'the background command is listed')
  assert.equal(item.cmd, '/bin/bash')
  assert.equal(await sbx.commands.kill(h.pid), true)
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError && e.exitCode === -1)
  assert.equal(await sbx.commands.kill(h.pid), false, 'killing an ended command reports false')
  assert.ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid))
  await sbx.kill()
})

test('commands.connect follows a running command from now on', async () => {
  const sbx = await sandbox()
  const h = await sbx.commands.run('read x; echo got $x', { background: true, stdin: true })
  await h.disconnect()
  const again = await sbx.commands.connect(h.pid)
  await sbx.commands.sendStdin(h.pid, 'it\n')
  assert.equal((await again.wait()).stdout, 'got it\n')
  await sbx.kill()
})

test('a disconnected background command keeps running and never blocks on output', async () => {
  const sbx = await sandbox()
  const h = await sbx.commands.run('head -c 20000000 /dev/zero; echo finished > /tmp/flag', { background: true })
  await h.disconnect()
  for (let i = 0; i < 100; i++) {
    if (await sbx.files.exists('/tmp/flag')) break
    await sleep(100)
  }
  assert.equal(await sbx.files.read('/tmp/flag'), 'finished\n')
  await sbx.kill()
})

// e2b-local's own cost per running command: the agent relays a command's
// stdout and stderr up one socket (emulator/src/agent/agent_relay.c), so with
// its stream closed a command holds one server descriptor, not its two pipes.
test('a running command costs the server at most one descriptor, and none once it is gone', async () => {
  const sbx = await sandbox()
  const fds = () => readdirSync(`/proc/${S.srv.pid}/fd`).length
  const settle = async (ok) => {
    for (let i = 0; i < 50 && !ok(fds()); i++) await sleep(100)
    return fds()
  }
  await sbx.commands.run('true')
  const before = fds()
  const hs = []
  for (let i = 0; i < 100; i++) hs.push(await sbx.commands.run('sleep 120', { background: true }))
  for (const h of hs) await h.disconnect()
  assert.ok((await sbx.commands.list()).length >= 100)
  const running = await settle((n) => n - before <= 110) // a closed stream is noticed within 1 s
  assert.ok(running - before <= 110, `server descriptors: ${running - before} more for 100 running commands`)
  await sbx.kill()
  const after = await settle((n) => n <= before + 8)
  assert.ok(after <= before + 8, `server descriptors: ${before} before, ${after} after the kill`)
})

test('the command timeout kills the process group', async () => {
  const sbx = await sandbox()
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }))
  assert.ok(Date.now() - t0 < 10_000)
  await sleep(300)
  const ps = await sbx.commands.run('ps -eo comm')
  assert.ok(!ps.stdout.includes('sleep'), ps.stdout)
  await sbx.kill()
})

test('pty: create, input, resize and output as raw bytes', async () => {
  const sbx = await sandbox()
  let out = ''
  const dec = new TextDecoder()
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => (out += dec.decode(d)) })
  // Readline reads the size and sets it again while it readies a prompt: a
  // resize sent before the first prompt is out can be undone by bash.
  for (const until = Date.now() + 10_000; !/[$#] $/.test(out); await sleep(20))
    assert.ok(Date.now() < until, `no prompt after 10 s: ${JSON.stringify(out)}`)
  await sbx.pty.resize(term.pid, { cols: 100, rows: 30 })
  await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size; tty; exit\n'))
  const r = await term.wait()
  assert.equal(r.exitCode, 0)
  assert.match(out, /30 100/)
  assert.match(out, /\/dev\/pts\//)
  await sbx.kill()
})

test('a sandbox killed during a run cuts the stream, and the SDK reports the sandbox killed or at its end of life', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  // the outcome is taken at once: an SDK may reject before the kill returns
  const outcome = sbx.commands.run('echo started; sleep 30').then(() => null, (err) => err)
  await new Promise((r) => setTimeout(r, 500))
  await Sandbox.kill(sbx.sandboxId, S.opts)
  const err = await outcome
  assert.ok(err, 'the run ended normally')
  assert.ok(!(err instanceof CommandExitError), `a normal end event leaked: ${err}`)
  assert.match(String(err.message), /killed or reached its end of life|not running anymore/i, String(err.message))
})

test('sudo: user runs commands as root without a password, as in E2B\'s base image', async () => {
  const sbx = await sandbox()
  assert.equal((await sbx.commands.run('sudo whoami')).stdout, 'root\n')
  assert.equal((await sbx.commands.run('sudo -u user id -un')).stdout, 'user\n')
  await assert.rejects(sbx.commands.run("sudo sh -c 'exit 3'"), (e) => e instanceof CommandExitError && e.exitCode === 3)
  await sbx.kill()
})
