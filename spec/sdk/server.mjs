// Starts e2b-local on 127.0.0.1:0 with a fresh state dir and hands the SDK
// its four variables. The binary comes from E2B_LOCAL_BIN (default: the
// repo's build/emulator/e2b-local).
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

const here = dirname(fileURLToPath(import.meta.url))
export const BIN = process.env.E2B_LOCAL_BIN || resolve(here, '../../build/emulator/e2b-local')
const KEYS = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_DOMAIN', 'E2B_API_KEY', 'E2B_LOCAL_ADMIN_TOKEN']

export async function startServer({ extraArgs = [], state: keep } = {}) {
  const state = keep || mkdtempSync(join(tmpdir(), 'e2b-local-spec-'))
  const child = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--state', state, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => {
    stderr += d
    if (process.env.E2B_LOCAL_LOG) process.stderr.write(d)
  })
  const env = {}
  const lines = createInterface({ input: child.stdout })
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`e2b-local did not start:\n${stderr}`)), 15000)
    child.once('exit', (code) => fail(new Error(`e2b-local exited with ${code}:\n${stderr}`)))
    child.once('error', (err) => fail(new Error(`cannot run ${BIN} (set E2B_LOCAL_BIN): ${err.message}`)))
    lines.on('line', (line) => {
      const eq = line.indexOf('=')
      if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1)
      if (KEYS.every((k) => env[k])) {
        clearTimeout(timer)
        ok()
      }
    })
  })
  const exited = new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal })))
  return {
    env,
    state,
    pid: child.pid,
    logs: () => stderr,
    // Stops the server (SIGTERM), which kills every sandbox; resolves to its exit.
    // keepState: leave the state directory for a restarted server.
    // A sanitizer report in its stderr (an ASan build's leak at exit) throws.
    async stop({ keepState = false } = {}) {
      child.kill('SIGTERM')
      const res = await exited
      if (!keepState) rmSync(state, { recursive: true, force: true })
      noSanitizerReport(stderr)
      return { ...res, stderr }
    },
  }
}

// Options that point the unchanged SDK at a started server.
export function sdkOpts(env) {
  return {
    apiKey: env.E2B_API_KEY,
    apiUrl: env.E2B_API_URL,
    sandboxUrl: env.E2B_SANDBOX_URL,
    domain: env.E2B_DOMAIN,
  }
}

// Throws when an e2b-local's stderr holds what AddressSanitizer,
// LeakSanitizer or UBSan print on a finding (scripts/sanitizer_reports.sh
// reads the same lines in the busted logs); every run of BIN ends here.
export function noSanitizerReport(stderr) {
  if (/==\d+==ERROR: (AddressSanitizer|LeakSanitizer)|:\d+:\d+: runtime error: |LeakSanitizer has encountered a fatal error/.test(stderr))
    throw new Error(`e2b-local printed a sanitizer report:\n${stderr}`)
}
