// envd's other codec: binary protobuf (application/proto, application/
// connect+proto), driven by a real Connect client built from the service
// descriptors the SDK itself embeds; and StreamInput, the client stream.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileDesc, serviceDesc } from '@bufbuild/protobuf/codegenv2'
import { file_google_protobuf_timestamp } from '@bufbuild/protobuf/wkt'
import { createClient, ConnectError, Code } from '@connectrpc/connect'
import { createConnectTransport } from '@connectrpc/connect-web'
import { SDK_PACKAGE, Sandbox } from './sdk.mjs'
import { envdHeaders, envelope, parseEnvelopes, sleep, useServer } from './helpers.mjs'

const S = useServer()

// The SDK bundles its generated code: take the serialized file descriptors from it.
const require = createRequire(import.meta.url)
const dist = readFileSync(require.resolve(SDK_PACKAGE).replace(/index\.js$/, 'index.mjs'), 'utf8')
const desc = (file) => dist.match(new RegExp(`fileDesc\\("(${Buffer.from(file).toString('base64').slice(0, 16)}[^"]*)"`))[1]
const processFile = fileDesc(desc('\n\x15process/process.proto'))
const fsFile = fileDesc(desc('\n\x1bfilesystem/filesystem.proto'), [file_google_protobuf_timestamp])
const ProcessService = serviceDesc(processFile, 0)
const FilesystemService = serviceDesc(fsFile, 0)

function clients(sbx, binary) {
  const transport = createConnectTransport({
    baseUrl: S.env.E2B_SANDBOX_URL,
    useBinaryFormat: binary,
    interceptors: [
      (next) => (req) => {
        for (const [k, v] of Object.entries(envdHeaders(sbx))) req.header.set(k, v)
        return next(req)
      },
    ],
  })
  return { proc: createClient(ProcessService, transport), fs: createClient(FilesystemService, transport) }
}

for (const binary of [true, false]) {
  const codec = binary ? 'binary protobuf' : 'JSON'
  test(`${codec} codec: Start stream, List, SendInput, Update, Signal, filesystem RPCs`, async () => {
    const sbx = await Sandbox.create({ ...S.opts })
    const { proc, fs } = clients(sbx, binary)
    // a server stream: start, byte-exact data, end
    const events = []
    for await (const res of proc.start({ process: { cmd: '/bin/bash', args: ['-c', "printf 'a\\000\\377b'; echo err >&2; exit 5"] }, stdin: false }))
      events.push(res.event.event)
    assert.equal(events[0].case, 'start')
    assert.ok(events[0].value.pid > 0)
    const out = Buffer.concat(events.filter((e) => e.case === 'data' && e.value.output.case === 'stdout').map((e) => Buffer.from(e.value.output.value)))
    assert.deepEqual([...out], [0x61, 0, 0xff, 0x62])
    const end = events.at(-1)
    assert.equal(end.case, 'end')
    assert.deepEqual([end.value.exitCode, end.value.exited, end.value.status, end.value.error], [5, true, 'exit status 5', 'exit status 5'])
    // unary calls on a background process (signed exit code: sint32)
    const bg = proc.start({ process: { cmd: '/bin/bash', args: ['-c', 'read x; echo got $x; sleep 600'] }, stdin: true, tag: `t-${binary}` })
    const it = bg[Symbol.asyncIterator]()
    const pid = (await it.next()).value.event.event.value.pid
    const list = await proc.list({})
    const info = list.processes.find((p) => p.pid === pid)
    assert.equal(info.tag, `t-${binary}`)
    assert.deepEqual(info.config.args, ['-c', 'read x; echo got $x; sleep 600'])
    await proc.sendInput({ process: { selector: { case: 'pid', value: pid } }, input: { input: { case: 'stdin', value: new TextEncoder().encode('in\n') } } })
    const data = (await it.next()).value.event.event
    assert.equal(Buffer.from(data.value.output.value).toString(), 'got in\n')
    await assert.rejects(proc.update({ process: { selector: { case: 'pid', value: pid } }, pty: { size: { cols: 10, rows: 10 } } }), (e) => e instanceof ConnectError && e.code === Code.FailedPrecondition)
    await proc.sendSignal({ process: { selector: { case: 'tag', value: `t-${binary}` } }, signal: 9 })
    let last
    for (let r = await it.next(); !r.done; r = await it.next()) last = r.value.event.event
    assert.equal(last.case, 'end')
    assert.equal(last.value.exitCode, -1)
    assert.equal(last.value.status, 'signal: killed')
    // errors keep their codes
    await assert.rejects(proc.connect({ process: { selector: { case: 'pid', value: 999999 } } }).next(), (e) => e.code === Code.NotFound)
    await assert.rejects(fs.stat({ path: '/nope' }), (e) => e.code === Code.NotFound)
    // filesystem: int64 size, enums, timestamps, maps
    await sbx.files.write('/home/user/f.bin', new Uint8Array(70000), { metadata: { k: 'v' } })
    const st = (await fs.stat({ path: '/home/user/f.bin' })).entry
    assert.equal(st.size, 70000n)
    assert.equal(st.type, 1) // FILE_TYPE_FILE
    assert.equal(st.owner, 'user')
    assert.deepEqual(st.metadata, { k: 'v' })
    assert.ok(Math.abs(Number(st.modifiedTime.seconds) * 1000 - Date.now()) < 60_000)
    assert.equal((await fs.makeDir({ path: '/home/user/d/e' })).entry.type, 2)
    const moved = await fs.move({ source: '/home/user/f.bin', destination: '/home/user/d/g.bin' })
    assert.equal(moved.entry.path, '/home/user/d/g.bin')
    const ls = await fs.listDir({ path: '/home/user/d', depth: 2 })
    assert.deepEqual(ls.entries.map((e) => e.path).sort(), ['/home/user/d/e', '/home/user/d/g.bin'])
    await fs.remove({ path: '/home/user/d' })
    await assert.rejects(fs.stat({ path: '/home/user/d' }), (e) => e.code === Code.NotFound)
    // watch stream and polling watchers
    const { watcherId } = await fs.createWatcher({ path: '/tmp' })
    await sbx.files.write('/tmp/w1', 'x')
    let evs = []
    for (let i = 0; i < 50 && !evs.some((e) => e.name === 'w1'); i++) {
      evs.push(...(await fs.getWatcherEvents({ watcherId })).events)
      await sleep(50)
    }
    assert.ok(evs.some((e) => e.name === 'w1' && e.type === 1))
    await fs.removeWatcher({ watcherId })
    const ctrl = new AbortController()
    const watch = fs.watchDir({ path: '/tmp' }, { signal: ctrl.signal })[Symbol.asyncIterator]()
    assert.equal((await watch.next()).value.event.case, 'start')
    await sbx.files.write('/tmp/w2', 'y')
    let ev
    do ev = (await watch.next()).value.event
    while (ev.case !== 'filesystem')
    assert.equal(ev.value.name, 'w2')
    ctrl.abort()
    await sbx.kill()
  })
}

const streamInput = (sbx, body, ct = 'application/connect+json') =>
  fetch(`${S.env.E2B_SANDBOX_URL}/process.Process/StreamInput`, {
    method: 'POST',
    headers: envdHeaders(sbx, { 'Content-Type': ct }),
    body,
    duplex: 'half',
  })

test('StreamInput: input is written as each message arrives; the response ends the call', async () => {
  const sbx = await Sandbox.create({ ...S.opts })
  const h = await sbx.commands.run('cat > /tmp/in.txt', { background: true, stdin: true })
  // a live client stream: the first chunk reaches the process before the body ends
  let push
  const body = new ReadableStream({ start: (c) => (push = c) })
  const pending = streamInput(sbx, body)
  push.enqueue(envelope({ start: { process: { pid: h.pid } } }))
  push.enqueue(envelope({ data: { input: { stdin: Buffer.from('first ').toString('base64') } } }))
  let seen = ''
  for (let i = 0; i < 100 && seen !== 'first '; i++) {
    await sleep(50)
    seen = (await sbx.commands.run('cat /tmp/in.txt')).stdout
  }
  assert.equal(seen, 'first ', 'delivered before the stream ended')
  push.enqueue(envelope({ keepalive: {} }))
  push.enqueue(envelope({ data: { input: { stdin: Buffer.from('second').toString('base64') } } }))
  push.close()
  const res = await pending
  assert.equal(res.status, 200)
  const frames = parseEnvelopes(Buffer.from(await res.arrayBuffer()))
  assert.deepEqual(frames, [{ flags: 0, msg: {} }, { flags: 2, msg: {} }])
  await sbx.commands.closeStdin(h.pid)
  await h.wait()
  assert.equal(await sbx.files.read('/tmp/in.txt'), 'first second')
  // errors end the stream with a Connect error: data before start, unknown pid
  let r = await streamInput(sbx, envelope({ data: { input: { stdin: 'eA==' } } }))
  assert.equal(parseEnvelopes(Buffer.from(await r.arrayBuffer())).at(-1).msg.error.code, 'invalid_argument')
  r = await streamInput(sbx, envelope({ start: { process: { pid: 999999 } } }))
  assert.equal(parseEnvelopes(Buffer.from(await r.arrayBuffer())).at(-1).msg.error.code, 'not_found')
  await sbx.kill()
})
