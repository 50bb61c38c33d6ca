// The rest of the control plane through the unchanged SDK (and raw HTTP where
// the SDK has no call): metrics, network, refreshes, logs, snapshots,
// volumes, operator templates, and state that survives a restart.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer, request as httpRequest } from 'node:http'
import { join } from 'node:path'
import { Sandbox, SandboxError, SandboxNotFoundError, Template, Volume, VolumeNotFoundError } from './sdk.mjs'
import { sdkOpts, startServer } from './server.mjs'
import { controlApi, markInternet, pidsWithEnv, useServer } from './helpers.mjs'

const S = useServer()

const api = controlApi(S)

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

// ---- network: every sandbox has its own network namespace; its only way
// out is e2b-local's filtering HTTP proxy (http_proxy=127.0.0.1:3128 inside).
// The host servers below stand in for "the internet": loopback only, their
// ports marked as the internet (the host's loopback itself never is).

// An HTTP server on the host answering `name` on / and streaming on /slow.
// Runs fn(a, b) with the two host servers A (127.0.0.1) and B (127.0.0.2).
async function withHostServers(fn) {
  const a = await hostServer('127.0.0.1', 'A')
  const b = await hostServer('127.0.0.2', 'B')
  try {
    await markInternet(S, [a.port, b.port])
    await fn(a, b)
  } finally {
    await markInternet(S, [])
    a.close()
    b.close()
  }
}

async function hostServer(host, name) {
  const srv = createServer((req, res) => {
    if (req.url === '/slow') {
      srv.slowStarted?.()
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      const t = setInterval(() => res.write('x'), 100)
      res.on('close', () => {
        clearInterval(t)
        srv.slowClosed?.()
      })
      return
    }
    res.end(name)
  })
  await new Promise((ok) => srv.listen(0, host, ok))
  srv.url = `http://${host}:${srv.address().port}`
  srv.port = srv.address().port
  return srv
}

// curl inside the sandbox (through the proxy, as its environment says):
// "<body> <status>", or "000" when nothing answered.
async function fetchIn(sbx, url, flags = '') {
  const cmd = `curl -s -m 5 ${flags} -w ' %{http_code}' '${url}' || true`
  return (await sbx.commands.run(cmd)).stdout.trim()
}

const ifaces = async (sbx) => (await sbx.commands.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout.trim()

test('network: deny-all drops (no HTTP answer, 000), allow-all reaches the host through the proxy, nothing bypasses it', () => withHostServers(async (a, b) => {
  const closed = await sandbox({ allowInternetAccess: false })
  assert.equal(await ifaces(closed), 'lo')
  assert.equal((await closed.getInfo()).allowInternetAccess, false)
  assert.equal(await fetchIn(closed, a.url), '000')
  assert.equal(await fetchIn(closed, a.url, '-p'), '000', 'CONNECT is dropped too')
  assert.equal(await fetchIn(closed, `http://localhost:${a.port}/`), '000')
  // the sandbox's own loopback is not egress: its servers answer whatever the policy
  await closed.files.write('/home/user/www/index.html', 'own')
  await closed.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory /home/user/www', { background: true })
  let own
  for (let i = 0; i < 50 && own !== 'own 200'; i++) own = await fetchIn(closed, 'http://localhost:8000/')
  assert.equal(own, 'own 200')
  assert.equal(await fetchIn(closed, 'http://127.0.0.1:8000/', '-p'), 'own 200')
  assert.equal(await fetchIn(closed, 'http://127.0.0.1:8000/', "--noproxy '*'"), 'own 200')
  await closed.kill()
  const viaDeny = await sandbox({ network: { denyOut: ['0.0.0.0/0'] } })
  assert.equal(await fetchIn(viaDeny, b.url), '000')
  assert.deepEqual((await viaDeny.getInfo()).network.denyOut, ['0.0.0.0/0'])
  await viaDeny.kill()

  const open = await sandbox()
  assert.equal(await ifaces(open), 'lo', 'allow-all sandboxes get their own namespace too')
  const env = (await open.commands.run('echo "$http_proxy $HTTPS_PROXY [$no_proxy]"')).stdout.trim()
  assert.equal(env, 'http://127.0.0.1:3128 http://127.0.0.1:3128 []')
  assert.equal(await fetchIn(open, a.url), 'A 200')
  assert.equal(await fetchIn(open, b.url), 'B 200')
  assert.equal(await fetchIn(open, `http://localhost:${a.port}/`), 'A 200')
  assert.equal(await fetchIn(open, a.url, '-p'), 'A 200', 'CONNECT tunnel')
  assert.equal(await fetchIn(open, `http://denied.localhost:${a.port}/`), 'A 200', '*.localhost is loopback (RFC 6761)')
  // an allowed destination where nothing listens fails like a direct connection: no HTTP answer
  assert.equal(await fetchIn(open, 'http://localhost:1/'), '000')
  // a program that ignores the proxy variables has no network
  assert.equal(await fetchIn(open, a.url, "--noproxy '*'"), '000')
  // a user's env entries override the defaults
  assert.equal((await open.commands.run('echo $http_proxy', { envs: { http_proxy: 'http://mine:1' } })).stdout, 'http://mine:1\n')
  await open.kill()
}))

test('network: allow-lists (names, wildcards, IPs, CIDRs) and deny CIDRs are enforced, resolved addresses included; bad entries are 400', () => withHostServers(async (a, b) => {
  // a name is allowed as a name: the raw IPs (even its own) are not listed
  const byName = await sandbox({ network: { denyOut: ['0.0.0.0/0'], allowOut: ['localhost'] } })
  assert.equal(await fetchIn(byName, `http://localhost:${a.port}/`), 'A 200')
  assert.equal(await fetchIn(byName, `http://LOCALHOST.:${a.port}/`, '-p'), 'A 200')
  assert.equal(await fetchIn(byName, a.url), '000')
  assert.equal(await fetchIn(byName, b.url), '000')
  assert.deepEqual((await byName.getInfo()).network.allowOut, ['localhost'])
  await byName.kill()
  // an IP/CIDR allows that address, and a name resolving into it
  const byCidr = await sandbox({ allowInternetAccess: false, network: { allowOut: ['127.0.0.1/32'] } })
  assert.equal(await fetchIn(byCidr, a.url), 'A 200')
  assert.equal(await fetchIn(byCidr, `http://localhost:${a.port}/`), 'A 200', 'localhost resolves to 127.0.0.1')
  assert.equal(await fetchIn(byCidr, b.url), '000')
  await byCidr.kill()
  // a wildcard matches subdomains only
  const wild = await sandbox({ network: { denyOut: ['0.0.0.0/0'], allowOut: ['*.localhost', '127.0.0.2'] } })
  assert.equal(await fetchIn(wild, b.url), 'B 200')
  assert.equal(await fetchIn(wild, `http://localhost:${a.port}/`), '000')
  await wild.kill()
  // deny CIDRs without deny-all: everything else stays open; a name cannot bypass a denied CIDR
  const denied = await sandbox({ network: { denyOut: ['127.0.0.1/32'] } })
  assert.equal(await fetchIn(denied, a.url), '000')
  assert.equal(await fetchIn(denied, `http://localhost:${a.port}/`), '000', 'resolved to a denied address')
  assert.equal(await fetchIn(denied, b.url), 'B 200')
  await denied.kill()
  // allow entries win over deny entries
  const both = await sandbox({ network: { denyOut: ['127.0.0.0/8'], allowOut: ['127.0.0.2'] } })
  assert.equal(await fetchIn(both, b.url), 'B 200')
  assert.equal(await fetchIn(both, a.url), '000')
  await both.kill()
  // refused with a clear 400: malformed entries, domains in deny rules, an upstream SOCKS proxy
  await assert.rejects(sandbox({ network: { denyOut: ['0.0.0.0/0'], allowOut: ['not a host!'] } }), /400.*allowOut entry/)
  await assert.rejects(sandbox({ network: { denyOut: ['example.com'] } }), /400.*denyOut entry/)
  await assert.rejects(sandbox({ network: { denyOut: ['10.0.0.0/33'] } }), /400.*denyOut entry/)
  await assert.rejects(sandbox({ network: { egressProxy: { address: '127.0.0.1:1080' } } }), /400.*egressProxy/)
}))

test('network: a live PUT switches all -> none -> allow-list -> all for the next connection and closes relays it denies', () => withHostServers(async (a, b) => {
  const sbx = await sandbox()
  assert.equal(await fetchIn(sbx, a.url), 'A 200')
  // a long download is open when the policy changes: its relay is closed
  const within = (ms, what) => new Promise((ok, fail) => {
    const t = setTimeout(() => fail(new Error(`${what} within ${ms} ms`)), ms)
    what === 'started' ? (a.slowStarted = () => ok(clearTimeout(t))) : (a.slowClosed = () => ok(clearTimeout(t)))
  })
  const started = within(10_000, 'started')
  const slow = await sbx.commands.run(`curl -s -N ${a.url}/slow -o /tmp/slow`, { background: true })
  await started
  const ended = within(3000, 'the open relay was closed')
  await sbx.updateNetwork({ allowInternetAccess: false })
  await ended
  await assert.rejects(slow.wait(), (e) => e.exitCode !== 0)
  assert.equal((await sbx.getInfo()).allowInternetAccess, false)
  assert.equal(await fetchIn(sbx, a.url), '000')
  assert.equal(await fetchIn(sbx, b.url), '000')
  await sbx.updateNetwork({ denyOut: ['0.0.0.0/0'], allowOut: ['127.0.0.2'] })
  assert.equal(await fetchIn(sbx, b.url), 'B 200')
  assert.equal(await fetchIn(sbx, a.url), '000')
  assert.deepEqual((await sbx.getInfo()).network.allowOut, ['127.0.0.2'])
  await sbx.updateNetwork({})
  assert.equal(await fetchIn(sbx, a.url), 'A 200')
  assert.equal(await fetchIn(sbx, b.url), 'B 200')
  assert.equal((await sbx.getInfo()).allowInternetAccess, true)
  // bad updates are 400 and change nothing
  await assert.rejects(sbx.updateNetwork({ denyOut: ['example.com'] }), /400/)
  assert.equal(await fetchIn(sbx, a.url), 'A 200')
  // a paused sandbox's update applies when it runs again
  await sbx.pause()
  await Sandbox.updateNetwork(sbx.sandboxId, { allowInternetAccess: false }, S.opts)
  const again = await Sandbox.connect(sbx.sandboxId, S.opts)
  assert.equal(await fetchIn(again, a.url), '000')
  await again.kill()
  await assert.rejects(Sandbox.updateNetwork(sbx.sandboxId, {}, S.opts), SandboxNotFoundError)
}))

test("network: e2b-local's own listener is never reachable through the proxy, whatever the policy", async () => {
  const port = new URL(S.env.E2B_API_URL).port
  const open = await sandbox()
  assert.equal(await fetchIn(open, `http://127.0.0.1:${port}/health`), '000')
  assert.equal(await fetchIn(open, `http://localhost:${port}/health`), '000')
  assert.equal(await fetchIn(open, `http://127.0.0.1:${port}/health`, '-p'), '000')
  assert.equal(await fetchIn(open, `http://0.0.0.0:${port}/health`), '000')
  assert.equal(await fetchIn(open, `http://[::ffff:127.0.0.1]:${port}/health`), '000')
  await open.updateNetwork({ denyOut: ['0.0.0.0/0'], allowOut: ['127.0.0.0/8', 'localhost'] })
  assert.equal(await fetchIn(open, `http://127.0.0.1:${port}/health`), '000')
  assert.equal(await fetchIn(open, `http://localhost:${port}/health`), '000')
  // a request the proxy cannot parse is answered 400, never forwarded
  const bad = (await open.commands.run("printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128; cat >&3; head -1 <&3'")).stdout
  assert.match(bad, /^HTTP\/1.1 400/)
  await open.kill()
})

test('port forwarding: two sandboxes serving on the same port each answer with their own content', async () => {
  const [one, two] = await Promise.all([sandbox(), sandbox()])
  for (const [sbx, text] of [[one, 'first'], [two, 'second']]) {
    await sbx.files.write('/home/user/www/index.html', text)
    await sbx.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory /home/user/www', { background: true })
  }
  const p = new URL(S.env.E2B_API_URL).port
  const get = (sbx) =>
    new Promise((ok, fail) => {
      const req = httpRequest({ host: '127.0.0.1', port: p, path: '/index.html', headers: { Host: sbx.getHost(8000) } }, (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => ok({ status: res.statusCode, body }))
      })
      req.on('error', fail)
      req.end()
    })
  for (const [sbx, text] of [[one, 'first'], [two, 'second']]) {
    let r
    for (let i = 0; i < 100; i++) {
      r = await get(sbx)
      if (r.status === 200) break
      await new Promise((ok) => setTimeout(ok, 100))
    }
    assert.deepEqual(r, { status: 200, body: text })
  }
  await Promise.all([one.kill(), two.kill()])
})

test('network: without isolation a restricted policy is refused with 400, never silently open', async () => {
  const srv = await startServer({ extraArgs: ['--no-isolation', '--no-freezer'] })
  try {
    const opts = sdkOpts(srv.env)
    await assert.rejects(Sandbox.create({ ...opts, allowInternetAccess: false }), /400.*isolation/)
    await assert.rejects(Sandbox.create({ ...opts, network: { denyOut: ['10.0.0.0/8'] } }), /400.*isolation/)
    const sbx = await Sandbox.create({ ...opts, network: { allowOut: ['1.1.1.1'] } })
    await assert.rejects(sbx.updateNetwork({ denyOut: ['0.0.0.0/0'] }), /400.*isolation/)
    assert.equal((await sbx.commands.run('echo "[$http_proxy]"')).stdout, '[]\n', 'no forwarder, no proxy variables')
    await sbx.kill()
  } finally {
    const res = await srv.stop()
    assert.equal(res.code, 0, res.stderr)
  }
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
  // E2B's fields are a map of strings (SandboxLogEntry.fields: additionalProperties string)
  const started = v1.logEntries.find((l) => /process \d+ started/.test(l.message))
  assert.equal(typeof started.fields.pid, 'string')
  for (const l of v1.logEntries) {
    for (const v of Object.values(l.fields)) assert.equal(typeof v, 'string', JSON.stringify(l))
  }
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

test('template aliases: the SDK asks whether a template exists by its alias (base, snapshots) and gets a yes or no', async () => {
  assert.equal(await Template.exists('base', S.opts), true)
  assert.equal(await Template.exists('no-such-template-anywhere', S.opts), false)
  const res = await api('/templates/aliases/base')
  assert.equal(res.status, 200)
  const body = await res.json()
  assert.equal(typeof body.templateID, 'string')
  assert.equal(body.public, true)
  assert.equal((await api('/templates/aliases/base', { headers: { 'X-API-Key': 'wrong' } })).status, 401)
})

test('list: startedAfter includes a sandbox started exactly at that instant, as E2B does', async () => {
  const sbx = await sandbox()
  const info = await sbx.getInfo()
  const at = info.startedAt.toISOString()
  const page = await (await api(`/v2/sandboxes?startedAfter=${encodeURIComponent(at)}`)).json()
  assert.ok(page.some((s) => s.sandboxID === sbx.sandboxId), `started at ${at}, listed: ${JSON.stringify(page.map((s) => s.startedAt))}`)
  await sbx.kill()
})

test('mcp: accepted at create; when the gateway cannot start the SDK kills the sandbox it made and says why', async () => {
  const tag = `mcp-${Date.now()}`
  await assert.rejects(
    Sandbox.create({ ...S.opts, template: 'base', metadata: { tag }, mcp: { exa: { apiKey: 'not-a-real-key' } } }),
    (err) => {
      assert.ok(err instanceof SandboxError, String(err))
      assert.match(err.message, /Failed to start MCP gateway/)
      return true
    },
  )
  const left = await (await api(`/v2/sandboxes?metadata=${encodeURIComponent(`tag=${tag}`)}`)).json()
  assert.deepEqual(left, [], 'the sandbox the SDK created was killed')
  const bad = await api('/sandboxes', { method: 'POST', body: JSON.stringify({ templateID: 'base', mcp: 'yes' }) })
  assert.equal(bad.status, 400)
  assert.match((await bad.json()).message, /mcp/)
})

test('port proxy: a sandbox that is not running answers E2B\'s "The sandbox was not found"; maskRequestHost arrives as a standard Host header', async () => {
  const sbx = await sandbox({ network: { maskRequestHost: 'masked.example:${PORT}' } })
  // a server that answers with the raw request head it received
  await sbx.files.write('/home/user/echo.py', [
    'import socket',
    's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
    's.bind(("127.0.0.1", 8001)); s.listen(8)',
    'while True:',
    '    c, _ = s.accept(); head = b""',
    '    while b"\\r\\n\\r\\n" not in head: head += c.recv(4096)',
    '    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % len(head) + head); c.close()',
  ].join('\n'))
  await sbx.commands.run('python3 /home/user/echo.py', { background: true })
  const p = new URL(S.env.E2B_API_URL).port
  const get = (host) =>
    new Promise((ok, fail) => {
      // lower-case "host", as fetch/undici send it
      const req = httpRequest({ host: '127.0.0.1', port: p, path: '/', headers: { host } }, (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => ok({ status: res.statusCode, body }))
      })
      req.on('error', fail)
      req.end()
    })
  let r
  for (let i = 0; i < 100; i++) {
    r = await get(sbx.getHost(8001))
    if (r.status === 200) break
    await new Promise((ok) => setTimeout(ok, 100))
  }
  assert.equal(r.status, 200)
  assert.match(r.body, /\r\nHost: masked\.example:8001\r\n/, r.body)
  await sbx.kill()
  r = await get(sbx.getHost(8001))
  assert.equal(r.status, 502)
  assert.equal(JSON.parse(r.body).message, 'The sandbox was not found')
})

test('snapshots: a sandbox from one keeps the env vars of the snapshotted sandbox (E2B restores envd\'s memory); envs at its create replace them', async () => {
  const sbx = await sandbox({ envs: { FROM: 'parent', KEEP: 'k' } })
  const snap = await sbx.createSnapshot()
  const plain = await Sandbox.create(snap.snapshotId, { ...S.opts })
  assert.equal((await plain.commands.run('echo "$FROM/$KEEP"')).stdout, 'parent/k\n')
  const own = await Sandbox.create(snap.snapshotId, { ...S.opts, envs: { FROM: 'child' } })
  assert.equal((await own.commands.run('echo "$FROM/$KEEP"')).stdout, 'child/\n')
  await Promise.all([plain, own, sbx].map((s) => s.kill()))
  await Sandbox.deleteSnapshot(snap.snapshotId, S.opts)
})

test('snapshots: one a running or paused sandbox was created from cannot be deleted (400, as on E2B) until that sandbox is gone', async () => {
  const sbx = await sandbox()
  const snap = await sbx.createSnapshot()
  const child = await Sandbox.create(snap.snapshotId, { ...S.opts })
  const del = () => api(`/templates/${encodeURIComponent(snap.snapshotId)}`, { method: 'DELETE' })
  let r = await del()
  assert.equal(r.status, 400)
  assert.match((await r.json()).message, /running sandboxes using it/)
  await child.pause()
  r = await del()
  assert.equal(r.status, 400)
  assert.match((await r.json()).message, /paused sandboxes using it/)
  await child.kill()
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, S.opts), true)
  await sbx.kill()
})

test('fork: every fork carries the parent\'s metadata (E2B boots it from the snapshot, which keeps it); a create from a snapshot has only its own', async () => {
  const parent = await sandbox({ metadata: { app: 'demo', lua_e2b_id: 'p1' } })
  const forks = await Sandbox.fork(parent.sandboxId, { ...S.opts, count: 2, timeoutMs: 60_000 })
  for (const f of forks) assert.deepEqual((await f.getInfo()).metadata, { app: 'demo', lua_e2b_id: 'p1' })
  const listed = await Sandbox.list({ ...S.opts, query: { metadata: { lua_e2b_id: 'p1' } } }).nextItems()
  assert.deepEqual(listed.map((s) => s.sandboxId).sort(), [parent.sandboxId, ...forks.map((f) => f.sandboxId)].sort())
  const snap = await parent.createSnapshot()
  const bare = await Sandbox.create(snap.snapshotId, { ...S.opts })
  assert.deepEqual((await bare.getInfo()).metadata, {})
  const own = await Sandbox.create(snap.snapshotId, { ...S.opts, metadata: { lua_e2b_id: 'c1' } })
  assert.deepEqual((await own.getInfo()).metadata, { lua_e2b_id: 'c1' })
  await Promise.all([...forks, bare, own, parent].map((s) => s.kill()))
  await Sandbox.deleteSnapshot(snap.snapshotId, S.opts)
})

test('fork: count new sandboxes from a running one\'s files, the parent going on; 404 for an unknown or killed one', async () => {
  const parent = await sandbox({ envs: { FROM: 'parent' } })
  await parent.files.write('/home/user/state.txt', 'forked state')
  const forks = await Sandbox.fork(parent.sandboxId, { ...S.opts, count: 2, timeoutMs: 60_000 })
  assert.equal(forks.length, 2)
  const ids = new Set()
  for (const f of forks) {
    assert.ok(f instanceof Sandbox, String(f))
    ids.add(f.sandboxId)
    assert.notEqual(f.sandboxId, parent.sandboxId)
    assert.equal(await f.files.read('/home/user/state.txt'), 'forked state')
    assert.equal((await f.commands.run('echo $FROM')).stdout, 'parent\n')
  }
  assert.equal(ids.size, 2)
  // each is a sandbox of its own: a write in one is not in the other or the parent
  await forks[0].files.write('/home/user/only0', 'x')
  assert.equal(await forks[1].files.exists('/home/user/only0'), false)
  assert.equal(await parent.files.exists('/home/user/only0'), false)
  assert.equal((await parent.getInfo()).state, 'running')
  assert.ok(!(await (await api('/snapshots')).json()).some((s) => s.names.some((n) => n.includes('fork-of'))), 'the fork snapshot is gone')
  await Promise.all(forks.map((f) => f.kill()))
  await parent.kill()
  await assert.rejects(Sandbox.fork(parent.sandboxId, { ...S.opts }), SandboxNotFoundError)
  const bad = await api(`/sandboxes/${parent.sandboxId}/fork`, { method: 'POST', body: JSON.stringify({ count: 0 }) })
  assert.equal(bad.status, 400)
})
