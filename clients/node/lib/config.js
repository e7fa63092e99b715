// SPDX-License-Identifier: BSD-2-Clause
// The keys shared with warrantd.ini(5): [redis] (allow_hosts and
// allow_plaintext among them), [redis.decider],
// [redis.monitor], [records] and the [action NAME] names.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from './record.js';
import { AllowList } from './hosts.js';

/** inih's INI: sections, key = value, ';' and '#' comments (inline after white space). */
export function parseIni(text) {
  const out = {};
  let sec = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s[;#].*$/, '').trim();
    if (!line || line[0] === ';' || line[0] === '#') continue;
    const m = /^\[(.*)\]$/.exec(line);
    if (m) { sec = m[1].trim(); out[sec] ??= {}; continue; }
    const eq = line.search(/[=:]/);
    if (eq < 0 || sec == null) continue;
    out[sec][line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

export class Settings {
  constructor(o = {}) {
    Object.assign(this, {
      socket: null, host: '127.0.0.1', port: 6379, db: 0, username: null, password: null,
      passwordFile: null, prefix: 'warrant', shards: 0, cluster: null, tls: false, signature: true,
      algorithm: 'ES256', issuer: null, audience: null, maxWindowS: 604800, clockSkewS: 60, maxBytes: 16384,
      actions: null, baseDir: '.', monitorUsername: null, monitorPasswordFile: null,
      tlsCaFile: null, tlsCertFile: null, tlsKeyFile: null, tlsServerName: null,
      allowHosts: null, allowPlaintext: false,
    }, o);
    // [redis] allow_hosts (null: only the configured host:port, the seeds and
    // what a seed announces) and allow_plaintext (issue 37)
    if (typeof this.allowHosts === 'string') this.allowHosts = AllowList.parse(this.allowHosts);
    if (!(this.shards >= 0 && this.shards <= 1024)) throw new ConfigError('[redis] shards: 1 to 1024');
    if (!['ES256', 'RS256', 'HS256'].includes(this.algorithm)) throw new ConfigError('[records] algorithm: ES256, RS256 or HS256');
  }
  path(name) {
    if (name == null || isAbsolute(name)) return name;
    const cred = process.env.CREDENTIALS_DIRECTORY;
    if (cred && existsSync(join(cred, name))) return join(cred, name);
    return join(this.baseDir, name);
  }
  passwordText(file = null) {
    const p = this.path(file ?? this.passwordFile);
    if (p == null) return this.password;
    try { return readFileSync(p, 'utf8').trim(); } catch (e) { throw new ConfigError(`password_file ${p}: ${e.code}`); }
  }
}

export function loadConfig(path) {
  let text;
  try { text = readFileSync(path, 'utf8'); } catch (e) { throw new ConfigError(`${path}: ${e.code}`); }
  const ini = parseIni(text);
  const r = ini.redis ?? {}, rec = ini.records ?? {}, dec = ini['redis.decider'], mon = ini['redis.monitor'];
  if (r.sentinels) throw new ConfigError(`${path}: [redis] sentinels: not supported by this library`);
  const int = (v, d) => (v === undefined ? d : Number.parseInt(v, 10));
  return new Settings({
    socket: r.socket ?? null, host: r.host ?? '127.0.0.1', port: int(r.port, 6379), db: int(r.db, 0),
    username: dec ? dec.username : r.username ?? null,
    passwordFile: dec ? dec.password_file ?? null : r.password_file ?? null,
    prefix: r.prefix ?? 'warrant', shards: int(r.shards, 0),
    cluster: r.cluster ? r.cluster.split(',').map((hp) => { const s = hp.trim(); const i = s.lastIndexOf(':'); return { host: s.slice(0, i).replace(/^\[|\]$/g, ''), port: +s.slice(i + 1) }; }) : null,
    tls: /^(yes|true|on|1)$/i.test(r.tls ?? 'no'),
    signature: (rec.signature ?? 'required') !== 'off', algorithm: rec.algorithm ?? 'ES256',
    issuer: rec.issuer ?? null, audience: rec.audience ?? null, maxWindowS: int(rec.max_window_s, 604800),
    clockSkewS: int(rec.clock_skew_s, 60), maxBytes: int(rec.max_bytes, 16384),
    actions: Object.keys(ini).filter((s) => s.startsWith('action ')).map((s) => s.slice(7).trim()),
    baseDir: dirname(resolve(path)),
    monitorUsername: mon ? mon.username : null, monitorPasswordFile: mon ? mon.password_file ?? null : null,
    tlsCaFile: r.tls_ca_file ?? null, tlsCertFile: r.tls_cert_file ?? null, tlsKeyFile: r.tls_key_file ?? null,
    tlsServerName: r.tls_server_name ?? null,
    allowHosts: r.allow_hosts ?? null, allowPlaintext: /^(yes|true|on|1)$/i.test(r.allow_plaintext ?? 'no'),
  });
}
