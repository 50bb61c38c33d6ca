// e2b-local's own cost, so client benchmarks know the server's ceiling:
// create+run+kill latency, stdout throughput of one command, 200 concurrent
// commands, and the 50-sandbox load. Prints numbers; asserts nothing.
//
//   node bench/emulator.mjs            (e2b-local from PATH, or E2B_LOCAL_BIN)
import { execFileSync } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const sdkDir = resolve(here, '../spec/sdk')
if (!process.env.E2B_LOCAL_BIN) {
  try {
    process.env.E2B_LOCAL_BIN = execFileSync('sh', ['-c', 'command -v e2b-local'], { encoding: 'utf8' }).trim()
  } catch {}
}
const { Sandbox } = await import(resolve(sdkDir, 'node_modules/e2b/dist/index.mjs'))
const { startServer, sdkOpts } = await import(resolve(sdkDir, 'server.mjs'))
const { envdHeaders, envelope } = await import(resolve(sdkDir, 'helpers.mjs'))
const { loadRun } = await import(resolve(sdkDir, 'load.mjs'))

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const ms = (x) => `${x.toFixed(1)} ms`

// Counts the stdout bytes of one Start stream without building strings: the
// client must not be what is measured.
async function rawStream(env, sbx, cmd, binary) {
  const res = await fetch(`${env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': binary ? 'application/connect+proto' : 'application/connect+json' }),
    body: binary ? protoStart(cmd) : envelope({ process: { cmd: '/bin/bash', args: ['-c', cmd] }, stdin: false }),
  })
  // streaming parse: only each envelope's header, the first bytes and the
  // last bytes of its payload are looked at
  let got = 0
  let head = Buffer.alloc(0) // partial 5-byte header
  let left = 0 // payload bytes still to come
  let flags = 0
  let len = 0
  let first = Buffer.alloc(0)
  let last = Buffer.alloc(0)
  const done = () => {
    if (flags & 2) return
    if (binary) {
      // StartResponse{1: ProcessEvent{2: DataEvent{1: bytes}}}: the last varint before the data is its length
      let i = 1
      while (first[i] & 0x80) i++
      if (first[i + 1] !== 0x12) return
      i += 2
      while (first[i] & 0x80) i++
      i += 2
      let n = 0
      for (let s = 0; ; s += 7) {
        const x = first[i++]
        n += (x & 0x7f) * 2 ** s
        if (!(x & 0x80)) break
      }
      got += n
    } else {
      const at = first.indexOf('"stdout":"')
      if (at < 0) return
      const b64 = len - at - 10 - 4
      const pad = last[last.length - 5] === 0x3d ? (last[last.length - 6] === 0x3d ? 2 : 1) : 0
      got += (b64 / 4) * 3 - pad
    }
  }
  for await (const c of res.body) {
    let chunk = Buffer.from(c.buffer, c.byteOffset, c.byteLength)
    while (chunk.length) {
      if (left === 0) {
        const need = 5 - head.length
        head = Buffer.concat([head, chunk.subarray(0, need)])
        chunk = chunk.subarray(need)
        if (head.length < 5) break
        flags = head[0]
        len = left = head.readUInt32BE(1)
        head = Buffer.alloc(0)
        first = Buffer.alloc(0)
        last = Buffer.alloc(0)
        if (left === 0) done()
        continue
      }
      const take = Math.min(left, chunk.length)
      const part = chunk.subarray(0, take)
      if (first.length < 64) first = Buffer.concat([first, part.subarray(0, 64 - first.length)])
      last = Buffer.concat([last, part.subarray(Math.max(0, take - 8))]).subarray(-8)
      left -= take
      chunk = chunk.subarray(take)
      if (left === 0) done()
    }
  }
  return got
}

// StartRequest{process: ProcessConfig{cmd, args}, stdin: false}, enveloped.
function protoStart(cmd) {
  const field = (n, b) => Buffer.concat([Buffer.from([(n << 3) | 2]), varintBytes(b.length), b])
  const varintBytes = (v) => {
    const out = []
    do {
      out.push((v & 0x7f) | (v > 0x7f ? 0x80 : 0))
      v = Math.floor(v / 128)
    } while (v)
    return Buffer.from(out)
  }
  const config = Buffer.concat([field(1, Buffer.from('/bin/bash')), field(2, Buffer.from('-c')), field(2, Buffer.from(cmd))])
  const msg = Buffer.concat([field(1, config), Buffer.from([0x20, 0x00])])
  const head = Buffer.alloc(5)
  head.writeUInt32BE(msg.length, 1)
  return Buffer.concat([head, msg])
}

const srv = await startServer()
const opts = sdkOpts(srv.env)
console.log(`e2b-local: ${process.env.E2B_LOCAL_BIN}`)
try {
  // 1. create + run + kill, one after another
  const N = 20
  const phases = { create: [], run: [], kill: [], total: [] }
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    const sbx = await Sandbox.create({ ...opts })
    const t1 = performance.now()
    await sbx.commands.run('true')
    const t2 = performance.now()
    await sbx.kill()
    const t3 = performance.now()
    phases.create.push(t1 - t0)
    phases.run.push(t2 - t1)
    phases.kill.push(t3 - t2)
    phases.total.push(t3 - t0)
  }
  console.log(`\ncreate+run+kill, ${N} sequential sandboxes (p50 / p90):`)
  for (const [k, v] of Object.entries(phases)) console.log(`  ${k.padEnd(7)} ${ms(pct(v, 50)).padStart(10)} / ${ms(pct(v, 90))}`)

  // 2. stdout throughput of one command
  const sbx = await Sandbox.create({ ...opts, timeoutMs: 600_000 })
  const RAW = 1 << 30
  console.log(`\nstdout throughput, one command:`)
  for (const binary of [false, true]) {
    const t0 = performance.now()
    const got = await rawStream(srv.env, sbx, `head -c ${RAW} /dev/zero`, binary)
    const secs = (performance.now() - t0) / 1000
    const label = binary ? 'raw Connect stream, binary codec:' : 'raw Connect stream, JSON codec:  '
    console.log(`  ${label} ${(got / 2 ** 20 / secs).toFixed(1)} MiB/s (${got >> 20} MiB in ${secs.toFixed(2)} s)`)
  }
  let t0, secs
  const SDK = 256 << 20
  t0 = performance.now()
  let sdkBytes = 0
  await sbx.commands.run(`head -c ${SDK} /dev/zero`, { onStdout: (d) => (sdkBytes += d.length), timeoutMs: 0 })
  secs = (performance.now() - t0) / 1000
  console.log(`  through the SDK (commands.run):  ${(sdkBytes / 2 ** 20 / secs).toFixed(1)} MiB/s (${sdkBytes >> 20} MiB in ${secs.toFixed(2)} s)`)
  await sbx.kill()

  // 3. 200 concurrent commands over 10 sandboxes
  const ten = await Promise.all(Array.from({ length: 10 }, () => Sandbox.create({ ...opts })))
  const lat = []
  t0 = performance.now()
  await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const s = performance.now()
      const r = await ten[i % 10].commands.run(`echo ${i}`)
      if (r.stdout !== `${i}\n`) throw new Error(`wrong output for ${i}`)
      lat.push(performance.now() - s)
    }),
  )
  const wall = performance.now() - t0
  console.log(`\n200 concurrent commands (echo) over 10 sandboxes:`)
  console.log(`  wall ${ms(wall)}, ${(200 / (wall / 1000)).toFixed(0)} commands/s, latency p50 ${ms(pct(lat, 50))}, p99 ${ms(pct(lat, 99))}`)
  await Promise.all(ten.map((s) => s.kill()))

  // 4. the load scenario of spec/sdk/load.test.mjs, with bigger outputs
  const r = await loadRun({ Sandbox, opts, state: srv.state, sandboxes: 50, commands: 200, bytes: 262144, marker: `bench${Date.now()}` })
  console.log(`\nload: 50 sandboxes, 200 concurrent commands x 256 KiB stdout:`)
  console.log(`  create ${ms(r.createMs)}, commands ${ms(r.runMs)} (${(r.totalBytes / 2 ** 20 / (r.runMs / 1000)).toFixed(1)} MiB/s), kill ${ms(r.killMs)}`)
  console.log(`  wrong outputs ${r.badOutputs}, bytes ${r.totalBytes}, left: ${r.leftPids.length} processes, ${r.leftMounts.length} mounts, ${r.leftCgroups} cgroups, ${r.leftDirs} dirs`)
} finally {
  await srv.stop()
}
