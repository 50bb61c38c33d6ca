// Preloaded (node --import) by https.test.mjs only when this machine's
// resolver does not map *.localhost to loopback (libnss-myhostname, which
// scripts/setup.sh configures, does): names under .localhost then resolve to
// 127.0.0.1, as RFC 6761 reserves them to, and every other name as before.
import dns from 'node:dns'

const system = dns.lookup
dns.lookup = function lookup(host, opts, cb) {
  if (typeof opts === 'function') [cb, opts] = [opts, {}]
  if (typeof opts === 'number') opts = { family: opts }
  if (typeof host !== 'string' || !/(^|\.)localhost\.?$/i.test(host)) return system.call(this, host, opts, cb)
  if (opts && opts.all) return process.nextTick(cb, null, [{ address: '127.0.0.1', family: 4 }])
  return process.nextTick(cb, null, '127.0.0.1', 4)
}
