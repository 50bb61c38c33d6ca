// The volume content API through the unchanged SDK's Volume object: files in
// a volume read and written with the volume's own token, shared with the
// sandboxes that mount it; and, since sandboxes write into volumes, symlinks
// and FIFOs a sandbox planted never take the server outside the volume.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sdk, { Sandbox, Volume } from './sdk.mjs'
import { useServer } from './helpers.mjs'

const S = useServer()
const { VolumePathNotFoundError } = sdk
// The content API is served by the control-plane listener; the SDK would
// otherwise build https://api.<domain> (https.test.mjs covers that route).
const at = (extra = {}) => ({ apiUrl: S.env.E2B_API_URL, ...extra })

async function newVolume(prefix) {
  return Volume.create(`${prefix}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`, S.opts)
}

async function sandboxWith(vol) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, volumeMounts: { '/mnt/v': vol } })
}

test('volume content: write, read, list, stat, mkdir, updateMetadata and remove', async () => {
  const vol = await newVolume('vc')
  const dir = await vol.makeDir('/notes', at())
  assert.equal(dir.type, 'directory')
  assert.equal(dir.path, '/notes')
  const w = await vol.writeFile('/notes/a.txt', 'hello\n', at())
  assert.equal(w.type, 'file')
  assert.equal(w.size, 6)
  assert.ok(w.mtime instanceof Date && Math.abs(w.mtime - Date.now()) < 60_000)
  assert.equal(await vol.readFile('/notes/a.txt', at()), 'hello\n')
  const bytes = Uint8Array.from({ length: 70_000 }, (_, i) => i % 251)
  await vol.writeFile('/notes/b.bin', bytes, at())
  assert.deepEqual(await vol.readFile('/notes/b.bin', at({ format: 'bytes' })), bytes)
  await assert.rejects(vol.writeFile('/notes/a.txt', 'again', at()), /409|exists/)
  await vol.writeFile('/notes/a.txt', 'again', at({ force: true }))
  assert.equal(await vol.readFile('/notes/a.txt', at()), 'again')

  const top = await vol.list('/', at())
  assert.deepEqual(top.map((e) => e.name), ['notes'])
  const deep = (await vol.list('/', at({ depth: 2 }))).map((e) => e.path).sort()
  assert.deepEqual(deep, ['/notes', '/notes/a.txt', '/notes/b.bin'])
  assert.equal((await vol.getInfo('/notes/b.bin', at())).size, 70_000)
  assert.equal(await vol.exists('/notes/a.txt', at()), true)
  assert.equal(await vol.exists('/notes/none', at()), false)

  const m = await vol.updateMetadata('/notes/a.txt', { mode: 0o600, uid: 0, gid: 0 }, at())
  assert.equal(m.mode & 0o777, 0o600)
  assert.equal(m.uid, 0)
  const host = join(S.srv.state, 'volumes', vol.volumeId, 'data')
  assert.equal(statSync(join(host, 'notes/a.txt')).mode & 0o7777, 0o600)
  await assert.rejects(vol.updateMetadata('/notes/a.txt', { mode: 0o4755 }, at()), /400|range/)
  await assert.rejects(vol.updateMetadata('/notes/a.txt', { uid: 70000 }, at()), /400|range/)
  await assert.rejects(vol.makeDir('/s', at({ mode: 0o2775 })), /400|mode/)

  await assert.rejects(vol.makeDir('/x/y/z', at()), VolumePathNotFoundError)
  assert.equal((await vol.makeDir('/x/y/z', at({ force: true }))).path, '/x/y/z')
  await assert.rejects(vol.makeDir('/x', at()), /409|exists/)
  await vol.remove('/x', at())
  assert.equal(await vol.exists('/x', at()), false)
  await assert.rejects(vol.remove('/x', at()), VolumePathNotFoundError)
  await assert.rejects(vol.readFile('/nope', at()), VolumePathNotFoundError)
  await assert.rejects(vol.readFile('/../etc/passwd', at()), /400|inside/)
  await assert.rejects(vol.readFile('/notes/a.txt\0.png', at()), /400|NUL/)
  await assert.rejects(vol.readFile('/notes', at()), /400|directory/)
  await assert.rejects(vol.remove('/', at()), /400|root/)
  await Volume.destroy(vol.volumeId, S.opts)
})

test('volume content: a forced write makes missing parents (E2B\'s ensureDirs), an unforced one is not found', async () => {
  const vol = await newVolume('vp')
  await assert.rejects(vol.writeFile('/m/n/f.txt', 'x', at()), VolumePathNotFoundError)
  await vol.writeFile('/m/n/f.txt', 'made', at({ force: true }))
  assert.equal(await vol.readFile('/m/n/f.txt', at()), 'made')
  assert.equal((await vol.getInfo('/m/n', at())).type, 'directory')
  await Volume.destroy(vol.volumeId, S.opts)
})

test('volume content: only the volume\'s own token is accepted; an unknown volume is not found', async () => {
  const vol = await newVolume('vt')
  const other = await newVolume('vo')
  await vol.writeFile('/f', 'x', at())
  const wrong = new Volume(vol.volumeId, vol.name, other.token, vol.domain)
  await assert.rejects(wrong.readFile('/f', at()), /401|token|auth/i)
  await assert.rejects(wrong.writeFile('/g', 'y', at()), /401|token|auth/i)
  const none = new Volume(vol.volumeId, vol.name, '', vol.domain)
  await assert.rejects(none.list('/', at()), /401|token|auth/i)
  const res = await fetch(`${S.env.E2B_API_URL}/volumecontent/${vol.volumeId}/path?path=/f`, {
    headers: { 'X-API-Key': S.env.E2B_API_KEY },
  })
  assert.equal(res.status, 401, 'the API key is not a volume token')
  const body = await res.json()
  assert.equal(typeof body.code, 'string')
  assert.equal(await vol.exists('/g', at()), false)
  const gone = new Volume('nosuchvolume', 'x', vol.token, vol.domain)
  await assert.rejects(gone.getInfo('/f', at()), VolumePathNotFoundError)
  await Volume.destroy(vol.volumeId, S.opts)
  await Volume.destroy(other.volumeId, S.opts)
})

test('volume content: files written by a mounting sandbox are read through the API, and back', async () => {
  const vol = await newVolume('vs')
  await vol.writeFile('/from-api.txt', 'api\n', at())
  const sbx = await sandboxWith(vol)
  try {
    assert.equal((await sbx.commands.run('cat /mnt/v/from-api.txt')).stdout, 'api\n')
    await sbx.commands.run('mkdir -p /mnt/v/d && printf sbx > /mnt/v/d/from-sbx.txt')
    assert.equal(await vol.readFile('/d/from-sbx.txt', at()), 'sbx')
    assert.deepEqual((await vol.list('/d', at())).map((e) => e.name), ['from-sbx.txt'])
    await sbx.commands.run("touch /mnt/v/d/$(printf 'bad\\377name')")
    const names = (await vol.list('/d', at())).map((e) => e.name).sort()
    assert.equal(names.length, 2, 'a name that is not UTF-8 is listed too')
  } finally {
    await sbx.kill()
  }
  await Volume.destroy(vol.volumeId, S.opts)
})

test('volume content: symlinks and FIFOs a sandbox planted never reach outside the volume', async () => {
  const bystander = await Sandbox.create({ ...S.opts, timeoutMs: 120_000 })
  const vol = await newVolume('va')
  const outside = mkdtempSync(join(tmpdir(), 'vc-outside-'))
  const secret = join(outside, 'secret')
  writeFileSync(secret, 'host secret\n', { mode: 0o600 })
  const meta = join(S.srv.state, 'volumes', vol.volumeId, 'meta.json')
  const sbx = await sandboxWith(vol)
  try {
    await sbx.commands.run(
      [
        `ln -s ${secret} /mnt/v/secret`,
        `ln -s ${outside} /mnt/v/out`,
        `ln -s ${meta} /mnt/v/meta`,
        'ln -s ../../.. /mnt/v/up',
        `ln -s ${outside} /mnt/v/real && mkdir /mnt/v/inner && ln -s ../real /mnt/v/inner/hop`,
        'mkfifo /mnt/v/fifo',
      ].join(' && '),
      { user: 'root' },
    )
    const link = await vol.getInfo('/secret', at())
    assert.equal(link.type, 'symlink')
    assert.equal(link.target, secret)
    const refused = [
      () => vol.readFile('/secret', at()),
      () => vol.readFile('/meta', at()),
      () => vol.readFile('/out/secret', at()),
      () => vol.readFile('/inner/hop/secret', at()),
      () => vol.readFile('/up/volumes', at()),
      () => vol.readFile('/fifo', at()),
      () => vol.getInfo('/out/secret', at()),
      () => vol.list('/out', at()),
      () => vol.list('/up', at()),
      () => vol.writeFile('/secret', 'pwned', at({ force: true })),
      () => vol.writeFile('/out/new', 'pwned', at({ force: true })),
      () => vol.writeFile('/inner/hop/new', 'pwned', at()),
      () => vol.makeDir('/out/sub', at({ force: true })),
      () => vol.makeDir('/inner/hop/sub/deeper', at({ force: true })),
      () => vol.updateMetadata('/secret', { mode: 0o666, uid: 1000 }, at()),
      () => vol.updateMetadata('/out', { mode: 0o777 }, at()),
      () => vol.updateMetadata('/out/secret', { mode: 0o666 }, at()),
      () => vol.remove('/out/secret', at()),
    ]
    const fds = () => readdirSync(`/proc/${S.srv.pid}/fd`).length
    const before = fds()
    for (const [i, call] of refused.entries()) await assert.rejects(call, undefined, `call ${i} was refused`)
    for (let i = 0; i < 3; i++) for (const call of refused) await call().catch(() => {})
    assert.ok(fds() <= before + 8, `server descriptors: ${before} before, ${fds()} after`) // no leak per refusal
    await vol.remove('/out', at()) // removes the link itself, nothing it points at
    assert.equal(await vol.exists('/out', at()), false)
    // from the host: nothing outside changed
    assert.equal(readFileSync(secret, 'utf8'), 'host secret\n')
    const st = statSync(secret)
    assert.equal(st.mode & 0o7777, 0o600)
    assert.equal(st.uid, process.getuid())
    assert.deepEqual(readdirSync(outside), ['secret'])
    assert.equal(statSync(outside).mode & 0o777, 0o700)
    assert.equal(JSON.parse(readFileSync(meta, 'utf8')).volumeID, vol.volumeId)
    // the server is still healthy: the attacker, the bystander and a new sandbox answer
    assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
    assert.equal((await bystander.commands.run('echo still')).stdout, 'still\n')
    const fresh = await Sandbox.create({ ...S.opts, timeoutMs: 60_000 })
    assert.equal((await fresh.commands.run('echo new')).stdout, 'new\n')
    await fresh.kill()
  } finally {
    await sbx.kill()
    await bystander.kill()
    rmSync(outside, { recursive: true, force: true })
  }
  await Volume.destroy(vol.volumeId, S.opts)
})
