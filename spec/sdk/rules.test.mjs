// network.rules through the unchanged SDK: per-domain headers e2b-local's
// egress proxy adds to (or replaces in) a sandbox's HTTP requests, given at
// create (plain objects, a Map, a transform callback, a rule without a
// transform) and replaced or cleared by updateNetwork. The "internet" is a
// server on the host's loopback that answers with the headers it got.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { Sandbox } from './sdk.mjs'
import { useServer } from './helpers.mjs'

const S = useServer()

async function echoServer() {
  const srv = createServer((req, res) => {
    res.setHeader('Content-Type', 'application/json')
    res.end(JSON.stringify({ injected: req.headers['x-injected'] ?? null, auth: req.headers.authorization ?? null,
                             second: req.headers['x-second'] ?? null, socket: req.socket.remotePort }) + '\n')
  })
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok))
  srv.url = `http://127.0.0.1:${srv.address().port}`
  return srv
}

// curl inside the sandbox through the proxy (flags: '-p' for a CONNECT
// tunnel), the sandbox sending its own X-Injected: one JSON line per URL.
async function seen(sbx, urls, flags = '') {
  const cmd = `curl -s -m 5 ${flags} -H 'X-Injected: sandbox-own' ${urls.map((u) => `'${u}'`).join(' ')} || true`
  const out = (await sbx.commands.run(cmd)).stdout.trim()
  return out ? out.split('\n').map((l) => JSON.parse(l)) : []
}

test('rules: given at create, the proxy adds or replaces their headers on every request; rules never allow', async () => {
  const srv = await echoServer()
  try {
    const rules = new Map([['127.0.0.1', [{ transform: () => ({ headers: { 'X-Injected': 'from-rules' } }) },
                                          { transform: { headers: { Authorization: 'Bearer t0k' } } }, {}]]])
    const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 120_000,
                                       network: { denyOut: ['0.0.0.0/0'], allowOut: ['127.0.0.1/32'], rules } })
    const info = await sbx.getInfo()
    assert.deepEqual(info.network.rules, { '127.0.0.1': [{ transform: { headers: { 'X-Injected': 'from-rules' } } },
                                                         { transform: { headers: { Authorization: 'Bearer t0k' } } }, {}] })
    // two URLs on one keep-alive connection: both rewritten
    const got = await seen(sbx, [`${srv.url}/a`, `${srv.url}/b`])
    assert.equal(got.length, 2)
    assert.equal(got[0].socket, got[1].socket, 'curl kept the connection')
    for (const r of got) assert.deepEqual([r.injected, r.auth], ['from-rules', 'Bearer t0k'])
    // plain HTTP inside a CONNECT tunnel to a host with rules is rewritten too
    const tunnel = await seen(sbx, [`${srv.url}/t`], '-p')
    assert.deepEqual([tunnel[0].injected, tunnel[0].auth], ['from-rules', 'Bearer t0k'])
    await sbx.kill()

    // listing a host in rules does not let the sandbox reach it
    const closed = await Sandbox.create({ ...S.opts, timeoutMs: 120_000,
                                          network: { denyOut: ['0.0.0.0/0'], rules: { '127.0.0.1': [{ transform: { headers: { 'X-Injected': 'x' } } }] } } })
    assert.deepEqual(await seen(closed, [srv.url]), [])
    await closed.kill()
  } finally {
    srv.close()
  }
})

test('rules: updateNetwork replaces them, omitting them clears them; a CR/LF value is refused', async () => {
  const srv = await echoServer()
  try {
    const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 120_000, network: { allowOut: ['127.0.0.1/32'], denyOut: ['0.0.0.0/0'] } })
    assert.equal((await seen(sbx, [srv.url]))[0].injected, 'sandbox-own')
    await sbx.updateNetwork({ allowOut: ['127.0.0.1/32'], denyOut: ['0.0.0.0/0'],
                              rules: { '127.0.0.1': [{ transform: { headers: { 'X-Second': 'two' } } }] } })
    let r = (await seen(sbx, [srv.url]))[0]
    assert.deepEqual([r.injected, r.second], ['sandbox-own', 'two'])
    assert.deepEqual((await sbx.getInfo()).network.rules, { '127.0.0.1': [{ transform: { headers: { 'X-Second': 'two' } } }] })
    await assert.rejects(sbx.updateNetwork({ allowOut: ['127.0.0.1/32'], denyOut: ['0.0.0.0/0'],
                                             rules: { '127.0.0.1': [{ transform: { headers: { 'X-Second': 'a\r\nX-Evil: 1' } } }] } }),
                         /400.*control characters/)
    await assert.rejects(Sandbox.create({ ...S.opts, network: { rules: { '127.0.0.1': [{ transform: { headers: { 'X-A': 'a\nb' } } }] } } }),
                         /400.*control characters/)
    r = (await seen(sbx, [srv.url]))[0]
    assert.equal(r.second, 'two', 'a refused update changes nothing')
    await sbx.updateNetwork({ allowOut: ['127.0.0.1/32'], denyOut: ['0.0.0.0/0'] })
    r = (await seen(sbx, [srv.url]))[0]
    assert.deepEqual([r.injected, r.second], ['sandbox-own', null])
    assert.equal((await sbx.getInfo()).network.rules, undefined)
    await sbx.kill()
  } finally {
    srv.close()
  }
})
