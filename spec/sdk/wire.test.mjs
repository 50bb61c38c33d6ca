// Raw HTTP checks of what clients trip over (create and list shapes, connect
// codes, envd routing, the Connect codec, signed /files URLs) and the error
// shapes: what any client (not only the JS SDK) relies on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { request as httpRequest } from 'node:http'
import { connect as netConnect } from 'node:net'
import { Sandbox } from './sdk.mjs'
import { controlApi, envdHeaders, envelope, parseEnvelopes, sleep, startStream, useServer } from './helpers.mjs'
import { startServer } from './server.mjs'

const S = useServer()

const api = controlApi(S)

async function create(body = {}) {
  const res = await api('/v2/sandboxes', { method: 'POST', body: JSON.stringify({ templateID: 'base', timeout: 120, ...body }) })
  assert.equal(res.status, 201)
  return res.json()
}

const kill = (id) => api(`/sandboxes/${id}`, { method: 'DELETE' })

async function assertErrorBody(res, status) {
  assert.equal(res.status, status)
  assert.match(res.headers.get('content-type'), /application\/json/)
  const body = await res.json()
  assert.equal(body.code, status)
  assert.equal(typeof body.message, 'string')
  assert.ok(body.message.length > 0)
  return body
}

const envd = (sb, path, init = {}) =>
  fetch(`${S.env.E2B_SANDBOX_URL}${path}`, {
    ...init,
    headers: {
      'E2b-Sandbox-Id': sb.sandboxID,
      ...(sb.envdAccessToken ? { 'X-Access-Token': sb.envdAccessToken } : {}),
      ...(init.headers || {}),
    },
  })

const unary = (sb, method, msg, headers = {}) =>
  envd(sb, method, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(msg) })

async function healthy() {
  const res = await fetch(`${S.env.E2B_API_URL}/v2/sandboxes`, { headers: { 'X-API-Key': S.env.E2B_API_KEY } })
  assert.equal(res.status, 200)
}

// ---- control plane ----

test('401 with a {code,message} body without or with a wrong API key', async () => {
  for (const headers of [{}, { 'X-API-Key': 'e2b_wrong' }]) {
    const res = await fetch(`${S.env.E2B_API_URL}/v2/sandboxes`, { headers })
    await assertErrorBody(res, 401)
  }
  const lower = await fetch(`${S.env.E2B_API_URL}/v2/sandboxes`, { headers: { 'x-api-key': S.env.E2B_API_KEY } })
  assert.equal(lower.status, 200, 'the header name is case-insensitive')
})

test('the default API key has the format the SDK validates', () => {
  assert.match(S.env.E2B_API_KEY, /^e2b_[0-9a-f]{40}$/)
  assert.match(S.env.E2B_DOMAIN, /^e2b\.localhost:\d+$/) // the HTTPS listener (https.test.mjs)
})

test('unknown routes and wrong methods are 404 JSON, as E2B\'s router answers both', async () => {
  await assertErrorBody(await api('/nope'), 404)
  await assertErrorBody(await api('/sandboxes/x/nope', { method: 'POST' }), 404)
  await assertErrorBody(await api('/v2/sandboxes', { method: 'PUT' }), 404)
  await assertErrorBody(await api('/sandboxes/x/metrics'), 404)
  await assertErrorBody(await api('/sandboxes/x/fork', { method: 'POST', body: '{}' }), 404)
  // the volume content API answers with its own error shape: a string code
  const res = await api('/volumecontent/x/path')
  assert.equal(res.status, 404)
  assert.deepEqual(Object.keys(await res.json()).sort(), ['code', 'message'])
  const vc = await (await api('/volumecontent/x/path', { method: 'PUT' })).json()
  assert.equal(vc.code, '405')
})

test('create: 201 Sandbox with the fields clients need', async () => {
  const sb = await create({ secure: true, metadata: {}, envVars: {} })
  assert.match(sb.sandboxID, /^i[0-9a-z]{19}$/)
  assert.equal(sb.templateID, 'base')
  assert.equal(typeof sb.clientID, 'string')
  const [maj, min, pat] = sb.envdVersion.split('.').map(Number)
  assert.ok(maj > 0 || min > 6 || (min === 6 && pat >= 4), sb.envdVersion)
  assert.equal(typeof sb.envdAccessToken, 'string')
  assert.equal(sb.trafficAccessToken, null)
  assert.equal(sb.domain, S.env.E2B_DOMAIN)
  // NewSandboxV2 has no `secure`: always secure; the v1 route takes it
  const v2insecure = await create({ secure: false })
  assert.equal(typeof v2insecure.envdAccessToken, 'string')
  await kill(v2insecure.sandboxID)
  const res = await api('/sandboxes', { method: 'POST', body: JSON.stringify({ templateID: 'base', secure: false }) })
  assert.equal(res.status, 201)
  const insecure = await res.json()
  assert.ok(!insecure.envdAccessToken)
  await kill(sb.sandboxID)
  await kill(insecure.sandboxID)
})

test('create: bad input is a 400/404/413 {code,message}, never a crash', async () => {
  const post = (body) => api('/v2/sandboxes', { method: 'POST', body })
  const base = (fields) => JSON.stringify({ templateID: 'base', ...fields })
  await assertErrorBody(await post('{not json'), 400)
  await assertErrorBody(await post('[]'), 400)
  await assertErrorBody(await post('{}'), 400) // templateID is required
  await assertErrorBody(await post(JSON.stringify({ templateID: 5 })), 400)
  await assertErrorBody(await post(base({ timeout: 'long' })), 400)
  await assertErrorBody(await post(base({ timeout: -1 })), 400)
  await assertErrorBody(await post(base({ metadata: { a: 1 } })), 400)
  await assertErrorBody(await api('/sandboxes', { method: 'POST', body: base({ secure: 'yes' }) }), 400)
  await assertErrorBody(await post(base({ volumeMounts: [{ name: 'v', path: '/mnt' }] })), 404)
  await assertErrorBody(await post(base({ volumeMounts: [{ name: 'v' }] })), 400)
  await assertErrorBody(await post(base({ network: { denyOut: ['example.com'] } })), 400)
  await assertErrorBody(await post(JSON.stringify({ templateID: 'nope' })), 404)
  await assertErrorBody(await post('x'.repeat(2 << 20)), 413)
  // an oversized chunked body (no Content-Length) is refused the same way
  const chunked = new ReadableStream({
    start(c) {
      for (let i = 0; i < 3; i++) c.enqueue(new Uint8Array(1 << 20).fill(32))
      c.close()
    },
  })
  await assertErrorBody(await api('/v2/sandboxes', { method: 'POST', body: chunked, duplex: 'half' }), 413)
  await healthy()
})

test('getInfo is SandboxDetail; kill is 204 then 404', async () => {
  const sb = await create({ metadata: { k: 'v' } })
  const res = await api(`/sandboxes/${sb.sandboxID}`)
  assert.equal(res.status, 200)
  const d = await res.json()
  for (const f of ['templateID', 'sandboxID', 'clientID', 'startedAt', 'endAt', 'envdVersion', 'cpuCount', 'memoryMB', 'diskSizeMB', 'state'])
    assert.ok(d[f] !== undefined, f)
  assert.equal(d.state, 'running')
  assert.deepEqual(d.metadata, { k: 'v' })
  assert.deepEqual(d.lifecycle, { autoResume: false, onTimeout: 'kill' })
  assert.ok(!Number.isNaN(Date.parse(d.startedAt)) && !Number.isNaN(Date.parse(d.endAt)))
  assert.equal((await kill(sb.sandboxID)).status, 204)
  await assertErrorBody(await kill(sb.sandboxID), 404)
  await assertErrorBody(await api(`/sandboxes/${sb.sandboxID}`), 404)
})

test('timeout: 204 and endAt = now + timeout; 404 when unknown', async () => {
  const sb = await create()
  const res = await api(`/sandboxes/${sb.sandboxID}/timeout`, { method: 'POST', body: JSON.stringify({ timeout: 5 }) })
  assert.equal(res.status, 204)
  const d = await (await api(`/sandboxes/${sb.sandboxID}`)).json()
  assert.ok(Math.abs(Date.parse(d.endAt) - Date.now() - 5000) < 2000)
  await assertErrorBody(await api('/sandboxes/inope/timeout', { method: 'POST', body: '{"timeout":5}' }), 404)
  await assertErrorBody(await api(`/sandboxes/${sb.sandboxID}/timeout`, { method: 'POST', body: '{"timeout":"x"}' }), 400)
  await kill(sb.sandboxID)
})

test('pause 204/409/404, connect 200 running / 201 resumed / 404 killed', async () => {
  const sb = await create()
  const p = (id, body) => api(`/sandboxes/${id}/pause`, { method: 'POST', ...(body ? { body } : {}) })
  assert.equal((await p(sb.sandboxID)).status, 204, 'pause without a body defaults to memory')
  await assertErrorBody(await p(sb.sandboxID, '{"memory":true}'), 409)
  await assertErrorBody(await p('inope0000000000000000'), 404)
  let res = await api(`/v2/sandboxes/${sb.sandboxID}/connect`, { method: 'POST', body: '{"timeout":60}' })
  assert.equal(res.status, 201)
  assert.equal((await res.json()).sandboxID, sb.sandboxID)
  res = await api(`/sandboxes/${sb.sandboxID}/connect`, { method: 'POST', body: '{"timeout":60}' })
  assert.equal(res.status, 200)
  await assertErrorBody(await api(`/sandboxes/${sb.sandboxID}/resume`, { method: 'POST', body: '{}' }), 409)
  await kill(sb.sandboxID)
  await assertErrorBody(await api(`/v2/sandboxes/${sb.sandboxID}/connect`, { method: 'POST', body: '{"timeout":60}' }), 404)
})

test('list v2: state (comma and %2C), metadata, limit, X-Next-Token only when more', async () => {
  const tag = `w${Date.now()}`
  const ids = []
  for (let i = 0; i < 3; i++) ids.push((await create({ metadata: { tag, i: String(i) } })).sandboxID)
  await api(`/sandboxes/${ids[2]}/pause`, { method: 'POST', body: '{"memory":false}' })
  // metadata the way the JS SDK sends it: k=v pairs, URLSearchParams, escaped again
  const meta = (o) => encodeURIComponent(new URLSearchParams(o).toString())
  const list = async (q) => {
    const res = await api(`/v2/sandboxes?${q}`)
    assert.equal(res.status, 200)
    return { items: await res.json(), next: res.headers.get('x-next-token') }
  }
  let r = await list(`metadata=${meta({ tag })}`)
  assert.equal(r.items.length, 3)
  assert.equal(r.next, null)
  r = await list(`metadata=${meta({ tag })}&state=running`)
  assert.deepEqual(r.items.map((x) => x.sandboxID).sort(), ids.slice(0, 2).sort())
  r = await list(`metadata=${meta({ tag })}&state=running%2Cpaused`)
  assert.equal(r.items.length, 3)
  r = await list(`metadata=${meta({ tag })}&state=paused`)
  assert.equal(r.items[0].state, 'paused')
  r = await list(`metadata=${meta({ tag, i: '1' })}`)
  assert.deepEqual(r.items.map((x) => x.sandboxID), [ids[1]])
  const seen = []
  let next = ''
  for (let page = 0; page < 5; page++) {
    r = await list(`metadata=${meta({ tag })}&limit=2${next ? `&nextToken=${encodeURIComponent(next)}` : ''}`)
    seen.push(...r.items.map((x) => x.sandboxID))
    if (!r.next) break
    assert.equal(r.items.length, 2)
    next = r.next
  }
  assert.deepEqual(seen.sort(), [...ids].sort())
  await assertErrorBody(await api('/v2/sandboxes?limit=0'), 400)
  await assertErrorBody(await api('/v2/sandboxes?state=bogus'), 400)
  // v1 list: running only
  const v1 = await (await api('/sandboxes')).json()
  assert.ok(!v1.some((x) => x.sandboxID === ids[2]))
  for (const id of ids) await kill(id)
})

// ---- envd routing and auth ----

test('envd: /health 204, /envs, routing by header and by 49983-<id> Host', async () => {
  // /envs: the sandbox's envVars and envd's own E2B_* variables, which those cannot replace
  const sb = await create({ envVars: { FOO: 'bar', E2B_SANDBOX_ID: 'spoofed' } })
  assert.equal((await envd(sb, '/health')).status, 204)
  assert.deepEqual(await (await envd(sb, '/envs')).json(),
    { FOO: 'bar', E2B_SANDBOX: 'true', E2B_SANDBOX_ID: sb.sandboxID, E2B_TEMPLATE_ID: sb.templateID })
  const port = new URL(S.env.E2B_API_URL).port
  const viaHost = await new Promise((ok, fail) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/health', headers: { Host: `49983-${sb.sandboxID}.${S.env.E2B_DOMAIN}` } },
      (res) => ok(res.statusCode),
    )
    req.on('error', fail)
    req.end()
  })
  assert.equal(viaHost, 204)
  const proxied = await new Promise((ok, fail) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/', headers: { Host: `8080-${sb.sandboxID}.${S.env.E2B_DOMAIN}` } },
      (res) => {
        let b = ''
        res.on('data', (d) => (b += d))
        res.on('end', () => ok({ status: res.statusCode, body: JSON.parse(b) }))
      },
    )
    req.on('error', fail)
    req.end()
  })
  assert.equal(proxied.status, 502)
  assert.equal(proxied.body.code, 502)
  await kill(sb.sandboxID)
})

test('envd: X-Access-Token is enforced except on /health', async () => {
  const sb = await create({ secure: true })
  const noTok = { ...sb, envdAccessToken: undefined }
  assert.equal((await envd(noTok, '/health')).status, 204)
  await assertErrorBody(await envd(noTok, '/envs'), 401)
  await assertErrorBody(await unary(noTok, '/process.Process/List', {}), 401)
  await assertErrorBody(await unary({ ...sb, envdAccessToken: 'wrong' }, '/process.Process/List', {}), 401)
  assert.equal((await unary(sb, '/process.Process/List', {})).status, 200)
  await kill(sb.sandboxID)
})

test('envd: the 401s of a missing or wrong X-Access-Token say what E2B\'s envd says', async () => {
  const sb = await create({ secure: true })
  const says = async (res, message) => assert.equal((await assertErrorBody(res, 401)).message, message)
  const refused = 'unauthorized access, please provide a valid access token or method signing if supported'
  await says(await envd({ ...sb, envdAccessToken: undefined }, '/envs'), refused)
  await says(await unary({ ...sb, envdAccessToken: 'wrong' }, '/process.Process/List', {}), refused)
  await says(await envd({ ...sb, envdAccessToken: 'wrong' }, '/files?path=/etc/hostname'), 'access token present in header but does not match')
  await kill(sb.sandboxID)
})

test('envd: an Authorization header naming an unknown user is a 401 on every route, as E2B\'s envd authenticates all of them; one that is not "Basic <user>:" names no user', async () => {
  const sb = await create({ secure: false })
  const as = (auth) => ({ headers: { Authorization: auth } })
  const bad = 'Basic ' + Buffer.from('nosuchuser:').toString('base64')
  for (const [path, init] of [['/health', {}], ['/envs', {}], ['/files?path=/etc/hostname', {}], ['/nope', {}],
    ['/files?path=/tmp/u.txt', { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'x' }],
    ['/filesystem.Filesystem/Stat', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"path":"/"}' }]]) {
    const res = await envd(sb, path, { ...init, headers: { ...(init.headers || {}), Authorization: bad } })
    assert.equal(res.status, 401, path)
    assert.match(res.headers.get('content-type'), /application\/json/)
    assert.deepEqual(await res.json(), { code: 'unauthenticated', message: "invalid username: 'nosuchuser'" }, path)
  }
  for (const auth of ['Bearer x', 'Basic !!!', 'Basic ' + Buffer.from('user').toString('base64')]) {
    const res = await envd(sb, '/filesystem.Filesystem/Stat', { method: 'POST', ...as(auth), headers: { ...as(auth).headers, 'Content-Type': 'application/json' }, body: '{"path":"/home/user"}' })
    assert.equal(res.status, 200, auth)
    assert.equal((await res.json()).entry.owner, 'user', auth)
    assert.equal((await envd(sb, '/health', as(auth))).status, 204, auth)
  }
  // the username of /files is its query parameter
  const res = await envd(sb, '/files?path=/etc/hostname&username=nosuchuser')
  assert.equal((await assertErrorBody(res, 401)).message, "error looking up user 'nosuchuser': user: unknown user nosuchuser")
  await kill(sb.sandboxID)
})

test('envd: filesystem errors carry E2B\'s envd messages (codes and texts)', async () => {
  const sb = await create({ secure: false })
  const call = async (m, msg) => { const r = await unary(sb, `/filesystem.Filesystem/${m}`, msg); return [r.status, await r.json()] }
  assert.equal((await envd(sb, '/files?path=/home/user/f.txt', { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'abc' })).status, 200)
  assert.deepEqual(await call('Stat', { path: '/home/user/missing.txt' }),
    [404, { code: 'not_found', message: 'file not found: lstat /home/user/missing.txt: no such file or directory' }])
  assert.deepEqual(await call('ListDir', { path: '/home/user/nodir' }),
    [404, { code: 'not_found', message: 'path not found: lstat /home/user/nodir: no such file or directory' }])
  assert.deepEqual(await call('ListDir', { path: '/home/user/f.txt' }),
    [400, { code: 'invalid_argument', message: 'path is not a directory: /home/user/f.txt' }])
  assert.deepEqual(await call('MakeDir', { path: '/home/user' }),
    [409, { code: 'already_exists', message: 'directory already exists: /home/user' }])
  assert.deepEqual(await call('MakeDir', { path: '/home/user/f.txt' }),
    [400, { code: 'invalid_argument', message: 'path already exists but it is not a directory: /home/user/f.txt' }])
  assert.deepEqual(await call('Move', { source: '/home/user/missing', destination: '/home/user/x' }),
    [404, { code: 'not_found', message: 'source file not found: rename /home/user/missing /home/user/x: no such file or directory' }])
  // through a file: Go's errors of the first look at the path
  assert.deepEqual(await call('Stat', { path: '/home/user/f.txt/x' }),
    [500, { code: 'internal', message: 'error getting file info: lstat /home/user/f.txt/x: not a directory' }])
  assert.deepEqual(await call('MakeDir', { path: '/home/user/f.txt/x' }),
    [500, { code: 'internal', message: 'error getting file info: stat /home/user/f.txt/x: not a directory' }])
  assert.deepEqual(await call('Remove', { path: '/home/user/f.txt/x' }),
    [500, { code: 'internal', message: 'error removing file or directory: unlinkat /home/user/f.txt/x: not a directory' }])
  // ListDir names the first component that is missing
  assert.deepEqual(await call('ListDir', { path: '/home/user/a/b/c' }),
    [404, { code: 'not_found', message: 'path not found: lstat /home/user/a: no such file or directory' }])
  await call('MakeDir', { path: '/home/user/m1/x' })
  await call('MakeDir', { path: '/home/user/m2/y' })
  const [st, body] = await call('Move', { source: '/home/user/m1', destination: '/home/user/m2' })
  assert.equal(st, 500)
  assert.equal(body.code, 'internal')
  assert.match(body.message, /^error renaming: rename \/home\/user\/m1 \/home\/user\/m2: (directory not empty|file exists)$/)
  const res = await envd(sb, '/files?path=/home/user/missing.txt')
  assert.equal((await assertErrorBody(res, 404)).message, "path '/home/user/missing.txt' does not exist")
  // no path: the user's home, a directory
  assert.equal((await assertErrorBody(await envd(sb, '/files'), 400)).message, "path '/home/user' is a directory")
  const upload = (q) => envd(sb, `/files${q}`, { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'x' })
  assert.equal((await assertErrorBody(await upload('?path=/home/user'), 400)).message, 'path is a directory: /home/user')
  assert.equal((await assertErrorBody(await upload(''), 400)).message, 'path query parameter is required for raw body upload')
  const range = await envd(sb, '/files?path=/home/user/f.txt', { headers: { Range: 'bytes=20-' } })
  assert.equal(range.status, 416)
  assert.equal(await range.text(), 'invalid range: failed to overlap\n')
  // watches
  const watch = async (path) => {
    const r = await envd(sb, '/filesystem.Filesystem/WatchDir', { method: 'POST', headers: { 'Content-Type': 'application/connect+json' }, body: envelope({ path }) })
    return parseEnvelopes(Buffer.from(await r.arrayBuffer())).at(-1).msg.error
  }
  assert.deepEqual(await watch('/home/user/nowatch'), { code: 'not_found', message: 'path /home/user/nowatch not found: stat /home/user/nowatch: no such file or directory' })
  assert.deepEqual(await watch('/home/user/f.txt'), { code: 'invalid_argument', message: 'path /home/user/f.txt not a directory: %!w(<nil>)' })
  assert.deepEqual(await call('CreateWatcher', { path: '/home/user/nowatch' }),
    [404, { code: 'not_found', message: 'path /home/user/nowatch not found: stat /home/user/nowatch: no such file or directory' }])
  assert.deepEqual(await call('GetWatcherEvents', { watcherId: 'nope' }), [404, { code: 'not_found', message: 'watcher with id nope not found' }])
  assert.deepEqual(await call('RemoveWatcher', { watcherId: 'nope' }), [404, { code: 'not_found', message: 'watcher with id nope not found' }])
  await kill(sb.sandboxID)
})

test('envd: EntryInfo as E2B\'s envd builds it: mode has the permission bits only, permissions is Go\'s FileMode string, a symlink takes its target\'s type and mode', async () => {
  const sb = await create()
  const run = await startStream(S.env, sb, 'ln -sfn /nowhere /home/user/dangle; ln -sfn /tmp /home/user/tmplink; ln -sfn /etc/hostname /home/user/hl')
  assert.equal(run.frames.at(-2).msg.event.end.status, 'exit status 0')
  const stat = async (path) => {
    const e = (await (await unary(sb, '/filesystem.Filesystem/Stat', { path })).json()).entry
    return { type: e.type, mode: e.mode, permissions: e.permissions, symlinkTarget: e.symlinkTarget }
  }
  assert.deepEqual(await stat('/tmp'), { type: 'FILE_TYPE_DIRECTORY', mode: 0o777, permissions: 'dtrwxrwxrwx', symlinkTarget: undefined })
  assert.deepEqual(await stat('/dev/null'), { type: undefined, mode: 0o666, permissions: 'Dcrw-rw-rw-', symlinkTarget: undefined })
  assert.deepEqual(await stat('/home/user/tmplink'), { type: 'FILE_TYPE_DIRECTORY', mode: 0o777, permissions: 'Lrwxrwxrwx', symlinkTarget: '/tmp' })
  assert.deepEqual(await stat('/home/user/hl'), { type: 'FILE_TYPE_FILE', mode: 0o644, permissions: 'Lrwxrwxrwx', symlinkTarget: '/etc/hostname' })
  // a link that leads nowhere: no type, no mode, and itself as its target (envd's EvalSymlinks failed)
  assert.deepEqual(await stat('/home/user/dangle'), { type: undefined, mode: undefined, permissions: 'Lrwxrwxrwx', symlinkTarget: '/home/user/dangle' })
  // modifiedTime to the nanosecond, its fraction in 0, 3, 6 or 9 digits as protobuf's JSON writes a Timestamp
  const times = await startStream(S.env, sb, "touch -d '2020-01-02 03:04:05.123456789Z' /tmp/t9; touch -d '2020-01-02 03:04:05.5Z' /tmp/t3; " +
    "touch -d '2020-01-02 03:04:05.000001Z' /tmp/t6; touch -d '2020-01-02 03:04:05Z' /tmp/t0")
  assert.equal(times.frames.at(-2).msg.event.end.status, 'exit status 0')
  const mtime = async (path) => (await (await unary(sb, '/filesystem.Filesystem/Stat', { path })).json()).entry.modifiedTime
  assert.equal(await mtime('/tmp/t9'), '2020-01-02T03:04:05.123456789Z')
  assert.equal(await mtime('/tmp/t3'), '2020-01-02T03:04:05.500Z')
  assert.equal(await mtime('/tmp/t6'), '2020-01-02T03:04:05.000001Z')
  assert.equal(await mtime('/tmp/t0'), '2020-01-02T03:04:05Z')
  await kill(sb.sandboxID)
})

test('envd: every process and /envs have E2B_SANDBOX, E2B_SANDBOX_ID and E2B_TEMPLATE_ID, which create envVars cannot replace and a process\'s own envs can', async () => {
  const sb = await create({ envVars: { E2B_SANDBOX: 'no', MINE: 'm' } })
  const envs = await (await envd(sb, '/envs')).json()
  assert.equal(envs.E2B_SANDBOX, 'true')
  assert.equal(envs.E2B_SANDBOX_ID, sb.sandboxID)
  assert.equal(envs.E2B_TEMPLATE_ID, sb.templateID)
  assert.equal(envs.MINE, 'm')
  const out = async (extra) => {
    const r = await envd(sb, '/process.Process/Start', { method: 'POST', headers: { 'Content-Type': 'application/connect+json' },
      body: envelope({ process: { cmd: '/bin/sh', args: ['-c', 'echo "$E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID $MINE"'], envs: extra } }) })
    const frames = parseEnvelopes(Buffer.from(await r.arrayBuffer()))
    return Buffer.from(frames.find((f) => f.msg.event?.data).msg.event.data.stdout, 'base64').toString()
  }
  assert.equal(await out({}), `true ${sb.sandboxID} ${sb.templateID} m\n`)
  assert.equal(await out({ E2B_SANDBOX: 'mine' }), `mine ${sb.sandboxID} ${sb.templateID} m\n`)
  await kill(sb.sandboxID)
})

test('/files: a download names its file in Content-Disposition as envd writes it (bare, quoted, or RFC 2231)', async () => {
  const sb = await create()
  for (const [name, want] of [['r.txt', 'inline; filename=r.txt'], ['a b.txt', 'inline; filename="a b.txt"'],
    ['q"x.txt', 'inline; filename="q\\"x.txt"'], ['é.txt', "inline; filename*=utf-8''%C3%A9.txt"]]) {
    const path = `/home/user/${name}`
    const up = await envd(sb, `/files?path=${encodeURIComponent(path)}`, { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'x' })
    assert.equal(up.status, 200)
    for (const enc of ['identity', 'gzip']) {
      const res = await envd(sb, `/files?path=${encodeURIComponent(path)}`, { headers: { 'Accept-Encoding': enc } })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-disposition'), want, `${name} ${enc}`)
      assert.equal(res.headers.get('vary'), 'Accept-Encoding')
      await res.arrayBuffer()
    }
  }
  await kill(sb.sandboxID)
})

test('envd: unknown paths, wrong methods and wrong content types answer as envd\'s Go router and Connect handlers do', async () => {
  const sb = await create()
  let res = await envd(sb, '/nope')
  assert.equal(res.status, 404)
  assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8')
  assert.equal(await res.text(), '404 page not found\n')
  res = await envd(sb, '/process.Process/Nope', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' })
  assert.equal(await res.text(), '404 page not found\n')
  for (const [method, path, allow] of [['GET', '/process.Process/List', 'POST'], ['POST', '/health', 'GET'], ['PUT', '/envs', 'GET'], ['DELETE', '/files?path=/tmp/x', 'GET, POST']]) {
    res = await envd(sb, path, { method })
    assert.equal(res.status, 405, `${method} ${path}`)
    assert.equal(res.headers.get('allow'), allow, `${method} ${path}`)
    assert.equal(await res.text(), '', `${method} ${path}`)
  }
  res = await unary(sb, '/filesystem.Filesystem/Stat', { path: '/' }, { 'Content-Type': 'text/plain' })
  assert.equal(res.status, 415)
  assert.equal(await res.text(), '')
  assert.match(res.headers.get('accept-post'), /^application\/grpc, .*application\/json, application\/json; charset=utf-8, application\/proto$/)
  res = await unary(sb, '/process.Process/Start', {}, { 'Content-Type': 'application/json' })
  assert.equal(res.status, 415)
  assert.match(res.headers.get('accept-post'), /^application\/connect\+json, application\/connect\+json; charset=utf-8, application\/connect\+proto, /)
  await kill(sb.sandboxID)
})

test('envd: GET /metrics answers the sandbox\'s own numbers in envd\'s shape, behind the access token', async () => {
  const sb = await create()
  const res = await envd(sb, '/metrics')
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('cache-control'), 'no-store')
  const m = await res.json()
  assert.deepEqual(Object.keys(m), ['ts', 'cpu_count', 'cpu_used_pct', 'mem_total_mib', 'mem_used_mib', 'mem_total', 'mem_used', 'mem_cache', 'disk_used', 'disk_total'])
  assert.ok(Math.abs(m.ts - Date.now() / 1000) < 60)
  assert.ok(m.cpu_count > 0 && m.mem_total > 0 && m.disk_total > 0)
  assert.equal(m.mem_total_mib, Math.floor(m.mem_total / 1048576))
  assert.equal(m.mem_used_mib, Math.floor(m.mem_used / 1048576))
  assert.equal(Math.round(m.cpu_used_pct * 100) / 100, m.cpu_used_pct)
  await assertErrorBody(await envd({ ...sb, envdAccessToken: undefined }, '/metrics'), 401)
  await kill(sb.sandboxID)
})

test('envd: process.List with no processes answers {}, as protobuf JSON leaves an empty list out', async () => {
  const sb = await create({ secure: false })
  const res = await unary(sb, '/process.Process/List', {})
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), {})
  await kill(sb.sandboxID)
})

test('envd of a killed, paused or unknown sandbox answers 502 JSON', async () => {
  const sb = await create()
  await api(`/sandboxes/${sb.sandboxID}/pause`, { method: 'POST', body: '{}' })
  await assertErrorBody(await envd(sb, '/health'), 502)
  await kill(sb.sandboxID)
  await assertErrorBody(await envd(sb, '/health'), 502)
  await assertErrorBody(await unary(sb, '/process.Process/List', {}), 502)
  await assertErrorBody(await envd({ sandboxID: 'iunknown000000000000' }, '/health'), 502)
  // the routing answer wins over the body: no 413 for a gone sandbox
  const up = await envd(sb, '/files?path=/tmp/x', {
    method: 'POST',
    headers: { 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array(3 << 20),
  })
  await assertErrorBody(up, 502)
})

// ---- Connect RPC ----

test('Connect unary: JSON codec, string error codes, 415 on a wrong content type', async () => {
  const sb = await create()
  let res = await unary(sb, '/filesystem.Filesystem/Stat', { path: '/nope' })
  assert.equal(res.status, 404)
  let body = await res.json()
  assert.equal(body.code, 'not_found')
  assert.equal(typeof body.message, 'string')
  res = await unary(sb, '/filesystem.Filesystem/MakeDir', { path: '/home/user' })
  assert.equal((await res.json()).code, 'already_exists')
  res = await unary(sb, '/process.Process/SendSignal', { process: { pid: 99999 }, signal: 'SIGNAL_SIGKILL' })
  assert.deepEqual(await res.json(), { code: 'not_found', message: 'process with pid 99999 not found' })
  res = await unary(sb, '/process.Process/SendSignal', { process: { tag: 'nope' }, signal: 'SIGNAL_SIGKILL' })
  assert.deepEqual(await res.json(), { code: 'not_found', message: 'process with tag nope not found' }, 'as envd says it, unquoted')
  res = await unary(sb, '/filesystem.Filesystem/Stat', { path: '/' }, { 'Content-Type': 'text/plain' })
  assert.equal(res.status, 415)
  // application/proto is the binary codec (codec.test.mjs): JSON text is not a valid message
  res = await unary(sb, '/filesystem.Filesystem/Stat', { path: '/' }, { 'Content-Type': 'application/proto' })
  assert.equal((await res.json()).code, 'invalid_argument')
  res = await envd(sb, '/filesystem.Filesystem/Stat', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{bad' })
  assert.equal((await res.json()).code, 'invalid_argument')
  res = await unary(sb, '/filesystem.Filesystem/WatchDir', {}, { 'Content-Type': 'application/json' })
  assert.equal(res.status, 415, 'a server stream needs application/connect+json')
  res = await unary(sb, '/filesystem.Filesystem/CreateWatcher', { path: '/tmp/nope' })
  assert.equal((await res.json()).code, 'not_found')
  // EntryInfo: lowerCamelCase, int64 as string, enums by name, zero values omitted
  res = await unary(sb, '/filesystem.Filesystem/Stat', { path: '/etc/hostname' })
  const e = (await res.json()).entry
  assert.equal(e.type, 'FILE_TYPE_FILE')
  assert.equal(typeof e.size, 'string')
  assert.match(e.modifiedTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
  // proto field names and 64-bit-as-string are accepted on input
  res = await unary(sb, '/filesystem.Filesystem/ListDir', { path: '/etc', depth: '1' })
  assert.equal(res.status, 200)
  await kill(sb.sandboxID)
})

test('Connect stream: start first, byte-exact data, end, exactly one end-stream frame', async () => {
  const sb = await create()
  const esc = Array.from({ length: 256 }, (_, b) => '\\' + b.toString(8).padStart(3, '0')).join('')
  const { res, frames } = await startStream(S.env, sb, `printf '${esc}'; printf 'E' >&2; exit 3`)
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'application/connect+json')
  assert.ok(frames[0].msg.event.start.pid > 0)
  const ends = frames.filter((f) => f.flags & 2)
  assert.equal(ends.length, 1)
  assert.deepEqual(frames.at(-1), { flags: 2, msg: {} })
  const out = Buffer.concat(frames.filter((f) => f.msg.event?.data?.stdout).map((f) => Buffer.from(f.msg.event.data.stdout, 'base64')))
  assert.deepEqual([...out], Array.from({ length: 256 }, (_, i) => i))
  const end = frames.find((f) => f.msg.event?.end).msg.event.end
  assert.deepEqual(end, { exitCode: 3, exited: true, status: 'exit status 3', error: 'exit status 3' })
  const ok = await startStream(S.env, sb, 'true')
  assert.deepEqual(ok.frames.find((f) => f.msg.event?.end).msg.event.end, { exited: true, status: 'exit status 0' })
  await kill(sb.sandboxID)
})

test('Connect stream errors travel in the single end-stream frame of an HTTP 200', async () => {
  const sb = await create()
  const res = await envd(sb, '/process.Process/Connect', {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json' },
    body: envelope({ process: { pid: 424242 } }),
  })
  assert.equal(res.status, 200)
  const frames = parseEnvelopes(Buffer.from(await res.arrayBuffer()))
  assert.equal(frames.length, 1)
  assert.equal(frames[0].flags, 2)
  assert.equal(frames[0].msg.error.code, 'not_found')
  // unknown user
  const u = await startStream(S.env, sb, 'true', { Authorization: 'Basic ' + Buffer.from('mallory:').toString('base64') })
  assert.equal(u.frames[0].msg.error.code, 'unauthenticated')
  await kill(sb.sandboxID)
})

// envd >= 0.5.4 runs every command as `/bin/sh -c '<oom score> && exec nice -n N "$@"' -- cmd args`.
const startRaw = async (env, sb, cmd) => {
  const res = await fetch(`${env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    headers: {
      'E2b-Sandbox-Id': sb.sandboxID,
      'Content-Type': 'application/connect+json',
      ...(sb.envdAccessToken ? { 'X-Access-Token': sb.envdAccessToken } : {}),
    },
    body: envelope({ process: { cmd } }),
  })
  return parseEnvelopes(Buffer.from(await res.arrayBuffer())).map((f) => f.msg)
}

test('a command that cannot be executed starts and exits 127 (126: not executable) with nice\'s complaint, as E2B\'s envd runs every command through its sh and nice wrapper', async () => {
  const sb = await create()
  for (const [cmd, code, why] of [['/no/such/binary', 127, 'No such file or directory'], ['/home/user', 126, 'Permission denied']]) {
    const msgs = await startRaw(S.env, sb, cmd)
    assert.ok(msgs[0].event.start.pid > 0, JSON.stringify(msgs))
    const stderr = Buffer.concat(msgs.filter((m) => m.event?.data?.stderr).map((m) => Buffer.from(m.event.data.stderr, 'base64'))).toString()
    assert.equal(stderr, `/usr/bin/nice: '${cmd}': ${why}\n`)
    const end = msgs.find((m) => m.event?.end).event.end
    assert.deepEqual(end, { exitCode: code, exited: true, status: `exit status ${code}`, error: `exit status ${code}` })
  }
  await kill(sb.sandboxID)
  // before 0.5.4 envd exec'd the command itself: the start fails
  const old = await startServer({ extraArgs: ['--envd-version', '0.5.3', '--no-tls'] })
  try {
    const res = await fetch(`${old.env.E2B_API_URL}/sandboxes`, { method: 'POST', headers: { 'X-API-Key': old.env.E2B_API_KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ templateID: 'base', secure: false }) })
    const osb = await res.json()
    const msgs = await startRaw(old.env, osb, '/no/such/binary')
    assert.equal(msgs.length, 1)
    assert.equal(msgs[0].error.code, 'invalid_argument')
  } finally {
    assert.equal((await old.stop()).code, 0)
  }
})

test('keepalive events follow Keepalive-Ping-Interval; Connect-Timeout-Ms kills the process and ends the stream with the context\'s error, no end event, as envd does', async () => {
  const sb = await create()
  const k = await startStream(S.env, sb, 'sleep 2.5', { 'Keepalive-Ping-Interval': '1' })
  assert.ok(k.frames.filter((f) => f.msg.event?.keepalive).length >= 1)
  const t0 = Date.now()
  const d = await startStream(S.env, sb, 'echo $$; sleep 30', { 'Connect-Timeout-Ms': '1000' })
  assert.ok(Date.now() - t0 < 8000)
  assert.equal(d.frames.find((f) => f.msg.event?.end), undefined)
  assert.deepEqual(d.frames.at(-1).msg.error, { code: 'deadline_exceeded', message: 'context deadline exceeded' })
  // the process is gone all the same
  const pid = Number(Buffer.from(d.frames.find((f) => f.msg.event?.data).msg.event.data.stdout, 'base64').toString())
  const list = await (await unary(sb, '/process.Process/List', {})).json()
  assert.ok(!(list.processes || []).some((p) => p.pid === pid), JSON.stringify(list))
  await kill(sb.sandboxID)
})

test('malformed stream requests never crash or hang the server', async () => {
  const sb = await create()
  const post = (body, ct = 'application/connect+json') =>
    envd(sb, '/process.Process/Start', { method: 'POST', headers: { 'Content-Type': ct }, body })
  const cases = [
    Buffer.alloc(0),
    Buffer.from([0, 0, 0]),
    Buffer.from([0, 0, 0, 0, 10, 1, 2]),
    Buffer.from([0, 0xff, 0xff, 0xff, 0xff]),
    envelope('not an object'),
    Buffer.concat([Buffer.from([0, 0, 0, 0, 4]), Buffer.from('{{{{')]),
    envelope({ process: { cmd: 5 } }),
    envelope({ process: { cmd: 'true', args: [1] } }),
    envelope({ process: { cmd: 'true', envs: { A: 1 } } }),
    envelope({ process: { cmd: 'true' }, pty: { size: { cols: 'wide' } } }),
  ]
  for (const body of cases) {
    const res = await post(body)
    assert.equal(res.status, 200)
    const frames = parseEnvelopes(Buffer.from(await res.arrayBuffer()))
    assert.equal(frames.length, 1)
    assert.ok(['invalid_argument', 'unimplemented'].includes(frames[0].msg.error.code), JSON.stringify(frames[0]))
  }
  // an abrupt disconnect in the middle of a request body
  await new Promise((ok) => {
    const port = new URL(S.env.E2B_API_URL).port
    const s = netConnect(port, '127.0.0.1', () => {
      s.write(`POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${sb.sandboxID}\r\nX-Access-Token: ${sb.envdAccessToken}\r\nContent-Type: application/connect+json\r\nContent-Length: 1000\r\n\r\n\0\0\0`)
      s.destroy()
      ok()
    })
  })
  const r = await unary(sb, '/process.Process/List', {})
  assert.equal(r.status, 200)
  await kill(sb.sandboxID)
  await healthy()
})

test('a disconnecting Start client leaves the process running', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  const ctrl = new AbortController()
  const res = await fetch(`${S.env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    signal: ctrl.signal,
    headers: envdHeaders(sbx, { 'Content-Type': 'application/connect+json' }),
    body: envelope({ process: { cmd: '/bin/bash', args: ['-c', 'sleep 1; echo survived > /tmp/s'] }, stdin: false }),
  })
  const reader = res.body.getReader()
  await reader.read()
  ctrl.abort()
  await sleep(1800)
  assert.equal(await sbx.files.read('/tmp/s'), 'survived\n')
  await sbx.kill()
})

// ---- /files ----

function sign(path, op, user, token, exp) {
  const parts = [path, op, user, token]
  if (exp) parts.push(String(exp))
  return 'v1_' + createHash('sha256').update(parts.join(':')).digest('base64').replace(/=+$/, '')
}

test('/files: signed URLs accepted, expired, wrong, and a wrong header beats a good signature', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  await sbx.files.write('/tmp/s.txt', 'signed')
  // the SDK's own URLs work as given (they carry no sandbox id: the signature routes them)
  const dl = await sbx.downloadUrl('/tmp/s.txt')
  assert.equal(await (await fetch(dl)).text(), 'signed')
  const ul = await sbx.uploadUrl('/tmp/up.txt', { useSignatureExpiration: 60 })
  const form = new FormData()
  form.append('file', new Blob(['uploaded']), 'up.txt')
  const up = await fetch(ul, { method: 'POST', body: form })
  assert.equal(up.status, 200)
  assert.equal((await up.json())[0].path, '/tmp/up.txt')
  assert.equal(await sbx.files.read('/tmp/up.txt'), 'uploaded')
  const tok = sbx.envdAccessToken
  const base = `${S.env.E2B_SANDBOX_URL}/files?path=${encodeURIComponent('/tmp/s.txt')}`
  const h = { 'E2b-Sandbox-Id': sbx.sandboxId }
  const exp = Math.floor(Date.now() / 1000) - 10
  let res = await fetch(`${base}&signature=${encodeURIComponent(sign('/tmp/s.txt', 'read', '', tok, exp))}&signature_expiration=${exp}`, { headers: h })
  assert.deepEqual(await assertErrorBody(res, 401), { code: 401, message: 'signature is already expired' })
  res = await fetch(`${base}&signature=v1_wrong`, { headers: h })
  await assertErrorBody(res, 401)
  res = await fetch(base, { headers: h })
  await assertErrorBody(res, 401)
  const good = `${base}&signature=${encodeURIComponent(sign('/tmp/s.txt', 'read', '', tok))}`
  assert.equal(await (await fetch(good, { headers: h })).text(), 'signed')
  res = await fetch(good, { headers: { ...h, 'X-Access-Token': 'wrong' } })
  await assertErrorBody(res, 401)
  await sbx.kill()
})

test('/files: ranges, empty files, directories, missing files, octet-stream without path', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  await sbx.files.write('/tmp/r.txt', '0123456789')
  await sbx.files.write('/tmp/empty', '')
  const get = (path, headers = {}) =>
    fetch(`${S.env.E2B_SANDBOX_URL}/files?path=${encodeURIComponent(path)}`, { headers: envdHeaders(sbx, headers) })
  let res = await get('/tmp/r.txt', { Range: 'bytes=4-' })
  assert.equal(res.status, 206)
  assert.equal(res.headers.get('content-range'), 'bytes 4-9/10')
  assert.equal(await res.text(), '456789')
  res = await get('/tmp/r.txt', { Range: 'bytes=2-3' })
  assert.equal(await res.text(), '23')
  res = await get('/tmp/r.txt', { Range: 'bytes=-3' })
  assert.equal(await res.text(), '789')
  res = await get('/tmp/r.txt', { Range: 'bytes=10-' })
  assert.equal(res.status, 416)
  assert.equal(res.headers.get('content-range'), 'bytes */10')
  await res.arrayBuffer()
  res = await get('/tmp/empty')
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-length'), '0')
  await res.arrayBuffer()
  await assertErrorBody(await get('/tmp'), 400)
  await assertErrorBody(await get('/tmp/missing'), 404)
  await assertErrorBody(await get('/tmp/r.txt', { 'X-Access-Token': 'bad' }), 401)
  res = await fetch(`${S.env.E2B_SANDBOX_URL}/files`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/octet-stream' }),
    body: 'x',
  })
  await assertErrorBody(res, 400)
  res = await fetch(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/o.bin`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/octet-stream' }),
    body: new Uint8Array([0, 1, 2, 255]),
  })
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), [{ path: '/tmp/o.bin', name: 'o.bin', type: 'file' }])
  res = await fetch(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/o.bin`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/octet-stream', ['X-Metadata-' + 'k'.repeat(247)]: 'v' }),
    body: 'x',
  })
  await assertErrorBody(res, 400)
  res = await fetch(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/o.bin`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'br' }),
    body: 'x',
  })
  await assertErrorBody(res, 400)
  res = await fetch(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/o.bin`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' }),
    body: gzipSync(Buffer.from('zipped')).subarray(0, 10),
  })
  await assertErrorBody(res, 400)
  await sbx.kill()
})

test('one thousand concurrent streams on one process', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  const h = await sbx.commands.run('cat', { background: true, stdin: true })
  const N = 1000
  const streams = await Promise.all(
    Array.from({ length: N }, async () => {
      const res = await fetch(`${S.env.E2B_SANDBOX_URL}/process.Process/Connect`, {
        method: 'POST',
        headers: envdHeaders(sbx, { 'Content-Type': 'application/connect+json' }),
        body: envelope({ process: { pid: h.pid } }),
      })
      assert.equal(res.status, 200)
      return res
    }),
  )
  await sbx.commands.sendStdin(h.pid, 'ping\n')
  await sbx.commands.closeStdin(h.pid)
  const got = await Promise.all(streams.map(async (res) => parseEnvelopes(Buffer.from(await res.arrayBuffer()))))
  for (const frames of got) {
    const out = frames.filter((f) => f.msg.event?.data?.stdout).map((f) => Buffer.from(f.msg.event.data.stdout, 'base64').toString()).join('')
    assert.equal(out, 'ping\n')
    assert.equal(frames.filter((f) => f.flags & 2).length, 1)
  }
  await sbx.kill()
})

test('killing a sandbox during an open stream cuts the stream (no end event), as E2B does', async () => {
  const sb = await create()
  const res = await fetch(`${S.env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    headers: envdHeaders(sb, { 'Content-Type': 'application/connect+json' }),
    body: envelope({ process: { cmd: '/bin/bash', args: ['-c', 'echo started; sleep 100'] }, stdin: false }),
  })
  assert.equal(res.status, 200)
  const body = res.arrayBuffer().then((b) => ({ bytes: Buffer.from(b) }), (err) => ({ err }))
  await sleep(500)
  assert.equal((await kill(sb.sandboxID)).status, 204)
  const got = await body
  assert.ok(got.err, 'the stream must be cut, not ended')
  await healthy()
})
