//! What a network partition loses, measured on test hosts in network
//! namespaces (see `netns/`): a Redis Cluster of 3 masters and 3 replicas
//! (one per master), each server in its own namespace, and clients in two
//! more namespaces, `side-a` (stays with the majority) and `side-b` (cut
//! off with the master in a partition). An `admin` namespace watches.
//!
//! Every round runs a workload on one tenant (a Dreams organization and a
//! Town of the same name, so one slot, one master: the victim) while a
//! fault hits that master or its replica, heals it, drains what is left and
//! checks the record:
//!
//! * producers `DREAMS.FIRE` (a region of its own per fire, so each fire is
//!   one queue item), `DREAMS.RECORD ... EVENT` (+1 on one counter, retried
//!   with the same event id when the outcome is unknown) and `TOWN.SEND`;
//! * consumers `DREAMS.DRAIN ... LEASE` + `DREAMS.ACK`, and
//!   `TOWN.RECV ... RELIABLE LEASE` + `TOWN.ACK`;
//! * every operation has a unique id and an outcome: ok (a reply, and in
//!   Durable mode `WAIT` counted a replica), failed (an error reply: nothing
//!   changed) or unknown (no reply, or `WAIT` fell short);
//! * the checker counts acknowledged fires, messages and increments lost,
//!   items delivered more than once (after a lease expiry or recovery, in a
//!   failover window, or neither), stale ACKs, and replicas whose
//!   `DEBUG DIGEST` differs from their master's.
//!
//! Settings: `default` (a plain cluster connection, no
//! `min-replicas-to-write`) and `durable` (the client's [`Durable`] with
//! `WAIT 1`, and `min-replicas-to-write 1`). With `durable`, nothing
//! acknowledged may be lost and every re-delivery must follow a lease
//! expiry or a failover: asserted. With `default`, losses are reported.
//!
//! `partition_subset` (in `make test`, about 25 s) runs the durable setting
//! through a master cut off with a client on its side, with one write
//! forced into the window between the cut and the failover, then a paused
//! master with a write waiting in its socket; built with the client's
//! `plant-skip-wait` feature (Durable acknowledges without `WAIT`) it fails
//! every time. `partition_full` (`make partition`, ignored otherwise) runs
//! every fault under both settings for `PARTITION_ROUNDS` rounds (default 2)
//! and writes the table to `target/partition-report.md`. Results and what
//! they mean: docs/reliability.md.

use crate::common;
use crate::netns;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use dreamtown_client::dreams::{
    AcknowledgeOutcome, DeliveryFence, DrainResult, DreamsTrigger, FireOutcome, QuietHours, RedisFireQueue, RegionKey,
};
use dreamtown_client::town::{AgentId, Channel, Message, MessageType};
use dreamtown_client::{Durable, Error};
use netns::{Host, Net, in_host, wait_for};
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// `cluster-node-timeout`: every fault lasts longer.
const NODE_TIMEOUT_MS: u64 = 2_000;
/// The lease consumers take.
const LEASE: Duration = Duration::from_secs(3);
/// How long the workload runs before a fault.
const WARMUP: Duration = Duration::from_millis(1_500);
/// Deadline for anything the cluster must reach (a loaded 2-core box).
const SETTLE: Duration = Duration::from_secs(60);
/// Upper bounds of every workload loop.
const MAX_CYCLES: u64 = 2_000;
const MAX_RUN: Duration = Duration::from_secs(120);
/// The port every server listens on (each in its own namespace).
const PORT: u16 = 6379;
/// The memory type of every region.
const MEMORY_TYPE: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Setting {
    Default,
    Durable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Fault {
    /// The victim master and `side-b` cut off from everything else.
    MasterPartition,
    /// The victim's replica cut off from everything.
    ReplicaPartition,
    /// The victim master's packets to the other servers are dropped (it
    /// still hears them, and every client still reaches it both ways).
    OneWayLink,
    /// The victim master's link slowed to 64 kbit/s both ways with a short
    /// queue (`tc tbf`): what overflows is dropped.
    SlowLink,
    /// SIGSTOP on the victim master until its replica took over, then SIGCONT.
    MasterPaused,
    /// SIGKILL on the victim master; restarted once its replica took over.
    MasterKilled,
}

const ALL_FAULTS: [Fault; 6] = [
    Fault::MasterPartition,
    Fault::ReplicaPartition,
    Fault::OneWayLink,
    Fault::SlowLink,
    Fault::MasterPaused,
    Fault::MasterKilled,
];

// ---------------------------------------------------------------- the cluster

/// One server: its host and pid (changes when restarted).
struct Node {
    host: Host,
    pid: u32,
}

/// Six servers, the client and admin hosts, and the network they live on.
struct Hosts {
    net: Net,
    nodes: Vec<Node>,
    side_a: Host,
    side_b: Host,
    admin: Host,
}

fn server_args(net: &Net, host: &Host) -> Vec<String> {
    let dir = net.dir.join(&host.name);
    std::fs::create_dir_all(&dir).expect("node dir");
    let mut args: Vec<String> = [
        "--port",
        &PORT.to_string(),
        "--bind",
        &host.ip,
        "--protected-mode",
        "no",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        &NODE_TIMEOUT_MS.to_string(),
        // A replica that was cut off for a while may still fail over.
        "--cluster-replica-validity-factor",
        "0",
        "--save",
        "",
        "--appendonly",
        "no",
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend([
        "--dir".into(),
        dir.display().to_string(),
        "--loadmodule".into(),
        common::module_path().display().to_string(),
    ]);
    args
}

/// Make the network and the six servers (not yet a cluster).
fn make_hosts() -> Hosts {
    let mut net = Net::new();
    let names = ["m0", "m1", "m2", "r0", "r1", "r2"];
    let hosts: Vec<Host> = names.iter().map(|n| net.add_host(n)).collect();
    let side_a = net.add_host("side-a");
    let side_b = net.add_host("side-b");
    let admin = net.add_host("admin");
    let server = common::server_bin();
    let nodes = hosts
        .into_iter()
        .map(|host| {
            let args = server_args(&net, &host);
            let pid = net.spawn_in(&host, &server, &args, &format!("{}.log", host.name));
            Node { host, pid }
        })
        .collect();
    Hosts { net, nodes, side_a, side_b, admin }
}

/// A blocking admin connection to `ip` (from the admin namespace), or None.
fn admin_conn(ip: &str) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://{ip}:{PORT}/")).ok()?;
    let con = client.get_connection_with_timeout(Duration::from_secs(1)).ok()?;
    con.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    con.set_write_timeout(Some(Duration::from_secs(3))).ok()?;
    Some(con)
}

fn query<T: redis::FromRedisValue>(ip: &str, args: &[&str]) -> Option<T> {
    let mut con = admin_conn(ip)?;
    common::cmd(args).query(&mut con).ok()
}

fn must<T: redis::FromRedisValue>(ip: &str, args: &[&str]) -> T {
    let mut con = admin_conn(ip).unwrap_or_else(|| panic!("connect to {ip}"));
    common::cmd(args).query(&mut con).unwrap_or_else(|e| panic!("{ip}: {args:?}: {e}"))
}

fn info_field(ip: &str, section: &str, field: &str) -> Option<String> {
    let info: String = query(ip, &["INFO", section])?;
    info.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
}

impl Hosts {
    fn ip(&self, index: usize) -> &str {
        &self.nodes[index].host.ip
    }

    fn index_of(&self, ip: &str) -> usize {
        self.nodes.iter().position(|n| n.host.ip == ip).expect("one of ours")
    }

    /// Join the six servers: slots on m0..m2, r_i a replica of m_i.
    fn form_cluster(&self) {
        for i in 0..6 {
            wait_for("server answers PING", SETTLE, || query::<String>(self.ip(i), &["PING"]).is_some());
        }
        let ranges = [("0", "5460"), ("5461", "10922"), ("10923", "16383")];
        for (i, (a, b)) in ranges.iter().enumerate() {
            let _: () = must(self.ip(i), &["CLUSTER", "ADDSLOTSRANGE", a, b]);
        }
        for i in 1..6 {
            let _: () = must(self.ip(0), &["CLUSTER", "MEET", self.ip(i), &PORT.to_string()]);
        }
        wait_for("every node knows six nodes", SETTLE, || {
            (0..6).all(|i| info_cluster(self.ip(i)).contains("cluster_known_nodes:6"))
        });
        for i in 0..3 {
            let id: String = must(self.ip(i), &["CLUSTER", "MYID"]);
            wait_for("the replica knows its master", SETTLE, || {
                query::<()>(self.ip(i + 3), &["CLUSTER", "REPLICATE", &id]).is_some()
            });
        }
        self.wait_settled();
    }

    /// Every server up, `cluster_state:ok` everywhere, three masters each
    /// with one replica whose link is up and whose offset caught up.
    fn wait_settled(&self) {
        wait_for("cluster settled: state ok, 3 masters, 3 replicas linked", SETTLE, || {
            let mut masters = 0;
            for i in 0..6 {
                if !info_cluster(self.ip(i)).contains("cluster_state:ok") {
                    return false;
                }
                match info_field(self.ip(i), "replication", "role").as_deref() {
                    Some("master") => {
                        masters += 1;
                        if info_field(self.ip(i), "replication", "connected_slaves").as_deref() != Some("1") {
                            return false;
                        }
                    }
                    Some("slave") => {
                        if info_field(self.ip(i), "replication", "master_link_status").as_deref() != Some("up") {
                            return false;
                        }
                    }
                    _ => return false,
                }
            }
            masters == 3 && self.views_agree()
        });
    }

    /// Every node's `CLUSTER NODES` names the same three masters and three
    /// replicas, none flagged `fail` or `fail?`.
    fn views_agree(&self) -> bool {
        let mut views = Vec::new();
        for i in 0..6 {
            let Some(nodes) = query::<String>(self.ip(i), &["CLUSTER", "NODES"]) else { return false };
            let mut masters = Vec::new();
            let mut replicas = 0;
            for line in nodes.lines() {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (Some(id), Some(flags)) = (fields.first(), fields.get(2)) else { return false };
                if flags.contains("fail") || flags.contains("handshake") || flags.contains("noaddr") {
                    return false;
                }
                if flags.contains("master") {
                    masters.push(id.to_string());
                } else if flags.contains("slave") {
                    replicas += 1;
                }
            }
            masters.sort();
            if masters.len() != 3 || replicas != 3 {
                return false;
            }
            views.push(masters);
        }
        views.windows(2).all(|pair| pair[0] == pair[1])
    }

    /// The master that owns `tenant`'s slot, and its replica.
    fn victim(&self, tenant: &str) -> (usize, usize) {
        let slot: i64 = must(self.ip(0), &["CLUSTER", "KEYSLOT", tenant]);
        let slots: Value = must(self.ip(0), &["CLUSTER", "SLOTS"]);
        let Value::Array(entries) = slots else { panic!("CLUSTER SLOTS: {slots:?}") };
        for entry in entries {
            let Value::Array(parts) = entry else { continue };
            let start: i64 = redis::from_redis_value(parts[0].clone()).expect("start");
            let end: i64 = redis::from_redis_value(parts[1].clone()).expect("end");
            if !(start..=end).contains(&slot) {
                continue;
            }
            let Value::Array(master) = parts[2].clone() else { panic!("master") };
            let ip: String = redis::from_redis_value(master[0].clone()).expect("ip");
            let master = self.index_of(&ip);
            let replica = (0..6)
                .find(|&i| {
                    i != master
                        && info_field(self.ip(i), "replication", "master_host").as_deref() == Some(self.ip(master))
                })
                .expect("the victim has a replica");
            return (master, replica);
        }
        panic!("no owner for slot {slot}");
    }

    /// `min-replicas-to-write` for `setting` on every node.
    fn configure(&self, setting: Setting) {
        let min = if setting == Setting::Durable { "1" } else { "0" };
        for i in 0..6 {
            let _: () = must(self.ip(i), &["CONFIG", "SET", "min-replicas-to-write", min, "min-replicas-max-lag", "3"]);
        }
    }

    /// Wait until `index` is a master in the eyes of the majority.
    fn wait_promoted(&self, index: usize, others: &[usize]) {
        wait_for("the replica took over its master's slots", SETTLE, || {
            info_field(self.ip(index), "replication", "role").as_deref() == Some("master")
                && others.iter().all(|&i| info_cluster(self.ip(i)).contains("cluster_state:ok"))
        });
    }

    /// Digests of every replica against its master, once offsets agree: mismatches.
    fn digest_mismatches(&self) -> usize {
        let mut mismatches = 0;
        for i in 0..6 {
            if info_field(self.ip(i), "replication", "role").as_deref() != Some("slave") {
                continue;
            }
            let Some(master_ip) = info_field(self.ip(i), "replication", "master_host") else { continue };
            let started = Instant::now();
            let same = loop {
                let master_offset = info_field(&master_ip, "replication", "master_repl_offset");
                let replica_offset = info_field(self.ip(i), "replication", "slave_repl_offset");
                if master_offset.is_some() && master_offset == replica_offset {
                    let a: Option<String> = query(&master_ip, &["DEBUG", "DIGEST"]);
                    let b: Option<String> = query(self.ip(i), &["DEBUG", "DIGEST"]);
                    if a.is_some() && a == b {
                        break true;
                    }
                }
                if started.elapsed() > Duration::from_secs(20) {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            if !same {
                mismatches += 1;
            }
        }
        mismatches
    }
}

fn info_cluster(ip: &str) -> String {
    query(ip, &["CLUSTER", "INFO"]).unwrap_or_default()
}

// ---------------------------------------------------------------- the record

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fire,
    Record,
    Send,
    /// A fire handed to a consumer (item: its region's project).
    FireDelivered,
    /// A message handed to a consumer (item: its id).
    MessageDelivered,
    FireAck,
    MessageAck,
}

#[derive(Clone, Debug)]
struct Op {
    client: &'static str,
    kind: Kind,
    item: String,
    outcome: Outcome,
    /// Stale ACK (the server no longer had it in flight).
    stale: bool,
    /// When it was sent, since the round started.
    at: Duration,
    /// When its reply (or error) came back.
    done: Duration,
}

#[derive(Default)]
struct Log {
    ops: Mutex<Vec<Op>>,
}

impl Log {
    fn push(&self, op: Op) {
        if let Ok(mut ops) = self.ops.lock() {
            ops.push(op);
        }
    }
}

// ---------------------------------------------------------------- the clients

/// The connection a setting uses.
#[derive(Clone)]
enum Conn {
    Plain(ClusterConnection),
    Durable(Durable<ClusterConnection>),
}

impl Conn {
    fn shortfalls(&self) -> u64 {
        match self {
            Self::Plain(_) => 0,
            Self::Durable(conn) => conn.shortfalls(),
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Plain(conn) => conn.req_packed_command(cmd),
            Self::Durable(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Plain(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Durable(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// A cluster connection from the calling thread's namespace, bounded in every wait.
async fn connect(urls: &[String], setting: Setting) -> Conn {
    let client = redis::cluster::ClusterClientBuilder::new(urls.to_vec())
        .connection_timeout(Duration::from_millis(800))
        .response_timeout(Duration::from_secs(2))
        .retries(3)
        .min_retry_wait(50)
        .max_retry_wait(400)
        .build()
        .expect("cluster client");
    let mut last = String::new();
    for _ in 0..20 {
        match client.get_async_connection().await {
            Ok(conn) => {
                return match setting {
                    Setting::Default => Conn::Plain(conn),
                    Setting::Durable => Conn::Durable(Durable::new(conn, 1, Duration::from_millis(500))),
                };
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no cluster connection: {last}");
}

/// ok / failed / unknown of a call's result, given the shortfall count before it.
fn outcome_of<T>(result: &Result<T, Error>, conn: &Conn, shortfalls_before: u64) -> Outcome {
    match result {
        Ok(_) if conn.shortfalls() > shortfalls_before => Outcome::Unknown,
        Ok(_) => Outcome::Ok,
        Err(Error::Server { .. }) => Outcome::Failed,
        Err(_) => Outcome::Unknown,
    }
}

/// A trigger that never fires: the counter region only counts.
fn no_trigger() -> DreamsTrigger {
    DreamsTrigger {
        memory_threshold: u32::MAX,
        edge_threshold: u32::MAX,
        min_interval_hours: 10_000,
        age_floor_days: 30_000,
    }
}

/// What one round's clients share.
#[derive(Clone)]
struct Round {
    tenant: String,
    agent: AgentId,
    setting: Setting,
    urls: Vec<String>,
    log: Arc<Log>,
    stop: Arc<AtomicBool>,
    started: Instant,
}

impl Round {
    fn since(&self) -> Duration {
        self.started.elapsed()
    }

    fn queue(&self, conn: Conn) -> RedisFireQueue<Conn> {
        RedisFireQueue::new(conn, QuietHours::none(), self.tenant.clone())
    }

    fn keep_going(&self, cycle: u64) -> bool {
        !self.stop.load(Ordering::Relaxed) && cycle < MAX_CYCLES && self.since() < MAX_RUN
    }

    /// One producer step: a fire, an increment, a message, each with its own id.
    async fn produce(&self, conn: &Conn, client: &'static str, id: &str) {
        let mut queue = self.queue(conn.clone());
        let before = conn.shortfalls();
        let at = self.since();
        let region = RegionKey::new(self.tenant.clone(), format!("fire-{id}"), MEMORY_TYPE);
        let result = queue.fire(&region, client).await;
        let mut outcome = outcome_of(&result, conn, before);
        if matches!(result, Ok(FireOutcome::Dropped)) {
            outcome = Outcome::Failed;
        }
        self.log.push(Op {
            client,
            kind: Kind::Fire,
            item: region.project.clone(),
            outcome,
            stale: false,
            at,
            done: self.since(),
        });

        // The same event id on every try: a retry after an unknown outcome counts nothing twice.
        let counter = RegionKey::new(self.tenant.clone(), "counter", MEMORY_TYPE);
        let event = format!("event-{id}");
        let at = self.since();
        let mut outcome = Outcome::Unknown;
        for tries in 0..3 {
            let before = conn.shortfalls();
            let fence = DeliveryFence { event_id: &event, generation: 1 };
            let result = queue.record_write_once(&counter, 1, 0, no_trigger(), client, fence).await;
            let this_try = outcome_of(&result, conn, before);
            // A refused retry does not undo an earlier try that may have
            // landed: after an unknown, only an ok settles the outcome.
            if this_try == Outcome::Failed && outcome == Outcome::Unknown && tries > 0 {
                break;
            }
            outcome = this_try;
            if outcome != Outcome::Unknown || self.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        self.log.push(Op { client, kind: Kind::Record, item: event, outcome, stale: false, at, done: self.since() });

        let channel = Channel::new(conn.clone(), self.tenant.clone());
        let message = Message::new(AgentId::new(), self.agent, MessageType::Task { description: id.to_string() });
        let before = conn.shortfalls();
        let at = self.since();
        let result = channel.send(&message).await;
        let outcome = outcome_of(&result, conn, before);
        self.log.push(Op {
            client,
            kind: Kind::Send,
            item: message.id.to_string(),
            outcome,
            stale: false,
            at,
            done: self.since(),
        });
    }

    /// One consumer step: drain and acknowledge a fire, receive and acknowledge a message.
    async fn consume(&self, conn: &Conn, client: &'static str, wait: Duration) -> bool {
        let mut got = false;
        let mut queue = self.queue(conn.clone());
        let at = self.since();
        if let Ok(DrainResult::Ready(fire)) = queue.drain_leased(wait, LEASE).await {
            got = true;
            let item = fire.region.project.clone();
            self.log.push(Op {
                client,
                kind: Kind::FireDelivered,
                item: item.clone(),
                outcome: Outcome::Ok,
                stale: false,
                at,
                done: self.since(),
            });
            let before = conn.shortfalls();
            let at = self.since();
            let result = queue.acknowledge(&fire, true, no_trigger(), client).await;
            let stale = matches!(result, Ok(AcknowledgeOutcome::Stale));
            let outcome = outcome_of(&result, conn, before);
            self.log.push(Op { client, kind: Kind::FireAck, item, outcome, stale, at, done: self.since() });
        }
        let channel = Channel::new(conn.clone(), self.tenant.clone());
        let at = self.since();
        if let Ok(deliveries) = channel.receive_leased(self.agent, 1, Some(wait), LEASE).await {
            for delivery in deliveries {
                let Some(id) = delivery.ack_id() else { continue };
                got = true;
                self.log.push(Op {
                    client,
                    kind: Kind::MessageDelivered,
                    item: id.clone(),
                    outcome: Outcome::Ok,
                    stale: false,
                    at,
                    done: self.since(),
                });
                let before = conn.shortfalls();
                let at = self.since();
                let result = channel.ack_message(self.agent, &id).await;
                let stale = matches!(result, Ok(false));
                let outcome = outcome_of(&result, conn, before);
                self.log.push(Op { client, kind: Kind::MessageAck, item: id, outcome, stale, at, done: self.since() });
            }
        }
        got
    }
}

/// Sets the clients' stop flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
}

/// A producer and a consumer in `host`, until the round stops.
fn start_clients(
    host: &Host,
    round: &Round,
    producer: &'static str,
    consumer: &'static str,
) -> Vec<std::thread::JoinHandle<()>> {
    let r = round.clone();
    let p = in_host(host, move || {
        runtime().block_on(async {
            let conn = connect(&r.urls, r.setting).await;
            let mut cycle = 0;
            while r.keep_going(cycle) {
                r.produce(&conn, producer, &format!("{producer}-{cycle}")).await;
                cycle += 1;
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
        })
    });
    let r = round.clone();
    let c = in_host(host, move || {
        runtime().block_on(async {
            let conn = connect(&r.urls, r.setting).await;
            let mut cycle = 0;
            while r.keep_going(cycle) {
                if !r.consume(&conn, consumer, Duration::from_millis(200)).await {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                cycle += 1;
            }
        })
    });
    vec![p, c]
}

/// A client in `host` that produces one step each time it is told to, and says when done.
fn start_probe(host: &Host, round: &Round) -> (mpsc::Sender<String>, mpsc::Receiver<()>, std::thread::JoinHandle<()>) {
    let (go, orders) = mpsc::channel::<String>();
    let (done, finished) = mpsc::channel::<()>();
    let r = round.clone();
    let handle = in_host(host, move || {
        runtime().block_on(async {
            let conn = connect(&r.urls, r.setting).await;
            while let Ok(id) = orders.recv() {
                r.produce(&conn, "probe", &id).await;
                if done.send(()).is_err() {
                    break;
                }
            }
        })
    });
    (go, finished, handle)
}

// ---------------------------------------------------------------- one round

/// What the checker found for one round.
#[derive(Clone, Debug, Default)]
struct Findings {
    fires_ok: usize,
    fires_unknown: usize,
    fires_lost: usize,
    increments_ok: usize,
    increments_unknown: usize,
    increments_lost: usize,
    /// Counted by the server beyond every ok and unknown increment.
    increments_extra: usize,
    messages_ok: usize,
    messages_unknown: usize,
    messages_lost: usize,
    /// Re-deliveries after the item's lease ran out (or the final recovery).
    redelivered_after_lease: usize,
    /// Re-deliveries within a failover window, before the lease ran out.
    redelivered_in_failover: usize,
    /// Re-deliveries neither explains.
    redelivered_unexplained: usize,
    stale_acks: usize,
    digest_mismatches: usize,
    /// Rounds in which the replica took over.
    failovers: usize,
    probe_outcomes: Vec<Outcome>,
}

impl Findings {
    fn add(&mut self, o: &Findings) {
        self.fires_ok += o.fires_ok;
        self.fires_unknown += o.fires_unknown;
        self.fires_lost += o.fires_lost;
        self.increments_ok += o.increments_ok;
        self.increments_unknown += o.increments_unknown;
        self.increments_lost += o.increments_lost;
        self.increments_extra += o.increments_extra;
        self.messages_ok += o.messages_ok;
        self.messages_unknown += o.messages_unknown;
        self.messages_lost += o.messages_lost;
        self.redelivered_after_lease += o.redelivered_after_lease;
        self.redelivered_in_failover += o.redelivered_in_failover;
        self.redelivered_unexplained += o.redelivered_unexplained;
        self.stale_acks += o.stale_acks;
        self.digest_mismatches += o.digest_mismatches;
        self.failovers += o.failovers;
        self.probe_outcomes.extend(o.probe_outcomes.iter().copied());
    }

    fn lost(&self) -> usize {
        self.fires_lost + self.messages_lost + self.increments_lost
    }
}

/// Run `fault` once on `tenant`'s master under `setting`; heal; check.
fn run_round(hosts: &mut Hosts, setting: Setting, fault: Fault, tenant: &str) -> Findings {
    hosts.wait_settled();
    hosts.configure(setting);
    let (victim, replica) = hosts.victim(tenant);
    let urls: Vec<String> = (0..6).map(|i| format!("redis://{}:{PORT}/", hosts.ip(i))).collect();
    let round = Round {
        tenant: tenant.to_string(),
        agent: AgentId::new(),
        setting,
        urls,
        log: Arc::default(),
        stop: Arc::default(),
        started: Instant::now(),
    };
    // Stops the clients however this function ends (a failed wait panics).
    let _stop = StopOnDrop(round.stop.clone());
    let mut threads = start_clients(&hosts.side_a, &round, "producer-a", "consumer-a");
    threads.extend(start_clients(&hosts.side_b, &round, "producer-b", "consumer-b"));
    let probe_host = if fault == Fault::MasterPartition { hosts.side_b.clone() } else { hosts.side_a.clone() };
    let (probe, probed, probe_thread) = start_probe(&probe_host, &round);
    // Warm up until both sides have had their writes acknowledged.
    wait_for("both sides' writes acknowledged before the fault", SETTLE, || {
        let ops = round.log.ops.lock().map(|o| o.clone()).unwrap_or_default();
        ["producer-a", "producer-b"]
            .iter()
            .all(|c| ops.iter().any(|o| o.client == *c && o.kind == Kind::Send && o.outcome == Outcome::Ok))
    });
    std::thread::sleep(WARMUP);
    eprintln!("[{:.1?}] {setting:?} {fault:?}: warmed up, fault begins", round.since());

    let others: Vec<usize> = (0..6).filter(|&i| i != victim && i != replica).collect();
    let fault_started = round.since();
    let node_timeout = Duration::from_millis(NODE_TIMEOUT_MS);
    let mut failed_over = false;
    // Force the interleaving: one probe step right after the fault begins,
    // before anyone can notice it (for a cut master: into the window where
    // it still accepts writes its replica will never see).
    let force = |wait: bool| {
        probe.send("forced".into()).expect("probe alive");
        if wait {
            probed.recv_timeout(SETTLE).expect("the probe finished its step");
        }
    };
    match fault {
        Fault::MasterPartition => {
            let minority = [hosts.nodes[victim].host.clone(), hosts.side_b.clone()];
            let mut majority: Vec<Host> =
                (0..6).filter(|&i| i != victim).map(|i| hosts.nodes[i].host.clone()).collect();
            majority.push(hosts.side_a.clone());
            hosts.net.cut(&minority.iter().collect::<Vec<_>>(), &majority.iter().collect::<Vec<_>>());
            force(true);
            eprintln!("[{:.1?}] forced step done", round.since());
            hosts.wait_promoted(replica, &others);
            eprintln!("[{:.1?}] promoted", round.since());
            failed_over = true;
            // The old master notices it is alone (cluster state fail) before the heal.
            wait_for("the cut-off master reports cluster_state:fail", SETTLE, || {
                info_cluster(hosts.ip(victim)).contains("cluster_state:fail")
            });
            hosts.net.heal();
        }
        Fault::ReplicaPartition => {
            let alone = [hosts.nodes[replica].host.clone()];
            let rest: Vec<Host> = (0..6)
                .filter(|&i| i != replica)
                .map(|i| hosts.nodes[i].host.clone())
                .chain([hosts.side_a.clone(), hosts.side_b.clone()])
                .collect();
            hosts.net.cut(&alone.iter().collect::<Vec<_>>(), &rest.iter().collect::<Vec<_>>());
            force(true);
            let replica_id: String = must(hosts.ip(replica), &["CLUSTER", "MYID"]);
            wait_for("the majority marks the replica failed", SETTLE, || {
                let nodes: String = query(hosts.ip(victim), &["CLUSTER", "NODES"]).unwrap_or_default();
                nodes.lines().any(|l| l.starts_with(&replica_id) && l.contains("fail") && !l.contains("fail?"))
            });
            hosts.net.heal();
        }
        Fault::OneWayLink => {
            let from = hosts.nodes[victim].host.clone();
            for i in (0..6).filter(|&i| i != victim) {
                let to = hosts.nodes[i].host.clone();
                hosts.net.cut_one_way(&from, &to);
            }
            force(true);
            // The majority stops hearing the victim and promotes its replica.
            hosts.wait_promoted(replica, &others);
            failed_over = true;
            hosts.net.heal();
        }
        Fault::SlowLink => {
            let host = hosts.nodes[victim].host.clone();
            hosts.net.degrade(&host, "tbf rate 64kbit burst 2000 limit 4000");
            force(true);
            // The fault's length is the fault: twice the node timeout.
            std::thread::sleep(node_timeout * 2);
            hosts.net.heal();
        }
        Fault::MasterPaused => {
            netns::signal(hosts.nodes[victim].pid, libc::SIGSTOP);
            // Sent to the paused master: it sits in its socket until SIGCONT.
            force(false);
            hosts.wait_promoted(replica, &others);
            failed_over = true;
            netns::signal(hosts.nodes[victim].pid, libc::SIGCONT);
            probed.recv_timeout(SETTLE).expect("the probe finished its step");
        }
        Fault::MasterKilled => {
            let pid = hosts.nodes[victim].pid;
            hosts.net.kill(pid);
            force(true);
            hosts.wait_promoted(replica, &others);
            failed_over = true;
            let host = hosts.nodes[victim].host.clone();
            let args = server_args(&hosts.net, &host);
            hosts.nodes[victim].pid =
                hosts.net.spawn_in(&host, &common::server_bin(), &args, &format!("{}.restart.log", host.name));
        }
    }
    let healed = round.since();
    eprintln!("[{:.1?}] healed", round.since());
    hosts.wait_settled();
    eprintln!("[{:.1?}] settled", round.since());
    if fault == Fault::SlowLink {
        // Whether the slow link cost the victim its slots.
        failed_over = info_field(hosts.ip(victim), "replication", "role").as_deref() == Some("slave");
    }
    // Let both sides run on the healed cluster a moment, then stop them.
    std::thread::sleep(WARMUP);
    round.stop.store(true, Ordering::Relaxed);
    drop(probe);
    for thread in threads {
        thread.join().expect("client thread");
    }
    probe_thread.join().expect("probe thread");
    let final_at = round.since();
    eprintln!("[{:.1?}] clients stopped", round.since());
    final_drain(&round);
    eprintln!("[{:.1?}] drained", round.since());
    let digest_mismatches = hosts.digest_mismatches();
    eprintln!("[{:.1?}] digests compared", round.since());
    let counted = counter_value(&round);
    let ops = round.log.ops.lock().map(|o| o.clone()).unwrap_or_default();
    write_record(tenant, &ops, fault_started, healed, counted);
    let mut findings = check(&ops, counted, fault_started, healed, final_at, failed_over);
    findings.digest_mismatches = digest_mismatches;
    findings
}

/// After the clients stop: hand back everything in flight and drain it all.
fn final_drain(round: &Round) {
    let r = round.clone();
    runtime().block_on(async move {
        let conn = connect(&r.urls, Setting::Default).await;
        let mut queue = r.queue(conn.clone());
        let channel = Channel::new(conn.clone(), r.tenant.clone());
        let started = Instant::now();
        loop {
            assert!(started.elapsed() < SETTLE, "the final drain did not empty the queue");
            let _ = queue.recover_inflight().await;
            let _ = channel.requeue_pending(r.agent).await;
            let mut got = false;
            for _ in 0..MAX_CYCLES {
                if !r.consume(&conn, "final", Duration::from_millis(50)).await {
                    break;
                }
                got = true;
            }
            let lengths = queue.lengths().await;
            let town = channel.lengths(r.agent).await;
            if let (Ok(l), Ok(t)) = (lengths, town)
                && !got
                && l.total() == 0
                && t.inbox + t.urgent + t.pending == 0
            {
                break;
            }
        }
    });
}

/// Every operation of a round, one a line, in `target/partition/<tenant>.tsv`
/// (kept for reading after a run; rewritten by the next run of the tenant).
fn write_record(tenant: &str, ops: &[Op], fault_started: Duration, healed: Duration, counted: u64) {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/partition");
    let _ = std::fs::create_dir_all(&dir);
    let mut out = format!(
        "# fault at {fault_started:?}, healed at {healed:?}, counter {counted}\nat_ms\tclient\tkind\titem\toutcome\tstale\n"
    );
    for op in ops {
        let _ = writeln!(
            out,
            "{}\t{}\t{:?}\t{}\t{:?}\t{}",
            op.at.as_millis(),
            op.client,
            op.kind,
            op.item,
            op.outcome,
            op.stale
        );
    }
    let _ = std::fs::write(dir.join(format!("{tenant}.tsv")), out);
}

/// The counter region's memories as the server holds them now.
fn counter_value(round: &Round) -> u64 {
    let r = round.clone();
    runtime().block_on(async move {
        let conn = connect(&r.urls, Setting::Default).await;
        let mut queue = r.queue(conn);
        let counters =
            queue.counters(&RegionKey::new(r.tenant.clone(), "counter", MEMORY_TYPE)).await.expect("counters");
        u64::try_from(counters.memories.unwrap_or(0)).unwrap_or(0)
    })
}

/// The checker: what was acknowledged and is gone, what came twice and why.
fn check(
    ops: &[Op],
    counted: u64,
    fault_started: Duration,
    healed: Duration,
    final_at: Duration,
    failed_over: bool,
) -> Findings {
    let mut f = Findings { failovers: usize::from(failed_over), ..Findings::default() };
    // Each delivery as (sent, replied): a lease that ran out between two
    // deliveries shows as at least LEASE from the first DRAIN/RECV's send
    // to the second's reply.
    let mut delivered: HashMap<(bool, &str), Vec<(Duration, Duration)>> = HashMap::new();
    for op in ops {
        match op.kind {
            Kind::FireDelivered => delivered.entry((true, op.item.as_str())).or_default().push((op.at, op.done)),
            Kind::MessageDelivered => delivered.entry((false, op.item.as_str())).or_default().push((op.at, op.done)),
            Kind::FireAck | Kind::MessageAck if op.stale => f.stale_acks += 1,
            _ => {}
        }
        if op.client == "probe" && matches!(op.kind, Kind::Fire | Kind::Record | Kind::Send) {
            f.probe_outcomes.push(op.outcome);
        }
    }
    for op in ops {
        let (ok, unknown, lost, fire) = match op.kind {
            Kind::Fire => (&mut f.fires_ok, &mut f.fires_unknown, &mut f.fires_lost, true),
            Kind::Send => (&mut f.messages_ok, &mut f.messages_unknown, &mut f.messages_lost, false),
            Kind::Record => {
                match op.outcome {
                    Outcome::Ok => f.increments_ok += 1,
                    Outcome::Unknown => f.increments_unknown += 1,
                    Outcome::Failed => {}
                }
                continue;
            }
            _ => continue,
        };
        match op.outcome {
            Outcome::Ok => {
                *ok += 1;
                if !delivered.contains_key(&(fire, op.item.as_str())) {
                    *lost += 1;
                }
            }
            Outcome::Unknown => *unknown += 1,
            Outcome::Failed => {}
        }
    }
    let counted = usize::try_from(counted).unwrap_or(usize::MAX);
    f.increments_lost = f.increments_ok.saturating_sub(counted);
    f.increments_extra = counted.saturating_sub(f.increments_ok + f.increments_unknown);
    // A failover window: from the fault until the cluster settled again.
    let in_window = |t: Duration| t >= fault_started && t <= healed + WARMUP;
    for times in delivered.values_mut() {
        times.sort();
        for pair in times.windows(2) {
            let ((first, _), (again, again_done)) = (pair[0], pair[1]);
            if again >= final_at || again_done.saturating_sub(first) >= LEASE {
                f.redelivered_after_lease += 1;
            } else if failed_over && (in_window(first) || in_window(again)) {
                f.redelivered_in_failover += 1;
            } else {
                f.redelivered_unexplained += 1;
            }
        }
    }
    f
}

/// The durable setting's promise: nothing acknowledged lost, every re-delivery explained, replicas equal.
fn assert_durable(fault: Fault, f: &Findings) {
    assert_eq!(f.lost(), 0, "{fault:?}: acknowledged writes lost in durable mode: {f:#?}");
    assert_eq!(f.increments_extra, 0, "{fault:?}: the counter counted more than was sent: {f:#?}");
    assert_eq!(
        f.redelivered_unexplained, 0,
        "{fault:?}: re-delivery with neither a lease expiry nor a failover: {f:#?}"
    );
    assert_eq!(f.digest_mismatches, 0, "{fault:?}: a replica's digest differs from its master's: {f:#?}");
    assert!(
        f.fires_ok > 0 && f.messages_ok > 0 && f.increments_ok > 0,
        "{fault:?}: the workload made no progress: {f:#?}"
    );
}

/// Set up hosts and a cluster in the admin namespace and run `body` there.
fn with_cluster<T: Send + 'static>(body: impl FnOnce(&mut Hosts) -> T + Send + 'static) -> Option<T> {
    if let Err(why) = netns::available() {
        if unsafe_is_root() {
            panic!("partition tests need iproute2 (ip, tc) as root: {why}");
        }
        eprintln!("partition tests skipped: {why} (they need root for network namespaces)");
        return None;
    }
    let mut hosts = make_hosts();
    let admin = hosts.admin.clone();
    let result = in_host(&admin, move || {
        hosts.form_cluster();
        let out = body(&mut hosts);
        drop(hosts);
        out
    })
    .join();
    match result {
        Ok(out) => Some(out),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

fn unsafe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

// ---------------------------------------------------------------- the tests

/// CI: in the durable setting, a master cut off with a client on its side
/// (a write forced into the window between the cut and the failover), then
/// a master paused with a write waiting in its socket. Fails every time
/// when Durable skips its WAIT (`--features plant-skip-wait`): the forced
/// write is acknowledged by the cut-off master and gone after the heal.
#[test]
fn partition_subset() {
    let rounds = with_cluster(|hosts| {
        [Fault::MasterPartition, Fault::MasterPaused].map(|fault| {
            (fault, run_round(hosts, Setting::Durable, fault, &format!("subset-{fault:?}").to_lowercase()))
        })
    });
    let Some(rounds) = rounds else { return };
    for (fault, f) in &rounds {
        eprintln!("partition subset (durable, {fault:?}): {f:?}");
        assert_eq!(f.failovers, 1, "{fault:?}: the victim's replica took over");
        assert!(!f.probe_outcomes.is_empty(), "{fault:?}: the forced write ran");
        assert_durable(*fault, f);
    }
}

/// `make partition`: every fault under both settings, `PARTITION_ROUNDS` rounds each.
#[test]
#[ignore = "the full partition run: make partition"]
fn partition_full() {
    let rounds: usize = std::env::var("PARTITION_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(2);
    let table = with_cluster(move |hosts| {
        let mut table: BTreeMap<(Fault, Setting), Findings> = BTreeMap::new();
        for round in 0..rounds {
            for setting in [Setting::Default, Setting::Durable] {
                for fault in ALL_FAULTS {
                    let tenant = format!("t{round}-{setting:?}-{fault:?}").to_lowercase();
                    let started = Instant::now();
                    let f = run_round(hosts, setting, fault, &tenant);
                    eprintln!("round {round} {setting:?} {fault:?} ({:.0?}): {f:?}", started.elapsed());
                    table.entry((fault, setting)).or_default().add(&f);
                }
            }
        }
        table
    });
    let Some(table) = table else { return };
    let report = render(&table, rounds);
    eprintln!("{report}");
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/partition-report.md");
    let _ = std::fs::write(&path, &report);
    for ((fault, setting), f) in &table {
        if *setting == Setting::Durable {
            assert_durable(*fault, f);
        }
    }
}

fn render(table: &BTreeMap<(Fault, Setting), Findings>, rounds: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Server: {} · {rounds} round(s) per row · cluster-node-timeout {NODE_TIMEOUT_MS} ms · lease {LEASE:?}\n",
        common::server_bin()
    );
    let _ = writeln!(
        out,
        "| fault | setting | fires ok / unknown / **lost** | increments ok / unknown / **lost** / extra | messages ok / unknown / **lost** | re-delivered after lease / in failover / **unexplained** | stale ACKs | digest mismatches | failovers |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for ((fault, setting), f) in table {
        let _ = writeln!(
            out,
            "| {fault:?} | {setting:?} | {} / {} / **{}** | {} / {} / **{}** / {} | {} / {} / **{}** | {} / {} / **{}** | {} | {} | {} |",
            f.fires_ok,
            f.fires_unknown,
            f.fires_lost,
            f.increments_ok,
            f.increments_unknown,
            f.increments_lost,
            f.increments_extra,
            f.messages_ok,
            f.messages_unknown,
            f.messages_lost,
            f.redelivered_after_lease,
            f.redelivered_in_failover,
            f.redelivered_unexplained,
            f.stale_acks,
            f.digest_mismatches,
            f.failovers,
        );
    }
    out
}
