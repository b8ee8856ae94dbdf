//! Redis Cluster: a local 3-master cluster with the module on every node,
//! and a load over 100 tenants through the client's cluster connection.
//! No CROSSSLOT, every key on the node that owns its tenant's slot, every
//! command run exactly once on that node, MOVED from the others (also for
//! `redis-cli` without `-c`, while `redis-cli -c` follows it), and results
//! equal to the same load on a single server.
//!
//! A load is a [`Load`]: the Dreams load (every `DREAMS.*` command) and the
//! Town load (every `TOWN.*` command and the docket and event stream
//! commands) each run for every tenant, and every check here covers both.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::process::Command;
use std::time::Duration;

use common::{Cluster, Server};
use dreamtown_client::chrono::{DateTime, Utc};
use dreamtown_client::dreams::{DeliveryFence, DrainResult, QuietHours, RedisFireQueue, RegionKey, Trigger};
use dreamtown_client::keyspace::dreams::QueueKeys;
use dreamtown_client::town::{
    Agent, AgentId, AgentState, AgentType, Channel, EventType, Message, MessageId, MessageType, Priority, Task, TaskId,
    TownEvent,
};
use dreamtown_client::uuid::Uuid;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// How many tenants the load runs for.
const TENANTS: usize = 100;

/// A single server's or a cluster's connection, so one load runs on both.
#[derive(Clone)]
enum AnyConnection {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for AnyConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(conn) => conn.req_packed_command(cmd),
            // A wrapper is no ClusterConnection to the client: it routes a
            // TOWN subcommand by its town itself, as docs/client.md says.
            Self::Cluster(conn) => match dreamtown_client::cluster_routing(cmd) {
                Some(routing) => Box::pin(conn.route_command(cmd.clone(), routing)),
                None => conn.req_packed_command(cmd),
            },
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}

/// What a load saw for one tenant, in order; equal runs see equal things.
type Observations = Vec<String>;
type LoadFuture = Pin<Box<dyn Future<Output = dreamtown_client::Result<Observations>> + Send>>;

/// One workload over one tenant.
struct Load {
    name: &'static str,
    /// Run it for `tenant` over the connection.
    run: fn(AnyConnection, String) -> LoadFuture,
    /// The prefix of every key the load creates for `tenant`.
    key_prefix: fn(&str) -> String,
    /// The module commands it sends (each declares the tenant as first key).
    commands: &'static [&'static str],
    /// The plain Redis commands it sends, as `INFO commandstats` names them.
    plain_commands: &'static [&'static str],
}

const LOADS: &[Load] = &[
    Load {
        name: "dreams",
        run: |conn, org| Box::pin(dreams_load(conn, org)),
        key_prefix: |org| format!("exocortex:dreams:{{{org}}}:"),
        commands: &[
            "DREAMS.FIRE",
            "DREAMS.RECORD",
            "DREAMS.SETTLE",
            "DREAMS.DRAIN",
            "DREAMS.ACK",
            "DREAMS.RECOVER",
            "DREAMS.LEN",
            "DREAMS.COUNTERS",
        ],
        plain_commands: &[],
    },
    Load {
        name: "town",
        run: |conn, town| Box::pin(town_load(conn, town)),
        key_prefix: |town| format!("tt:{{{town}}}:"),
        commands: &[
            "TOWN.SEND",
            "TOWN.RECV",
            "TOWN.ACK",
            "TOWN.REQUEUE",
            "TOWN.LEN",
            "TOWN.PEEK",
            "TOWN.RECLAIM",
            "TOWN.BROADCAST",
            // Subcommands, as INFO commandstats names them.
            "TOWN.STOP|REQUEST",
            "TOWN.STOP|CHECK",
            "TOWN.AGENT|SET",
            "TOWN.AGENT|GET",
            "TOWN.TASK|SET",
            "TOWN.ACTIVITY|LOG",
            "TOWN.BACKLOG|PUSH",
            "TOWN.RESET",
        ],
        // XGROUP CREATE is sent twice, the second time answered BUSYGROUP (a
        // failed call the client tolerates), so it is not in the list of calls
        // that must all succeed.
        plain_commands: &["XADD", "XREADGROUP", "XACK", "XLEN", "XPENDING", "XINFO|GROUPS", "XRANGE"],
    },
];

/// The tenants of the load: the same names on the cluster and the single server.
fn tenants() -> Vec<String> {
    (0..TENANTS).map(|i| format!("org-{i:03}")).collect()
}

/// Every Dreams operation on one organization, deterministic when quiet
/// hours are off: records (plain and fenced), fires, drains, failed and
/// successful acknowledgements, settling, recovery, inspection.
async fn dreams_load(conn: AnyConnection, org: String) -> dreamtown_client::Result<Observations> {
    let trigger =
        Trigger { memory_threshold: 3, edge_threshold: 1_000, min_interval_secs: 0, age_floor_secs: 1_000_000 };
    let mut queue = RedisFireQueue::new(conn, QuietHours::none(), org.clone());
    let counted = RegionKey::new(org.as_str(), "web", 3);
    let explicit = RegionKey::new(org.as_str(), "api", 1);
    let mut seen = Vec::new();
    let drained = |result: DrainResult| match result {
        DrainResult::Ready(fire) => format!(
            "ready {} {:?} {}",
            fire.region.project,
            fire.fired_at.map(|c| (c.memories_since_last_cycle, c.edges_since_last_cycle)),
            fire.quiet_deferred
        ),
        other => format!("{other:?}"),
    };
    let take = |result: DrainResult| match result {
        DrainResult::Ready(fire) => Ok(fire),
        other => Err(dreamtown_client::Error::InvalidArgument(if other == DrainResult::TimedOut {
            "the load expected a fire, the drain timed out"
        } else {
            "the load expected a fire"
        })),
    };

    seen.push(format!("{:?}", queue.record_write(&counted, 1, 1, trigger, "node-a").await?));
    let fence = DeliveryFence { event_id: "evt-1", generation: 1 };
    seen.push(format!("{:?}", queue.record_write_once(&counted, 2, 0, trigger, "node-b", fence).await?));
    seen.push(format!("{:?}", queue.record_write_once(&counted, 2, 0, trigger, "node-b", fence).await?));
    seen.push(format!("{:?}", queue.fire(&explicit, "node-a").await?));
    seen.push(format!("{:?}", queue.lengths().await?));

    let first = take(queue.drain(Duration::from_secs(5)).await?)?;
    seen.push(drained(DrainResult::Ready(first.clone())));
    seen.push(format!("{:?}", queue.acknowledge(&first, false, trigger, "node-a").await?));
    for _ in 0..2 {
        let fire = take(queue.drain(Duration::from_secs(5)).await?)?;
        seen.push(drained(DrainResult::Ready(fire.clone())));
        seen.push(format!("{:?}", queue.acknowledge(&fire, true, trigger, "node-a").await?));
    }
    queue.forget_write_once(&counted, "evt-1", 1, false).await?;
    seen.push(format!("{:?}", queue.fire(&explicit, "node-c").await?));
    let in_flight = queue.drain(Duration::from_secs(5)).await?;
    seen.push(drained(in_flight));
    seen.push(format!("recovered {}", queue.recover_inflight().await?));
    seen.push(format!("{:?}", queue.lengths().await?));
    let counters = queue.counters(&counted).await?;
    seen.push(format!(
        "counters {:?} {:?} pending={} settled={:?}",
        counters.memories,
        counters.edges,
        counters.pending_fire.is_some(),
        counters.settled_generation
    ));
    Ok(seen)
}

/// Every Town operation on one town, deterministic: fixed ids and times,
/// observations that leave out what the clock decides (stream entry ids,
/// heartbeats). Blocking calls are only made when something is there, so
/// no tenant holds the shared connection.
async fn town_load(conn: AnyConnection, town: String) -> dreamtown_client::Result<Observations> {
    let channel = Channel::new(conn, town);
    let mut seen = Vec::new();
    let uuid = |n: u128| Uuid::from_u128(n);
    let at: DateTime<Utc> = DateTime::from_timestamp(1_735_722_000, 0).unwrap_or_default();
    let (boss, worker, heir) = (AgentId::supervisor(), AgentId::from_uuid(uuid(0x10)), AgentId::from_uuid(uuid(0x20)));
    let message = |n: u128, to: AgentId, text: &str, priority: Priority| Message {
        id: MessageId::from_uuid(uuid(0x1000 + n)),
        from: boss,
        to,
        msg_type: MessageType::Task { description: text.to_owned() },
        priority,
        created_at: at,
        correlation_id: None,
    };
    let agent = |id: AgentId, name: &str| Agent {
        id,
        created_at: at,
        last_heartbeat: at,
        last_active_at: at,
        state: AgentState::Idle,
        ..Agent::new(name, "claude", AgentType::Worker)
    };
    let texts = |deliveries: Vec<dreamtown_client::town::Delivery>| -> Vec<String> {
        deliveries
            .iter()
            .map(|d| match d.message() {
                Some(Message { msg_type: MessageType::Task { description }, to, .. }) => format!("{description}->{to}"),
                _ => format!("other {}", String::from_utf8_lossy(d.payload())),
            })
            .collect()
    };

    channel.set_agent_state(&agent(worker, "worker")).await?;
    channel.set_agent_state(&agent(heir, "heir")).await?;
    let agents = channel.list_agents().await?;
    seen.push(format!("agents {:?}", agents.iter().map(|a| (a.name.clone(), a.state)).collect::<Vec<_>>()));
    seen.push(format!("byname {:?}", channel.get_agent_by_name("heir").await?.map(|a| a.id)));

    channel.send(&message(1, worker, "normal", Priority::Normal)).await?;
    channel.send(&message(2, worker, "high", Priority::High)).await?;
    channel.send(&message(3, worker, "low", Priority::Low)).await?;
    channel.send_urgent(&message(4, worker, "urgent", Priority::Urgent)).await?;
    seen.push(format!("{:?}", channel.lengths(worker).await?));
    seen.push(format!("inbox {} urgent {}", channel.inbox_len(worker).await?, channel.urgent_len(worker).await?));
    seen.push(format!("peek {:?}", texts(channel.peek_inbox(worker, 10).await?)));
    seen.push(format!("try {:?}", channel.try_receive(worker).await?.map(|m| m.id)));
    seen.push(format!("receive {:?}", channel.receive(worker, Duration::from_secs(5)).await?.map(|m| m.id)));
    let reliable = channel.receive_reliable(worker, 2, Some(Duration::from_secs(5))).await?;
    seen.push(format!("reliable {:?}", texts(reliable)));
    seen.push(format!("ack {}", channel.ack_message(worker, MessageId::from_uuid(uuid(0x1001))).await?));
    seen.push(format!("ack again {}", channel.ack_message(worker, MessageId::from_uuid(uuid(0x1001))).await?));
    seen.push(format!("requeued {}", channel.requeue_pending(worker).await?));
    seen.push(format!("{:?}", channel.lengths(worker).await?));
    seen.push(format!("urgent {:?}", texts(channel.receive_urgent(worker).await?)));

    seen.push(format!("rounds {}", channel.increment_agent_rounds(worker).await?));
    seen.push(format!("rounds {}", channel.increment_agent_rounds(worker).await?));
    seen.push(format!("tasks {}", channel.increment_agent_tasks_completed(worker).await?));
    channel.update_agent_heartbeat(worker).await?;
    let stored = channel.get_agent_state(worker).await?;
    seen.push(format!("stored {:?}", stored.map(|a| (a.rounds_completed, a.tasks_completed, a.last_heartbeat > at))));
    channel.log_agent_activity(worker, "round 1").await?;
    channel.log_agent_activity(worker, "round 2").await?;
    seen.push(format!("activity {:?}", channel.get_agent_activity(worker).await?));
    channel.request_stop(worker).await?;
    seen.push(format!("stop {}", channel.should_stop(worker).await?));
    channel.clear_stop(worker).await?;
    seen.push(format!("stop {}", channel.should_stop(worker).await?));

    let tasks: Vec<Task> = (1..=2)
        .map(|n| Task {
            id: TaskId::from_uuid(uuid(0x2000 + n)),
            created_at: at,
            updated_at: at,
            ..Task::new(format!("task {n}"))
        })
        .collect();
    for task in &tasks {
        channel.set_task(task).await?;
        channel.backlog_push(task.id).await?;
    }
    seen.push(format!("task {:?}", channel.get_task(tasks[0].id).await?.map(|t| t.description)));
    seen.push(format!("tasks {}", channel.list_tasks().await?.len()));
    seen.push(format!("deleted {}", channel.delete_task(tasks[1].id).await?));
    seen.push(format!("backlog {:?} {}", channel.backlog_list().await?, channel.backlog_len().await?));
    seen.push(format!("pop {:?}", channel.backlog_pop().await?));
    seen.push(format!("remove {}", channel.backlog_remove(tasks[1].id).await?));

    channel.send_urgent(&message(5, worker, "urgent again", Priority::Normal)).await?;
    seen.push(format!("reclaimed {}", channel.reclaim(worker, heir).await?));
    seen.push(format!("{:?} {:?}", channel.lengths(worker).await?, channel.lengths(heir).await?));
    seen.push(format!("heir {:?}", texts(channel.drain_inbox(heir).await?)));
    channel.move_message_to_inbox(&message(6, worker, "moved", Priority::Normal), heir).await?;
    channel.broadcast(&Message { msg_type: MessageType::Shutdown, ..message(7, heir, "", Priority::Normal) }).await?;

    channel.docket_ensure_group().await?;
    channel.docket_ensure_group().await?;
    for task in &tasks {
        channel.docket_push(task.id, "docket job", "normal", "boss", "worker").await?;
    }
    seen.push(format!("docket {} lag {:?}", channel.docket_len().await?, channel.docket_group_lag().await?));
    match channel.docket_read("c1", 5_000).await? {
        Some((entry, fields)) => {
            seen.push(format!("read {:?} {:?}", fields.get("task_id"), fields.get("message")));
            seen.push(format!("pending {}", channel.docket_pending_count().await?));
            channel.docket_ack(&entry).await?;
        }
        None => seen.push("nothing read".to_owned()),
    }
    seen.push(format!("pending {} lag {:?}", channel.docket_pending_count().await?, channel.docket_group_lag().await?));
    channel.docket_log_event(tasks[0].id, "completed", "done").await?;
    let event = TownEvent { timestamp: at, ..TownEvent::new(EventType::TaskCompleted, "done").with_agent(worker) };
    channel.emit_event(&event).await?;
    let events = channel.event_stream().read_town_events("0-0", 10).await?;
    seen.push(format!("events {:?}", events.into_iter().map(|(_, e)| e == event).collect::<Vec<_>>()));

    seen.push(format!("reset agents {}", channel.reset_agents_only().await?));
    seen.push(format!("reset all {}", channel.reset_all().await?));
    // State to find afterwards on the owning node.
    channel.set_agent_state(&agent(worker, "worker")).await?;
    channel.send(&message(8, worker, "after reset", Priority::Normal)).await?;
    channel.backlog_push(tasks[0].id).await?;
    seen.push(format!("{:?}", channel.lengths(worker).await?));
    Ok(seen)
}

/// Run every load for every tenant, concurrently; any error fails the test.
async fn run_loads(conn: AnyConnection) -> BTreeMap<(String, &'static str), Observations> {
    let mut tasks = tokio::task::JoinSet::new();
    for tenant in tenants() {
        for load in LOADS {
            let conn = conn.clone();
            let tenant = tenant.clone();
            tasks.spawn(async move {
                let seen = (load.run)(conn, tenant.clone()).await;
                ((tenant, load.name), seen)
            });
        }
    }
    let mut results = BTreeMap::new();
    while let Some(joined) = tasks.join_next().await {
        let (key, seen) = joined.expect("a load task");
        let seen = seen.unwrap_or_else(|error| panic!("{key:?} failed: {error}"));
        results.insert(key, seen);
    }
    results
}

fn info_section(con: &mut redis::Connection, section: &str) -> String {
    redis::cmd("INFO").arg(section).query(con).unwrap()
}

/// `cmdstat_<command>` calls / failed / rejected of one node.
fn command_stats(con: &mut redis::Connection) -> BTreeMap<String, (u64, u64, u64)> {
    let field = |line: &str, name: &str| -> u64 {
        line.split(',').find_map(|kv| kv.strip_prefix(&format!("{name}="))).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    info_section(con, "commandstats")
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let rest = rest.trim();
            Some((
                name.to_uppercase(),
                (field(rest, "calls"), field(rest, "failed_calls"), field(rest, "rejected_calls")),
            ))
        })
        .collect()
}

fn keys(con: &mut redis::Connection) -> BTreeSet<String> {
    redis::cmd("KEYS").arg("*").query(con).unwrap()
}

fn keyslot(con: &mut redis::Connection, key: &str) -> u16 {
    redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(con).unwrap()
}

fn redis_cli(args: &[&str]) -> String {
    let output = Command::new(common::cli_bin()).args(args).output().expect("redis-cli on PATH");
    assert!(output.status.success(), "redis-cli {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_over_100_tenants_lands_on_the_owning_nodes_and_matches_one_server() {
    let cluster = Cluster::start(3);
    let single = Server::start();

    let clustered = run_loads(AnyConnection::Cluster(cluster.connection().await)).await;
    let alone = run_loads(AnyConnection::Single(single.multiplexed().await)).await;
    assert_eq!(clustered.len(), TENANTS * LOADS.len());
    assert_eq!(clustered, alone, "the cluster saw exactly what one server saw");

    // No CROSSSLOT (nor any other error) anywhere; each command ran exactly
    // as often across the cluster as on the one server, never refused.
    let single_stats = command_stats(&mut single.connect());
    let mut cluster_stats: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for node in &cluster.nodes {
        let mut con = node.connect();
        let errors = info_section(&mut con, "errorstats");
        assert!(!errors.contains("CROSSSLOT"), "node {}: {errors}", node.port);
        for (name, (calls, failed, rejected)) in command_stats(&mut con) {
            let total = cluster_stats.entry(name).or_default();
            total.0 += calls;
            total.1 += failed;
            total.2 += rejected;
        }
    }
    for command in LOADS.iter().flat_map(|load| load.commands.iter().chain(load.plain_commands)) {
        let on_cluster = cluster_stats.get(*command).copied().unwrap_or_default();
        let on_single = single_stats.get(*command).copied().unwrap_or_default();
        assert!(on_cluster.0 > 0, "{command} was exercised");
        assert_eq!(on_cluster, on_single, "{command}: (calls, failed, rejected) on the cluster vs one server");
        assert_eq!((on_cluster.1, on_cluster.2), (0, 0), "{command} never failed nor was refused");
    }

    // Every key lives on the node that owns its slot; each tenant's keys on
    // exactly one node, the owner of the tenant's own slot; and the cluster
    // holds the same keys as the one server.
    let mut admin = cluster.nodes[0].connect();
    let owners = cluster.slot_owners();
    let mut all_cluster_keys = BTreeSet::new();
    let mut per_node: Vec<BTreeSet<String>> = Vec::new();
    for node in &cluster.nodes {
        let node_keys = keys(&mut node.connect());
        let owned = &owners.iter().find(|o| o.port == node.port).expect("a master").ranges;
        for key in &node_keys {
            let slot = keyslot(&mut admin, key);
            assert!(owned.iter().any(|(a, b)| (*a..=*b).contains(&slot)), "{key} (slot {slot}) on {}", node.port);
        }
        all_cluster_keys.extend(node_keys.iter().cloned());
        per_node.push(node_keys);
    }
    assert_eq!(all_cluster_keys, keys(&mut single.connect()), "same keys as one server");
    let mut nodes_used = BTreeSet::new();
    for tenant in tenants() {
        let owner = cluster.owner_of_slot(keyslot(&mut admin, &tenant));
        nodes_used.insert(owner);
        for load in LOADS {
            let prefix = (load.key_prefix)(&tenant);
            for (index, node_keys) in per_node.iter().enumerate() {
                let has = node_keys.iter().any(|k| k.starts_with(&prefix));
                assert_eq!(has, index == owner, "{} keys of {tenant} on node {index} (owner {owner})", load.name);
            }
        }
    }
    assert_eq!(nodes_used.len(), 3, "100 tenants spread over every master");
}

#[tokio::test]
async fn non_owning_nodes_answer_moved_and_redis_cli_c_follows_it() {
    let cluster = Cluster::start(3);
    let mut conn = cluster.connection().await;
    let org = "org-moved";
    let mut queue = RedisFireQueue::new(conn.clone(), QuietHours::none(), org);
    queue.fire(&RegionKey::new(org, "web", 3), "node-a").await.unwrap();

    let mut admin = cluster.nodes[0].connect();
    let slot = keyslot(&mut admin, org);
    assert_eq!(slot, keyslot(&mut admin, &QueueKeys::new(org).ready), "the tenant is its keys' hash tag");
    let owner = cluster.owner_of_slot(slot);
    let owner_port = cluster.nodes[owner].port;

    for (index, node) in cluster.nodes.iter().enumerate() {
        let mut con = node.connect();
        // Routing relies on the key spec: first key 1 on every node (2 for
        // a subcommand, `TOWN.AGENT GET <town> ...`).
        for command in LOADS.iter().flat_map(|load| load.commands) {
            let info: Value = redis::cmd("COMMAND").arg("INFO").arg(*command).query(&mut con).unwrap();
            let Value::Array(entries) = info else { panic!("{info:?}") };
            let Some(Value::Array(fields)) = entries.first() else { panic!("{command}: {entries:?}") };
            let first = if command.contains('|') { 2 } else { 1 };
            assert_eq!(
                &fields[3..6],
                &[Value::Int(first), Value::Int(first), Value::Int(1)],
                "{command} on {}",
                node.port
            );
        }
        let port = node.port.to_string();
        let followed = redis_cli(&["-c", "-p", &port, "DREAMS.LEN", org]);
        assert_eq!(followed.split_whitespace().collect::<Vec<_>>(), ["1", "0", "0"], "redis-cli -c via {port}");
        if index == owner {
            continue;
        }
        let before: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut con).unwrap();
        for write in [
            vec!["DREAMS.FIRE", org, "web", "3"],
            vec!["DREAMS.LEN", org],
            vec!["TOWN.LEN", org, "a"],
            vec!["TOWN.AGENT", "GET", org, "a"],
            vec!["TOWN.BACKLOG", "PUSH", org, "t1"],
        ] {
            let error = common::cmd(&write).query::<Value>(&mut con).unwrap_err();
            assert_eq!(error.code(), Some("MOVED"), "{write:?} on {port}: {error}");
            assert_eq!(error.redirect_node(), Some((format!("127.0.0.1:{owner_port}").as_str(), slot)));
        }
        let after: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut con).unwrap();
        assert_eq!(before, after, "a refused command changed nothing on {port}");
        let plain = redis_cli(&["-p", &port, "DREAMS.LEN", org]);
        assert!(plain.contains(&format!("MOVED {slot} 127.0.0.1:{owner_port}")), "redis-cli without -c: {plain}");
    }
    let lengths: Vec<u64> = common::cmd(&["DREAMS.LEN", org]).query_async(&mut conn).await.unwrap();
    assert_eq!(lengths, [1, 0, 0], "the cluster connection routes raw commands by tenant too");

    // A cluster connection has no response timeout by default: a drain may
    // block on the owning node past redis-rs's usual 500 ms.
    let mut idle = RedisFireQueue::new(conn, QuietHours::none(), "org-idle");
    let started = std::time::Instant::now();
    assert_eq!(idle.drain(Duration::from_millis(1500)).await.unwrap(), DrainResult::TimedOut);
    assert!(started.elapsed() >= Duration::from_millis(1500));
}

/// Stops the script's cluster however the test ends.
struct ScriptCluster {
    env: Vec<(&'static str, String)>,
}

impl ScriptCluster {
    fn run(&self, action: &str) -> std::process::Output {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/cluster.sh");
        Command::new("bash")
            .arg(script)
            .arg(action)
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .expect("bash")
    }
}

impl Drop for ScriptCluster {
    fn drop(&mut self) {
        let _ = self.run("stop");
    }
}

#[test]
fn the_cluster_script_starts_a_working_cluster_and_stops_it() {
    let base = common::free_port_run(3);
    let dir = common::scratch_dir("script", base);
    let script = ScriptCluster {
        env: vec![
            ("CLUSTER_PORT", base.to_string()),
            ("CLUSTER_DIR", dir.display().to_string()),
            ("DREAMTOWN_MODULE", common::module_path().display().to_string()),
        ],
    };
    let started = script.run("start");
    let printed = String::from_utf8_lossy(&started.stdout);
    assert!(started.status.success(), "start: {printed}{}", String::from_utf8_lossy(&started.stderr));
    let cli = common::cli_bin();
    assert!(printed.contains(&format!("{cli} -c -p {base}")), "it says how to connect: {printed}");

    for offset in 0..3 {
        let port = (base + offset).to_string();
        let info = redis_cli(&["-p", &port, "CLUSTER", "INFO"]);
        assert!(info.contains("cluster_state:ok"), "{port}: {info}");
        // The script ran the server under test (DREAMTOWN_SERVER): that
        // binary, or the one a wrapper script execs (scripts/servers.sh
        // wraps each server of the matrix in a two-line `exec` script).
        let server = common::server_bin();
        if server.starts_with('/') {
            let info = redis_cli(&["-p", &port, "INFO", "server"]);
            let executable =
                info.lines().find_map(|line| line.trim().strip_prefix("executable:")).unwrap_or_default().to_owned();
            let wrapped = std::fs::read_to_string(&server)
                .is_ok_and(|script| script.starts_with("#!") && script.contains(&format!("\"{executable}\"")));
            assert!(!executable.is_empty() && (executable == server || wrapped), "{port} runs {server}: {info}");
        }
        let modules = redis_cli(&["-p", &port, "MODULE", "LIST"]);
        assert!(modules.contains("dreamtown"), "the module on {port}: {modules}");
    }
    let port = base.to_string();
    assert_eq!(redis_cli(&["-c", "-p", &port, "DREAMS.FIRE", "acme", "web", "3"]).trim(), "queued");
    let lengths = redis_cli(&["-c", "-p", &(base + 1).to_string(), "DREAMS.LEN", "acme"]);
    assert_eq!(lengths.split_whitespace().collect::<Vec<_>>(), ["1", "0", "0"]);

    let stopped = script.run("stop");
    assert!(stopped.status.success(), "stop: {stopped:?}");
    for offset in 0..3 {
        let answered =
            Command::new(common::cli_bin()).args(["-p", &(base + offset).to_string(), "PING"]).output().unwrap();
        assert!(!String::from_utf8_lossy(&answered.stdout).contains("PONG"), "node {} stopped", base + offset);
    }
    assert!(!dir.exists(), "its state is removed");
}

/// `MOVED` answers counted by every node since the last `CONFIG RESETSTAT`.
fn moved_answers(cluster: &Cluster) -> u64 {
    cluster
        .nodes
        .iter()
        .map(|node| {
            info_section(&mut node.connect(), "errorstats")
                .lines()
                .find_map(|line| line.strip_prefix("errorstat_MOVED:count="))
                .and_then(|count| count.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

fn reset_stats(cluster: &Cluster) {
    for node in &cluster.nodes {
        redis::cmd("CONFIG").arg("RESETSTAT").query::<()>(&mut node.connect()).unwrap();
    }
}

/// docs/operations.md's table of cluster clients, the `redis` crate's row:
/// the crate routes a command it does not know by its first argument, the
/// tenant for `DREAMS.*`, but the subcommand's name for `TOWN.AGENT GET
/// <town>` (so most towns' calls are answered MOVED, which the crate
/// follows), while the same calls routed with `cluster_routing` never are.
#[tokio::test]
async fn the_redis_crate_routes_subcommands_by_their_name_and_cluster_routing_by_the_town() {
    let cluster = Cluster::start(3);
    let mut conn = cluster.connection().await;
    let towns: Vec<String> = (0..30).map(|n| format!("routing-{n}")).collect();
    let set = |town: &str| redis::cmd("TOWN.AGENT").arg("SET").arg(town).arg("a").arg("name").arg("x").clone();
    let fire = |town: &str| redis::cmd("DREAMS.FIRE").arg(town).arg("web").arg(3).clone();

    reset_stats(&cluster);
    for town in &towns {
        assert_eq!(fire(town).query_async::<String>(&mut conn).await.unwrap(), "queued");
    }
    assert_eq!(moved_answers(&cluster), 0, "DREAMS.* go by their first argument, the tenant");

    for town in &towns {
        set(town).query_async::<()>(&mut conn).await.unwrap();
    }
    let bounced = moved_answers(&cluster);
    assert!(bounced > 0, "TOWN.AGENT SET <town> went by \"SET\": some towns live elsewhere");

    reset_stats(&cluster);
    for town in &towns {
        let cmd = set(town);
        let routing = dreamtown_client::cluster_routing(&cmd).expect("a container's subcommand");
        conn.route_command(cmd, routing).await.unwrap();
    }
    assert_eq!(moved_answers(&cluster), 0, "cluster_routing sends each to the town's node (before: {bounced} MOVED)");
}
