// bench/files_sdk.mjs: the official JS SDK's side of bench/files.lua (same
// measurements and output format). Run under e2b-local exec.
//   node bench/files_sdk.mjs [FILE_MB=1024] [READ_MB=200] [SRC=a FILE_MB MiB file] [REPS=3]
// Each step runs REPS times after a sync: the best rate, the highest RSS
// growth (the highest RSS sampled every 5 ms during the step minus the RSS
// before it: node cannot reset its own peak).
import { createRequire } from 'node:module'
import { createReadStream, writeFileSync, rmSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { Readable } from 'node:stream'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const { Sandbox } = createRequire(new URL('../spec/sdk/package.json', import.meta.url))('e2b')

const FILE_MB = Number(process.argv[2] ?? 1024)
const READ_MB = Number(process.argv[3] ?? 200)
const REPS = Number(process.argv[5] ?? 3)
const size = FILE_MB * 1048576
let src = process.argv[4]
const own = !src
if (own) {
  src = join(tmpdir(), `files-sdk-${process.pid}`)
  writeFileSync(src, Buffer.alloc(size))
}
const now = () => performance.now()
const mibps = (bytes, ms) => (bytes / 1048576 / (ms / 1000)).toFixed(1)

// Runs step() REPS times: [best ms, highest peak RSS growth in MB].
async function measure(step) {
  let best = Infinity
  let most = 0
  for (let i = 0; i < REPS; i++) {
    execFileSync('sync')
    globalThis.gc?.()
    const base = process.memoryUsage.rss()
    let peak = base
    const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()) }, 5)
    const t0 = now()
    await step()
    best = Math.min(best, now() - t0)
    clearInterval(timer)
    peak = Math.max(peak, process.memoryUsage.rss())
    most = Math.max(most, (peak - base) / 1048576)
  }
  return [best, most]
}

// e2b-local, like E2B, ends a sandbox 15 s after creation unless told otherwise.
const sbx = await Sandbox.create({ timeoutMs: 600_000 })
let [ms, mb] = await measure(() => sbx.files.write('/tmp/big', Readable.toWeb(createReadStream(src))))
console.log('file_upload_mibps', mibps(size, ms))
console.log('file_upload_rss_growth_mb', mb.toFixed(1))
if (own) rmSync(src)

;[ms, mb] = await measure(async () => {
  let got = 0
  for await (const chunk of await sbx.files.read('/tmp/big', { format: 'stream' })) got += chunk.length
  if (got !== size) throw new Error(`got ${got}`)
})
console.log('file_download_mibps', mibps(size, ms))
console.log('file_download_rss_growth_mb', mb.toFixed(1))
await sbx.files.remove('/tmp/big')

const rsize = READ_MB * 1000000
await sbx.commands.run(`head -c ${rsize} /dev/zero > /tmp/whole`)
;[ms, mb] = await measure(async () => {
  const data = await sbx.files.read('/tmp/whole', { format: 'bytes' })
  if (data.length !== rsize) throw new Error(`got ${data.length}`)
})
console.log('file_read_whole_mibps', mibps(rsize, ms))
console.log('file_read_whole_peak_x', (mb * 1048576 / rsize).toFixed(1))
await sbx.kill()
