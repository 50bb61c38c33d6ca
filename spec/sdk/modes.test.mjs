// The other ways to run e2b-local: `exec`, and the fallbacks without
// bubblewrap (--no-isolation) and without the cgroup freezer (--no-freezer).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { SDK_PACKAGE, Sandbox } from './sdk.mjs'
import { BIN, noSanitizerReport, sdkOpts, startServer } from './server.mjs'
import { pidsWithEnv, sleep } from './helpers.mjs'

async function withServer(extraArgs, fn) {
  const srv = await startServer({ extraArgs })
  try {
    await fn(srv, sdkOpts(srv.env))
  } finally {
    const res = await srv.stop()
    assert.equal(res.code, 0, res.stderr)
  }
}

test('exec runs CMD with the four variables and exits with its status', () => {
  const r = spawnSync(BIN, ['exec', '--admin-token', 'adm1n', '--', 'sh', '-c', 'echo "$E2B_LOCAL_ADMIN_TOKEN"; echo "$E2B_API_URL|$E2B_SANDBOX_URL|$E2B_DOMAIN|$E2B_API_KEY"; exit 7'], {
    encoding: 'utf8',
    timeout: 30_000,
  })
  assert.equal(r.status, 7, r.stderr)
  const line = r.stdout.trim().split('\n').pop()
  assert.equal(r.stdout.trim().split('\n').at(-2), 'adm1n')
  assert.match(line, /^http:\/\/127\.0\.0\.1:\d+\|http:\/\/127\.0\.0\.1:\d+\|e2b\.localhost:\d+\|e2b_[0-9a-f]{40}$/)
  assert.doesNotMatch(r.stderr, /e2b_[0-9a-f]{40}/, 'the API key is never logged')
  const k = spawnSync(BIN, ['exec', '--', 'sh', '-c', 'kill -TERM $$'], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(k.status, 128 + 15)
  const bad = spawnSync(BIN, ['exec', '--listen', 'nope'], { encoding: 'utf8' })
  assert.equal(bad.status, 2)
  for (const run of [r, k, bad]) noSanitizerReport(run.stderr)
})

test('exec: a sandbox created by CMD is gone when exec returns', () => {
  const marker = `x${Date.now()}`
  const script = `
    const { Sandbox } = await import('${SDK_PACKAGE}')
    const s = await Sandbox.create({ envs: { E2B_SPEC_MARKER: '${marker}' } })
    await s.commands.run('sleep 600', { background: true })
    console.log(s.sandboxId)
    process.exit(0) // the background stream would keep node alive`
  const r = spawnSync(BIN, ['exec', '--', process.execPath, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
    cwd: new URL('.', import.meta.url).pathname,
  })
  assert.equal(r.status, 0, r.stderr)
  noSanitizerReport(r.stderr)
  assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [])
})

test('--no-isolation: one warning, commands and files still work on mapped dirs, kill leaves nothing', async () => {
  await withServer(['--no-isolation', '--no-freezer'], async (srv, opts) => {
    for (let i = 0; i < 50 && !srv.logs().includes('listening'); i++) await sleep(20) // stderr is its own pipe
    assert.equal(srv.logs().match(/WARNING: running WITHOUT isolation/g)?.length, 1)
    const marker = `n${Date.now()}`
    const sbx = await Sandbox.create({ ...opts, envs: { E2B_SPEC_MARKER: marker } })
    await sbx.files.write('/home/user/f.txt', 'mapped')
    const r = await sbx.commands.run('cat f.txt; echo; id -u; echo $HOME')
    const [content, user, home] = r.stdout.trim().split('\n')
    assert.equal(content, 'mapped')
    assert.equal(user, '1000')
    assert.ok(home.startsWith(srv.state), `HOME is the host dir behind /home/user: ${home}`)
    assert.equal((await sbx.files.list('/home/user')).map((e) => e.path).join(), '/home/user/f.txt')
    // memory pause by SIGSTOP: the counter stops, then continues with the same pid
    // without a mount namespace, absolute paths in commands are host paths: use $TMPDIR
    const h = await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > $TMPDIR/c.new; mv $TMPDIR/c.new $TMPDIR/c; sleep 0.05; done', { background: true })
    await sbx.commands.run('(setsid sleep 903 >/dev/null 2>&1 &); true')
    await sleep(300)
    await sbx.pause()
    const again = await Sandbox.connect(sbx.sandboxId, { ...opts })
    const n1 = Number(await again.files.read('/tmp/c'))
    await sleep(300)
    assert.ok(Number(await again.files.read('/tmp/c')) > n1)
    assert.ok((await again.commands.list()).some((p) => p.pid === h.pid))
    assert.ok(pidsWithEnv('E2B_SPEC_MARKER', marker).length >= 2)
    await again.kill()
    assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [])
  })
})

test('--no-freezer with isolation: memory pause freezes every process and kill still cleans up', async () => {
  await withServer(['--no-freezer'], async (srv, opts) => {
    const marker = `f${Date.now()}`
    const sbx = await Sandbox.create({ ...opts, envs: { E2B_SPEC_MARKER: marker } })
    await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > /tmp/c.new; mv /tmp/c.new /tmp/c; sleep 0.05; done', { background: true })
    await sleep(300)
    await sbx.pause()
    const stopped = pidsWithEnv('E2B_SPEC_MARKER', marker).map((p) => spawnSync('ps', ['-o', 'stat=', '-p', String(p)], { encoding: 'utf8' }).stdout.trim())
    assert.ok(stopped.length > 0 && stopped.every((s) => s === '' || s.startsWith('T')), stopped.join())
    const again = await Sandbox.connect(sbx.sandboxId, { ...opts })
    const n1 = Number(await again.files.read('/tmp/c'))
    await sleep(300)
    assert.ok(Number(await again.files.read('/tmp/c')) > n1)
    await again.pause()
    assert.equal(await Sandbox.kill(sbx.sandboxId, opts), true, 'a paused sandbox can be killed')
    assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [])
  })
})

test('SIGTERM stops serve cleanly and kills every running and paused sandbox', async () => {
  const srv = await startServer()
  const opts = sdkOpts(srv.env)
  const marker = `s${Date.now()}`
  const a = await Sandbox.create({ ...opts, envs: { E2B_SPEC_MARKER: marker } })
  const b = await Sandbox.create({ ...opts, envs: { E2B_SPEC_MARKER: marker } })
  await a.commands.run('sleep 600', { background: true })
  await b.commands.run('sleep 600', { background: true })
  await b.pause()
  assert.ok(pidsWithEnv('E2B_SPEC_MARKER', marker).length >= 2)
  const res = await srv.stop()
  assert.equal(res.code, 0, res.stderr)
  assert.doesNotMatch(res.stderr, /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|survived/)
  assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [])
})
