// ioredis during a legacy slot move, for bench/legacy_move.py: calls
// DREAMS.LEN <tenant> through the recipe of docs/operations.md
// (python-tests/ioredis_recipe.js) in a loop until stdin closes, then
// prints {"calls": N, "failed": N, "longest_ms": N, "error": "..."}.
//
//   node legacy_move_ioredis.js <port> <tenant> '<Cluster options as JSON>'
"use strict";
const Redis = require("ioredis");
const { callForTenant } = require("../python-tests/ioredis_recipe.js");

async function main() {
  const [port, tenant, options] = process.argv.slice(2);
  const cluster = new Redis.Cluster([{ host: "127.0.0.1", port: Number(port) }], JSON.parse(options || "{}"));
  await new Promise((resolve, reject) => {
    cluster.once("ready", resolve);
    cluster.once("error", reject);
  });
  let stop = false;
  process.stdin.on("end", () => { stop = true; });
  process.stdin.resume();
  console.error("ready");
  const result = { calls: 0, failed: 0, longest_ms: 0, error: null };
  while (!stop) {
    const started = Date.now();
    try {
      await callForTenant(cluster, "DREAMS.LEN", tenant);
    } catch (error) {
      result.failed += 1;
      result.error = String(error.message).slice(0, 120);
    }
    result.calls += 1;
    result.longest_ms = Math.max(result.longest_ms, Date.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  cluster.disconnect();
  console.log(JSON.stringify(result));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
