// SPDX-License-Identifier: BSD-2-Clause
// node worker.mjs SOCKET QUEUE JOBS CONCURRENCY URL: one BullMQ worker
// process, the peer warrantd is measured against (bench/peers.sh). For each
// job of queue QUEUE (redis-server on the unix socket SOCKET) it POSTs the
// job's body to URL/gates/<resource>/open with R7's headers, on node:http
// with a keep-alive Agent (one socket per concurrent job at most), and fails
// the job on an error or a status outside 2xx. With BENCH_PEERS_VERIFY=1 each
// job is the record itself: its HS256 signature (key: the file
// $BENCH_PEERS_SECRET) and expiresAt are checked first, as warrantd does.
//
// When JOBS jobs have completed or failed it prints one line of JSON:
//   {"jobs":N,"failed":F,"ms":M,"cpu_us":C}
// M from the first job handed to the processor to the last one completed
// (Worker's 'completed' event: after BullMQ has moved it to completed in
// Redis); C the process's user + system CPU over the same span
// (process.cpuUsage: every thread, as /proc/PID/stat counts them). Then it
// waits for SIGTERM and closes the worker. Not part of warrantd.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { Worker } from 'bullmq';

const [sock, queueName, jobsArg, concArg, url] = process.argv.slice(2);
const total = Number(jobsArg);
const concurrency = Number(concArg);
if (!sock || !queueName || !(total > 0) || !(concurrency > 0) || !url) {
	console.error('usage: node worker.mjs SOCKET QUEUE JOBS CONCURRENCY URL');
	process.exit(64);
}
const target = new URL(url);
const agent = new http.Agent({
	keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency,
});

const verify = process.env.BENCH_PEERS_VERIFY === '1';
const secret = verify ?
	readFileSync(process.env.BENCH_PEERS_SECRET).toString('latin1').replace(/[ \t\r\n]+$/, '') :
	null;

// The record's payload once its HS256 signature and expiry hold.
function verified(jws) {
	const parts = jws.split('.');
	if (parts.length !== 3)
		throw new Error('not a JWS');
	const head = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
	if (head.alg !== 'HS256')
		throw new Error(`alg ${head.alg}`);
	const want = createHmac('sha256', secret).update(`${parts[0]}.${parts[1]}`).digest();
	const got = Buffer.from(parts[2], 'base64url');
	if (got.length !== want.length || !timingSafeEqual(got, want))
		throw new Error('bad signature');
	const body = Buffer.from(parts[1], 'base64url').toString('utf8');
	const p = JSON.parse(body);
	if (!(Date.parse(p.expiresAt) > Date.now()))
		throw new Error('expired');
	return { resource: p.resource, onBehalfOf: p.onBehalfOf, basis: p.basis, body };
}

function post(id, d) {
	return new Promise((resolve, reject) => {
		const req = http.request({
			agent, host: target.hostname, port: target.port, method: 'POST',
			path: `/gates/${encodeURIComponent(d.resource)}/open`,
			headers: {
				'Idempotency-Key': id,
				'Content-Type': 'application/json',
				'Warrant-On-Behalf-Of': d.onBehalfOf,
				'Warrant-Basis': d.basis,
				'Content-Length': Buffer.byteLength(d.body),
			},
		}, (res) => {
			res.resume();
			res.on('end', () => (res.statusCode >= 200 && res.statusCode < 300 ? resolve() :
				reject(new Error(`${res.statusCode} from target`))));
			res.on('error', reject);
		});
		req.on('error', reject);
		req.end(d.body);
	});
}

let first = 0;
let cpu0 = null;
let completed = 0;
let failed = 0;
let reported = false;

const worker = new Worker(queueName, async (job) => {
	if (first === 0) {
		first = Date.now();
		cpu0 = process.cpuUsage();
	}
	const d = verify ? verified(job.data.jws) : job.data;
	await post(job.data.id, d);
}, { connection: { path: sock }, concurrency });

function settled() {
	if (reported || completed + failed < total)
		return;
	reported = true;
	const ms = Date.now() - first;
	const cpu = process.cpuUsage(cpu0);
	process.stdout.write(`${JSON.stringify({
		jobs: completed, failed, ms, cpu_us: cpu.user + cpu.system,
	})}\n`);
}

worker.on('completed', () => { completed++; settled(); });
worker.on('failed', (job, err) => {
	failed++;
	if (failed <= 5)
		console.error(`worker: job ${job?.id}: ${err?.message}`);
	settled();
});
worker.on('error', (err) => console.error(`worker: ${err?.message}`));

process.on('SIGTERM', async () => {
	await worker.close();
	agent.destroy();
	process.exit(0);
});
