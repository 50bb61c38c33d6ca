// network.rules through the unchanged SDK: per-domain headers e2b-local's
// egress proxy adds to (or replaces in) a sandbox's HTTP and HTTPS requests, given at
// create (plain objects, a Map, a transform callback, a rule without a
// transform) and replaced or cleared by updateNetwork. The "internet" is a
// server on the host's loopback that answers with the headers it got, reached
// by name (localhost, *.localhost: rule keys are exact domain names, as on E2B); for
// HTTPS, one with a certificate from a CA made here, which the server under
// test is told to trust (--egress-ca-file).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'
import { Sandbox } from './sdk.mjs'
import { useServer } from './helpers.mjs'

// The upstream's CA and its certificate for api.localhost (openssl, P-256).
const certs = mkdtempSync(join(tmpdir(), 'e2b-rules-certs-'))
after(() => rmSync(certs, { recursive: true, force: true }))
const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
const openssl = (...args) => execFileSync('openssl', args, { cwd: certs, stdio: ['ignore', 'ignore', 'pipe'] })
openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sdk spec upstream CA',
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign')
openssl('req', ...ec, '-keyout', 'up.key', '-out', 'up.csr', '-subj', '/CN=api.localhost')
writeFileSync(join(certs, 'leaf.ext'), 'subjectAltName=DNS:api.localhost\nextendedKeyUsage=serverAuth\n')
openssl('x509', '-req', '-in', 'up.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'up.pem',
        '-days', '2', '-extfile', 'leaf.ext')

const S = useServer({ extraArgs: ['--egress-ca-file', join(certs, 'ca.pem')] })

async function echoServer(tls) {
  const make = tls ? (h) => createHttpsServer(tls, h) : createServer
  const srv = make((req, res) => {
    res.setHeader('Content-Type', 'application/json')
    res.end(JSON.stringify({ injected: req.headers['x-injected'] ?? null, auth: req.headers.authorization ?? null,
                             second: req.headers['x-second'] ?? null, socket: req.socket.remotePort }) + '\n')
  })
  await new Promise((ok) => srv.listen(0, '127.0.0.1', ok))
  srv.url = tls ? `https://api.localhost:${srv.address().port}` : `http://localhost:${srv.address().port}`
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
    // one rule per domain: E2B's API refuses more (400)
    const rules = new Map([['localhost', [{ transform: () => ({ headers: { 'X-Injected': 'from-rules', Authorization: 'Bearer t0k' } }) }]]])
    const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 120_000,
                                       network: { denyOut: ['0.0.0.0/0'], allowOut: ['localhost'], rules } })
    const info = await sbx.getInfo()
    assert.deepEqual(info.network.rules, { localhost: [{ transform: { headers: { 'X-Injected': 'from-rules', Authorization: 'Bearer t0k' } } }] })
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
                                          network: { denyOut: ['0.0.0.0/0'], rules: { localhost: [{ transform: { headers: { 'X-Injected': 'x' } } }] } } })
    assert.deepEqual(await seen(closed, [srv.url]), [])
    await closed.kill()

    // an IP address is no rule key: E2B's API takes domain names only (400)
    await assert.rejects(Sandbox.create({ ...S.opts, network: { denyOut: ['0.0.0.0/0'], allowOut: ['127.0.0.1/32'],
                                                               rules: { '127.0.0.1': [{ transform: { headers: { 'X-Injected': 'x' } } }] } } }),
                         /400/)
  } finally {
    srv.close()
  }
})

test('rules: updateNetwork replaces them, omitting them clears them; a CR/LF value is refused', async () => {
  const srv = await echoServer()
  try {
    const net = { allowOut: ['localhost'], denyOut: ['0.0.0.0/0'] }
    const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 120_000, network: net })
    assert.equal((await seen(sbx, [srv.url]))[0].injected, 'sandbox-own')
    await sbx.updateNetwork({ ...net, rules: { localhost: [{ transform: { headers: { 'X-Second': 'two' } } }] } })
    let r = (await seen(sbx, [srv.url]))[0]
    assert.deepEqual([r.injected, r.second], ['sandbox-own', 'two'])
    assert.deepEqual((await sbx.getInfo()).network.rules, { localhost: [{ transform: { headers: { 'X-Second': 'two' } } }] })
    await assert.rejects(sbx.updateNetwork({ ...net, rules: { localhost: [{ transform: { headers: { 'X-Second': 'a\r\nX-Evil: 1' } } }] } }),
                         /400.*control characters/)
    await assert.rejects(Sandbox.create({ ...S.opts, network: { rules: { localhost: [{ transform: { headers: { 'X-A': 'a\nb' } } }] } } }),
                         /400.*control characters/)
    // E2B takes exact DNS names as rule keys: a wildcard is refused, at create and update
    await assert.rejects(sbx.updateNetwork({ ...net, rules: { '*.localhost': [{ transform: { headers: { 'X-A': 'a' } } }] } }),
                         /400.*"\*\.localhost".*not a valid domain name/)
    await assert.rejects(Sandbox.create({ ...S.opts, network: { rules: { '*.localhost': [{ transform: { headers: { 'X-A': 'a' } } }] } } }),
                         /400.*"\*\.localhost".*not a valid domain name/)
    r = (await seen(sbx, [srv.url]))[0]
    assert.equal(r.second, 'two', 'a refused update changes nothing')
    await sbx.updateNetwork(net)
    r = (await seen(sbx, [srv.url]))[0]
    assert.deepEqual([r.injected, r.second], ['sandbox-own', null])
    assert.equal((await sbx.getInfo()).network.rules, undefined)
    await sbx.kill()
  } finally {
    srv.close()
  }
})

test('rules: HTTPS requests to a host with rules get the headers, behind e2b-local\'s CA; without rules, untouched', async () => {
  const srv = await echoServer({ key: readFileSync(join(certs, 'up.key')), cert: readFileSync(join(certs, 'up.pem')) })
  const allow = { allowOut: ['localhost', '*.localhost'], denyOut: ['0.0.0.0/0'] }
  try {
    const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 120_000, network: { ...allow,
      rules: { 'api.localhost': [{ transform: { headers: { 'X-Injected': 'from-rules', Authorization: 'Bearer t0k' } } }] } } })
    // curl checks the certificate with the sandbox's own store: e2b-local's CA is in it
    const got = await seen(sbx, [`${srv.url}/a`, `${srv.url}/b`])
    assert.equal(got.length, 2)
    assert.equal(got[0].socket, got[1].socket, 'one TLS connection upstream')
    for (const r of got) assert.deepEqual([r.injected, r.auth], ['from-rules', 'Bearer t0k'])
    // rules cleared: the tunnel is the upstream's own TLS, which the sandbox does not trust
    await sbx.updateNetwork(allow)
    assert.deepEqual(await seen(sbx, [srv.url]), [])
    await sbx.files.write('/tmp/up-ca.pem', readFileSync(join(certs, 'ca.pem'), 'utf8'))
    const plain = await seen(sbx, [srv.url], '--cacert /tmp/up-ca.pem')
    assert.equal(plain[0].injected, 'sandbox-own')
    await sbx.kill()
  } finally {
    srv.close()
  }
})
