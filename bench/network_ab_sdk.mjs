// bench/network_ab_sdk.mjs: the official JS SDK's side of bench/network_ab.sh,
// the same operations and line as network_ab.lua (server CPU read through
// "lua5.4 bench/network_ab.lua cpu"), over HTTPS.
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'

const { Sandbox } = createRequire(new URL('../spec/sdk/package.json', import.meta.url))('e2b')

const TAG = process.argv[2]
const url = process.env.STATS_URL
const token = process.env.E2B_LOCAL_ADMIN_TOKEN
if (!TAG || !url || !token) throw new Error('usage: network_ab_sdk.mjs TAG, with STATS_URL and E2B_LOCAL_ADMIN_TOKEN')
const cpuScript = new URL('network_ab.lua', import.meta.url).pathname

async function stats() {
  const r = await fetch(`${url}/_e2b_local/stats`, { headers: { 'X-Admin-Token': token } })
  if (!r.ok) throw new Error(`stats: ${r.status}`)
  return (await r.json()).https
}
const serverCpu = () => Number(execFileSync('lua5.4', [cpuScript, 'cpu', process.env.SRV_PID, process.env.DRV_PID]))

async function measure(name, reps, fn) {
  const before = await stats()
  const s0 = serverCpu()
  const t0 = performance.now()
  const c0 = process.cpuUsage()
  for (let i = 0; i < reps; i++) await fn(i)
  const wall = performance.now() - t0
  const c = process.cpuUsage(c0)
  const s1 = serverCpu()
  const after = await stats()
  const d = (k) => ((after[k] - before[k]) / reps).toFixed(2)
  const cpu = (c.user + c.system) / 1000
  console.log(`${TAG} ${name} ${(wall / reps).toFixed(1)} ${(cpu / reps).toFixed(1)} ${d('requests')} ${d('connections')} ${((s1 - s0) / reps).toFixed(1)}`)
}

const sbx = await Sandbox.create({ timeoutMs: 600_000 })
await sbx.commands.run('true')
const batch = async () => { await Promise.all(Array.from({ length: 20 }, () => sbx.commands.run('true'))) }
await measure('concurrent_20', 1, batch)
await measure('concurrent_20_warm', 1, batch)
await measure('run_true', 5, async () => {
  const r = await sbx.commands.run('true')
  if (r.exitCode !== 0) throw new Error('true failed')
})
await sbx.kill()
