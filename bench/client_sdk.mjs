// bench/client_sdk.mjs: the official JS SDK's side of bench/compare.sh (same
// measurements as client.lua, same output format). Run under e2b-local exec.
import { execSync } from 'node:child_process'
import { createRequire } from 'node:module'

// The SDK pinned for the compatibility suite (npm ci --prefix spec/sdk).
const { Sandbox } = createRequire(new URL('../spec/sdk/package.json', import.meta.url))('e2b')

const N = Number(process.argv[2] ?? 10)
const MB = Number(process.argv[3] ?? 200)
const now = () => performance.now()

const times = []
for (let i = 0; i < N; i++) {
  const t0 = now()
  const sbx = await Sandbox.create()
  const r = await sbx.commands.run('echo hi')
  if (r.stdout !== 'hi\n') throw new Error('bad output')
  await sbx.kill()
  times.push(now() - t0)
}
times.sort((a, b) => a - b)
console.log('create_run_kill_ms', times[Math.ceil(N / 2) - 1].toFixed(1))

// e2b-local, like E2B, ends a sandbox 15 s after creation unless told otherwise.
const sbx = await Sandbox.create({ timeoutMs: 600_000 })
// N groups of 5, the median group's time per run (as client.lua, whose clock counts whole ms)
const runs = []
for (let g = 0; g < N; g++) {
  const t0 = now()
  for (let i = 0; i < 5; i++) {
    const r = await sbx.commands.run('true')
    if (r.exitCode !== 0) throw new Error('true failed')
  }
  runs.push((now() - t0) / 5)
}
runs.sort((a, b) => a - b)
console.log('run_true_ms', runs[Math.ceil(runs.length / 2) - 1].toFixed(1))

let bytes = 0
execSync('sync') // as bench/client.lua's streams: no earlier write-back runs into it
let t0 = now()
await sbx.commands.run(`head -c ${MB * 1000000} /dev/zero`, {
  onStdout: (d) => { bytes += Buffer.byteLength(d) },
  timeoutMs: 0,
})
if (bytes !== MB * 1000000) throw new Error(`got ${bytes}`)
const mbps = (bytes / 1e6 / ((now() - t0) / 1000)).toFixed(1)
// The SDK keeps no output: its one live stream stands in both rows.
console.log('stdout_mbps_tracked', mbps)
console.log('stdout_mbps_live_only', mbps)

t0 = now()
await Promise.all(Array.from({ length: 200 }, (_, i) => sbx.commands.run(`echo ${i}`)))
const conc = (now() - t0).toFixed(1)
console.log('concurrent_200_ms', conc)
console.log('concurrent_200_unkept_ms', conc)
await sbx.kill()
