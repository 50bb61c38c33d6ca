// Fault injection (/_e2b_local/faults): every action, deterministic from a
// seed, as the Lua client's reliability specs use it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { RateLimitError, Sandbox } from './sdk.mjs'
import { controlApi, envdHeaders, openStream, parseEnvelopes, useServer } from './helpers.mjs'

const S = useServer()

const admin = (method, body, token = S.env.E2B_LOCAL_ADMIN_TOKEN) =>
  fetch(`${S.env.E2B_API_URL}/_e2b_local/faults`, {
    method,
    headers: { 'X-Admin-Token': token, 'Content-Type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })

async function addRules(rules, seed = 1) {
  const res = await admin('POST', { seed, rules })
  assert.equal(res.status, 200)
  return (await res.json()).rules
}

const api = controlApi(S)

const countSandboxes = async () => (await (await api('/v2/sandboxes')).json()).length

// Raw GET that reports how many body bytes arrived before the connection ended.
function rawGet(url, headers) {
  return new Promise((ok, fail) => {
    const req = httpRequest(url, { headers }, (res) => {
      let n = 0
      res.on('data', (d) => (n += d.length))
      res.on('end', () => ok({ status: res.statusCode, bytes: n, complete: true, length: Number(res.headers['content-length']) }))
      res.on('aborted', () => ok({ status: res.statusCode, bytes: n, complete: false, length: Number(res.headers['content-length']) }))
      res.on('error', () => {})
    })
    req.on('error', fail)
    req.end()
  })
}

test('the admin API needs the admin token (403 JSON otherwise); rules list, count down and clear', async () => {
  let res = await admin('GET', null, 'wrong')
  assert.equal(res.status, 403)
  assert.equal((await res.json()).code, 403)
  res = await fetch(`${S.env.E2B_API_URL}/_e2b_local/faults`)
  assert.equal(res.status, 403)
  res = await admin('POST', { seed: 1, rules: [{ match: 'GET /x', action: 'explode' }] })
  assert.equal(res.status, 400)
  const [r] = await addRules([{ match: 'GET /v2/sandboxes', action: 'status', status: 500, count: 2 }])
  assert.ok(r.id > 0)
  assert.equal(r.remaining, 2)
  assert.equal((await api('/v2/sandboxes')).status, 500)
  let listed = (await (await admin('GET')).json()).rules.find((x) => x.id === r.id)
  assert.equal(listed.remaining, 1)
  assert.equal(listed.hits, 1)
  assert.equal((await api('/v2/sandboxes')).status, 500)
  assert.equal((await api('/v2/sandboxes')).status, 200, 'the rule expired after count hits')
  listed = (await (await admin('GET')).json()).rules.find((x) => x.id === r.id)
  assert.deepEqual([listed.remaining, listed.hits], [0, 2])
  assert.equal((await admin('DELETE')).status, 200)
  assert.deepEqual((await (await admin('GET')).json()).rules, [])
})

test('status: E2B error body, Retry-After for 429, and the request is not processed', async () => {
  const before = await countSandboxes()
  await addRules([{ match: 'POST /v2/sandboxes', action: 'status', status: 503, count: 1 }])
  let res = await api('/v2/sandboxes', { method: 'POST', body: '{"templateID":"base"}' })
  assert.equal(res.status, 503)
  assert.deepEqual(await res.json(), { code: 503, message: 'injected fault' })
  assert.equal(await countSandboxes(), before, 'no sandbox was created')
  await addRules([{ match: 'POST /v2/sandboxes', action: 'status', status: 429, retry_after_s: 7, count: 1 }])
  res = await api('/v2/sandboxes', { method: 'POST', body: '{"templateID":"base"}' })
  assert.equal(res.status, 429)
  assert.equal(res.headers.get('retry-after'), '7')
  await res.arrayBuffer()
  // '*sandboxes': the v2 create route (e2b 2.51) and the v1 one (2.45)
  await addRules([{ match: 'POST *sandboxes', action: 'status', status: 429, count: 1 }])
  await assert.rejects(Sandbox.create({ ...S.opts }), RateLimitError)
  assert.equal(await countSandboxes(), before)
  await admin('DELETE')
})

test('status on envd routes: Connect error JSON with the matching string code', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  await addRules([
    { match: 'POST envd:/process.Process/List', action: 'status', status: 503, count: 1 },
    { match: 'GET envd:/files', action: 'status', status: 502, count: 1 },
    { match: 'POST envd:/process.Process/Start', action: 'status', status: 429, count: 1 },
  ])
  const res = await fetch(`${S.env.E2B_SANDBOX_URL}/process.Process/List`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/json' }),
    body: '{}',
  })
  assert.equal(res.status, 503)
  assert.deepEqual(await res.json(), { code: 'unavailable', message: 'injected fault' })
  await assert.rejects(sbx.files.read('/etc/hostname'), (e) => e.name === 'TimeoutError') // 502 = sandbox gone, per the SDK
  // a refused Start runs nothing
  await assert.rejects(sbx.commands.run('touch /tmp/ran'))
  assert.equal(await sbx.files.exists('/tmp/ran'), false)
  assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n')
  await sbx.kill()
  await admin('DELETE')
})

test('stall holds the request, then answers normally', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  await addRules([{ match: 'GET /sandboxes/*', action: 'stall', ms: 800, count: 1 }])
  const t0 = Date.now()
  const info = await sbx.getInfo()
  assert.ok(Date.now() - t0 >= 750, `took ${Date.now() - t0} ms`)
  assert.equal(info.sandboxId, sbx.sandboxId)
  await addRules([{ match: 'POST envd:/process.Process/Start', action: 'stall', ms: 500, count: 1 }])
  const t1 = Date.now()
  assert.equal((await sbx.commands.run('echo stalled')).stdout, 'stalled\n')
  assert.ok(Date.now() - t1 >= 450)
  await sbx.kill()
  await admin('DELETE')
})

test('drop closes the connection without a response and the request is not processed', async () => {
  const before = await countSandboxes()
  await addRules([{ match: 'POST /v2/sandboxes', action: 'drop', count: 1 }])
  await assert.rejects(api('/v2/sandboxes', { method: 'POST', body: '{"templateID":"base"}' }))
  assert.equal(await countSandboxes(), before)
  await addRules([{ match: '*', action: 'drop', count: 1 }])
  await assert.rejects(api('/v2/sandboxes'))
  assert.equal((await api('/v2/sandboxes')).status, 200)
  await admin('DELETE')
})

// Starts cmd on a Connect stream that a drop_mid_stream rule cuts (cut:
// { after_events } or { after_bytes }), hands each chunk to onChunk and
// asserts that the read fails at the cut.
async function readUntilCut(sbx, cut, cmd, onChunk) {
  await addRules([{ match: 'POST envd:/process.Process/Start', action: 'drop_mid_stream', ...cut, count: 1 }])
  const res = await openStream(S.env, sbx, cmd)
  assert.equal(res.status, 200)
  const reader = res.body.getReader()
  await assert.rejects(
    (async () => {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        onChunk(value)
      }
    })(),
  )
}

test('drop_mid_stream: K Connect messages pass, then the stream is cut (no end-stream); the command ran', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  const chunks = []
  await readUntilCut(sbx, { after_events: 2 }, 'echo one; sleep 0.3; echo two; sleep 0.3; touch /tmp/ran; echo three', (value) =>
    chunks.push(value),
  )
  const frames = parseEnvelopes(Buffer.concat(chunks))
  assert.equal(frames.length, 2)
  assert.ok(frames[0].msg.event.start.pid > 0)
  assert.equal(Buffer.from(frames[1].msg.event.data.stdout, 'base64').toString(), 'one\n')
  assert.ok(!frames.some((f) => f.flags & 2), 'no end-stream frame')
  // the process was started and runs to its end
  for (let i = 0; i < 50 && !(await sbx.files.exists('/tmp/ran')); i++) await new Promise((r) => setTimeout(r, 100))
  assert.equal(await sbx.files.exists('/tmp/ran'), true)
  // through the SDK: the command handle fails instead of hanging
  await addRules([{ match: 'POST envd:/process.Process/Start', action: 'drop_mid_stream', after_events: 1, count: 1 }])
  await assert.rejects(sbx.commands.run('sleep 0.2; echo x'))
  await sbx.kill()
  await admin('DELETE')
})

test('drop_mid_stream on a Connect stream honours after_bytes: that many bytes, then the cut', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  let got = 0
  await readUntilCut(sbx, { after_bytes: 7 }, 'echo one; sleep 0.2; echo two', (value) => {
    got += value.length
  })
  assert.equal(got, 7, 'exactly after_bytes bytes of the stream arrive, then it is cut')
  await sbx.kill()
  await admin('DELETE')
})

test('drop_mid_stream on /files: after_bytes bytes, then a truncated body', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  await sbx.files.write('/tmp/big', new Uint8Array(200_000).fill(7))
  await addRules([{ match: 'GET envd:/files', action: 'drop_mid_stream', after_bytes: 1000, count: 1 }])
  const r = await rawGet(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/big`, envdHeaders(sbx))
  assert.equal(r.status, 200)
  assert.equal(r.length, 200_000)
  assert.equal(r.bytes, 1000)
  assert.equal(r.complete, false)
  const whole = await rawGet(`${S.env.E2B_SANDBOX_URL}/files?path=/tmp/big`, envdHeaders(sbx))
  assert.deepEqual([whole.bytes, whole.complete], [200_000, true])
  await sbx.kill()
  await admin('DELETE')
})

test('probability draws are deterministic from the seed', async () => {
  const run = async (seed) => {
    await admin('DELETE')
    await addRules([{ match: 'GET /v2/sandboxes', action: 'status', status: 503, probability: 0.5 }], seed)
    const out = []
    for (let i = 0; i < 24; i++) {
      const res = await api('/v2/sandboxes')
      await res.arrayBuffer()
      out.push(res.status)
    }
    return out.join(',')
  }
  const a = await run(42)
  const b = await run(42)
  const c = await run(7)
  assert.equal(a, b)
  assert.notEqual(a, c)
  assert.ok(a.includes('503') && a.includes('200'))
  const hits = (await (await admin('GET')).json()).rules[0].hits
  assert.equal(hits, c.split(',').filter((x) => x === '503').length)
  await admin('DELETE')
})
