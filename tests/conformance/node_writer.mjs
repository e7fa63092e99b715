// SPDX-License-Identifier: BSD-2-Clause
// The Node writer and the independent verifier (jose) of the conformance
// suite (tests/conformance/conformance.py drives it).
//   node node_writer.mjs write CASES.json   -> one JSON line per case
//   node node_writer.mjs verify JWKS RECORDS.json -> {"ok": n, "bad": [...]}
// CASES.json: {config, keyFile, kid, now, write, cases: [{subject, action, ...}]}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Decider, payloadOf } from '../../clients/node/lib/index.js';

// jose from the Node package's own pinned dependencies
const { compactVerify, createLocalJWKSet } = createRequire(new URL('../../clients/node/package.json', import.meta.url))('jose');

const [mode, a1, a2] = process.argv.slice(2);
if (mode === 'write') {
  const spec = JSON.parse(readFileSync(a1, 'utf8'));
  const d = new Decider({ config: spec.config, keyFile: spec.keyFile, kid: spec.kid, clock: () => spec.now });
  const out = [];
  for (const c of spec.cases) {
    const x = c;
    try {
      if (spec.write) {
        const id = await d.decide(x.subject, x.action, x.resource, x.parameters, x.basis, x.expiresAt,
          { notBefore: x.notBefore, notify: x.notify, recordId: x.recordId, traceparent: x.traceparent, issuer: x.issuer });
        out.push({ ok: id });
      } else {
        const p = d.prepare(x);
        out.push({ ok: p.id, payload: payloadOf(p.text).toString('utf8'), text: p.text });
      }
    } catch (e) {
      out.push({ err: e.name, field: e.field ?? null, message: e.message });
    }
  }
  await d.close();
  console.log(JSON.stringify(out));
} else if (mode === 'verify') {
  const jwks = createLocalJWKSet(JSON.parse(readFileSync(a1, 'utf8')));
  const recs = JSON.parse(readFileSync(a2, 'utf8'));
  const bad = [];
  let ok = 0;
  for (const r of recs) {
    try {
      const { payload, protectedHeader } = await compactVerify(r.jws, jwks, { algorithms: ['ES256'] });
      if (protectedHeader.typ !== 'decision+jwt') throw new Error(`typ ${protectedHeader.typ}`);
      if (JSON.parse(Buffer.from(payload).toString()).recordId !== r.id) throw new Error('recordId');
      if (!Buffer.from(payload).equals(payloadOf(r.jws))) throw new Error('payload');
      ok++;
    } catch (e) {
      bad.push({ id: r.id, why: e.message });
    }
  }
  console.log(JSON.stringify({ ok, bad }));
} else {
  console.error('usage: node_writer.mjs write CASES.json | verify JWKS RECORDS.json');
  process.exit(2);
}
