// Containment of file operations through the unchanged SDK: /files and the
// Filesystem RPCs act as the requested user inside the sandbox, whatever the
// sandbox's own code planted. After each attack the server is still healthy.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { Sandbox } from './sdk.mjs'
import { pidsWithCmdline, sleep, useServer } from './helpers.mjs'

const S = useServer()
const DENIED = /permission denied|permission_denied|403/i
let bystander

// A bwrap process on the host binds the sandbox's home over /home/user (the
// sandbox boots while create returns: wait a little for it).
async function heldByBwrap(id) {
  for (let i = 0; i < 100; i++) {
    const held = pidsWithCmdline(`/sandboxes/${id}/home\0/home/user\0`).some((pid) => {
      try {
        return /(^|\/)bwrap$/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0])
      } catch {
        return false
      }
    })
    if (held) return true
    await sleep(50)
  }
  return false
}

// The first sandbox of the file is the bystander every check looks at.
// Without bubblewrap e2b-local runs sandboxes on the host itself, where these
// attacks (remove('/'), root writes) would hit the host: each sandbox must be
// held by bwrap before anything runs in it.
async function sandbox() {
  const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 120_000 })
  assert.ok(await heldByBwrap(sbx.sandboxId), "these attacks need e2b-local's bubblewrap isolation: not running them on the host")
  if (!bystander) {
    bystander = sbx
    return sandbox()
  }
  return sbx
}

async function asRoot(sbx, cmd) {
  return sbx.commands.run(cmd, { user: 'root' })
}

// The server survived: a new sandbox works end to end, the bystander still
// runs. attacker (optional): the attack's sandbox, killed first.
async function assertHealthy(attacker) {
  if (attacker) await attacker.kill()
  const sbx = await sandbox()
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
  await sbx.files.write('/home/user/health', 'ok')
  assert.equal(await sbx.files.read('/home/user/health'), 'ok')
  await sbx.kill()
  assert.equal((await bystander.commands.run('echo still')).stdout, 'still\n')
}

test('a download as the default user cannot read root-only files, even through its symlinks', async () => {
  const sbx = await sandbox()
  await asRoot(sbx, 'printf s3cret > /root/secret; printf s3cret > /tmp/rootonly; chmod 600 /tmp/rootonly')
  await sbx.commands.run('ln -s /root/secret ~/x; ln -s /tmp/rootonly ~/y; ln -s /root ~/r')
  for (const p of ['/tmp/rootonly', '/root/secret', '/home/user/x', '/home/user/y', '/home/user/r/secret'])
    await assert.rejects(sbx.files.read(p), DENIED, p)
  assert.equal(await sbx.files.read('/root/secret', { user: 'root' }), 's3cret')
  await assertHealthy(sbx)
})

test('an upload through a symlink the user planted is not a root write', async () => {
  const sbx = await sandbox()
  await asRoot(sbx, 'printf original > /tmp/rootfile; chmod 644 /tmp/rootfile')
  await sbx.commands.run('ln -s /tmp/rootfile ~/w; ln -s /root ~/r')
  await assert.rejects(sbx.files.write('/home/user/w', 'overwritten'), DENIED)
  await assert.rejects(sbx.files.write('/home/user/r/planted', 'planted'), DENIED)
  await assert.rejects(sbx.files.write('/home/user/r/sub/planted', 'x', { useOctetStream: true }), DENIED)
  assert.equal((await asRoot(sbx, 'cat /tmp/rootfile; ls /root')).stdout, 'original')
  await assertHealthy(sbx)
})

test('Filesystem RPCs run as the requested user', async () => {
  const sbx = await sandbox()
  await asRoot(sbx, 'printf x > /root/secret; mkdir /tmp/rootdir; printf x > /tmp/rootdir/f')
  await assert.rejects(sbx.files.getInfo('/root/secret'), DENIED)
  await assert.rejects(sbx.files.list('/root'), DENIED)
  await assert.rejects(sbx.files.makeDir('/root/mine'), DENIED)
  await assert.rejects(sbx.files.rename('/tmp/rootdir/f', '/tmp/stolen'), DENIED)
  await assert.rejects(sbx.files.remove('/tmp/rootdir/f'), DENIED)
  await assert.rejects(sbx.files.watchDir('/root', () => {}), DENIED)
  assert.equal((await asRoot(sbx, 'ls /tmp/rootdir /root')).stdout, '/root:\nsecret\n\n/tmp/rootdir:\nf\n')
  // root keeps root's powers
  assert.equal((await sbx.files.getInfo('/root/secret', { user: 'root' })).owner, 'root')
  const w = await sbx.files.watchDir('/root', () => {}, { user: 'root' })
  await w.stop()
  await assertHealthy(sbx)
})

test('a recursive watch as user reports nothing from inside a directory user may not read', async () => {
  const sbx = await sandbox()
  const seen = []
  const w = await sbx.files.watchDir('/tmp', (e) => seen.push(e.name), { recursive: true })
  // the pauses let the agent follow each new directory before it is filled
  await asRoot(sbx, 'mkdir -m 700 /tmp/rootdir; sleep 0.3; printf x > /tmp/rootdir/secret-name; ' +
    'mkdir -m 755 /tmp/open; sleep 0.3; printf x > /tmp/open/visible')
  for (let i = 0; i < 100 && !seen.includes('open/visible'); i++) await sleep(50)
  await w.stop()
  assert.ok(seen.includes('open/visible'), JSON.stringify(seen))
  assert.ok(!seen.some((n) => n.includes('secret-name')), JSON.stringify(seen))
  await assertHealthy(sbx)
})

test("remove('/') as the default user is refused and root's entries stay", async () => {
  const sbx = await sandbox()
  await asRoot(sbx, 'mkdir /tmp/rootdir; printf x > /tmp/rootdir/f; printf y > /root/keep')
  await assert.rejects(sbx.files.remove('/'), DENIED)
  const r = await asRoot(sbx, 'test -f /tmp/rootdir/f && test -f /root/keep && test -d /run && test -d /var/tmp && echo kept')
  assert.equal(r.stdout, 'kept\n')
  await assertHealthy(sbx)
})

test("an upload as root to /proc/sys never changes the host's kernel settings", async () => {
  const path = '/proc/sys/kernel/domainname'
  const original = readFileSync(path, 'utf8')
  try {
    const sbx = await sandbox()
    await sbx.files.write(path, 'pwned-by-sdk', { user: 'root' }).catch(() => {})
    assert.equal(readFileSync(path, 'utf8'), original)
    await sbx.kill()
  } finally {
    if (readFileSync(path, 'utf8') !== original) writeFileSync(path, original.replace(/\n$/, ''))
  }
  await assertHealthy()
})

test('listing a huge tree is a clear error, not an unbounded answer', async () => {
  const sbx = await sandbox()
  await asRoot(sbx, 'mkdir -p /dev/shm/wide && cd /dev/shm/wide && seq 1 20001 | xargs touch')
  await assert.rejects(sbx.files.list('/dev/shm/wide', { depth: 1000, user: 'root' }), /more than \d+ entries/)
  await assertHealthy(sbx)
})

test('kill removes a 2,000-deep tree a user built, and the server stays up', async () => {
  const sbx = await sandbox()
  const deepTree = "mkdir -p /tmp/deep && cd /tmp/deep && perl -e 'for (1..2000) { mkdir q(d) or die $!; chdir q(d) or die $! }' && echo built"
  const r = await sbx.commands.run(deepTree, { timeoutMs: 120_000 })
  assert.equal(r.stdout, 'built\n')
  await sbx.kill()
  assert.equal(await Sandbox.kill(sbx.sandboxId, S.opts), false)
  await assertHealthy()
})

// Holds every inotify instance it can (the per-user limit), says how many and
// the errno that stopped it, and keeps them.
const INOTIFY_HOG = `python3 -c '
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
held = 0
while libc.inotify_init1(0) >= 0:
    held += 1
print(held, ctypes.get_errno(), flush=True)
time.sleep(1000)'`

test("a sandbox holding every inotify instance it may leaves another sandbox's watchDir working", async () => {
  const a = await sandbox()
  const b = await sandbox()
  for (const user of ['user', 'root'])
    await a.commands.run(`(${INOTIFY_HOG} >/tmp/hog-${user} 2>&1 </dev/null &)`, { user })
  for (const user of ['user', 'root']) {
    let out = ''
    for (let i = 0; i < 200 && !/^\d+ 24\n$/.test(out); i++) {
      out = (await a.commands.run(`cat /tmp/hog-${user}`)).stdout
      if (!/^\d+ 24\n$/.test(out)) await sleep(50)
    }
    assert.match(out, /^\d+ 24\n$/, `${user}'s hog did not reach the limit (EMFILE)`)
  }
  const seen = []
  const w = await b.files.watchDir('/home/user', (e) => seen.push(e.name))
  await b.files.write('/home/user/watched', 'x')
  for (let i = 0; i < 100 && !seen.includes('watched'); i++) await sleep(50)
  await w.stop()
  assert.ok(seen.includes('watched'), JSON.stringify(seen))
  await assertHealthy(a)
})
