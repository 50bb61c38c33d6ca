// Files through the unchanged SDK: /files up and down, filesystem.Filesystem RPCs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FileNotFoundError, Sandbox } from './sdk.mjs'
import { useServer } from './helpers.mjs'

const S = useServer()
const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i)

async function sandbox() {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000 })
}

test('files.write then read returns the same text (relative paths resolve to home)', async () => {
  const sbx = await sandbox()
  const info = await sbx.files.write('hello.txt', 'Hello, world')
  assert.equal(info.path, '/home/user/hello.txt')
  assert.equal(info.name, 'hello.txt')
  assert.equal(await sbx.files.read('/home/user/hello.txt'), 'Hello, world')
  assert.equal(await sbx.files.read('~/hello.txt'), 'Hello, world')
  await sbx.kill()
})

test('binary round trip: all 256 byte values, both upload encodings', async () => {
  const sbx = await sandbox()
  await sbx.files.write('/tmp/bin', ALL_BYTES)
  assert.deepEqual(await sbx.files.read('/tmp/bin', { format: 'bytes' }), ALL_BYTES)
  await sbx.files.write('/tmp/bin2', new Blob([ALL_BYTES]), { useOctetStream: true })
  assert.deepEqual(await sbx.files.read('/tmp/bin2', { format: 'bytes' }), ALL_BYTES)
  const r = await sbx.commands.run('od -An -tx1 /tmp/bin | tr -d " \\n" | md5sum')
  const expect = await sbx.commands.run('printf "%s" ' + Buffer.from(ALL_BYTES).toString('hex') + ' | md5sum')
  assert.equal(r.stdout, expect.stdout)
  await sbx.kill()
})

test('gzip uploads are decoded (streamed, any size)', async () => {
  const sbx = await sandbox()
  const big = new Uint8Array(3 << 20).map((_, i) => (i * 7) & 0xff)
  await sbx.files.write('/tmp/gz.bin', big, { gzip: true })
  assert.deepEqual(await sbx.files.read('/tmp/gz.bin', { format: 'bytes' }), big)
  await sbx.kill()
})

test('a file written by a command reads back byte exact (all 256 values)', async () => {
  const sbx = await sandbox()
  const esc = Array.from(ALL_BYTES, (b) => '\\' + b.toString(8).padStart(3, '0')).join('')
  await sbx.commands.run(`printf '${esc}' > /tmp/all`)
  assert.deepEqual(await sbx.files.read('/tmp/all', { format: 'bytes' }), ALL_BYTES)
  await sbx.kill()
})

test('empty files are written and read as empty', async () => {
  const sbx = await sandbox()
  await sbx.files.write('/tmp/empty', '')
  assert.equal(await sbx.files.read('/tmp/empty'), '')
  assert.equal((await sbx.files.getInfo('/tmp/empty')).size, 0)
  await sbx.kill()
})

test('writing creates parent directories, owned by the user, and overwrites', async () => {
  const sbx = await sandbox()
  await sbx.files.write('/home/user/a/b/c.txt', 'one')
  await sbx.files.write('/home/user/a/b/c.txt', 'two')
  assert.equal(await sbx.files.read('/home/user/a/b/c.txt'), 'two')
  const r = await sbx.commands.run('stat -c "%U:%G" /home/user/a /home/user/a/b/c.txt')
  assert.equal(r.stdout, 'user:user\nuser:user\n')
  await sbx.files.write('/root/r.txt', 'x', { user: 'root' })
  assert.equal((await sbx.files.getInfo('/root/r.txt', { user: 'root' })).owner, 'root')
  await sbx.kill()
})

test('several files in one multipart upload', async () => {
  const sbx = await sandbox()
  const res = await sbx.files.write([
    { path: '/tmp/m/one', data: '1' },
    { path: 'm/two', data: '22' },
  ])
  assert.deepEqual(res.map((f) => f.path).sort(), ['/home/user/m/two', '/tmp/m/one'])
  assert.equal(await sbx.files.read('/tmp/m/one'), '1')
  assert.equal(await sbx.files.read('/home/user/m/two'), '22')
  await sbx.kill()
})

test('list, exists, makeDir, rename, remove and getInfo', async () => {
  const sbx = await sandbox()
  assert.equal(await sbx.files.makeDir('/home/user/d'), true)
  assert.equal(await sbx.files.makeDir('/home/user/d'), false, 'already exists')
  await sbx.files.write('/home/user/d/f.txt', 'abc')
  await sbx.files.write('/home/user/d/sub/g.txt', 'x')
  const names = (await sbx.files.list('/home/user/d')).map((e) => `${e.name}:${e.type}`).sort()
  assert.deepEqual(names, ['f.txt:file', 'sub:dir'])
  const deep = (await sbx.files.list('/home/user/d', { depth: 2 })).map((e) => e.path).sort()
  assert.deepEqual(deep, ['/home/user/d/f.txt', '/home/user/d/sub', '/home/user/d/sub/g.txt'])
  const info = await sbx.files.getInfo('/home/user/d/f.txt')
  assert.equal(info.type, 'file')
  assert.equal(info.size, 3)
  assert.equal(info.permissions, '-rw-r--r--')
  assert.equal(info.owner, 'user')
  assert.ok(info.modifiedTime instanceof Date && Math.abs(info.modifiedTime - Date.now()) < 60_000)
  assert.equal(await sbx.files.exists('/home/user/d/f.txt'), true)
  assert.equal(await sbx.files.exists('/home/user/nope'), false)
  const moved = await sbx.files.rename('/home/user/d/f.txt', '/home/user/d/new/h.txt')
  assert.equal(moved.path, '/home/user/d/new/h.txt')
  assert.equal(await sbx.files.read('/home/user/d/new/h.txt'), 'abc')
  await sbx.files.remove('/home/user/d')
  assert.equal(await sbx.files.exists('/home/user/d'), false)
  await sbx.kill()
})

test('symlinks resolve inside the sandbox, never on the host', async () => {
  const sbx = await sandbox()
  await sbx.commands.run('ln -s /etc/hostname /home/user/link; ln -s /home/user/t.txt /tmp/tl')
  const info = await sbx.files.getInfo('/home/user/link')
  assert.equal(info.type, 'file', 'envd gives a symlink its target\'s type')
  assert.equal(info.symlinkTarget, '/etc/hostname')
  assert.equal(await sbx.files.read('/home/user/link'), 'e2b.local\n')
  await sbx.files.write('/tmp/tl', 'through the link')
  assert.equal(await sbx.files.read('/home/user/t.txt'), 'through the link')
  await sbx.kill()
})

test('missing files and directories map to FileNotFoundError / InvalidArgument', async () => {
  const sbx = await sandbox()
  await assert.rejects(sbx.files.read('/nope/x'), FileNotFoundError)
  await assert.rejects(sbx.files.getInfo('/nope'), FileNotFoundError)
  await assert.rejects(sbx.files.list('/nope'), FileNotFoundError)
  await assert.rejects(sbx.files.read('/home/user'), (e) => e.name === 'InvalidArgumentError')
  await sbx.kill()
})

test('file metadata: set on write (keys lowercased), reported by getInfo/list, replaced by the next write', async () => {
  const sbx = await sandbox()
  const info = await sbx.files.write('/tmp/meta.txt', 'm', { metadata: { Owner: 'alice', stage: 'raw' } })
  assert.deepEqual(info.metadata, { owner: 'alice', stage: 'raw' })
  assert.deepEqual((await sbx.files.getInfo('/tmp/meta.txt')).metadata, { owner: 'alice', stage: 'raw' })
  assert.deepEqual((await sbx.files.list('/tmp')).find((e) => e.name === 'meta.txt').metadata, { owner: 'alice', stage: 'raw' })
  await sbx.files.write('/tmp/meta.txt', 'm2')
  assert.equal((await sbx.files.getInfo('/tmp/meta.txt')).metadata, undefined)
  await sbx.kill()
})

test('downloads honour Accept-Encoding: gzip (streamed), identity otherwise, 406 when neither is acceptable', async () => {
  const { request } = await import('node:http')
  const { gunzipSync } = await import('node:zlib')
  const { envdHeaders } = await import('./helpers.mjs')
  const sbx = await sandbox()
  const big = new Uint8Array(2 << 20).map((_, i) => (i * 13) & 0xff)
  await sbx.files.write('/tmp/z.bin', big)
  assert.deepEqual(await sbx.files.read('/tmp/z.bin', { format: 'bytes', gzip: true }), big)
  const raw = (headers) =>
    new Promise((ok, fail) => {
      const req = request(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/z.bin`, { headers: envdHeaders(sbx, headers) }, (res) => {
        const chunks = []
        res.on('data', (d) => chunks.push(d))
        res.on('end', () => ok({ status: res.statusCode, enc: res.headers['content-encoding'], body: Buffer.concat(chunks) }))
      })
      req.on('error', fail)
      req.end()
    })
  const gz = await raw({ 'Accept-Encoding': 'gzip' })
  assert.equal(gz.enc, 'gzip')
  assert.ok(gz.body.length < big.length)
  assert.deepEqual(new Uint8Array(gunzipSync(gz.body)), big)
  const id = await raw({ 'Accept-Encoding': 'br' })
  assert.equal(id.enc, undefined)
  assert.equal(id.body.length, big.length)
  assert.equal((await raw({ 'Accept-Encoding': 'br, identity;q=0' })).status, 406)
  await sbx.kill()
})

test('list returns entries sorted by name, each directory followed by its own entries, as envd walks', async () => {
  const sbx = await sandbox()
  // created out of order, so directory order is not name order
  await sbx.commands.run('mkdir -p /tmp/order && cd /tmp/order && for n in zeta b a-b a/y a/x C _u; do mkdir -p "$(dirname "$n")"; : > "$n" 2>/dev/null || mkdir -p "$n"; done')
  const names = (await sbx.files.list('/tmp/order', { depth: 2 })).map((e) => e.path.slice('/tmp/order/'.length))
  assert.deepEqual(names, ['C', '_u', 'a', 'a/x', 'a/y', 'a-b', 'b', 'zeta'])
  await sbx.kill()
})
