// The ioredis recipe of docs/operations.md ("Cluster clients"), run by
// python-tests/test_cluster_clients.py against its test cluster.
//
// ioredis routes a command by the keys its static command table lists; it
// does not know DREAMS.* / TOWN.*, so `cluster.call("DREAMS.FIRE", ...)` goes
// to a random master, which answers MOVED. `callForTenant` sends the command
// to the master that owns the tenant's slot instead.
//
//   node ioredis_recipe.js <port> recipe|plain <tenants>
//   prints {"commands": N} after N commands over <tenants> tenants.
"use strict";
const Redis = require("ioredis");
const calculateSlot = require("cluster-key-slot");

// The master that owns `tenant`'s slot. The server routes these commands by
// the tenant as if it were a key, hash-tag rules included, and so does
// calculateSlot; cluster.slots[slot] lists "host:port" of the slot's nodes,
// master first (empty until the cluster is "ready").
function nodeFor(cluster, tenant) {
  const owners = cluster.slots[calculateSlot(tenant)];
  if (!owners) return null;
  return cluster.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === owners[0]) || null;
}

// Run a DREAMS.* / TOWN.* command on the tenant's master. While a slot
// moves (resharding) the node answers MOVED or ASK: then refresh the slot
// map and let the cluster client, which follows redirects, run it.
async function callForTenant(cluster, command, tenant, ...args) {
  const node = nodeFor(cluster, tenant);
  if (node) {
    try {
      return await node.call(command, tenant, ...args);
    } catch (error) {
      if (!/^(MOVED|ASK) /.test(error.message)) throw error;
      cluster.refreshSlotsCache();
    }
  }
  return cluster.call(command, tenant, ...args);
}

async function main() {
  const [port, mode, tenants] = process.argv.slice(2);
  const cluster = new Redis.Cluster([{ host: "127.0.0.1", port: Number(port) }]);
  await new Promise((resolve, reject) => {
    cluster.once("ready", resolve);
    cluster.once("error", reject);
  });
  const call = mode === "recipe"
    ? (command, tenant, ...args) => callForTenant(cluster, command, tenant, ...args)
    : (command, tenant, ...args) => cluster.call(command, tenant, ...args);
  let commands = 0;
  for (let n = 0; n < Number(tenants); n++) {
    const tenant = `node-${mode}-${n}`;
    const message = JSON.stringify({ id: `${tenant}-m1`, from: "lead", to: "a", type: "task",
      description: "do it", priority: "normal", created_at: "2025-01-01T00:00:00Z", correlation_id: null });
    const replies = [
      await call("DREAMS.FIRE", tenant, "web", 3),
      await call("DREAMS.LEN", tenant),
      await call("TOWN.SEND", tenant, message),
      await call("TOWN.LEN", tenant, "a"),
    ];
    commands += replies.length;
    if (replies[0] !== "queued" || replies[1][0] !== 1 || replies[2] !== 1) {
      throw new Error(`${tenant}: unexpected replies ${JSON.stringify(replies)}`);
    }
  }
  cluster.disconnect();
  console.log(JSON.stringify({ commands }));
}

// bench/legacy_move_ioredis.js reuses the recipe.
module.exports = { callForTenant, nodeFor };

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
