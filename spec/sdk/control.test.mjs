// The rest of the control plane through the unchanged SDK (and raw HTTP where
// the SDK has no call): metrics, network, refreshes, logs, snapshots,
// volumes, operator templates, and state that survives a restart.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox, SandboxNotFoundError, Volume, VolumeNotFoundError } from './sdk.mjs'
import { sdkOpts, startServer } from './server.mjs'
import { pidsWithEnv, useServer } from './helpers.mjs'

const S = useServer()

const api = (path, init = {}) =>
  fetch(`${S.env.E2B_API_URL}${path}`, {
    ...init,
    headers: { 'X-API-Key': S.env.E2B_API_KEY, 'Content-Type': 'application/json', ...(init.headers || {}) },
  })

async function sandbox(opts = {}) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, ...opts })
}

test('metrics: SandboxMetric samples with CPU, memory and disk in the documented shape', async () => {
  const sbx = await sandbox()
  await sbx.files.write('/home/user/blob', new Uint8Array(1 << 20).fill(1))
  const m = await sbx.getMetrics()
  assert.ok(m.length >= 1)
  const last = m.at(-1)
  assert.ok(last.timestamp instanceof Date && Math.abs(last.timestamp - Date.now()) < 60_000)
  assert.ok(last.cpuCount > 0 && last.memTotal > 0 && last.diskTotal > 0)
  assert.ok(last.memUsed > 0, 'the agent itself uses memory')
  assert.ok(last.diskUsed >= 1 << 20, `disk used ${last.diskUsed}`)
  const raw = await (await api(`/sandboxes/${sbx.sandboxId}/metrics?start=0&end=${Math.ceil(Date.now() / 1000) + 5}`)).json()
  for (const f of ['timestamp', 'timestampUnix', 'cpuCount', 'cpuUsedPct', 'memUsed', 'memTotal', 'memCache', 'diskUsed', 'diskTotal'])
    assert.ok(raw[0][f] !== undefined, f)
  const many = await (await api(`/sandboxes/metrics?sandbox_ids=${sbx.sandboxId},inope`)).json()
  assert.deepEqual(Object.keys(many.sandboxes), [sbx.sandboxId])
  await sbx.kill()
  await assert.rejects(Sandbox.getMetrics(sbx.sandboxId, S.opts), SandboxNotFoundError)
})

test('network: all-or-nothing egress is enforced; finer rules are refused, never silently open', async () => {
  // deny-all through network.denyOut: only loopback inside
  const closed = await sandbox({ network: { denyOut: ['0.0.0.0/0'] } })
  assert.equal((await closed.commands.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout.trim(), 'lo')
  assert.deepEqual((await closed.getInfo()).network.denyOut, ['0.0.0.0/0'])
  await closed.kill()
  // an allow-list with everything else denied cannot be enforced: 400 at create
  await assert.rejects(sandbox({ network: { denyOut: ['0.0.0.0/0'], allowOut: ['8.8.8.8/32'] } }), /400.*allow-lists/)
  await assert.rejects(sandbox({ allowInternetAccess: false, network: { allowOut: ['example.com'] } }), /400/)
  await assert.rejects(sandbox({ network: { denyOut: ['10.0.0.0/8'] } }), /400.*denyOut/)
  // updateNetwork: same mode is accepted; switching a live sandbox is a clear 409
  const open = await sandbox()
  await open.updateNetwork({ allowOut: ['1.1.1.1'] })
  assert.deepEqual((await open.getInfo()).network.allowOut, ['1.1.1.1'])
  await assert.rejects(open.updateNetwork({ denyOut: ['0.0.0.0/0'] }), /409/)
  await assert.rejects(open.updateNetwork({ denyOut: ['0.0.0.0/0'], allowOut: ['1.1.1.1'] }), /400/)
  // applied at the next cold boot
  await open.pause({ keepMemory: false })
  await Sandbox.updateNetwork(open.sandboxId, { allowInternetAccess: false }, S.opts)
  const again = await Sandbox.connect(open.sandboxId, S.opts)
  assert.equal((await again.commands.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout.trim(), 'lo')
  await again.kill()
  await assert.rejects(Sandbox.updateNetwork(open.sandboxId, {}, S.opts), SandboxNotFoundError)
})

test('refreshes extend (never shorten) the deadline', async () => {
  const sbx = await sandbox({ timeoutMs: 30_000 })
  let res = await api(`/sandboxes/${sbx.sandboxId}/refreshes`, { method: 'POST', body: '{"duration":600}' })
  assert.equal(res.status, 204)
  const end = (await sbx.getInfo()).endAt
  assert.ok(Math.abs(end - Date.now() - 600_000) < 3000)
  res = await api(`/sandboxes/${sbx.sandboxId}/refreshes`, { method: 'POST', body: '{"duration":5}' })
  assert.equal(res.status, 204)
  assert.equal((await sbx.getInfo()).endAt.getTime(), end.getTime())
  assert.equal((await api(`/sandboxes/${sbx.sandboxId}/refreshes`, { method: 'POST', body: '{"duration":7200}' })).status, 400)
  assert.equal((await api('/sandboxes/inope/refreshes', { method: 'POST', body: '{}' })).status, 404)
  await sbx.kill()
})

test('logs: v1 {logs, logEntries} and v2 {logs} with cursor, direction, level and search', async () => {
  const sbx = await sandbox()
  const t0 = Date.now()
  await sbx.commands.run('true')
  await sbx.pause()
  await Sandbox.connect(sbx.sandboxId, S.opts)
  const v1 = await (await api(`/sandboxes/${sbx.sandboxId}/logs?start=0&limit=100`)).json()
  assert.ok(v1.logs.length >= 4 && v1.logEntries.length === v1.logs.length)
  for (const l of v1.logs) assert.ok(!Number.isNaN(Date.parse(l.timestamp)) && typeof l.line === 'string')
  assert.ok(v1.logs.some((l) => /process \d+ started/.test(l.line)))
  const e = v1.logEntries[0]
  assert.deepEqual(Object.keys(e).sort(), ['fields', 'level', 'message', 'timestamp'])
  const v2 = await (await api(`/v2/sandboxes/${sbx.sandboxId}/logs?cursor=${t0 - 10_000}&search=paused`)).json()
  assert.deepEqual(v2.logs.map((l) => l.message), ['sandbox paused (memory)'])
  const back = await (await api(`/v2/sandboxes/${sbx.sandboxId}/logs?direction=backward&limit=1`)).json()
  assert.equal(back.logs.length, 1)
  assert.equal(back.logs[0].message, 'sandbox resumed')
  const warn = await (await api(`/v2/sandboxes/${sbx.sandboxId}/logs?level=warn`)).json()
  assert.deepEqual(warn.logs, [])
  assert.equal((await api(`/v2/sandboxes/${sbx.sandboxId}/logs?direction=sideways`)).status, 400)
  await sbx.kill()
  assert.equal((await api(`/v2/sandboxes/${sbx.sandboxId}/logs`)).status, 404)
})

test('snapshots: create (the sandbox goes on), list with pagination, create from one restores its files, delete', async () => {
  const sbx = await sandbox()
  await sbx.files.write('/home/user/state.txt', 'v1')
  await sbx.files.write('/tmp/t.txt', 'tmp too')
  await sbx.commands.run('mkdir -p /root/r && echo root > /root/r/f', { user: 'root' })
  const h = await sbx.commands.run('sleep 600', { background: true })
  const snap = await sbx.createSnapshot()
  assert.match(snap.snapshotId, /:default$/)
  assert.equal((await sbx.getInfo()).state, 'running')
  assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid), 'processes survive a snapshot')
  const named = await sbx.createSnapshot({ name: `snap-${Date.now()}` })
  assert.equal(named.names.length, 1)
  assert.equal(named.snapshotId, named.names[0])
  await sbx.files.write('/home/user/state.txt', 'v2')
  // a sandbox from the snapshot has the files as they were
  const child = await Sandbox.create(snap.snapshotId, { ...S.opts })
  assert.equal(await child.files.read('/home/user/state.txt'), 'v1')
  assert.equal(await child.files.read('/tmp/t.txt'), 'tmp too')
  assert.equal((await child.commands.run('cat /root/r/f; stat -c %U /home/user/state.txt', { user: 'root' })).stdout, 'root\nuser\n')
  assert.equal((await child.getInfo()).templateId, snap.snapshotId)
  await child.kill()
  const byName = await Sandbox.create(named.names[0].split('/')[1].replace(':default', ''), { ...S.opts })
  assert.equal(await byName.files.read('/home/user/state.txt'), 'v1')
  await byName.kill()
  // list: both, filtered by sandbox, paginated one by one
  const all = async (opts) => {
    const p = Sandbox.listSnapshots({ ...S.opts, ...opts })
    const out = []
    while (p.hasNext) out.push(...(await p.nextItems()))
    return out.map((s) => s.snapshotId)
  }
  assert.deepEqual((await all({ sandboxId: sbx.sandboxId })).sort(), [snap.snapshotId, named.snapshotId].sort())
  assert.deepEqual((await all({ sandboxId: sbx.sandboxId, limit: 1 })).sort(), [snap.snapshotId, named.snapshotId].sort())
  const page = await api(`/snapshots?sandboxID=${sbx.sandboxId}&limit=1`)
  assert.ok(page.headers.get('x-next-token'))
  // snapshots outlive their sandbox; deleting is true once, then false
  await sbx.kill()
  assert.equal((await all({ sandboxId: sbx.sandboxId })).length, 2)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, S.opts), true)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, S.opts), false)
  assert.equal(await Sandbox.deleteSnapshot(named.snapshotId, S.opts), true)
  await assert.rejects(Sandbox.create(snap.snapshotId, { ...S.opts }), /404/)
  await assert.rejects(sbx.createSnapshot(), SandboxNotFoundError)
})

test('volumes: create, list, get, mounted at create and shared across sandboxes, delete', async () => {
  const name = `vol-${Date.now()}`
  const vol = await Volume.create(name, S.opts)
  assert.equal(vol.name, name)
  assert.ok(vol.volumeId && vol.token)
  assert.ok((await Volume.list(S.opts)).some((v) => v.volumeId === vol.volumeId && v.name === name))
  assert.equal((await Volume.getInfo(vol.volumeId, S.opts)).name, name)
  await assert.rejects(Volume.create(name, S.opts), /409/)
  await assert.rejects(Volume.create('bad name!', S.opts), /400/)
  const a = await sandbox({ volumeMounts: { '/mnt/data': vol } })
  assert.deepEqual((await a.getInfo()).volumeMounts, [{ name, path: '/mnt/data' }])
  await a.commands.run('echo shared > /mnt/data/f.txt')
  await a.kill()
  const b = await sandbox({ volumeMounts: { '/data': name } })
  assert.equal(await b.files.read('/data/f.txt'), 'shared\n')
  await assert.rejects(Volume.destroy(vol.volumeId, S.opts), /409/)
  await b.kill()
  await assert.rejects(sandbox({ volumeMounts: { '/usr/x': name } }), /400/)
  assert.equal(await Volume.destroy(vol.volumeId, S.opts), true)
  assert.equal(await Volume.destroy(vol.volumeId, S.opts), false)
  await assert.rejects(Volume.getInfo(vol.volumeId, S.opts), VolumeNotFoundError)
})

test('operator templates: a directory and a setup script; unknown templates are 404', async () => {
  const root = mkdtempSync(join(tmpdir(), 'e2b-local-tpl-'))
  mkdirSync(join(root, 'dir/home/user/proj'), { recursive: true })
  mkdirSync(join(root, 'dir/opt-tools'), { recursive: true })
  writeFileSync(join(root, 'dir/home/user/proj/README'), 'from the template\n')
  writeFileSync(join(root, 'dir/opt-tools/tool.sh'), '#!/bin/sh\necho tool ran\n', { mode: 0o755 })
  writeFileSync(join(root, 'setup.sh'), 'set -e\necho built > /home/user/built.txt\nchown 1000:1000 /home/user/built.txt\nmkdir -p /root/cache\necho "setup output"\n')
  const srv = await startServer({ extraArgs: ['--template', `tools=${join(root, 'dir')}`, '--template', `scripted=${join(root, 'setup.sh')}`] })
  try {
    const opts = sdkOpts(srv.env)
    const a = await Sandbox.create('tools', { ...opts })
    assert.equal((await a.getInfo()).templateId, 'tools')
    assert.equal(await a.files.read('/home/user/proj/README'), 'from the template\n')
    assert.equal((await a.commands.run('/opt-tools/tool.sh; stat -c %U /home/user/proj/README')).stdout, 'tool ran\nuser\n')
    const ro = await a.commands.run('touch /opt-tools/x 2>&1; echo rc=$?', { user: 'root' })
    assert.match(ro.stdout, /rc=(?!0)/, 'template directories are read-only')
    const b = await Sandbox.create('scripted', { ...opts })
    assert.equal(await b.files.read('/home/user/built.txt'), 'built\n')
    assert.equal((await b.commands.run('test -d /root/cache && echo yes', { user: 'root' })).stdout, 'yes\n')
    await assert.rejects(Sandbox.create('nope', { ...opts }), /404/)
    // the build sandbox is gone and never listed
    assert.equal((await Sandbox.list({ ...opts }).nextItems()).length, 2)
    await a.kill()
    await b.kill()
  } finally {
    const res = await srv.stop()
    assert.equal(res.code, 0, res.stderr)
    rmSync(root, { recursive: true, force: true })
  }
  // a failing setup script stops e2b-local with a clear message
  const bad = mkdtempSync(join(tmpdir(), 'e2b-local-tpl-'))
  writeFileSync(join(bad, 'fail.sh'), 'echo nope; exit 3\n')
  await assert.rejects(startServer({ extraArgs: ['--template', `broken=${join(bad, 'fail.sh')}`] }), /setup script .* failed \(exit 3\)/)
  rmSync(bad, { recursive: true, force: true })
})

test('state survives a restart: paused and running sandboxes come back paused with their files; snapshots and volumes stay', async () => {
  const state = mkdtempSync(join(tmpdir(), 'e2b-local-restart-'))
  const marker = `r${Date.now()}`
  let srv = await startServer({ state })
  let opts = sdkOpts(srv.env)
  const running = await Sandbox.create({ ...opts, metadata: { keep: 'yes' }, envs: { E2B_SPEC_MARKER: marker } })
  await running.files.write('/home/user/r.txt', 'running one')
  await running.commands.run('sleep 600', { background: true })
  const paused = await Sandbox.create({ ...opts })
  await paused.files.write('/tmp/p.txt', 'paused one')
  await paused.pause()
  const snap = await running.createSnapshot({ name: 'kept' })
  const vol = await Volume.create('kept-vol', opts)
  let res = await srv.stop({ keepState: true })
  assert.equal(res.code, 0, res.stderr)
  assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [], 'no process outlives the server')
  srv = await startServer({ state })
  try {
    opts = sdkOpts(srv.env)
    const listed = await Sandbox.list({ ...opts }).nextItems()
    assert.deepEqual(listed.map((s) => s.sandboxId).sort(), [running.sandboxId, paused.sandboxId].sort())
    assert.ok(listed.every((s) => s.state === 'paused'))
    assert.deepEqual(listed.find((s) => s.sandboxId === running.sandboxId).metadata, { keep: 'yes' })
    const r = await Sandbox.connect(running.sandboxId, opts)
    assert.equal(await r.files.read('/home/user/r.txt'), 'running one')
    assert.ok(!(await r.commands.list()).length, 'processes did not survive the restart')
    assert.equal((await r.commands.run('echo $E2B_SPEC_MARKER')).stdout, `${marker}\n`)
    const p = await Sandbox.connect(paused.sandboxId, opts)
    assert.equal(await p.files.read('/tmp/p.txt'), 'paused one')
    assert.ok((await Sandbox.listSnapshots({ ...opts }).nextItems()).some((s) => s.snapshotId === snap.snapshotId))
    assert.equal((await Volume.getInfo(vol.volumeId, opts)).name, 'kept-vol')
    await r.kill()
    await p.kill()
  } finally {
    res = await srv.stop()
    assert.equal(res.code, 0, res.stderr)
  }
})
