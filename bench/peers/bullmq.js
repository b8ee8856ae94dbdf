// BullMQ's side of make bench-peers (bench/peers.py): one scenario, timed,
// through BullMQ as a Node user writes it (a Queue, a Worker with a no-op
// processor, the default ioredis connection, default job options).
//
//   node bench/peers/bullmq.js --port 6379 --scenario add|bulk50|worker1|worker100 --jobs 10000
//
// add: queue.add, one at a time; bulk50: queue.addBulk of 50; worker1 and
// worker100: a Worker with that concurrency takes jobs prefilled (untimed,
// addBulk of 1000) until every one has completed. The timed section
// starts once the queue or worker is ready; the server's CPU is its main
// thread's (INFO cpu), read on a connection of its own just before and
// after. Afterwards the run checks what the server holds (every job
// waiting, or every job completed) and prints one line:
//   system=bullmq scenario=<c> jobs=<n> seconds=<t> server_cpu_secs=<cpu>
//   server_sys_secs=<in the kernel> client_cpu_secs=<this process>
// bullmq and ioredis come from NODE_PATH (target/node-peers/node_modules,
// installed pinned by make peer-deps from bench/peers/package-lock.json).

'use strict';

const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const BULK = 50;
const CONCURRENCY = 100;
// The job every system carries (bench/src/peers/mod.rs JOB).
const JOB = { region: { org: 'bench', project: 'web', memory_type: 1 }, fired_by: 'bench-node' };

function options(argv) {
  const o = { port: 6379, scenario: '', jobs: 10000 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--port') o.port = Number(value);
    else if (flag === '--scenario') o.scenario = value;
    else if (flag === '--jobs') o.jobs = Number(value);
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!['add', 'bulk50', 'worker1', 'worker100'].includes(o.scenario)) {
    throw new Error('--scenario must be add, bulk50, worker1 or worker100');
  }
  if (!(o.jobs > 0)) throw new Error('--jobs must be positive');
  if (o.scenario === 'bulk50') o.jobs = Math.ceil(o.jobs / BULK) * BULK;
  return o;
}

// With DREAMTOWN_PEERS_CALLGRIND=<pid> (bench/peers.py --callgrind): zero
// that server's callgrind counts as the timed section starts, dump them as
// it ends.
function callgrind(flag) {
  const pid = process.env.DREAMTOWN_PEERS_CALLGRIND;
  if (pid) require('child_process').execFileSync('callgrind_control', [flag, pid], { stdio: 'ignore' });
}

async function serverCpu(conn) {
  const info = await conn.info('cpu');
  const field = (name) => Number((info.match(new RegExp(`^${name}:([0-9.]+)`, 'm')) || [])[1]);
  const cpu = { sys: field('used_cpu_sys_main_thread'), user: field('used_cpu_user_main_thread') };
  if (Number.isNaN(cpu.sys + cpu.user)) throw new Error(`INFO cpu has no main-thread counters: ${info}`);
  return cpu;
}

async function addAll(queue, n, batch) {
  for (let left = n; left > 0; left -= batch) {
    const size = Math.min(left, batch);
    if (size === 1) {
      await queue.add('job', JOB);
    } else {
      await queue.addBulk(Array.from({ length: size }, () => ({ name: 'job', data: JOB })));
    }
  }
}

function expect(what, got, want) {
  if (got !== want) throw new Error(`${what}: ${got}, expected ${want}`);
}

async function main() {
  const o = options(process.argv.slice(2));
  const connection = { host: '127.0.0.1', port: o.port };
  const meterConn = new IORedis(connection);
  await meterConn.flushall();
  const queue = new Queue('peers', { connection });
  await queue.waitUntilReady();
  let started;
  let before;
  let clientBefore;
  let seconds;
  let server;
  let client;
  const start = async () => {
    callgrind('-z');
    before = await serverCpu(meterConn);
    clientBefore = process.cpuUsage();
    started = process.hrtime.bigint();
  };
  const stop = async () => {
    seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const used = process.cpuUsage(clientBefore);
    client = (used.user + used.system) / 1e6;
    const after = await serverCpu(meterConn);
    server = { sys: after.sys - before.sys, user: after.user - before.user };
    callgrind('-d');
  };
  if (o.scenario === 'add' || o.scenario === 'bulk50') {
    await start();
    await addAll(queue, o.jobs, o.scenario === 'add' ? 1 : BULK);
    await stop();
    expect('jobs waiting', (await queue.getJobCounts('wait')).wait, o.jobs);
  } else {
    await addAll(queue, o.jobs, 1000);
    const concurrency = o.scenario === 'worker1' ? 1 : CONCURRENCY;
    const worker = new Worker('peers', async () => {}, { connection, concurrency, autorun: false });
    let failure;
    worker.on('failed', (job, error) => { failure = error; });
    await worker.waitUntilReady();
    let completed = 0;
    const done = new Promise((resolve) => {
      worker.on('completed', () => {
        completed += 1;
        if (completed === o.jobs) resolve();
      });
    });
    await start();
    worker.run();
    await done;
    await stop();
    await worker.close();
    if (failure) throw failure;
    const counts = await queue.getJobCounts('wait', 'active', 'completed');
    expect('jobs completed', counts.completed, o.jobs);
    expect('jobs waiting or active', counts.wait + counts.active, 0);
  }
  await queue.close();
  await meterConn.quit();
  console.log(`system=bullmq scenario=${o.scenario} jobs=${o.jobs} seconds=${seconds.toFixed(4)} ` +
    `server_cpu_secs=${(server.sys + server.user).toFixed(6)} server_sys_secs=${server.sys.toFixed(6)} ` +
    `client_cpu_secs=${client.toFixed(6)}`);
}

main().catch((error) => {
  console.error(`bullmq.js: ${error.stack || error}`);
  process.exit(1);
});
