// The ioredis recipe of docs/python-and-node.md ("ioredis: a cluster"),
// run by python-tests/test_cluster_clients.py against its test cluster.
//
// ioredis routes a command by the keys its static command table lists; it
// does not know DREAMS.* / TOWN.*, so `cluster.call("DREAMS.FIRE", ...)` goes
// to a random master, which answers MOVED (and every MOVED makes ioredis
// refresh its slot map). `dreamtown` gives the command the slot of its
// tenant, so ioredis sends it to the tenant's master and still follows
// MOVED / ASK while a slot moves.
//
//   node ioredis_recipe.js <port> recipe|plain <tenants>
//   prints {"commands": N} after N commands over <tenants> tenants, and exits.
"use strict";
const { Cluster, Command } = require("ioredis");
const calculateSlot = require("cluster-key-slot");

// Commands whose subcommand comes first: TOWN.AGENT GET <town> <agent>.
const CONTAINERS = new Set(["TOWN.AGENT", "TOWN.TASK", "TOWN.BACKLOG", "TOWN.ACTIVITY", "TOWN.STOP"]);

// Run a DREAMS.* / TOWN.* command on the master that owns its tenant's
// slot: the tenant is the first argument, or the second after a
// subcommand. The server routes these commands by the tenant as if it were
// a key (hash-tag rules included), and so does calculateSlot.
function dreamtown(cluster, name, ...args) {
  const tenant = CONTAINERS.has(name.toUpperCase()) ? args[1] : args[0];
  const command = new Command(name, args, { replyEncoding: "utf8" });
  command.slot = calculateSlot(tenant); // what getSlot() returns: the route
  return cluster.sendCommand(command);
}

// The recipe's first form (kept for bench/legacy_move_ioredis.js): a
// command whose first argument is the tenant.
function callForTenant(cluster, command, tenant, ...args) {
  return dreamtown(cluster, command, tenant, ...args);
}

async function main() {
  const [port, mode, tenants] = process.argv.slice(2);
  const cluster = new Cluster([{ host: "127.0.0.1", port: Number(port) }]);
  const call = mode === "recipe"
    ? (name, ...args) => dreamtown(cluster, name, ...args)
    : (name, ...args) => cluster.call(name, ...args);
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
      await call("TOWN.AGENT", "SET", tenant, "a", "id", "a", "name", "backend"),
      await call("TOWN.AGENT", "GET", tenant, "a"),
      await call("TOWN.BACKLOG", "PUSH", tenant, "t-1"),
    ];
    commands += replies.length;
    const [fired, lengths, sent, , set, agent, backlog] = replies;
    if (fired !== "queued" || Number(lengths[0]) !== 1 || Number(sent) !== 1 || set !== "OK"
        || agent[3] !== "backend" || Number(backlog) !== 1) {
      throw new Error(`${tenant}: unexpected replies ${JSON.stringify(replies)}`);
    }
  }
  await cluster.quit();
  console.log(JSON.stringify({ commands }));
}

module.exports = { dreamtown, callForTenant, CONTAINERS };

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
