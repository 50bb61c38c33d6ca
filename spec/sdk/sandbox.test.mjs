// Sandbox lifecycle through the unchanged SDK: create, info, list, timeouts,
// pause/resume, kill and deadlines.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { NotFoundError, Sandbox, SandboxNotFoundError } from './sdk.mjs'
import { pidsWithEnv, sleep, useServer } from './helpers.mjs'

const S = useServer()

async function sandbox(opts = {}) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, ...opts })
}

test('create returns an E2B-style sandbox id and a working envd', async () => {
  const sbx = await sandbox()
  assert.match(sbx.sandboxId, /^i[0-9a-z]{19}$/)
  assert.equal(await sbx.isRunning(), true)
  await sbx.kill()
})

test('getInfo reports template, metadata, state and times', async () => {
  const t0 = Date.now()
  const sbx = await sandbox({ metadata: { owner: 'spec' }, timeoutMs: 60_000 })
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.deepEqual(info.metadata, { owner: 'spec' })
  assert.equal(info.state, 'running')
  assert.ok(Math.abs(info.startedAt - t0) < 5000)
  assert.ok(Math.abs(info.endAt - info.startedAt - 60_000) < 2000)
  assert.ok(info.cpuCount > 0 && info.memoryMB > 0)
  await sbx.kill()
})

test('an unknown template is refused', async () => {
  await assert.rejects(Sandbox.create('no-such-template', { ...S.opts }), /404/)
})

test('setTimeout moves endAt (extends and shortens)', async () => {
  const sbx = await sandbox()
  await sbx.setTimeout(600_000)
  let info = await sbx.getInfo()
  assert.ok(Math.abs(info.endAt - Date.now() - 600_000) < 3000)
  await sbx.setTimeout(30_000)
  info = await sbx.getInfo()
  assert.ok(Math.abs(info.endAt - Date.now() - 30_000) < 3000)
  await sbx.kill()
})

test('Sandbox.list filters by metadata and state, and paginates', async () => {
  const tag = `t${Date.now()}`
  const a = await sandbox({ metadata: { tag, n: '1', 'with space': 'a&b=c' } })
  const b = await sandbox({ metadata: { tag, n: '2' } })
  const c = await sandbox({ metadata: { tag, n: '3' } })
  await c.pause()
  const ids = async (query, limit) => {
    const p = Sandbox.list({ ...S.opts, query, limit })
    const out = []
    while (p.hasNext) out.push(...(await p.nextItems()))
    return out.map((x) => x.sandboxId).sort()
  }
  assert.deepEqual(await ids({ metadata: { tag } }), [a, b, c].map((x) => x.sandboxId).sort())
  assert.deepEqual(await ids({ metadata: { tag, n: '2' } }), [b.sandboxId])
  assert.deepEqual(await ids({ metadata: { 'with space': 'a&b=c' } }), [a.sandboxId])
  assert.deepEqual(await ids({ metadata: { tag }, state: ['paused'] }), [c.sandboxId])
  assert.deepEqual(await ids({ metadata: { tag }, state: ['running'] }), [a, b].map((x) => x.sandboxId).sort())
  // limit 1: three pages, each request returning one item
  const pager = Sandbox.list({ ...S.opts, query: { metadata: { tag } }, limit: 1 })
  let pages = 0
  const seen = new Set()
  while (pager.hasNext) {
    const items = await pager.nextItems()
    assert.ok(items.length <= 1)
    items.forEach((i) => seen.add(i.sandboxId))
    pages++
  }
  assert.equal(seen.size, 3)
  assert.ok(pages >= 3)
  for (const s of [a, b, c]) await Sandbox.kill(s.sandboxId, S.opts)
})

test('filesystem pause then connect keeps files and reboots processes', async () => {
  const sbx = await sandbox()
  await sbx.files.write('/home/user/keep.txt', 'kept')
  const boot1 = await sbx.files.read('/proc/sys/kernel/random/boot_id')
  await sbx.commands.run('sleep 600', { background: true })
  assert.equal(await Sandbox.pause(sbx.sandboxId, { ...S.opts, keepMemory: false }), true)
  assert.equal(await Sandbox.pause(sbx.sandboxId, { ...S.opts }), false, 'already paused')
  assert.equal((await sbx.getInfo()).state, 'paused')
  assert.equal(await sbx.isRunning(), false)
  const again = await Sandbox.connect(sbx.sandboxId, { ...S.opts, timeoutMs: 60_000 })
  assert.equal(await again.files.read('/home/user/keep.txt'), 'kept')
  assert.notEqual(await again.files.read('/proc/sys/kernel/random/boot_id'), boot1)
  assert.ok(!(await again.commands.list()).some((p) => p.cmd === '/bin/bash'), 'processes did not survive')
  await again.kill()
})

test('memory pause keeps a running process alive with the same pid', async () => {
  const sbx = await sandbox()
  const h = await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.05; done', { background: true })
  await sleep(300)
  await sbx.pause()
  const frozen = await (async () => {
    // the sandbox's files are not reachable through envd while paused
    await assert.rejects(sbx.files.read('/tmp/count'))
    return true
  })()
  assert.ok(frozen)
  const again = await Sandbox.connect(sbx.sandboxId, { ...S.opts, timeoutMs: 60_000 })
  const n1 = Number(await again.files.read('/tmp/count'))
  await sleep(300)
  const n2 = Number(await again.files.read('/tmp/count'))
  assert.ok(n2 > n1, `the loop keeps counting after resume (${n1} -> ${n2})`)
  assert.ok((await again.commands.list()).some((p) => p.pid === h.pid))
  await again.kill()
})

test('connect to a running sandbox never shortens its timeout', async () => {
  const sbx = await sandbox({ timeoutMs: 300_000 })
  const before = (await sbx.getInfo()).endAt
  await Sandbox.connect(sbx.sandboxId, { ...S.opts, timeoutMs: 10_000 })
  assert.equal((await sbx.getInfo()).endAt.getTime(), before.getTime())
  await Sandbox.connect(sbx.sandboxId, { ...S.opts, timeoutMs: 900_000 })
  assert.ok((await sbx.getInfo()).endAt > before)
  await sbx.kill()
})

test('kill then getInfo is NotFoundError, and kill again reports false', async () => {
  const sbx = await sandbox()
  assert.equal(await Sandbox.kill(sbx.sandboxId, S.opts), true)
  await assert.rejects(sbx.getInfo(), (e) => e instanceof NotFoundError || e instanceof SandboxNotFoundError)
  assert.equal(await Sandbox.kill(sbx.sandboxId, S.opts), false)
  await assert.rejects(Sandbox.connect(sbx.sandboxId, S.opts), SandboxNotFoundError)
  assert.equal(await sbx.isRunning(), false)
})

test('deadline: a sandbox created with a short timeout is gone, with its processes, once it passes', async () => {
  // 6 s, not 2: on a loaded machine creating the sandbox and starting its
  // command can take seconds, and the deadline counts from the create.
  const marker = `m${Date.now()}`
  const sbx = await sandbox({ timeoutMs: 6000, envs: { E2B_SPEC_MARKER: marker } })
  const created = Date.now() // the server's deadline is at or before created + 6 s
  await sbx.commands.run('sleep 600', { background: true })
  // started means forked: its environment is there once it has exec'd. The
  // sample that found it is the proof: a second one may fall between a
  // login shell's short-lived children, or inside bash's exec of sleep,
  // whose /proc environ reads empty for that moment (it failed so once).
  let seen = []
  for (let i = 0; i < 50 && (seen = pidsWithEnv('E2B_SPEC_MARKER', marker)).length === 0; i++) await sleep(100)
  assert.ok(seen.length > 0)
  await sleep(Math.max(0, created + 6000 - Date.now()) + 1500)
  await assert.rejects(sbx.getInfo(), (e) => e instanceof NotFoundError || e instanceof SandboxNotFoundError)
  assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [])
})

test('autoPause: the deadline pauses instead of killing, and connect resumes', async () => {
  const sbx = await sandbox({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } })
  await sbx.files.write('/tmp/x', 'still here')
  await sleep(3500)
  assert.equal((await sbx.getInfo()).state, 'paused')
  const again = await Sandbox.connect(sbx.sandboxId, { ...S.opts, timeoutMs: 60_000 })
  assert.equal(await again.files.read('/tmp/x'), 'still here')
  await again.kill()
})

test('autoResume: envd traffic wakes a memory-paused sandbox, not a filesystem-paused one', async () => {
  const sbx = await sandbox({ lifecycle: { onTimeout: 'pause', autoResume: true } })
  assert.deepEqual((await sbx.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true })
  await sbx.files.write('/tmp/a', 'awake')
  await sbx.pause()
  assert.equal((await sbx.getInfo()).state, 'paused')
  assert.equal(await sbx.files.read('/tmp/a'), 'awake')
  assert.equal((await sbx.getInfo()).state, 'running')
  await Sandbox.pause(sbx.sandboxId, { ...S.opts, keepMemory: false })
  assert.equal(await sbx.isRunning(), false)
  assert.equal((await sbx.getInfo()).state, 'paused')
  await sbx.kill()
})
