// Shared test plumbing: one e2b-local per test file, SDK options, raw envd calls.
import { after, before } from 'node:test'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { sdkOpts, startServer } from './server.mjs'

// Starts a server before the file's tests and stops it after; returns a
// getter so tests read the live handle.
export function useServer(args) {
  const box = {}
  before(async () => {
    box.srv = await startServer(args)
    box.opts = sdkOpts(box.srv.env)
    box.env = box.srv.env
  })
  after(async () => {
    const res = await box.srv.stop()
    if (res.code !== 0) throw new Error(`e2b-local exited with ${res.code}/${res.signal}:\n${res.stderr}`)
    // every sandbox runtime (bwrap's command line names the state dir) is gone
    const left = pidsWithCmdline(box.srv.state)
    if (left.length) throw new Error(`processes left after stop: ${left}`)
  })
  return box
}

// Host pids whose /proc/<pid>/<file> holds needle.
function pidsWhere(file, needle) {
  const pids = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/${file}`).includes(needle)) pids.push(Number(d))
    } catch {}
  }
  return pids
}

export const pidsWithCmdline = (fragment) => pidsWhere('cmdline', fragment)

export const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms))

// Host pids whose environment carries NAME=VALUE (how a sandbox's processes
// are found from outside without trusting the emulator).
export const pidsWithEnv = (name, value) => pidsWhere('environ', Buffer.from(`${name}=${value}\0`))

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

// Upgrades a request (send: http.request or https.request) to a WebSocket,
// checks the accept key, writes payload and resolves true when the same
// bytes came back; a tunnel silent for stallMs fails.
export function wsEcho(send, options, payload, stallMs = 20_000) {
  const key = randomBytes(16).toString('base64')
  const headers = { ...options.headers, Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' }
  return new Promise((ok, fail) => {
    let got = Buffer.alloc(0)
    const stalled = setTimeout(() => fail(new Error(`the tunnel stalled after ${got.length} of ${payload.length} bytes`)), stallMs)
    const done = (settle, value) => {
      clearTimeout(stalled)
      settle(value)
    }
    const req = send({ ...options, headers })
    req.on('upgrade', (res, sock) => {
      const want = createHash('sha1').update(key + WS_GUID).digest('base64')
      if (res.headers['sec-websocket-accept'] !== want) return done(fail, new Error('bad accept'))
      sock.on('data', (d) => {
        got = Buffer.concat([got, d])
        if (got.length >= payload.length) {
          sock.end()
          done(ok, got.equals(payload))
        }
      })
      sock.write(payload)
    })
    req.on('response', (res) => done(fail, new Error(`no upgrade: ${res.statusCode}`)))
    req.on('error', (e) => done(fail, e))
    req.end()
  })
}

// Connect envelopes.
export function envelope(obj, flags = 0) {
  const payload = Buffer.from(JSON.stringify(obj))
  const head = Buffer.alloc(5)
  head[0] = flags
  head.writeUInt32BE(payload.length, 1)
  return Buffer.concat([head, payload])
}

export function parseEnvelopes(buf) {
  const out = []
  let i = 0
  while (i + 5 <= buf.length) {
    const flags = buf[i]
    const len = buf.readUInt32BE(i + 1)
    out.push({ flags, msg: JSON.parse(buf.subarray(i + 5, i + 5 + len).toString()) })
    i += 5 + len
  }
  if (i !== buf.length) throw new Error(`trailing ${buf.length - i} bytes after envelopes`)
  return out
}

// Raw envd request routed by E2b-Sandbox-Id, as the SDK does.
// sbx: an SDK Sandbox, or a raw create response (sandboxID).
export function envdHeaders(sbx, extra = {}) {
  const h = { 'E2b-Sandbox-Id': sbx.sandboxId ?? sbx.sandboxID }
  if (sbx.envdAccessToken) h['X-Access-Token'] = sbx.envdAccessToken
  return { ...h, ...extra }
}

// A process.Start stream of `bash -c cmd`, its body not read yet.
export function openStream(env, sbx, cmd, headers = {}) {
  return fetch(`${env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/connect+json', ...headers }),
    body: envelope({ process: { cmd: '/bin/bash', args: ['-c', cmd] }, stdin: false }),
  })
}

// The same stream read to its end, split into envelopes.
export async function startStream(env, sbx, cmd, headers = {}) {
  const res = await openStream(env, sbx, cmd, headers)
  return { res, frames: parseEnvelopes(Buffer.from(await res.arrayBuffer())) }
}

// fetch on the control plane with the API key (S: useServer's handle).
export const controlApi = (S) => (path, init = {}) =>
  fetch(`${S.env.E2B_API_URL}${path}`, {
    ...init,
    headers: { 'X-API-Key': S.env.E2B_API_KEY, 'Content-Type': 'application/json', ...(init.headers || {}) },
  })

// The host directory of a sandbox's cgroup, or null: cgroup v1's freezer
// hierarchy, else cgroup v2's .../e2b-local/server-<pid>/<id> (depth-bounded walk).
export function sandboxCgroup(sandboxId) {
  const v1 = `/sys/fs/cgroup/freezer/e2b-local/${sandboxId}`
  if (existsSync(v1)) return v1
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n')
    .map((l) => l.split(' ')).filter((f) => f[2] === 'cgroup2').map((f) => f[1])
  const walk = (dir, depth) => {
    if (depth > 10) return null
    let entries = []
    try { entries = readdirSync(dir, { withFileTypes: true }) } catch { return null }
    for (const e of entries) {
      if (!e.isDirectory()) continue
      const sub = `${dir}/${e.name}`
      if (e.name === sandboxId && /\/server-\d+$/.test(dir)) return sub
      const found = walk(sub, depth + 1)
      if (found) return found
    }
    return null
  }
  for (const m of mounts) {
    const found = walk(m, 0)
    if (found) return found
  }
  return null
}

// Marks host loopback ports as standing in for the internet on the test
// file's e2b-local (admin API): the host's loopback is never the internet,
// so allow-all reaches these ports only once marked. [] unmarks them all.
export async function markInternet(S, ports) {
  const res = await fetch(`${S.env.E2B_API_URL}/_e2b_local/internet`, {
    method: ports.length ? 'PUT' : 'DELETE',
    headers: { 'X-Admin-Token': S.env.E2B_LOCAL_ADMIN_TOKEN, 'Content-Type': 'application/json' },
    body: ports.length ? JSON.stringify({ ports }) : undefined,
  })
  if (res.status !== 200) throw new Error(`marking ${ports} as the internet: ${res.status} ${await res.text()}`)
}
