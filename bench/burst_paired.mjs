// bench/burst_paired.mjs: 200 commands at once, lua-e2b (kept, its default)
// against the official JS SDK, in adjacent pairs. compare.sh's rounds run the
// two clients' bursts tens of seconds apart, and this machine's speed moves
// on that scale (the same CPU-bound loop takes 120 to 200 ms from one second
// to the next): a round's ratio then says as much about when each burst ran
// as about the clients. Here both clients stay up, each on its own sandbox,
// and take turns, lua-e2b's burst then the SDK's then the SDK's then
// lua-e2b's (ABBA, so a drift favours neither), each started as the other
// ended. Prints the median of the pairs' lua/SDK ratios, their range, and in
// how many pairs lua-e2b took longer. Run under e2b-local exec:
//   node bench/burst_paired.mjs [PAIRS=8]
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { createRequire } from 'node:module'

const { Sandbox } = createRequire(new URL('../spec/sdk/package.json', import.meta.url))('e2b')
const PAIRS = Number(process.argv[2] ?? 8)

const lua = spawn('lua5.4', [new URL('burst_paired.lua', import.meta.url).pathname], {
  stdio: ['pipe', 'pipe', 'inherit'],
})
const lines = createInterface({ input: lua.stdout })[Symbol.asyncIterator]()
const next = async () => {
  const { value, done } = await lines.next()
  if (done) throw new Error('bench/burst_paired.lua ended early')
  return value
}
if ((await next()) !== 'ready') throw new Error('bench/burst_paired.lua did not start')

const sbx = await Sandbox.create({ timeoutMs: 600_000 })
for (let i = 0; i < 5; i++) await sbx.commands.run('true')

const luaBurst = async () => {
  lua.stdin.write('go\n')
  return Number(await next())
}
const sdkBurst = async () => {
  const t0 = performance.now()
  await Promise.all(Array.from({ length: 200 }, (_, i) => sbx.commands.run(`echo ${i}`)))
  return performance.now() - t0
}

const ratios = []
for (let p = 0; p < PAIRS; p++) {
  let l, s
  if (p % 2 === 0) {
    l = await luaBurst()
    s = await sdkBurst()
  } else {
    s = await sdkBurst()
    l = await luaBurst()
  }
  ratios.push(l / s)
  console.log(`pair ${p + 1} lua ${l.toFixed(0)} sdk ${s.toFixed(0)}`)
}
lua.stdin.end()
await sbx.kill()
ratios.sort((a, b) => a - b)
const mid = ratios.length / 2
const median = ratios.length % 2 ? ratios[Math.floor(mid)] : (ratios[mid - 1] + ratios[mid]) / 2
const slower = ratios.filter((r) => r > 1).length
console.log(`concurrent_200_paired_x ${median.toFixed(2)} # lua/sdk, median of ${PAIRS} adjacent pairs, ` +
  `${ratios[0].toFixed(2)} to ${ratios[ratios.length - 1].toFixed(2)}, lua-e2b slower in ${slower}`)
