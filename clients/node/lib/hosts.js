// SPDX-License-Identifier: BSD-2-Clause
// [redis] allow_hosts and the clear-text rule, as warrantd applies them
// (warrantd(7) §10, issue 37 items 1, 2; src/core/allowlist.c): the library
// connects only to a host:port the list admits, and sends a password or
// token in clear text only to loopback (or with allow_plaintext). Both are
// checked before a TCP or TLS connection is opened (a Connector of ioredis'
// own). tests/data/allow_hosts.json holds the cases the C, Python and Node
// tests share.
import { BlockList, isIP } from 'node:net';
import { createRequire } from 'node:module';
import { ConfigError } from './record.js';

const NAME = /^[A-Za-z0-9._-]{1,255}$/;
const PORT = /^[0-9]{1,5}$/;
const LOOP6 = new BlockList();
LOOP6.addAddress('::1', 'ipv6');
const MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/** An address as [family, text] (IPv4-mapped IPv6 as its IPv4), or null. */
function addr(s) {
  const m = MAPPED.exec(s);
  if (m && isIP(m[1]) === 4) return ['ipv4', m[1]];
  const v = isIP(s);
  return v === 4 ? ['ipv4', s] : v === 6 ? ['ipv6', s] : null;
}

/** A name, an address or a CIDR block: {kind: 'name', name} or {kind: 'net', family, list}. */
function bare(s) {
  if (s === '' || s.length > 255) return null;
  const slash = s.indexOf('/');
  let a, bits;
  if (slash < 0) {
    a = addr(s);
    if (!a) {
      if (!NAME.test(s)) return null;
      let name = s.toLowerCase();
      if (name.length > 1 && name.endsWith('.')) name = name.slice(0, -1);
      return { kind: 'name', name };
    }
    bits = a[0] === 'ipv4' ? 32 : 128;
  } else {
    a = addr(s.slice(0, slash));
    const b = s.slice(slash + 1);
    if (!a || !/^[0-9]+$/.test(b)) return null;
    bits = Number(b);
    if (bits > (a[0] === 'ipv4' ? 32 : 128)) return null;
  }
  const list = new BlockList();
  list.addSubnet(a[1], bits, a[0]);
  return { kind: 'net', family: a[0], list };
}

function port(s) {
  if (!PORT.test(s)) return null;
  const p = Number(s);
  return p >= 1 && p <= 65535 ? p : null;
}

/** host, address or block with an optional :port: "h:p", "a.b.c.d/n:p", "[v6]:p", "[v6/n]:p". */
function entry(s) {
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    const inner = close > 0 ? s.slice(1, close) : '';
    if (close < 0 || !inner.includes(':')) return null;
    const rest = s.slice(close + 1);
    let p = 0;
    if (rest) {
      if (!rest.startsWith(':') || port(rest.slice(1)) == null) return null;
      p = port(rest.slice(1));
    }
    const e = bare(inner);
    return e && e.kind === 'net' && e.family === 'ipv6' ? { ...e, port: p } : null;
  }
  const parts = s.split(':');
  if (parts.length === 2) {
    const p = port(parts[1]), e = bare(parts[0]);
    return p == null || !e ? null : { ...e, port: p };
  }
  const e = bare(s);
  return e ? { ...e, port: 0 } : null;
}

export class AllowList {
  constructor(entries = []) { this.entries = entries; }

  static parse(text) {
    if (text == null || text.replace(/[ \t]/g, '') === '') throw new ConfigError('allow_hosts: no host named');
    return new AllowList(text.split(',').map((raw) => {
      const one = raw.replace(/^[ \t]+|[ \t]+$/g, '');
      const e = one ? entry(one) : null;
      if (!e) throw new ConfigError(`allow_hosts: '${one.slice(0, 80)}' is not a host name, an address or a CIDR block, with an optional :port ([v6]:port)`);
      return e;
    }));
  }

  /** The default: each [host, port] exactly, never a block around it. */
  static exact(hosts) {
    const out = [];
    for (const [h, p] of hosts) {
      const e = h.includes('/') ? null : bare(h.replace(/^\[|\]$/g, ''));
      if (e && p >= 1 && p <= 65535) out.push({ ...e, port: Number(p) });
    }
    return new AllowList(out);
  }

  /** True when host (as a redirect or a sentinel writes it) at port is admitted. */
  match(host, p) {
    if (typeof host !== 'string' || !Number.isInteger(p) || p < 1 || p > 65535) return false;
    if (host.length > 2 && host[0] === '[' && host.at(-1) === ']' && host.includes(':')) host = host.slice(1, -1);
    if (host.includes('/')) return false;
    const h = bare(host);
    if (!h) return false;
    const a = h.kind === 'net' ? addr(host) : null;
    return this.entries.some((x) => (x.port === 0 || x.port === p) && x.kind === h.kind &&
      (x.kind === 'name' ? x.name === h.name : x.list.check(a[1], a[0])));
  }
}

/** May a credential go to host over this link: TLS or a unix socket, loopback, or allow_plaintext. */
export function cleartextOk(host, unixSocket, tls, allowPlaintext) {
  if (unixSocket || tls || allowPlaintext) return true;
  if (!host) return false;
  if (['localhost', 'localhost.'].includes(host.toLowerCase()) || host === '[::1]') return true;
  const a = addr(host);
  if (!a) return false;
  return a[0] === 'ipv4' ? a[1].split('.')[0] === '127' : LOOP6.check(a[1], 'ipv6');
}

const require = createRequire(import.meta.url);
const { default: StandaloneConnector } = require('ioredis/built/connectors/StandaloneConnector.js');

/**
 * Every connection of one client goes through check() before its socket is
 * opened: connector() is an ioredis Connector doing so.
 */
export class Guard {
  constructor(allow, seeds, tls, allowPlaintext, credential) {
    Object.assign(this, { allow, tls, allowPlaintext, credential, seedList: seeds });
    this.seeds = AllowList.exact(seeds);
    this.announced = new AllowList();
  }

  admits(host, p) {
    return this.allow ? this.allow.match(host, p) : this.seeds.match(host, p) || this.announced.match(host, p);
  }

  /** Throws ConfigError unless host:port may be connected to (with the credential). */
  check(host, p) {
    if (!this.admits(host, Number(p))) throw new ConfigError(`[redis] allow_hosts: ${host}:${p} is not admitted; not connecting`);
    if (this.credential && !cleartextOk(host, false, this.tls, this.allowPlaintext)) {
      throw new ConfigError(`[redis] ${host}:${p}: a password or token would go in clear text; use tls = yes or allow_plaintext = yes`);
    }
  }

  /** What the configured seeds announce now (CLUSTER SHARDS), replacing the last. */
  async askSeeds(opts) {
    const { default: Redis } = await import('ioredis');
    for (const [h, p] of this.seedList) {
      const c = new Redis({ ...opts, host: h, port: p, lazyConnect: true, retryStrategy: null, maxRetriesPerRequest: 0, Connector: this.connector() });
      c.on('error', () => {});
      try {
        await c.connect();
        const shards = await c.call('CLUSTER', 'SHARDS');
        const got = [];
        for (const shard of shards) {
          const nodes = pairs(shard).nodes ?? [];
          for (const node of nodes) {
            const n = pairs(node), np = Number(n[this.tls ? 'tls-port' : 'port']);
            for (const k of ['ip', 'endpoint', 'hostname']) if (n[k] && np) got.push([String(n[k]), np]);
          }
        }
        this.announced = AllowList.exact(got);
        return;
      } catch { /* the next seed */ } finally { c.disconnect(); }
    }
  }

  connector() {
    const guard = this;
    return class Checked extends StandaloneConnector {
      async connect(cb) {
        const { host, port: p } = this.options;
        if (!guard.allow && !guard.admits(host, Number(p))) await guard.askSeeds(guard.opts);
        guard.check(host, p);
        return super.connect(cb);
      }
    };
  }
}

function pairs(v) {
  const out = {};
  for (let i = 0; i + 1 < v.length; i += 2) out[String(v[i])] = v[i + 1];
  return out;
}
