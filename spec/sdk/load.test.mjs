// Load: 50 sandboxes, 200 concurrent commands from the SDK, every byte of
// every output checked; after the kills nothing is left on the host.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from './sdk.mjs'
import { useServer } from './helpers.mjs'
import { loadRun } from './load.mjs'

const S = useServer()

test('50 sandboxes x 200 concurrent commands: byte-exact, and no process, mount, cgroup or directory left', async () => {
  const r = await loadRun({ Sandbox, opts: S.opts, state: S.srv.state, sandboxes: 50, commands: 200, bytes: 32768, marker: `load${Date.now()}` })
  assert.equal(r.badOutputs, 0)
  assert.equal(r.totalBytes, 200 * 32768)
  assert.deepEqual(r.leftPids, [])
  assert.deepEqual(r.leftMounts, [])
  assert.equal(r.leftCgroups, 0)
  assert.equal(r.leftDirs, 0)
  assert.deepEqual(r.leftRuntimes, [])
})
