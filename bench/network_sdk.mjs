// bench/network_sdk.mjs: the official JS SDK's side of bench/network.sh (same
// operations and output as network.lua), over HTTPS: E2B_DOMAIN, E2B_API_KEY
// and NODE_EXTRA_CA_CERTS only. Counters from GET /_e2b_local/stats on the
// plain listener (STATS_URL, E2B_LOCAL_ADMIN_TOKEN), HTTPS listener's numbers.
import { createRequire } from 'node:module'

const { Sandbox } = createRequire(new URL('../spec/sdk/package.json', import.meta.url))('e2b')

const R = Number(process.argv[2] ?? 5)
const url = process.env.STATS_URL
const token = process.env.E2B_LOCAL_ADMIN_TOKEN
if (!url || !token) throw new Error('needs STATS_URL and E2B_LOCAL_ADMIN_TOKEN')
if (process.env.E2B_API_URL || process.env.E2B_SANDBOX_URL) throw new Error('run over HTTPS: unset E2B_API_URL and E2B_SANDBOX_URL')

async function stats() {
  const r = await fetch(`${url}/_e2b_local/stats`, { headers: { 'X-Admin-Token': token } })
  if (!r.ok) throw new Error(`stats: ${r.status}`)
  return (await r.json()).https
}

async function measure(name, reps, fn) {
  const before = await stats()
  const t0 = performance.now()
  for (let i = 0; i < reps; i++) await fn(i)
  const wall = performance.now() - t0
  const after = await stats()
  const per = name.startsWith('concurrent_20') ? 1 : reps
  const d = (k) => ((after[k] - before[k]) / per).toFixed(2)
  console.log(`${name} ${(wall / per).toFixed(1)} ${d('requests')} ${d('connections')} ${d('tls_handshakes')}`)
}

const boxes = []
await measure('create', R, async (i) => { boxes[i] = await Sandbox.create({ timeoutMs: 600_000 }) })
const sbx = boxes[0]
await sbx.commands.run('true') // the warm-up, as network.lua's
await measure('run_true', R * 4, async () => {
  const r = await sbx.commands.run('true')
  if (r.exitCode !== 0) throw new Error('true failed')
})
const mb = new Uint8Array(1048576).map((_, i) => i % 251)
await measure('write_1mb', R, async () => { await sbx.files.write('/tmp/bench_1mb', mb.buffer) })
await measure('read_1mb', R, async () => {
  const got = await sbx.files.read('/tmp/bench_1mb', { format: 'bytes' })
  if (got.length !== mb.length) throw new Error('short read')
})
const TEN = 10485760
await measure('stream_10mb', R, async () => {
  let got = 0
  const r = await sbx.commands.run(`head -c ${TEN} /dev/zero`, { onStdout: (d) => { got += Buffer.byteLength(d) } })
  if (r.exitCode !== 0 || got !== TEN) throw new Error(`stream_10mb: ${got} bytes`)
})
await measure('concurrent_20', 1, async () => {
  await Promise.all(Array.from({ length: 20 }, () => sbx.commands.run('true')))
})
await measure('concurrent_20_new', 1, async () => {
  if (!boxes[1]) throw new Error('needs R >= 2')
  await Promise.all(Array.from({ length: 20 }, () => boxes[1].commands.run('true')))
})
await measure('connect', R, async (i) => {
  const h = await Sandbox.connect(boxes[i].sandboxId)
  if ((await h.commands.run('true')).exitCode !== 0) throw new Error('true failed')
})
const perPage = Math.ceil(R / 2)
await measure('list_2_pages', R, async () => {
  const pages = Sandbox.list({ limit: perPage })
  const first = await pages.nextItems()
  if (first.length !== perPage || !pages.hasNext) throw new Error('list_2_pages: a first page with a next one')
  const second = await pages.nextItems()
  if (first.length + second.length !== R) throw new Error(`list_2_pages: ${first.length} + ${second.length}`)
})
await measure('pause', R, async (i) => { await boxes[i].pause() })
await measure('resume', R, async (i) => {
  const h = await Sandbox.connect(boxes[i].sandboxId)
  if ((await h.commands.run('true')).exitCode !== 0) throw new Error('true failed')
})
await measure('kill', R, async (i) => { await boxes[i].kill() })
