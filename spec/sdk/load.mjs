// The load scenario shared by load.test.mjs and bench/emulator.mjs: many
// sandboxes, many concurrent commands through the SDK, every output byte
// checked, then everything killed and the host checked for leftovers.
import { readFileSync, readdirSync, existsSync } from 'node:fs'
import { pidsWithCmdline, pidsWithEnv, sandboxCgroup } from './helpers.mjs'

// A payload only this command prints (and whose every byte is known).
const expected = (i, bytes) => {
  const line = `cmd-${i}-${'x'.repeat(20)}\n`
  return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes)
}

export async function loadRun({ Sandbox, opts, state, sandboxes = 50, commands = 200, bytes = 65536, marker }) {
  const t0 = performance.now()
  const sbxs = await Promise.all(
    Array.from({ length: sandboxes }, () => Sandbox.create({ ...opts, timeoutMs: 600_000, envs: { E2B_SPEC_MARKER: marker } })),
  )
  const tCreate = performance.now()
  let total = 0
  const results = await Promise.all(
    Array.from({ length: commands }, async (_, i) => {
      const sbx = sbxs[i % sandboxes]
      const want = expected(i, bytes)
      const r = await sbx.commands.run(`yes 'cmd-${i}-${'x'.repeat(20)}' | head -c ${bytes}; echo done-${i} >&2`)
      total += r.stdout.length
      return r.stdout === want && r.stderr === `done-${i}\n` && r.exitCode === 0
    }),
  )
  const tRun = performance.now()
  const bad = results.filter((ok) => !ok).length
  await Promise.all(sbxs.map((s) => s.kill()))
  const tKill = performance.now()
  // from the host: no process, no mount, no cgroup, no directory left
  const leftPids = pidsWithEnv('E2B_SPEC_MARKER', marker)
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(state))
  const cgroups = sbxs.filter((s) => sandboxCgroup(s.sandboxId)).length
  const dirs = existsSync(`${state}/sandboxes`) ? readdirSync(`${state}/sandboxes`).length : 0
  const runtimes = pidsWithCmdline(`${state}/sandboxes/`)
  return {
    sandboxes,
    commands,
    bytesPerCommand: bytes,
    badOutputs: bad,
    totalBytes: total,
    createMs: tCreate - t0,
    runMs: tRun - tCreate,
    killMs: tKill - tRun,
    leftPids,
    leftMounts: mounts,
    leftCgroups: cgroups,
    leftDirs: dirs,
    leftRuntimes: runtimes,
  }
}
