// Both pinned SDK releases side by side against one server: e2b@2.51.0
// creates and connects on the v2 routes, e2b@2.45.0 on the v1 routes (the
// server's own fault-rule hit counters show which routes each one used).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as e2b251 from 'e2b'
import * as e2b245 from 'e2b-2.45'
import { useServer } from './helpers.mjs'

const S = useServer()

const admin = async (method, body) => {
  const res = await fetch(`${S.env.E2B_API_URL}/_e2b_local/faults`, {
    method,
    headers: { 'X-Admin-Token': S.env.E2B_LOCAL_ADMIN_TOKEN, 'Content-Type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  return res.json()
}

// Zero-length stalls: they change nothing but count the requests per route.
async function countRoutes(fn) {
  await admin('DELETE')
  const routes = ['POST /sandboxes', 'POST /v2/sandboxes', 'POST /sandboxes/*/connect', 'POST /v2/sandboxes/*/connect']
  await admin('POST', { seed: 1, rules: routes.map((match) => ({ match, action: 'stall', ms: 0 })) })
  await fn()
  const { rules } = await admin('GET')
  await admin('DELETE')
  return Object.fromEntries(rules.map((r) => [r.match, r.hits]))
}

const semverAtLeast = (v, min) => {
  const a = v.split('.').map(Number)
  const b = min.split('.').map(Number)
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i]
  return true
}

for (const [label, sdk, v2] of [
  ['e2b@2.51.0', e2b251, true],
  ['e2b@2.45.0', e2b245, false],
]) {
  test(`${label}: create/connect on its routes, envd >= 0.6.4, commands, files, pause/resume, list, kill`, async () => {
    const { Sandbox } = sdk
    let sbx
    const hits = await countRoutes(async () => {
      sbx = await Sandbox.create({ ...S.opts, metadata: { sdk: label } })
      await sbx.pause()
      await Sandbox.connect(sbx.sandboxId, { ...S.opts })
    })
    assert.deepEqual(hits, {
      'POST /sandboxes': v2 ? 0 : 1,
      'POST /v2/sandboxes': v2 ? 1 : 0,
      'POST /sandboxes/*/connect': v2 ? 0 : 1,
      'POST /v2/sandboxes/*/connect': v2 ? 1 : 0,
    })
    const info = await sbx.getInfo()
    assert.ok(semverAtLeast(info.envdVersion, '0.6.4'), info.envdVersion)
    assert.equal((await sbx.commands.run('echo $((6*7))')).stdout, '42\n')
    await sbx.files.write('/home/user/v.txt', label)
    assert.equal(await sbx.files.read('v.txt'), label)
    const listed = await Sandbox.list({ ...S.opts, query: { metadata: { sdk: label } } }).nextItems()
    assert.deepEqual(listed.map((s) => s.sandboxId), [sbx.sandboxId])
    assert.equal(await sbx.kill(), true)
    assert.equal(await Sandbox.kill(sbx.sandboxId, S.opts), false)
  })
}
