// Shared test plumbing: one e2b-local per test file, SDK options, raw envd calls.
import { after, before } from 'node:test'
import { readdirSync, readFileSync } from 'node:fs'
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
    if (/ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/.test(res.stderr))
      throw new Error(`sanitizer report:\n${res.stderr}`)
    // every sandbox runtime (bwrap's command line names the state dir) is gone
    const left = pidsWithCmdline(box.srv.state)
    if (left.length) throw new Error(`processes left after stop: ${left}`)
  })
  return box
}

export function pidsWithCmdline(fragment) {
  const pids = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/cmdline`).includes(fragment)) pids.push(Number(d))
    } catch {}
  }
  return pids
}

export const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms))

// Host pids whose environment carries NAME=VALUE (how a sandbox's processes
// are found from outside without trusting the emulator).
export function pidsWithEnv(name, value) {
  const needle = Buffer.from(`${name}=${value}\0`)
  const pids = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/environ`).includes(needle)) pids.push(Number(d))
    } catch {}
  }
  return pids
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

export async function startStream(env, sbx, cmd, headers = {}) {
  const res = await fetch(`${env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': 'application/connect+json', ...headers }),
    body: envelope({ process: { cmd: '/bin/bash', args: ['-c', cmd] }, stdin: false }),
  })
  return { res, frames: parseEnvelopes(Buffer.from(await res.arrayBuffer())) }
}
