// Isolation: what one sandbox's processes can see, and that a kill leaves
// nothing behind on the host.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { Sandbox } from './sdk.mjs'
import { pidsWithEnv, sandboxCgroup, sleep, useServer } from './helpers.mjs'

const S = useServer()

async function sandbox(opts = {}) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, ...opts })
}

test('a sandbox cannot see another sandbox\'s processes', async () => {
  const a = await sandbox()
  const b = await sandbox()
  await a.commands.run('sleep 777', { background: true })
  const ps = await b.commands.run('ps -eo pid,args')
  assert.ok(!ps.stdout.includes('sleep 777'), ps.stdout)
  const own = await a.commands.run('ps -eo pid,args')
  assert.ok(own.stdout.includes('sleep 777'))
  // the agent is pid 1 of every sandbox
  assert.match((await b.commands.run('tr "\\0" " " < /proc/1/cmdline')).stdout, /agent/)
  await a.kill()
  await b.kill()
})

test('/home/user and /tmp are per sandbox', async () => {
  const a = await sandbox()
  const b = await sandbox()
  await a.files.write('/home/user/secret', 'a-home')
  await a.files.write('/tmp/secret', 'a-tmp')
  assert.equal(await b.files.exists('/home/user/secret'), false)
  assert.equal(await b.files.exists('/tmp/secret'), false)
  const r = await b.commands.run('ls -A /home/user /tmp; cat /home/user/secret /tmp/secret 2>&1 || true')
  assert.ok(!r.stdout.includes('a-home') && !r.stdout.includes('a-tmp'))
  await a.kill()
  await b.kill()
})

test('the state directory and the host\'s private paths are unreachable', async () => {
  const sbx = await sandbox()
  const r = await sbx.commands.run(
    `for p in ${S.srv.state} /work /root/.. /home; do ls -A $p >/dev/null 2>&1 && echo "$p visible"; done; ls -A /home; true`,
  )
  assert.ok(!r.stdout.includes(S.srv.state), r.stdout)
  assert.ok(!r.stdout.includes('/work visible'), r.stdout)
  assert.equal(r.stdout.trim().split('\n').pop(), 'user', 'only /home/user exists under /home')
  assert.equal(await sbx.files.exists(S.srv.state), false)
  // not even root inside the sandbox can mount its way out
  const m = await sbx.commands.run('mount -t tmpfs x /mnt 2>&1; echo rc=$?', { user: 'root' })
  assert.match(m.stdout, /rc=(?!0)/)
  // nor create a device node for the host's disk
  const d = await sbx.commands.run('mknod /tmp/disk b 8 0 2>&1; echo rc=$?', { user: 'root' })
  assert.match(d.stdout, /rc=(?!0)/)
  await sbx.kill()
})

test('host environment (API key) does not leak into sandboxes', async () => {
  const sbx = await sandbox()
  const r = await sbx.commands.run('cat /proc/1/environ | tr "\\0" "\\n"; env', { user: 'root' })
  assert.ok(!r.stdout.includes(S.env.E2B_API_KEY))
  await sbx.kill()
})

test('a sandbox without internet access has only loopback', async () => {
  const sbx = await sandbox({ allowInternetAccess: false })
  const r = await sbx.commands.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
  assert.equal(r.stdout.trim(), 'lo')
  await sbx.kill()
})

test('kill leaves no process behind (checked from the host)', async () => {
  const marker = `k${Date.now()}`
  const sbx = await sandbox({ envs: { E2B_SPEC_MARKER: marker } })
  await sbx.commands.run('sleep 900', { background: true })
  // a double-forked daemon escapes its parent, not the sandbox
  await sbx.commands.run('(setsid sleep 901 >/dev/null 2>&1 &) ; true')
  await sbx.commands.run('nohup sleep 902 >/dev/null 2>&1 &', { user: 'root' })
  await sleep(200)
  assert.ok(pidsWithEnv('E2B_SPEC_MARKER', marker).length >= 3)
  const cg = sandboxCgroup(sbx.sandboxId)
  await sbx.kill()
  assert.deepEqual(pidsWithEnv('E2B_SPEC_MARKER', marker), [])
  if (cg) assert.equal(existsSync(cg) ? readFileSync(`${cg}/cgroup.procs`, 'utf8') : '', '')
})
