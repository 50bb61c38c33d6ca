// Containment of e2b-local itself, seen through the unchanged SDK: what a
// sandbox leaves on disk never takes the server down.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from './sdk.mjs'
import { useServer } from './helpers.mjs'

const S = useServer()

async function sandbox(opts = {}) {
  return Sandbox.create({ ...S.opts, timeoutMs: 120_000, ...opts })
}

// The server answers, makes a sandbox that runs a command, and the
// bystanders still run theirs.
async function assertHealthy(bystanders) {
  const sbx = await sandbox()
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
  await sbx.kill()
  for (const b of bystanders) assert.equal((await b.commands.run('echo still')).stdout, 'still\n')
}

const deepTree = (dir, depth) =>
  `mkdir -p ${dir} && cd ${dir} && perl -e 'for (1..${depth}) { mkdir q(d) or die $!; chdir q(d) or die $! }' && echo built`

test('kill removes a 2,000-deep tree a user built, and the server stays up', async () => {
  const bystander = await sandbox()
  const sbx = await sandbox()
  const r = await sbx.commands.run(deepTree('/tmp/deep', 2000), { timeoutMs: 120_000 })
  assert.equal(r.stdout, 'built\n')
  await sbx.kill()
  assert.equal(await Sandbox.kill(sbx.sandboxId, S.opts), false)
  await assertHealthy([bystander])
  await bystander.kill()
})
