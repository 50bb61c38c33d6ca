// The rest of envd: directory watches (stream and polling), the port proxy
// (HTTP and WebSocket upgrades, traffic access token).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { Sandbox } from './sdk.mjs'
import { envdHeaders, sleep, useServer, wsEcho } from './helpers.mjs'

const S = useServer()

async function sandbox(opts = {}) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, ...opts })
}

const unary = (sbx, method, msg) =>
  fetch(`${S.env.E2B_SANDBOX_URL}/filesystem.Filesystem/${method}`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/json' }),
    body: JSON.stringify(msg),
  })

async function until(fn, ms = 5000) {
  const t0 = Date.now()
  while (Date.now() - t0 < ms) {
    if (await fn()) return true
    await sleep(50)
  }
  return false
}

test('watchDir: create, write, rename, remove events (recursive, with entries); stop ends it', async () => {
  const sbx = await sandbox()
  await sbx.files.makeDir('/home/user/w')
  const events = []
  const handle = await sbx.files.watchDir('/home/user/w', (e) => events.push(e), { recursive: true, includeEntry: true })
  await sbx.files.write('/home/user/w/a.txt', 'x')
  await sbx.commands.run('mkdir /home/user/w/sub && sleep 0.2 && echo y > /home/user/w/sub/b.txt && mv /home/user/w/a.txt /home/user/w/c.txt && rm /home/user/w/c.txt')
  assert.ok(await until(() => events.some((e) => e.name === 'c.txt' && e.type === 'remove')), JSON.stringify(events))
  const kinds = new Set(events.map((e) => `${e.name}:${e.type}`))
  for (const k of ['a.txt:create', 'a.txt:write', 'sub:create', 'sub/b.txt:create', 'sub/b.txt:write', 'a.txt:rename', 'c.txt:create', 'c.txt:remove'])
    assert.ok(kinds.has(k), `${k} in ${[...kinds]}`)
  const withEntry = events.find((e) => e.name === 'sub/b.txt' && e.type === 'create')
  assert.equal(withEntry.entry?.path, '/home/user/w/sub/b.txt')
  await handle.stop()
  const n = events.length
  await sbx.files.write('/home/user/w/late.txt', 'x')
  await sleep(300)
  assert.equal(events.length, n, 'no events after stop')
  // not a directory / missing
  await assert.rejects(sbx.files.watchDir('/home/user/w/late.txt', () => {}), (e) => e.name === 'InvalidArgumentError')
  await assert.rejects(sbx.files.watchDir('/nope', () => {}), (e) => e.name === 'NotFoundError' || e.name === 'FileNotFoundError')
  await sbx.kill()
})

test('watchDir: a non-recursive watch ignores subdirectories; a killed sandbox ends the watch', async () => {
  const sbx = await sandbox()
  await sbx.commands.run('mkdir -p /tmp/nr/deep')
  const events = []
  let exited
  const ended = new Promise((ok) => (exited = ok))
  await sbx.files.watchDir('/tmp/nr', (e) => events.push(e), { onExit: (err) => exited(err) })
  await sbx.commands.run('echo 1 > /tmp/nr/deep/x; echo 2 > /tmp/nr/top')
  assert.ok(await until(() => events.some((e) => e.name === 'top')))
  assert.ok(!events.some((e) => e.name.startsWith('deep/')))
  await sbx.kill()
  await ended
})

test('watcher RPCs: CreateWatcher, GetWatcherEvents drains, RemoveWatcher', async () => {
  const sbx = await sandbox()
  let res = await unary(sbx, 'CreateWatcher', { path: '/tmp', recursive: false })
  assert.equal(res.status, 200)
  const { watcherId } = await res.json()
  assert.ok(watcherId)
  await sbx.files.write('/tmp/p1', 'a')
  let got = []
  assert.ok(
    await until(async () => {
      const body = await (await unary(sbx, 'GetWatcherEvents', { watcherId })).json()
      got.push(...(body.events || []))
      return got.some((e) => e.name === 'p1' && e.type === 'EVENT_TYPE_WRITE')
    }),
  )
  assert.ok(got.some((e) => e.name === 'p1' && e.type === 'EVENT_TYPE_CREATE'))
  // A write may report more than one WRITE (truncate, then data): take what
  // is left until an answer is empty; taken events never come back.
  const events = async () => (await (await unary(sbx, 'GetWatcherEvents', { watcherId })).json()).events || []
  assert.ok(await until(async () => (await events()).length === 0))
  assert.deepEqual(await (await unary(sbx, 'GetWatcherEvents', { watcherId })).json(), {}, 'drained')
  assert.equal((await unary(sbx, 'RemoveWatcher', { watcherId })).status, 200)
  res = await unary(sbx, 'GetWatcherEvents', { watcherId })
  assert.equal((await res.json()).code, 'not_found')
  res = await unary(sbx, 'CreateWatcher', { path: '/nope' })
  assert.equal((await res.json()).code, 'not_found')
  await sbx.kill()
})

function viaHost(sbx, port, path, { method = 'GET', headers = {}, body } = {}) {
  const p = new URL(S.env.E2B_API_URL).port
  return new Promise((ok, fail) => {
    const req = httpRequest({ host: '127.0.0.1', port: p, path, method, headers: { Host: sbx.getHost(port), ...headers } }, (res) => {
      const chunks = []
      res.on('data', (d) => chunks.push(d))
      res.on('end', () => ok({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', fail)
    if (body) req.write(body)
    req.end()
  })
}

const SERVER_JS = `
const http = require('http'), crypto = require('crypto')
http.createServer((req, res) => {
  const chunks = []
  req.on('data', (d) => chunks.push(d))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    if (req.url.startsWith('/big')) {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' })
      for (let i = 0; i < 64; i++) res.write(Buffer.alloc(16384, i))
      return res.end()
    }
    res.writeHead(201, { 'Content-Type': 'application/json', 'X-Echo': 'yes' })
    res.end(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, len: body.length, sha: crypto.createHash('sha256').update(body).digest('hex') }))
  })
}).on('upgrade', (req, sock, head) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
  sock.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n')
  if (head.length) sock.write(head)
  sock.pipe(sock)
}).listen(8080, '127.0.0.1', () => console.log('listening'))
`

async function startService(sbx) {
  await sbx.files.write('/home/user/srv.js', SERVER_JS)
  const h = await sbx.commands.run('node /home/user/srv.js', { background: true })
  assert.ok(await until(async () => (await viaHost(sbx, 8080, '/ready')).status === 201, 10_000), 'the service came up')
  return h
}

test('ports: <port>-<id>.<domain> reaches the service in the sandbox (HTTP, bodies both ways, streaming)', async () => {
  const sbx = await sandbox()
  // nothing listening yet: 502 JSON
  const none = await viaHost(sbx, 8080, '/')
  assert.equal(none.status, 502)
  assert.equal(JSON.parse(none.body).code, 502)
  await startService(sbx)
  const body = randomBytes(300_000)
  const r = await viaHost(sbx, 8080, '/echo/a%20b?x=1&y=two%26', { method: 'POST', body, headers: { 'Content-Type': 'application/octet-stream' } })
  assert.equal(r.status, 201)
  assert.equal(r.headers['x-echo'], 'yes')
  const j = JSON.parse(r.body)
  assert.equal(j.method, 'POST')
  assert.equal(j.url, '/echo/a%20b?x=1&y=two%26')
  assert.equal(j.host, sbx.getHost(8080))
  assert.equal(j.len, body.length)
  assert.equal(j.sha, createHash('sha256').update(body).digest('hex'))
  const big = await viaHost(sbx, 8080, '/big')
  assert.equal(big.body.length, 64 * 16384)
  assert.ok(big.body.subarray(63 * 16384).every((b) => b === 63))
  // fetch through the host name works too (the SDK's getHost)
  await sbx.kill()
  assert.equal((await viaHost(sbx, 8080, '/')).status, 502)
})

test('ports: WebSocket upgrades are tunnelled both ways', async () => {
  const sbx = await sandbox()
  await startService(sbx)
  const p = new URL(S.env.E2B_API_URL).port
  const echoed = await wsEcho(httpRequest, { host: '127.0.0.1', port: p, path: '/ws', headers: { Host: sbx.getHost(8080) } }, randomBytes(100_000))
  assert.equal(echoed, true)
  await sbx.kill()
})

test('ports: with public traffic off, e2b-traffic-access-token is required (403 otherwise)', async () => {
  const sbx = await sandbox({ network: { allowPublicTraffic: false } })
  assert.ok(sbx.trafficAccessToken)
  await sbx.files.write('/home/user/srv.js', SERVER_JS)
  await sbx.commands.run('node /home/user/srv.js', { background: true })
  const tok = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
  assert.ok(await until(async () => (await viaHost(sbx, 8080, '/', { headers: tok })).status === 201, 10_000))
  const denied = await viaHost(sbx, 8080, '/')
  assert.equal(denied.status, 403)
  assert.equal(JSON.parse(denied.body).code, 403)
  assert.equal((await viaHost(sbx, 8080, '/', { headers: { 'e2b-traffic-access-token': 'wrong' } })).status, 403)
  assert.equal((await sbx.getInfo()).network.allowPublicTraffic, false)
  await sbx.kill()
})

test('ports: a request without the traffic token never resumes a paused sandbox', async () => {
  const sbx = await sandbox({ network: { allowPublicTraffic: false }, lifecycle: { onTimeout: 'pause', autoResume: true } })
  await sbx.pause()
  for (const headers of [{}, { 'e2b-traffic-access-token': 'wrong' }]) {
    assert.equal((await viaHost(sbx, 8080, '/', { headers })).status, 403)
    assert.equal((await sbx.getInfo()).state, 'paused')
  }
  // the token itself does wake it (autoResume)
  const tok = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
  await viaHost(sbx, 8080, '/', { headers: tok })
  assert.equal((await sbx.getInfo()).state, 'running')
  await sbx.kill()
})
