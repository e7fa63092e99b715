// SPDX-License-Identifier: BSD-2-Clause
// node preload.mjs SOCKET QUEUE RESP_FILE: the jobs of bench/mkrecords.c's
// RESP (its "HSET PREFIX:decision:<id> record <R> ..." commands; the XADDs
// are skipped) added to BullMQ queue QUEUE on the redis-server at the unix
// socket SOCKET, in the order written, with Queue.addBulk 1,000 at a time.
// Each job's data is what a BullMQ user would queue for the same call: the
// record's id, resource, onBehalfOf and basis, and the record's payload as
// the body to POST (what warrantd POSTs, R7). With BENCH_PEERS_VERIFY=1 the
// data is the record itself ({id, jws}) and the worker verifies it.
// Prints the number of jobs added. Part of bench/peers.sh, not of warrantd.
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';

const [sock, queueName, respFile] = process.argv.slice(2);
if (!sock || !queueName || !respFile) {
	console.error('usage: node preload.mjs SOCKET QUEUE RESP_FILE');
	process.exit(64);
}
const verify = process.env.BENCH_PEERS_VERIFY === '1';

// The RESP commands of the file: arrays of bulk strings, nothing else.
function* commands(buf) {
	let at = 0;
	const line = () => {
		const end = buf.indexOf('\r\n', at);
		if (end < 0) throw new Error(`cut RESP at byte ${at}`);
		const s = buf.toString('latin1', at, end);
		at = end + 2;
		return s;
	};
	while (at < buf.length) {
		const head = line();
		if (head[0] !== '*') throw new Error(`not a RESP array: ${head}`);
		const argv = [];
		for (let n = Number(head.slice(1)); n > 0; n--) {
			const len = line();
			if (len[0] !== '$') throw new Error(`not a bulk string: ${len}`);
			const k = Number(len.slice(1));
			argv.push(buf.toString('utf8', at, at + k));
			at += k + 2;
		}
		yield argv;
	}
}

// A record's payload: the plain JSON, or a JWS compact's middle part.
function payloadOf(rec) {
	const parts = rec.split('.');
	return parts.length === 3 ? Buffer.from(parts[1], 'base64url').toString('utf8') : rec;
}

const jobs = [];
for (const argv of commands(readFileSync(respFile))) {
	if (argv[0] !== 'HSET') continue;
	const rec = argv[argv.indexOf('record') + 1];
	const id = argv[1].slice(argv[1].lastIndexOf(':') + 1);
	if (verify) {
		jobs.push({ name: 'gate.open', data: { id, jws: rec } });
		continue;
	}
	const body = payloadOf(rec);
	const p = JSON.parse(body);
	jobs.push({
		name: p.action,
		data: { id, resource: p.resource, onBehalfOf: p.onBehalfOf, basis: p.basis, body },
	});
}

const queue = new Queue(queueName, { connection: { path: sock } });
for (let i = 0; i < jobs.length; i += 1000)
	await queue.addBulk(jobs.slice(i, i + 1000));
await queue.close();
console.log(jobs.length);
