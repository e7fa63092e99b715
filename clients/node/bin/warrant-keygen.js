#!/usr/bin/env node
// SPDX-License-Identifier: BSD-2-Clause
// warrant-keygen [--alg ES256|RS256|HS256] [--kid KID] [--out PREFIX]
import { keygen } from '../lib/keygen.js';

const args = process.argv.slice(2);
const opt = { alg: 'ES256', kid: null, out: 'decider' };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--alg' || a === '--kid' || a === '--out') opt[a.slice(2)] = args[++i];
  else { console.error('usage: warrant-keygen [--alg ES256|RS256|HS256] [--kid KID] [--out PREFIX]'); process.exit(2); }
}
try {
  for (const p of await keygen(opt.out, opt.alg, opt.kid)) console.log(p);
} catch (e) {
  console.error(`warrant-keygen: ${e.message}`);
  process.exit(1);
}
