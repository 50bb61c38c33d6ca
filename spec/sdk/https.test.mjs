// The official SDK the way it builds URLs by itself: given only E2B_DOMAIN,
// E2B_API_KEY and the CA to trust (NODE_EXTRA_CA_CERTS), all printed by
// `e2b-local serve`, it reaches the control plane at https://api.<domain>,
// envd at https://49983-<id>.<domain> and a port at https://${getHost(port)}
// -- e2b-local's HTTPS listener, with a certificate from its own CA.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { lookup } from 'node:dns/promises'
import { readFileSync, statSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox, SDK_PACKAGE } from './sdk.mjs'
import { useServer, wsEcho } from './helpers.mjs'
import { BIN, noSanitizerReport, startServer } from './server.mjs'

const S = useServer()
const here = dirname(fileURLToPath(import.meta.url))

// Does this machine resolve *.localhost (libnss-myhostname, set up by
// scripts/setup.sh)? If not, the child gets localhost_resolver.mjs, which
// does only that.
async function resolvesLocalhostNames() {
  try {
    return (await lookup('49983-probe.e2b.localhost')).address.startsWith('127.')
  } catch {
    return false
  }
}

// Runs https_client.mjs in a fresh Node with exactly these variables.
async function client(mode, vars, t) {
  const args = []
  if (!(await resolvesLocalhostNames())) {
    t.diagnostic('*.localhost does not resolve here (no libnss-myhostname): preloading localhost_resolver.mjs')
    args.push('--import', join(here, 'localhost_resolver.mjs'))
  }
  args.push(join(here, 'https_client.mjs'), mode)
  const env = { PATH: process.env.PATH, E2B_SDK: SDK_PACKAGE, ...vars }
  const child = spawn(process.execPath, args, { env, cwd: here, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const code = await new Promise((ok) => child.once('exit', ok))
  assert.equal(code, 0, `the SDK client failed:\n${err}`)
  return JSON.parse(out.trim().split('\n').pop())
}

test('the SDK with only E2B_DOMAIN, E2B_API_KEY and NODE_EXTRA_CA_CERTS: create, run, files, a port over HTTPS, kill, volume content', async (t) => {
  const { E2B_DOMAIN: domain, E2B_API_KEY, NODE_EXTRA_CA_CERTS } = S.env
  assert.match(domain, /^e2b\.localhost:\d+$/)
  const r = await client('full', { E2B_DOMAIN: domain, E2B_API_KEY, NODE_EXTRA_CA_CERTS }, t)
  // the SDK's own URL shapes, nothing configured but the domain
  assert.equal(r.apiUrl, `https://api.${domain}`)
  assert.equal(r.envdUrl, `https://49983-${r.id}.${domain}`)
  assert.equal(r.stdout, 'hello\nuser\n')
  assert.equal(r.sameBytes, true)
  assert.equal(r.portUrl, `https://8000-${r.id}.${domain}/hello?x=1`)
  assert.equal(r.portStatus, 200)
  assert.deepEqual(r.portBody, { url: '/hello?x=1', host: `8000-${r.id}.${domain}` })
  assert.equal(r.listedAfterKill, false)
  assert.equal(r.volumeWritten, '/v.txt')
  assert.equal(r.volumeRead, 'volume over https')
})

test('without the CA the SDK refuses the certificate (verification is real)', async (t) => {
  const { E2B_DOMAIN, E2B_API_KEY } = S.env
  const r = await client('list', { E2B_DOMAIN, E2B_API_KEY }, t)
  assert.equal(r.ok, false)
  t.diagnostic(r.error)
  assert.match(r.error, /UNABLE_TO_VERIFY|CERT/, r.error)
})

test('the CA key is 0600 in a 0700 directory, and a sandbox (root) cannot read it', async () => {
  const dir = join(S.srv.state, "tls")
  const key = join(dir, 'ca.key')
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  assert.equal(statSync(key).mode & 0o777, 0o600)
  assert.equal(S.env.NODE_EXTRA_CA_CERTS, join(dir, 'ca.pem'))
  const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 60_000 })
  const r = await sbx.commands.run(`cat ${key}; ls ${dir}; echo status=$?`, { user: 'root' }).catch((e) => e)
  assert.doesNotMatch(`${r.stdout}${r.stderr}`, /PRIVATE KEY/)
  assert.match(r.stdout, /status=[1-9]/, 'the state directory does not exist inside the sandbox')
  // the server's own CA variables never enter; the sandbox's copy of the CA
  // (for the HTTPS the egress proxy intercepts) is a certificate only
  const env = await sbx.commands.run('env; cat /run/e2b/ca.pem', { user: 'root' })
  assert.doesNotMatch(env.stdout, /ca\.key|E2B_CA_FILE|PRIVATE KEY/)
  assert.doesNotMatch(env.stdout, new RegExp(S.srv.state))
  assert.match(env.stdout, /^NODE_EXTRA_CA_CERTS=\/run\/e2b\/ca\.pem$/m)
  assert.ok(env.stdout.includes(readFileSync(join(dir, 'ca.pem'), 'utf8').trim()))
  await sbx.kill()
})

test('exec: CMD trusts the CA through NODE_EXTRA_CA_CERTS, bundled with one the caller already set', async (t) => {
  // the caller's own extra CA: another e2b-local's, any valid PEM would do
  const theirs = S.env.NODE_EXTRA_CA_CERTS
  const preload = (await resolvesLocalhostNames()) ? [] : ['--import', join(here, 'localhost_resolver.mjs')]
  if (preload.length) t.diagnostic('*.localhost does not resolve here: preloading localhost_resolver.mjs')
  const script = `
    const r = await fetch('https://api.' + process.env.E2B_DOMAIN + '/health', { headers: { 'X-API-Key': process.env.E2B_API_KEY } })
    const fs = await import('node:fs')
    const bundle = fs.readFileSync(process.env.NODE_EXTRA_CA_CERTS, 'utf8')
    console.log(JSON.stringify({ status: r.status, theirs: bundle.includes(fs.readFileSync(${JSON.stringify(theirs)}, 'utf8')),
      ours: bundle.includes(fs.readFileSync(process.env.E2B_CA_FILE, 'utf8')) }))`
  const child = spawn(BIN, ['exec', '--', process.execPath, ...preload, '--input-type=module', '-e', script], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: theirs },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  assert.equal(await new Promise((ok) => child.once('exit', ok)), 0, err)
  noSanitizerReport(err)
  assert.deepEqual(JSON.parse(out.trim()), { status: 200, theirs: true, ours: true })
})

test('--no-tls: plain HTTP only, the domain a bare localhost:PORT and no CA published', async () => {
  const srv = await startServer({ extraArgs: ['--no-tls'] })
  try {
    assert.match(srv.env.E2B_DOMAIN, /^localhost:\d+$/)
    assert.equal(srv.env.E2B_DOMAIN, `localhost:${new URL(srv.env.E2B_API_URL).port}`)
    assert.equal(srv.env.NODE_EXTRA_CA_CERTS, undefined)
    assert.equal(srv.env.E2B_CA_FILE, undefined)
    // with isolation the CA is still made, for the egress proxy's HTTPS
    // interception (sandboxes trust it), as private as ever
    if (srv.logs().includes('bubblewrap isolation')) {
      assert.equal(statSync(join(srv.state, 'tls')).mode & 0o777, 0o700)
      assert.equal(statSync(join(srv.state, 'tls', 'ca.key')).mode & 0o777, 0o600)
    } else {
      assert.throws(() => statSync(join(srv.state, 'tls')), /ENOENT/)
    }
  } finally {
    const res = await srv.stop()
    assert.equal(res.code, 0, res.stderr)
  }
})

const WS_ECHO_JS = `
const http = require('http'), crypto = require('crypto')
http.createServer((req, res) => res.end('ready')).on('upgrade', (req, sock, head) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
  sock.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n')
  if (head.length) sock.write(head)
  sock.pipe(sock)
}).listen(8080, '127.0.0.1')
`

test('ports over HTTPS: a WebSocket upgrade carries 8 MB both ways through the TLS listener', async () => {
  const sbx = await Sandbox.create({ ...S.opts, timeoutMs: 60_000 })
  await sbx.files.write('/home/user/ws.js', WS_ECHO_JS)
  await sbx.commands.run('node /home/user/ws.js', { background: true })
  const host = sbx.getHost(8080)
  const tls = { host: '127.0.0.1', port: Number(S.env.E2B_DOMAIN.split(':')[1]), servername: host.split(':')[0], ca: readFileSync(S.env.NODE_EXTRA_CA_CERTS) }
  const get = () => new Promise((ok) => {
    const req = httpsRequest({ ...tls, path: '/', headers: { Host: host } }, (res) => { res.resume(); ok(res.statusCode) })
    req.on('error', () => ok(0))
    req.end()
  })
  for (let i = 0; i < 100 && (await get()) !== 200; i++) await new Promise((ok) => setTimeout(ok, 100))
  // 8 MB each way, written at once: far more than any buffer between the
  // client and the sandbox, so the tunnel must keep both directions moving.
  const echoed = await wsEcho(httpsRequest, { ...tls, path: '/ws', headers: { Host: host } }, randomBytes(8 << 20))
  assert.equal(echoed, true)
  await sbx.kill()
})
