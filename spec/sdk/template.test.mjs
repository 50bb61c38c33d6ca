// Templates built in code: the unchanged SDK's Template builder against
// e2b-local, which builds locally (a hidden sandbox from a local template, no
// registry, no network). Each build gets a name of its own; the sandboxes
// started from a build prove what it left behind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sdk, { Sandbox, Template } from './sdk.mjs'
import { useServer } from './helpers.mjs'

const S = useServer()
const { BuildError } = sdk

let seq = 0
const fresh = (prefix) => `${prefix}-${Date.now() % 1e8}-${++seq}`

// Builds and collects the build's log lines (the SDK's onBuildLogs).
async function build(template, name, opts = {}) {
  const logs = []
  const info = await Template.build(template, name, {
    ...S.opts,
    ...opts,
    onBuildLogs: (e) => logs.push(String(e.message ?? e)),
  })
  return { info, logs }
}

async function inSandbox(template, cmd, opts = {}) {
  const sbx = await Sandbox.create(template, { ...S.opts, timeoutMs: 60_000 })
  try {
    return (await sbx.commands.run(cmd, opts)).stdout
  } finally {
    await sbx.kill()
  }
}

test('runCmd: steps run as user by default and as root when asked; a sandbox from the build has their files', async () => {
  const name = fresh('run')
  const t = Template()
    .fromTemplate('base')
    .runCmd('echo "$(whoami) in $(pwd)" > ~/who.txt')
    .runCmd(['id -un > /root/root.txt', 'chmod 644 /root/root.txt'], { user: 'root' })
  const { info, logs } = await build(t, name)
  assert.equal(info.name, name)
  assert.ok(logs.some((l) => l.includes('[builder 1/2] RUN')), logs.join('\n'))
  assert.equal(await inSandbox(name, 'cat ~/who.txt'), 'user in /home/user\n')
  assert.equal(await inSandbox(name, 'cat /root/root.txt', { user: 'root' }), 'root\n')
})

test('runCmd as a user the sandbox does not have fails the build with E2B\'s message', async () => {
  const t = Template().fromTemplate('base').runCmd('whoami', { user: 'root123' })
  await assert.rejects(build(t, fresh('nouser')), (err) => {
    assert.ok(err instanceof BuildError, String(err))
    assert.match(err.message, /failed to run command 'whoami': command failed: unauthenticated: invalid username: 'root123'/)
    return true
  })
})

test('a failing step fails the build: BuildError with the step\'s exit status', async () => {
  const t = Template().fromTemplate('base').runCmd('true').runCmd('echo broken >&2; exit 7')
  await assert.rejects(build(t, fresh('fail')), (err) => {
    assert.ok(err instanceof BuildError, String(err))
    assert.match(err.message, /exit status 7/)
    return true
  })
})

test('fromImage of an image not available locally fails the build as an image that cannot be pulled', async () => {
  const t = Template().fromImage('ubuntu:22.04').runCmd('true')
  await assert.rejects(build(t, fresh('img')), /failed to pull image 'ubuntu:22\.04'/)
  // e2bdev/base (fromBaseImage) is what base stands for: it builds
  const { info } = await build(Template().fromBaseImage().runCmd('echo ok > ~/ok'), fresh('baseimg'))
  assert.equal(await inSandbox(info.name, 'cat ~/ok'), 'ok\n')
})

test('copy uploads files (a glob, a directory, a mode, an owner) and the build places them as Docker COPY does', async () => {
  const ctx = mkdtempSync(join(tmpdir(), 'tpl-ctx-'))
  try {
    mkdirSync(join(ctx, 'folder/sub'), { recursive: true })
    writeFileSync(join(ctx, 'folder/test.txt'), 'This is a test file.')
    writeFileSync(join(ctx, 'folder/sub/deep.txt'), 'deep')
    symlinkSync('test.txt', join(ctx, 'folder/link.txt'))
    writeFileSync(join(ctx, 'single.sh'), '#!/bin/sh\necho single\n')
    const name = fresh('copy')
    const t = Template({ fileContextPath: ctx })
      .fromTemplate('base')
      .copy('folder/*', 'folder')
      .copy('single.sh', '/home/user/bin/', { mode: 0o750 })
      .copy('folder/sub', '/root/sub', { user: 'root' })
      .runCmd('cat folder/test.txt')
    const { logs } = await build(t, name)
    assert.ok(logs.includes('This is a test file.'), logs.join('\n'))
    const out = await inSandbox(name, [
      'cat ~/folder/test.txt ~/folder/sub/deep.txt; echo',
      'readlink ~/folder/link.txt',
      'stat -c "%a %U" ~/bin/single.sh ~/folder/test.txt',
      '~/bin/single.sh',
      'sudo stat -c "%U %n" /root/sub/deep.txt',
    ].join('; '))
    assert.equal(out, [
      'This is a test file.deep', 'test.txt', '750 user', '644 user', 'single', 'root /root/sub/deep.txt', '',
    ].join('\n'))
  } finally {
    rmSync(ctx, { recursive: true, force: true })
  }
})

test('copy keeps a symlink leading out of the copied files as written, as E2B does', async () => {
  // E2B's own JS SDK test 'build template' copies such a folder: an absolute
  // link to a file of the build host, meaningless in the sandbox but kept.
  const ctx = mkdtempSync(join(tmpdir(), 'tpl-ctx-'))
  try {
    mkdirSync(join(ctx, 'folder'))
    writeFileSync(join(ctx, 'folder/test.txt'), 'kept')
    symlinkSync(join(ctx, 'folder/test.txt'), join(ctx, 'folder/abs'))
    symlinkSync('/etc/passwd', join(ctx, 'folder/out'))
    const name = fresh('links')
    const t = Template({ fileContextPath: ctx }).fromTemplate('base').copy('folder/*', 'folder')
    await build(t, name)
    const out = await inSandbox(name, 'cat ~/folder/test.txt; echo; readlink ~/folder/abs ~/folder/out')
    assert.equal(out, `kept\n${join(ctx, 'folder/test.txt')}\n/etc/passwd\n`)
  } finally {
    rmSync(ctx, { recursive: true, force: true })
  }
})

test('makeSymlink, and makeSymlink with force over an existing link', async () => {
  const name = fresh('symlink')
  const t = Template()
    .fromTemplate('base')
    .runCmd('echo target > ~/.target')
    .makeSymlink('.target', '.link')
    .makeSymlink('.target', '.link', { force: true })
    .runCmd('test "$(readlink .link)" = ".target"')
  await build(t, name)
  assert.equal(await inSandbox(name, 'cat ~/.link'), 'target\n')
})

test('setEnvs: the build\'s steps and the sandboxes see them; a create\'s envs override them', async () => {
  const name = fresh('envs')
  const t = Template()
    .fromTemplate('base')
    .setEnvs({ GREETING: 'hello', OTHER: 'x' })
    .runCmd('echo "$GREETING" > ~/greeting')
  await build(t, name)
  assert.equal(await inSandbox(name, 'cat ~/greeting; echo "$GREETING $OTHER"'), 'hello\nhello x\n')
  const sbx = await Sandbox.create(name, { ...S.opts, envs: { OTHER: 'y' } })
  try {
    assert.equal((await sbx.commands.run('echo "$GREETING $OTHER"')).stdout, 'hello y\n')
  } finally {
    await sbx.kill()
  }
})

test('steps are cached: an unchanged prefix is not run again, skipCache runs everything', async () => {
  const name = fresh('cache')
  const marker = `m${Date.now()}`
  const t = () => Template().fromTemplate('base').runCmd(`echo ${marker} >> /tmp/runs; echo first`).runCmd('echo second')
  const first = await build(t(), name)
  assert.ok(!first.logs.some((l) => l.startsWith('CACHED')), first.logs.join('\n'))
  const again = await build(t(), name)
  assert.ok(again.logs.some((l) => l.startsWith('CACHED [builder 1/2]')), again.logs.join('\n'))
  assert.ok(!again.logs.includes('first'), again.logs.join('\n'))
  assert.equal(await inSandbox(name, 'cat /tmp/runs'), `${marker}\n`)
  const forced = await build(t(), name, { skipCache: true })
  assert.ok(forced.logs.includes('first'), forced.logs.join('\n'))
  assert.ok(!forced.logs.some((l) => l.startsWith('CACHED')), forced.logs.join('\n'))
  assert.equal(await inSandbox(name, 'cat /tmp/runs'), `${marker}\n`) // run again from base, once
})

test('exists: false before a name is requested, true once it is', async () => {
  const name = fresh('exists')
  assert.equal(await Template.exists(name, S.opts), false)
  await build(Template().fromTemplate('base'), name)
  assert.equal(await Template.exists(name, S.opts), true)
  assert.equal(await Template.exists('base', S.opts), true)
})

test('tags: a build under name:tag and extra tags; assignTags, getTags, removeTags; a sandbox by name:tag', async () => {
  const name = fresh('tags')
  const { info } = await build(Template().fromTemplate('base').runCmd('echo v1 > ~/v'), `${name}:v1`, { tags: ['stable'] })
  assert.deepEqual([...info.tags].sort(), ['stable', 'v1'])
  const { info: info2 } = await build(Template().fromTemplate('base').runCmd('echo v2 > ~/v'), `${name}:v2`)
  assert.equal(await inSandbox(`${name}:v1`, 'cat ~/v'), 'v1\n')
  assert.equal(await inSandbox(`${name}:v2`, 'cat ~/v'), 'v2\n')
  const assigned = await Template.assignTags(`${name}:v2`, ['production'], S.opts)
  assert.equal(assigned.buildId, info2.buildId)
  const tags = await Template.getTags(name, S.opts)
  const byTag = Object.fromEntries(tags.map((t) => [t.tag, t.buildId]))
  assert.deepEqual(byTag, { v1: info.buildId, stable: info.buildId, v2: info2.buildId, production: info2.buildId })
  assert.ok(tags.every((t) => t.createdAt instanceof Date && !Number.isNaN(t.createdAt.getTime())))
  await Template.removeTags(name, 'stable', S.opts)
  assert.deepEqual((await Template.getTags(name, S.opts)).map((t) => t.tag).sort(), ['production', 'v1', 'v2'])
  assert.equal(await inSandbox(`${name}:production`, 'cat ~/v'), 'v2\n')
  await assert.rejects(Sandbox.create(`${name}:stable`, S.opts), /not found/)
})

test('buildInBackground returns while the build runs; getBuildStatus follows it to ready, logs by offset', async () => {
  const name = fresh('bg')
  const t = Template().fromTemplate('base').runCmd('sleep 2; echo slept').setStartCmd('echo started', 'true')
  const info = await Template.buildInBackground(t, name, S.opts)
  const first = await Template.getBuildStatus(info, S.opts)
  assert.equal(first.status, 'building')
  let status = first
  const logs = [...first.logEntries]
  const until = Date.now() + 60_000
  while ((status.status === 'building' || status.status === 'waiting') && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200))
    status = await Template.getBuildStatus(info, { ...S.opts, logsOffset: logs.length })
    logs.push(...status.logEntries)
  }
  assert.equal(status.status, 'ready')
  for (;;) { // the rest of the log, as the SDK reads it after the end
    const more = (await Template.getBuildStatus(info, { ...S.opts, logsOffset: logs.length })).logEntries
    if (!more.length) break
    logs.push(...more)
  }
  const text = logs.map((e) => e.message)
  assert.ok(text.includes('slept'), text.join('\n'))
  assert.equal(new Set(text).size >= text.length - 1, true)
})

test('setStartCmd: the start command runs in each new sandbox as the template\'s user, ready when create returns', async () => {
  const name = fresh('start')
  const t = Template()
    .fromTemplate('base')
    .setStartCmd('echo "$(whoami)" > /tmp/started-by; exec sleep 600', sdk.waitForFile('/tmp/started-by'))
  await build(t, name)
  const sbx = await Sandbox.create(name, { ...S.opts, timeoutMs: 60_000 })
  try {
    assert.equal((await sbx.commands.run('cat /tmp/started-by')).stdout, 'user\n')
    assert.match((await sbx.commands.run('ps -eo user,args | grep "[s]leep 600"')).stdout, /^user\s+sleep 600/)
  } finally {
    await sbx.kill()
  }
})

test('setUser and setWorkdir: a sandbox from the build runs commands and file calls as that user, commands in that directory', async () => {
  const name = fresh('defaults')
  await build(Template().fromTemplate('base').setWorkdir('/root/work').setUser('root'), name)
  const sbx = await Sandbox.create(name, { ...S.opts, timeoutMs: 60_000 })
  try {
    assert.equal((await sbx.commands.run('whoami; pwd')).stdout, 'root\n/root/work\n')
    assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
    assert.equal((await sbx.commands.run('whoami', { user: 'user' })).stdout, 'user\n')
    await sbx.files.write('/root/work/by-default.txt', 'x')
    assert.equal((await sbx.commands.run('stat -c %U /root/work/by-default.txt')).stdout, 'root\n')
  } finally {
    await sbx.kill()
  }
  const plain = fresh('plain')
  await build(Template().fromTemplate('base').runCmd('true'), plain)
  assert.equal(await inSandbox(plain, 'whoami; pwd'), 'user\n/home/user\n')
})
