//! Redis Cluster operations under load: the slots of live tenants move
//! (by the manual SETSLOT/MIGRATE procedure, by `redis-cli --cluster
//! reshard` and by `rebalance`) while producers FIRE/RECORD/TOWN.SEND and
//! slow consumers (100–200 ms per item) DRAIN/ACK and TOWN.RECV(/ACK), so
//! items are in flight across every move; a coordinated `CLUSTER
//! FAILOVER` of the tenants' master under the same load; and a forced
//! failover (`CLUSTER FAILOVER FORCE` while the master is stopped) with a
//! lease running out during the outage.
//!
//! Each asserts: no `BUSYKEY` (every MIGRATE and every redis-cli run
//! succeeds, without `--cluster-replace`), every fire queued and every
//! message sent delivered exactly once, every ACK applied (no `stale`), no
//! tenant key on a node that does not own its slot, and no consumer call
//! that overran its deadline. The interleaving is forced: a holder drains a
//! fire and reliably receives a message before the move starts and
//! acknowledges both only after it ended, and the manual procedure pauses
//! between `MIGRATING` and the first `MIGRATE` while the load runs.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Cluster, DEADLINE, cli_bin};
use dreamtown_client::Durable;
use dreamtown_client::dreams::{
    AcknowledgeOutcome, DrainResult, DreamsTrigger, FireOutcome, QuietHours, RedisFireQueue,
};
use dreamtown_client::keyspace::dreams::QueueKeys;
use redis::Value;
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;

/// How long a consumer blocks in one call.
const BLOCK_SECS: u64 = 1;
/// The longest a consumer call may take: its block, a redirect from the
/// cluster cron (~1 s after the move), retries while the slot moves, and a
/// loaded machine's slack.
const CALL_DEADLINE: Duration = Duration::from_secs(12);

/// CRC16/XMODEM, Redis Cluster's key hash.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for byte in bytes {
        crc ^= u16::from(*byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The slot of a tenant (its name is the hash tag of all its keys).
fn slot_of(tenant: &str) -> u16 {
    crc16(tenant.as_bytes()) % 16_384
}

/// `count` tenant names whose slots are all different and in `slots`.
fn tenants_in(slots: std::ops::Range<u16>, count: usize, label: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut used = BTreeSet::new();
    for n in 0.. {
        let name = format!("{label}-{n}");
        let slot = slot_of(&name);
        if slots.contains(&slot) && used.insert(slot) {
            found.push(name);
            if found.len() == count {
                break;
            }
        }
    }
    found
}

/// A cluster connection that retries quickly and long enough to outlast a
/// slot move (TRYAGAIN while it runs), with no response timeout (blocking calls).
async fn connect(cluster: &Cluster) -> ClusterConnection {
    redis::cluster::ClusterClient::builder(cluster.urls())
        .retries(60)
        .min_retry_wait(10)
        .max_retry_wait(250)
        .build()
        .expect("cluster client")
        .get_async_connection()
        .await
        .expect("cluster connection")
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::SimpleString(s) => Some(s.clone()),
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::Okay => Some("OK".into()),
        _ => None,
    }
}

/// What the load saw, per tenant.
#[derive(Default)]
struct Ledger {
    /// Fires the server said it queued (FIRE and RECORD replies `queued`).
    queued: BTreeMap<String, u64>,
    /// Fire ids handed out by DRAIN.
    drained: BTreeMap<String, Vec<String>>,
    /// ACK outcomes that were not `acknowledged`.
    bad_acks: Vec<String>,
    /// Message ids sent.
    sent: BTreeMap<String, Vec<String>>,
    /// Message ids received.
    received: BTreeMap<String, Vec<String>>,
    /// Anything unexpected: error replies, drops, late calls.
    problems: Vec<String>,
    /// Holder ACKs that went through (fire and message).
    held_acks: u64,
    /// Raw blocked calls a failover released with `UNBLOCKED` (retryable; resent).
    unblocked: u64,
}

type Shared = Arc<Mutex<Ledger>>;

fn note(ledger: &Shared, problem: String) {
    ledger.lock().expect("ledger").problems.push(problem);
}

async fn call<C: ConnectionLike + Send>(conn: &mut C, args: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query_async(conn).await
}

/// FIRE and RECORD (a low trigger, so it queues when its region has no
/// pending fire) and TOWN.SEND to the plain and the reliable agent.
async fn producer(cluster: Arc<Cluster>, tenant: String, stop: Arc<AtomicBool>, ledger: Shared, pace: Duration) {
    let mut conn = connect(&cluster).await;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let project = format!("p{}", n % 3);
        let dreams = if n.is_multiple_of(2) {
            call(&mut conn, &["DREAMS.FIRE", &tenant, &project, "3"]).await
        } else {
            call(&mut conn, &["DREAMS.RECORD", &tenant, &project, "4", "1", "0", "TRIGGER", "1", "0", "0", "0"]).await
        };
        match dreams {
            Ok(value) => {
                let outcome = match &value {
                    Value::Array(items) => items.first().and_then(text),
                    other => text(other),
                };
                match outcome.as_deref() {
                    Some("queued") => *ledger.lock().expect("ledger").queued.entry(tenant.clone()).or_default() += 1,
                    Some("accumulated") => {}
                    _ => note(&ledger, format!("{tenant}: producer got {value:?}")),
                }
            }
            Err(error) => note(&ledger, format!("{tenant}: producer dreams error {error}")),
        }
        for agent in ["plain", "reliable"] {
            let id = format!("{tenant}-{agent}-{n}");
            let message = format!(r#"{{"id":"{id}","to":"{agent}","body":"n{n}"}}"#);
            match call(&mut conn, &["TOWN.SEND", &tenant, &message]).await {
                Ok(Value::Int(_)) => ledger.lock().expect("ledger").sent.entry(tenant.clone()).or_default().push(id),
                other => note(&ledger, format!("{tenant}: TOWN.SEND got {other:?}")),
            }
        }
        tokio::time::sleep(pace).await;
    }
}

fn fire_id(payload: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(payload).ok()?;
    json.get("fire_id")?.as_str().map(str::to_owned)
}

fn message_id(payload: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(payload).ok()?;
    json.get("id")?.as_str().map(str::to_owned)
}

/// Drain, work 150 ms, ACK SUCCESS; until stopped and nothing is left.
async fn drainer(cluster: Arc<Cluster>, org: String, done: Arc<AtomicBool>, ledger: Shared) {
    let mut conn = connect(&cluster).await;
    let block = BLOCK_SECS.to_string();
    loop {
        let started = Instant::now();
        let reply = call(&mut conn, &["DREAMS.DRAIN", &org, &block, "NOQUIET"]).await;
        if started.elapsed() > CALL_DEADLINE {
            note(&ledger, format!("{org}: DRAIN took {:?}", started.elapsed()));
        }
        match reply {
            Ok(Value::BulkString(payload)) => {
                let Some(id) = fire_id(&payload) else {
                    note(&ledger, format!("{org}: drained a payload without fire id"));
                    continue;
                };
                ledger.lock().expect("ledger").drained.entry(org.clone()).or_default().push(id);
                tokio::time::sleep(Duration::from_millis(150)).await;
                let payload = String::from_utf8_lossy(&payload).into_owned();
                match call(&mut conn, &["DREAMS.ACK", &org, &payload, "SUCCESS"]).await {
                    Ok(Value::Array(items)) if items.first().and_then(text).as_deref() == Some("acknowledged") => {}
                    other => ledger.lock().expect("ledger").bad_acks.push(format!("{org}: ACK got {other:?}")),
                }
            }
            Ok(Value::Nil) if done.load(Ordering::Relaxed) => return,
            Ok(Value::Nil) => {}
            Err(error) if error.code() == Some("UNBLOCKED") => ledger.lock().expect("ledger").unblocked += 1,
            other => note(&ledger, format!("{org}: DRAIN got {other:?}")),
        }
    }
}

/// [`drainer`] through the client crate's queue (which resends a drain a
/// failover unblocked).
async fn crate_drainer(cluster: Arc<Cluster>, org: String, done: Arc<AtomicBool>, ledger: Shared) {
    let mut queue = RedisFireQueue::new(connect(&cluster).await, QuietHours::none(), org.clone());
    loop {
        let started = Instant::now();
        let drained = queue.drain(Duration::from_secs(BLOCK_SECS)).await;
        if started.elapsed() > CALL_DEADLINE {
            note(&ledger, format!("{org}: crate drain took {:?}", started.elapsed()));
        }
        match drained {
            Ok(DrainResult::Ready(fire)) => {
                let id = fire.fire_id.clone().unwrap_or_default();
                ledger.lock().expect("ledger").drained.entry(org.clone()).or_default().push(id);
                tokio::time::sleep(Duration::from_millis(150)).await;
                match queue.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await {
                    Ok(AcknowledgeOutcome::Acknowledged(_)) => {}
                    other => ledger.lock().expect("ledger").bad_acks.push(format!("{org}: crate ACK got {other:?}")),
                }
            }
            Ok(_) if done.load(Ordering::Relaxed) => return,
            Ok(_) => {}
            Err(error) => note(&ledger, format!("{org}: crate drain error {error}")),
        }
    }
}

/// Receive one message at a time, work 100 ms (150 ms and ACK when reliable).
async fn receiver(cluster: Arc<Cluster>, town: String, agent: &'static str, done: Arc<AtomicBool>, ledger: Shared) {
    let mut conn = connect(&cluster).await;
    let block = BLOCK_SECS.to_string();
    let reliable = agent == "reliable";
    loop {
        let mut args = vec!["TOWN.RECV", &town, agent, "BLOCK", &block];
        if reliable {
            args.push("RELIABLE");
        }
        let started = Instant::now();
        let reply = call(&mut conn, &args).await;
        if started.elapsed() > CALL_DEADLINE {
            note(&ledger, format!("{town}: RECV took {:?}", started.elapsed()));
        }
        match reply {
            Ok(Value::Array(messages)) if !messages.is_empty() => {
                for message in messages {
                    let Value::BulkString(bytes) = message else { continue };
                    let Some(id) = message_id(&bytes) else { continue };
                    ledger.lock().expect("ledger").received.entry(town.clone()).or_default().push(id.clone());
                    tokio::time::sleep(Duration::from_millis(if reliable { 150 } else { 100 })).await;
                    if reliable {
                        match call(&mut conn, &["TOWN.ACK", &town, agent, &id]).await {
                            Ok(Value::Int(1)) => {}
                            other => ledger
                                .lock()
                                .expect("ledger")
                                .bad_acks
                                .push(format!("{town}: TOWN.ACK {id} got {other:?}")),
                        }
                    }
                }
            }
            Ok(Value::Nil) | Ok(Value::Array(_)) if done.load(Ordering::Relaxed) => return,
            Ok(Value::Nil) | Ok(Value::Array(_)) => {}
            Err(error) if error.code() == Some("UNBLOCKED") => ledger.lock().expect("ledger").unblocked += 1,
            other => note(&ledger, format!("{town}: RECV got {other:?}")),
        }
    }
}

/// Before a move: take one fire and one reliable message of `tenant` and
/// hold them; `ack` acknowledges both (call it after the move).
struct Held {
    tenant: String,
    fire: Option<String>,
    message: Option<String>,
}

async fn hold(cluster: &Cluster, tenant: &str, ledger: &Shared) -> Held {
    let mut conn = connect(cluster).await;
    let mut held = Held { tenant: tenant.to_owned(), fire: None, message: None };
    // A message for the holder's own agent, so no receiver competes.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!("{tenant}-holder-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let message = format!(r#"{{"id":"{id}","to":"holder"}}"#);
    call(&mut conn, &["TOWN.SEND", tenant, &message]).await.expect("holder send");
    ledger.lock().expect("ledger").sent.entry(tenant.to_owned()).or_default().push(id);
    let started = Instant::now();
    while held.fire.is_none() && started.elapsed() < DEADLINE {
        if let Ok(Value::BulkString(payload)) = call(&mut conn, &["DREAMS.DRAIN", tenant, "1", "NOQUIET"]).await {
            let id = fire_id(&payload).expect("fire id");
            ledger.lock().expect("ledger").drained.entry(tenant.to_owned()).or_default().push(id);
            held.fire = Some(String::from_utf8_lossy(&payload).into_owned());
        }
    }
    if let Ok(Value::Array(messages)) =
        call(&mut conn, &["TOWN.RECV", tenant, "holder", "BLOCK", "5", "RELIABLE"]).await
        && let Some(Value::BulkString(bytes)) = messages.first()
    {
        let id = message_id(bytes).expect("message id");
        ledger.lock().expect("ledger").received.entry(tenant.to_owned()).or_default().push(id.clone());
        held.message = Some(id);
    }
    assert!(
        held.fire.is_some() && held.message.is_some(),
        "{tenant}: the holder got a fire and a message before the move"
    );
    held
}

async fn release(cluster: &Cluster, held: Held, ledger: &Shared) {
    let mut conn = connect(cluster).await;
    let tenant = held.tenant;
    let fire = held.fire.expect("held fire");
    let ack = call(&mut conn, &["DREAMS.ACK", &tenant, &fire, "SUCCESS"]).await;
    let outcome = match &ack {
        Ok(Value::Array(items)) => items.first().and_then(text),
        _ => None,
    };
    assert_eq!(
        outcome.as_deref(),
        Some("acknowledged"),
        "{tenant}: ACK after the move of a fire drained before it: {ack:?}"
    );
    let message = held.message.expect("held message");
    let acked = call(&mut conn, &["TOWN.ACK", &tenant, "holder", &message]).await;
    assert!(
        matches!(acked, Ok(Value::Int(1))),
        "{tenant}: TOWN.ACK after the move of a message received before it: {acked:?}"
    );
    ledger.lock().expect("ledger").held_acks += 2;
}

/// Give `tenant` `regions` more regions (a counters hash each, counting
/// toward no fire), so moving its slot takes many MIGRATE batches and the
/// load has time to reach the importing node while redis-cli moves it.
async fn add_regions(cluster: &Cluster, tenant: &str, regions: usize) {
    let mut conn = connect(cluster).await;
    let mut pipe = redis::pipe();
    for i in 0..regions {
        pipe.cmd("DREAMS.RECORD").arg(tenant).arg(format!("idle{i}")).arg(3).arg(1).arg(0);
    }
    let _: Vec<Value> = pipe.query_async(&mut conn).await.expect("idle regions");
}

/// The load over `tenants`, running until [`Load::finish`].
struct Load {
    cluster: Arc<Cluster>,
    tenants: Vec<String>,
    ledger: Shared,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    producers: Vec<tokio::task::JoinHandle<()>>,
    consumers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(cluster: Arc<Cluster>, tenants: &[String]) -> Load {
        Self::start_with(cluster, tenants, false)
    }

    /// `through_crate`: one of the two drainers per tenant uses the client crate.
    fn start_with(cluster: Arc<Cluster>, tenants: &[String], through_crate: bool) -> Load {
        Self::start_paced(cluster, tenants, through_crate, Duration::from_millis(20))
    }

    /// `pace`: the producers' pause between rounds.
    fn start_paced(cluster: Arc<Cluster>, tenants: &[String], through_crate: bool, pace: Duration) -> Load {
        let ledger: Shared = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let mut producers = Vec::new();
        let mut consumers = Vec::new();
        for tenant in tenants {
            producers.push(tokio::spawn(producer(cluster.clone(), tenant.clone(), stop.clone(), ledger.clone(), pace)));
            consumers.push(tokio::spawn(drainer(cluster.clone(), tenant.clone(), done.clone(), ledger.clone())));
            if through_crate {
                consumers.push(tokio::spawn(crate_drainer(
                    cluster.clone(),
                    tenant.clone(),
                    done.clone(),
                    ledger.clone(),
                )));
            } else {
                consumers.push(tokio::spawn(drainer(cluster.clone(), tenant.clone(), done.clone(), ledger.clone())));
            }
            for agent in ["plain", "reliable"] {
                consumers.push(tokio::spawn(receiver(
                    cluster.clone(),
                    tenant.clone(),
                    agent,
                    done.clone(),
                    ledger.clone(),
                )));
            }
        }
        Load { cluster, tenants: tenants.to_vec(), ledger, stop, done, producers, consumers }
    }

    /// Wait until every tenant has had some traffic.
    async fn warm_up(&self) {
        let started = Instant::now();
        loop {
            let ready = {
                let ledger = self.ledger.lock().expect("ledger");
                self.tenants.iter().all(|t| {
                    ledger.drained.get(t).is_some_and(|d| d.len() >= 2)
                        && ledger.received.get(t).is_some_and(|r| r.len() >= 2)
                })
            };
            if ready {
                return;
            }
            assert!(started.elapsed() < DEADLINE, "the load did not get going");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stop producing, let the consumers empty every queue and inbox, and
    /// check the books.
    async fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        for producer in self.producers {
            producer.await.expect("producer");
        }
        let mut conn = connect(&self.cluster).await;
        // The deadline is for a stall, not for the whole drain: the
        // reliable consumer takes ~6 messages a second and the producers
        // send ~25, so the backlog grows with how long the load ran (a
        // failover asked twice on a loaded machine doubles it). Every look
        // that finds less left starts the deadline again.
        let mut started = Instant::now();
        for tenant in &self.tenants {
            let mut least_left = i64::MAX;
            loop {
                let dreams = call(&mut conn, &["DREAMS.LEN", tenant]).await;
                let plain = call(&mut conn, &["TOWN.LEN", tenant, "plain"]).await;
                let reliable = call(&mut conn, &["TOWN.LEN", tenant, "reliable"]).await;
                let zero = Value::Array(vec![Value::Int(0), Value::Int(0), Value::Int(0)]);
                if [&dreams, &plain, &reliable].iter().all(|r| matches!(r, Ok(v) if *v == zero)) {
                    break;
                }
                let left: i64 = [&dreams, &plain, &reliable]
                    .iter()
                    .filter_map(|reply| match reply {
                        Ok(Value::Array(counts)) => {
                            Some(counts.iter().map(|count| if let Value::Int(n) = count { *n } else { 0 }).sum::<i64>())
                        }
                        _ => None,
                    })
                    .sum();
                if left < least_left {
                    least_left = left;
                    started = Instant::now();
                }
                assert!(
                    started.elapsed() < DEADLINE,
                    "{tenant}: the consumers stopped emptying it: {dreams:?} {plain:?} {reliable:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        self.done.store(true, Ordering::Relaxed);
        for consumer in self.consumers {
            consumer.await.expect("consumer");
        }
        let ledger = self.ledger.lock().expect("ledger");
        assert!(ledger.problems.is_empty(), "problems under load: {:#?}", ledger.problems);
        assert!(ledger.bad_acks.is_empty(), "acknowledgements not applied: {:#?}", ledger.bad_acks);
        for tenant in &self.tenants {
            let drained = ledger.drained.get(tenant).cloned().unwrap_or_default();
            let unique: BTreeSet<&String> = drained.iter().collect();
            assert_eq!(unique.len(), drained.len(), "{tenant}: a fire was handed out twice");
            let queued = ledger.queued.get(tenant).copied().unwrap_or(0);
            assert_eq!(drained.len() as u64, queued, "{tenant}: fires queued vs handed out");
            let mut sent = ledger.sent.get(tenant).cloned().unwrap_or_default();
            let mut received = ledger.received.get(tenant).cloned().unwrap_or_default();
            sent.sort();
            received.sort();
            assert_eq!(received, sent, "{tenant}: messages sent vs received (each exactly once)");
        }
    }
}

/// No node holds a key of a slot it does not own, and the guard's names never exist.
fn assert_keys_where_owned(cluster: &Cluster, tenants: &[String]) {
    let owners = cluster.slot_owners();
    for tenant in tenants {
        let slot = slot_of(tenant);
        let owner = owners
            .iter()
            .find(|o| o.ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .map(|o| o.port)
            .expect("owned slot");
        for node in &cluster.nodes {
            let mut con = node.connect();
            let role: Vec<Value> = redis::cmd("ROLE").query(&mut con).expect("ROLE");
            if role.first().and_then(text).as_deref() != Some("master") {
                continue;
            }
            let count: u64 =
                redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query(&mut con).expect("COUNTKEYSINSLOT");
            if node.port == owner {
                assert!(count > 0, "{tenant}: its owner {} holds its keys", node.port);
            } else {
                assert_eq!(count, 0, "{tenant}: node {} holds keys of slot {slot} it does not own", node.port);
            }
        }
    }
}

/// How many `TRYAGAIN` replies the masters sent (`INFO errorstats`).
fn tryagain_replies(cluster: &Cluster) -> u64 {
    cluster
        .nodes
        .iter()
        .map(|node| {
            let info: String =
                redis::cmd("INFO").arg("errorstats").query(&mut node.connect()).expect("INFO errorstats");
            info.lines()
                .find_map(|line| line.strip_prefix("errorstat_TRYAGAIN:count="))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// The manual procedure for one slot, pausing between `MIGRATING` and the
/// first `MIGRATE` and between batches of 2 keys.
fn move_slot(cluster: &Cluster, slot: u16, from: usize, to: usize) {
    let source = &cluster.nodes[from];
    let target = &cluster.nodes[to];
    let (source_id, target_id) = (source.node_id(), target.node_id());
    let mut src = source.connect();
    let mut dst = target.connect();
    let ok = |reply: redis::RedisResult<String>, what: &str| assert_eq!(reply.as_deref(), Ok("OK"), "{what}");
    ok(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("IMPORTING").arg(&source_id).query(&mut dst), "IMPORTING");
    ok(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("MIGRATING").arg(&target_id).query(&mut src), "MIGRATING");
    std::thread::sleep(Duration::from_millis(800));
    loop {
        let keys: Vec<String> =
            redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(2).query(&mut src).expect("GETKEYSINSLOT");
        if keys.is_empty() {
            break;
        }
        let reply: redis::RedisResult<String> = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(target.port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query(&mut src);
        ok(reply, &format!("MIGRATE of {keys:?} (no BUSYKEY)"));
        std::thread::sleep(Duration::from_millis(100));
    }
    ok(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&target_id).query(&mut dst), "NODE on target");
    ok(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&target_id).query(&mut src), "NODE on source");
    for (i, node) in cluster.nodes.iter().enumerate() {
        if i != from && i != to {
            let _: redis::RedisResult<String> =
                redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&target_id).query(&mut node.connect());
        }
    }
}

/// `redis-cli --cluster <args>`, which must succeed and never mention BUSYKEY.
fn redis_cli_cluster(args: &[String]) {
    let output = Command::new(cli_bin()).arg("--cluster").args(args).output().expect("redis-cli");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let all = format!("{stdout}{stderr}");
    assert!(
        output.status.success()
            && !all.contains("BUSYKEY")
            && !all.contains("Target key exists")
            && !all.contains("[ERR]"),
        "redis-cli --cluster {args:?} failed:\n{all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn manual_procedure_moves_live_tenants_losing_nothing() {
    let cluster = Arc::new(Cluster::start(3));
    // Two tenants in two slots of one node (each is an organization and a town).
    // And a third, idle one, whose drainer waits on the source through the move.
    let first_owner = cluster.owner_of_slot(0);
    let mut tenants = tenants_in(0..5_000, 3, "manual");
    let idle = tenants.pop().expect("idle tenant");
    let from = cluster.owner_of_slot(slot_of(&tenants[0]));
    assert_eq!(from, first_owner);
    let to = (from + 1) % 3;
    let load = Load::start(cluster.clone(), &tenants);
    load.warm_up().await;
    let mut held = Vec::new();
    for tenant in &tenants {
        held.push(hold(&cluster, tenant, &load.ledger).await);
    }
    let waiter = {
        let mut conn = cluster.nodes[from].multiplexed().await;
        let _: () =
            redis::cmd("CLIENT").arg("SETNAME").arg("idle-waiter").query_async(&mut conn).await.expect("SETNAME");
        let idle = idle.clone();
        tokio::spawn(async move {
            let reply = call(&mut conn, &["DREAMS.DRAIN", &idle, "30", "NOQUIET"]).await;
            (reply, Instant::now())
        })
    };
    let source = cluster.clone();
    tokio::task::spawn_blocking(move || {
        common::wait_until("the idle drainer blocked on the source", || {
            let list: String =
                redis::cmd("CLIENT").arg("LIST").query(&mut source.nodes[from].connect()).expect("CLIENT LIST");
            list.lines().any(|line| line.contains("name=idle-waiter") && line.contains("flags=b"))
        })
    })
    .await
    .expect("blocked");
    for tenant in tenants.iter().chain([&idle]) {
        let (cluster, slot) = (cluster.clone(), slot_of(tenant));
        tokio::task::spawn_blocking(move || move_slot(&cluster, slot, from, to)).await.expect("move");
    }
    // The drainer blocked on the source is redirected once the move is
    // complete (Redis's cluster cron, ~1 s), long before its 30 s timeout.
    let moved_at = Instant::now();
    let (reply, returned_at) = waiter.await.expect("waiter");
    let error = reply.expect_err("the blocked drainer is redirected");
    assert_eq!(error.code(), Some("MOVED"), "{error}");
    assert!(
        returned_at.saturating_duration_since(moved_at) < Duration::from_secs(5),
        "redirected within the cron's second"
    );
    let blocking = cluster.clone();
    tokio::task::spawn_blocking(move || blocking.wait_stable()).await.expect("stable");
    for held in held {
        release(&cluster, held, &load.ledger).await;
    }
    // The load did reach the importing node during the pause (and was told to retry).
    assert!(tryagain_replies(&cluster) > 0, "the load reached the importing node while the slot moved");
    // Some more traffic on the new owner, then the books.
    tokio::time::sleep(Duration::from_millis(500)).await;
    load.finish().await;
    assert_keys_where_owned(&cluster, &tenants);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_cli_reshard_and_rebalance_move_live_tenants_losing_nothing() {
    let cluster = Arc::new(Cluster::start(3));
    // redis-cli moves the lowest slots of a source first: tenants in slots 0..6.
    const MOVED: u16 = 6;
    let tenants = tenants_in(0..MOVED, 2, "cli");
    let from = cluster.owner_of_slot(0);
    let to = (from + 2) % 3;
    for tenant in &tenants {
        add_regions(&cluster, tenant, 300).await;
    }
    let load = Load::start(cluster.clone(), &tenants);
    load.warm_up().await;
    let mut held = Vec::new();
    for tenant in &tenants {
        held.push(hold(&cluster, tenant, &load.ledger).await);
    }
    let address = format!("127.0.0.1:{}", cluster.nodes[from].port);
    let reshard = vec![
        "reshard".to_string(),
        address.clone(),
        "--cluster-from".into(),
        cluster.nodes[from].node_id(),
        "--cluster-to".into(),
        cluster.nodes[to].node_id(),
        "--cluster-slots".into(),
        MOVED.to_string(),
        "--cluster-pipeline".into(),
        "2".into(),
        "--cluster-yes".into(),
    ];
    tokio::task::spawn_blocking(move || redis_cli_cluster(&reshard)).await.expect("reshard");
    let blocking = cluster.clone();
    tokio::task::spawn_blocking(move || blocking.wait_stable()).await.expect("stable");
    for tenant in &tenants {
        assert_eq!(cluster.owner_of_slot(slot_of(tenant)), to, "{tenant} moved by reshard");
    }
    for held in held {
        release(&cluster, held, &load.ledger).await;
    }
    // Rebalance: the target now holds MOVED slots too many, the lowest
    // ones first in its list, so they are the ones rebalance moves back.
    let mut held = Vec::new();
    for tenant in &tenants {
        held.push(hold(&cluster, tenant, &load.ledger).await);
    }
    let rebalance = vec![
        "rebalance".to_string(),
        address,
        "--cluster-threshold".into(),
        "0.01".into(),
        "--cluster-pipeline".into(),
        "2".into(),
    ];
    tokio::task::spawn_blocking(move || redis_cli_cluster(&rebalance)).await.expect("rebalance");
    let blocking = cluster.clone();
    tokio::task::spawn_blocking(move || blocking.wait_stable()).await.expect("stable");
    let moved_back = tenants.iter().filter(|t| cluster.owner_of_slot(slot_of(t)) != to).count();
    assert!(moved_back > 0, "rebalance moved a live tenant's slot");
    for held in held {
        release(&cluster, held, &load.ledger).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    load.finish().await;
    assert_keys_where_owned(&cluster, &tenants);
}

/// `INFO <section>` field `name` of a node, as text.
/// `None` for a node that does not answer (killed).
fn info_field(node: &common::Server, section: &str, name: &str) -> Option<String> {
    let mut con = redis::Client::open(node.url()).ok()?.get_connection_with_timeout(Duration::from_secs(1)).ok()?;
    let info: String = redis::cmd("INFO").arg(section).query(&mut con).ok()?;
    info.lines().find_map(|line| line.strip_prefix(&format!("{name}:")).map(|v| v.trim().to_owned()))
}

/// The index of the replica of the master at `master`, once it is in sync.
fn replica_of(cluster: &Cluster, master: usize) -> Option<usize> {
    let port = cluster.nodes[master].port.to_string();
    cluster.nodes.iter().position(|node| {
        info_field(node, "replication", "role").as_deref() == Some("slave")
            && info_field(node, "replication", "master_port").as_deref() == Some(port.as_str())
            && info_field(node, "replication", "master_link_status").as_deref() == Some("up")
    })
}

/// How long the failover test's idle drainers block: longer than a
/// failover may take on a loaded machine (a manual failover the master
/// cannot finish in 5 s is asked again), so what releases them is the
/// failover, never their timeout.
const WAITER_SECS: &str = "90";
const WAITER_TIMEOUT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coordinated_failover_under_load_loses_nothing() {
    let cluster = Arc::new(Cluster::start_with_replicas(3, 1));
    let names = tenants_in(0..5_000, 4, "failover");
    let (tenants, idle) = (names[..2].to_vec(), names[2..].to_vec());
    let master = cluster.owner_of_slot(slot_of(&tenants[0]));
    common::wait_until("the master's replica is in sync", || replica_of(&cluster, master).is_some());
    let replica = replica_of(&cluster, master).expect("replica");
    let load = Load::start_with(cluster.clone(), &tenants, true);
    load.warm_up().await;
    let mut held = Vec::new();
    for tenant in &tenants {
        held.push(hold(&cluster, tenant, &load.ledger).await);
    }
    // Two drainers blocked on the old master: one raw, on a plain
    // connection to it (so the test sees what the server answers), one
    // through the crate.
    let raw_waiter = {
        let (cluster, org) = (cluster.clone(), idle[0].clone());
        tokio::spawn(async move {
            let mut conn = cluster.nodes[master].multiplexed().await;
            let started = Instant::now();
            (call(&mut conn, &["DREAMS.DRAIN", &org, WAITER_SECS, "NOQUIET"]).await, started.elapsed())
        })
    };
    let crate_waiter = {
        let (cluster, org) = (cluster.clone(), idle[1].clone());
        tokio::spawn(async move {
            let mut queue = RedisFireQueue::new(connect(&cluster).await, QuietHours::none(), org);
            let started = Instant::now();
            (queue.drain(Duration::from_secs(WAITER_TIMEOUT.as_secs())).await, started.elapsed())
        })
    };
    let idle_keys_blocked = move |cluster: &Cluster| {
        let mut con = cluster.nodes[master].connect();
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).expect("CLIENT LIST");
        let clients = clients.to_ascii_lowercase();
        clients.lines().filter(|line| line.contains("cmd=dreams.drain") && line.contains("flags=b")).count() >= 2
    };
    let blocking = cluster.clone();
    tokio::task::spawn_blocking(move || {
        common::wait_until("both idle drainers blocked", || idle_keys_blocked(&blocking))
    })
    .await
    .expect("blocked");

    let promote = cluster.clone();
    tokio::task::spawn_blocking(move || {
        promote.fail_over_to(replica, 0);
    })
    .await
    .expect("failover");

    // The raw waiter was released at once, not at its timeout, with a
    // retryable refusal: UNBLOCKED (Redis, Valkey 8), or MOVED to the new
    // master (Valkey 9 redirects clients blocked on keys when their node
    // becomes a replica).
    let (raw, raw_took) = raw_waiter.await.expect("raw waiter");
    let raw_error = raw.expect_err("a drain blocked on the old master is released with an error");
    assert!(matches!(raw_error.code(), Some("UNBLOCKED" | "MOVED")), "{raw_error}");
    assert!(raw_took < WAITER_TIMEOUT - Duration::from_secs(10), "released before its timeout: {raw_took:?}");
    // The crate resent its drain to the new master, where a fire now arrives.
    let mut conn = connect(&cluster).await;
    assert_eq!(
        text(&call(&mut conn, &["DREAMS.FIRE", &idle[1], "p", "3"]).await.expect("fire")).as_deref(),
        Some("queued")
    );
    let (drained, took) = crate_waiter.await.expect("crate waiter");
    match drained {
        Ok(DrainResult::Ready(fire)) => assert_eq!(fire.region.org, idle[1]),
        other => panic!("the crate's drain across the failover: {other:?}"),
    }
    assert!(took < WAITER_TIMEOUT + CALL_DEADLINE, "{took:?}");
    let _ = call(&mut conn, &["DREAMS.RECOVER", &idle[1]]).await;

    for held in held {
        release(&cluster, held, &load.ledger).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    load.finish().await;
    assert_keys_where_owned(&cluster, &tenants);
}

/// Send a signal (`STOP`, `CONT`) to a server process.
fn signal(node: &common::Server, name: &str) {
    let pid = node.pid().to_string();
    let sent = Command::new("kill").args([&format!("-{name}"), &pid]).status().expect("kill");
    assert!(sent.success(), "kill -{name} {pid}");
}

/// Does `node` serve `org`'s commands itself (a master owning its slot),
/// rather than redirect them?
fn serves(node: &common::Server, org: &str) -> bool {
    common::cmd(&["DREAMS.LEN", org]).query::<Vec<i64>>(&mut node.connect()).is_ok()
}

/// The lease of the fire in flight when the master is lost.
const OUTAGE_LEASE: Duration = Duration::from_secs(1);

/// A master is lost with a leased fire in flight and its replica is forced
/// over (`CLUSTER FAILOVER FORCE`, no hand-shake with the master). The
/// interleaving is forced: the master is stopped (`SIGSTOP`) right after
/// the last write, the lease runs out while the replica is still a
/// replica, and only then is the replica promoted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_failover_keeps_what_replicas_acknowledged_and_the_new_master_expires_leases() {
    let cluster = Cluster::start_with_replicas(3, 1);
    let org = tenants_in(0..5_000, 1, "forced").remove(0);
    let master = cluster.owner_of_slot(slot_of(&org));
    common::wait_until("the master's replica is in sync", || replica_of(&cluster, master).is_some());
    let replica = replica_of(&cluster, master).expect("replica");
    let (old, new) = (&cluster.nodes[master], &cluster.nodes[replica]);

    // Every write goes through the durability wrapper: a replica has it
    // before the call returns.
    let conn = Durable::new(cluster.connection().await, 1, Duration::from_secs(10));
    let report = conn.clone();
    let mut queue = RedisFireQueue::new(conn, QuietHours::none(), org.clone());
    for project in ["a", "b", "c", "d"] {
        let region = dreamtown_client::dreams::RegionKey::new(&org, project, 1);
        assert_eq!(queue.fire(&region, "node-a").await.expect("fire"), FireOutcome::Queued);
    }
    let DrainResult::Ready(done) = queue.drain(Duration::from_secs(1)).await.expect("drain") else {
        panic!("a fire was ready");
    };
    let acked = queue.acknowledge(&done, true, DreamsTrigger::default(), "node-a").await.expect("ack");
    assert!(matches!(acked, AcknowledgeOutcome::Acknowledged(_)), "{acked:?}");
    let DrainResult::Ready(leased) = queue.drain_leased(Duration::from_secs(1), OUTAGE_LEASE).await.expect("drain")
    else {
        panic!("a fire was ready");
    };
    let lease_over = Instant::now() + OUTAGE_LEASE + Duration::from_millis(500);
    assert_eq!(report.shortfalls(), 0, "{:?}", report.last_shortfall());
    let leased_payload = leased.queued_payload.clone().expect("the drained payload");
    // The cluster connection would ask the stopped master for the slot map.
    drop(queue);
    drop(report);

    // The master is lost: from here nothing reaches it.
    let written = old.digest();
    signal(old, "STOP");
    assert_eq!(new.digest(), written, "the replica holds every write it acknowledged");
    // The lease runs out during the outage; a replica leaves it alone.
    tokio::time::sleep(lease_over.saturating_duration_since(Instant::now())).await;
    assert_eq!(info_field(new, "replication", "role").as_deref(), Some("slave"), "not yet promoted");
    assert_eq!(new.digest(), written, "a replica expires no lease");

    let reply: String =
        common::cmd(&["CLUSTER", "FAILOVER", "FORCE"]).query(&mut new.connect()).expect("FAILOVER FORCE");
    assert_eq!(reply, "OK");
    common::wait_until("the replica serves the tenant as master", || serves(new, &org));
    // The new master finds the lease that ran out and puts the fire back
    // at the head of ready, by itself.
    let keys = QueueKeys::new(&org);
    common::wait_until("the new master expired the lease", || {
        let mut con = new.connect();
        let head: Vec<String> = common::cmd(&["LRANGE", &keys.ready, "0", "0"]).query(&mut con).unwrap_or_default();
        let in_flight: i64 = common::cmd(&["LLEN", &keys.processing]).query(&mut con).unwrap_or(-1);
        head.first() == Some(&leased_payload) && in_flight == 0
    });
    let mut con = new.connect();
    let lengths: Vec<i64> = common::cmd(&["DREAMS.LEN", &org]).query(&mut con).expect("LEN");
    assert_eq!(lengths, vec![3, 0, 0], "the three unacknowledged fires are ready, nothing in flight");
    let again: String = common::cmd(&["DREAMS.DRAIN", &org, "1", "NOQUIET"]).query(&mut con).expect("DRAIN");
    assert_eq!(again, leased_payload, "the expired fire is handed out first");
    let acked: Vec<Value> = common::cmd(&["DREAMS.ACK", &org, &again, "SUCCESS"]).query(&mut con).expect("ACK");
    assert_eq!(text(&acked[0]).as_deref(), Some("acknowledged"));

    // The old master comes back, follows the new one and takes its data.
    signal(old, "CONT");
    let port = new.port.to_string();
    common::wait_until("the old master follows the new one", || {
        info_field(old, "replication", "role").as_deref() == Some("slave")
            && info_field(old, "replication", "master_port").as_deref() == Some(port.as_str())
            && info_field(old, "replication", "master_link_status").as_deref() == Some("up")
    });
    common::wait_until("the old master holds the new master's data", || old.digest() == new.digest());
    cluster.wait_stable();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_connection_reports_writes_replicas_did_not_acknowledge() {
    let master = common::Server::start();
    let replica = common::Server::start_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    common::wait_until("the replica is in sync", || {
        info_field(&replica, "replication", "master_link_status").as_deref() == Some("up")
    });
    // And acknowledging: for a moment after a diskless sync (no delay, as the
    // harness sets it) a replica whose link is up and which the master lists
    // online may still not answer WAIT (seen 4 times in 12 with a plain
    // redis-server 7.0.15, module or not). A probe write WAIT sees settles it.
    let mut probe = master.connect();
    common::wait_until("the replica acknowledges writes", || {
        let _: () = redis::cmd("SET").arg("probe").arg("1").query(&mut probe).expect("SET");
        redis::cmd("WAIT").arg(1).arg(100).query::<i64>(&mut probe).is_ok_and(|acked| acked == 1)
    });
    let shortfalls = Arc::new(Mutex::new(Vec::new()));
    let seen = shortfalls.clone();
    let conn = Durable::new(master.multiplexed().await, 1, Duration::from_millis(300))
        .on_shortfall(move |s| seen.lock().expect("hook").push(s.clone()));
    let report = conn.clone();
    let mut queue = RedisFireQueue::new(conn, QuietHours::none(), "acme");
    let region = dreamtown_client::dreams::RegionKey::new("acme", "web", 3);
    queue.fire(&region, "node-a").await.expect("fire");
    queue.lengths().await.expect("lengths");
    assert_eq!(report.shortfalls(), 0, "{:?}", report.last_shortfall());
    // The replica stops acknowledging: the write still happens, and is reported.
    signal(&replica, "STOP");
    let outcome = queue.fire(&region, "node-a").await;
    signal(&replica, "CONT");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(report.shortfalls(), 1);
    let last = report.last_shortfall().expect("a shortfall");
    assert_eq!((last.command.as_str(), last.wanted, last.acknowledged), ("DREAMS.FIRE", 1, 0));
    assert_eq!(shortfalls.lock().expect("hook").len(), 1);
    assert_eq!(queue.lengths().await.expect("lengths").ready, 2);
}

// ---------------------------------------------------------------------------
// Atomic slot migration (Valkey 9 `CLUSTER MIGRATESLOTS`).
//
// The interleaving is forced with Valkey's own debug switch: `DEBUG
// SLOTMIGRATION PREVENT-PAUSE 1` on the source holds the move in its
// streaming phase (snapshot sent, later writes streamed to the target, which
// does not own the slots yet) while the load, holders and blocked clients
// run; clearing it lets the move pause writes and switch. Items leased in
// flight are abandoned before the move, with leases that run out after it:
// only the new owner can bring them back.

/// The lease of the items abandoned in flight before a move.
const ABANDONED_LEASE_SECS: u64 = 3;

/// Does this server have atomic slot migration (Valkey 9 or newer)? Asks
/// the binary itself (`--version`), before any cluster starts.
fn has_atomic_slot_migration() -> bool {
    common::binary_version().at_least(common::ServerKind::Valkey, 9, 0)
}

macro_rules! require_atomic_slot_migration {
    () => {
        if !has_atomic_slot_migration() {
            eprintln!(
                "skipped: this server has no atomic slot migration (CLUSTER MIGRATESLOTS needs Valkey 9 or newer)"
            );
            return;
        }
    };
}

/// A `dreamtown_<name>` field of `INFO dreamtown`.
fn dreamtown_info(node: &common::Server, name: &str) -> Option<u64> {
    info_field(node, "dreamtown", &format!("dreamtown_{name}")).and_then(|v| v.parse().ok())
}

/// The module claims atomic slot migration support exactly where the
/// server knows the option (Valkey 9.0 or newer, per `INFO server`), so
/// no other server gets an option bit it does not define. Runs on every
/// server.
#[test]
fn atomic_slot_migration_is_declared_only_on_valkey_9_or_newer() {
    let server = common::Server::start();
    let name = info_field(&server, "server", "server_name");
    let major = info_field(&server, "server", "valkey_version")
        .and_then(|v| v.split('.').next().and_then(|m| m.parse::<u32>().ok()));
    let knows = name.as_deref() == Some("valkey") && major.is_some_and(|m| m >= 9);
    // Redis 8.4 or newer: handled through its events (no package here ships it).
    let redis = info_field(&server, "server", "redis_version").and_then(|v| {
        let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next()??))
    });
    let redis_handles = name.as_deref().is_none_or(|n| n == "redis") && redis.is_some_and(|v| v >= (8, 4));
    assert_eq!(
        dreamtown_info(&server, "atomic_slot_migration"),
        Some(u64::from(knows || redis_handles)),
        "{name:?} {major:?} {redis:?}"
    );
    assert_eq!(knows, has_atomic_slot_migration(), "the tests' own check agrees");
}

/// `CLUSTER GETSLOTMIGRATIONS` of a node: one field map per job, newest first.
fn slot_migrations(node: &common::Server) -> Vec<BTreeMap<String, String>> {
    let Ok(Value::Array(jobs)) = redis::cmd("CLUSTER").arg("GETSLOTMIGRATIONS").query::<Value>(&mut node.connect())
    else {
        return Vec::new();
    };
    jobs.into_iter()
        .map(|job| {
            let pairs: Vec<(Value, Value)> = match job {
                Value::Map(pairs) => pairs,
                Value::Array(flat) => {
                    flat.chunks(2).filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone()))).collect()
                }
                _ => Vec::new(),
            };
            pairs
                .into_iter()
                .filter_map(|(k, v)| {
                    let value = match &v {
                        Value::Int(n) => n.to_string(),
                        other => text(other)?,
                    };
                    Some((text(&k)?, value))
                })
                .collect()
        })
        .collect()
}

/// The state of the newest migration job on `node`.
fn newest_job_state(node: &common::Server) -> Option<String> {
    slot_migrations(node).first().and_then(|job| job.get("state").cloned())
}

/// `DEBUG SLOTMIGRATION PREVENT-PAUSE <on>`.
fn prevent_pause(node: &common::Server, on: bool) {
    let reply: String = redis::cmd("DEBUG")
        .arg("SLOTMIGRATION")
        .arg("PREVENT-PAUSE")
        .arg(if on { 1 } else { 0 })
        .query(&mut node.connect())
        .expect("DEBUG SLOTMIGRATION PREVENT-PAUSE");
    assert_eq!(reply, "OK");
}

/// Start `CLUSTER MIGRATESLOTS` of `slots` from `from` to `to` and wait until
/// the move is held streaming (the source must have PREVENT-PAUSE set).
fn migrate_and_hold(cluster: &Cluster, slots: &[u16], from: usize, to: usize) {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("MIGRATESLOTS").arg("SLOTSRANGE");
    for slot in slots {
        cmd.arg(slot).arg(slot);
    }
    cmd.arg("NODE").arg(cluster.nodes[to].node_id());
    let reply: redis::RedisResult<String> = cmd.query(&mut cluster.nodes[from].connect());
    assert_eq!(reply.as_deref(), Ok("OK"), "CLUSTER MIGRATESLOTS is accepted with dreamtown loaded");
    common::wait_until("the move is streaming, held before its pause", || {
        newest_job_state(&cluster.nodes[from]).as_deref() == Some("waiting-to-pause")
    });
}

/// Does `node` answer `MOVED` for `tenant`'s commands?
fn redirects(node: &common::Server, tenant: &str) -> bool {
    matches!(
        common::cmd(&["DREAMS.LEN", tenant]).query::<Vec<i64>>(&mut node.connect()),
        Err(error) if error.code() == Some("MOVED")
    )
}

/// A fire and a reliable message of `tenant` taken with a lease and never
/// acknowledged: they must come back by themselves when the lease runs out.
struct Abandoned {
    tenant: String,
    fire_id: String,
    message_id: String,
    taken_at: Instant,
}

async fn abandon(cluster: &Cluster, tenant: &str) -> Abandoned {
    let mut conn = connect(cluster).await;
    let lease = ABANDONED_LEASE_SECS.to_string();
    let abandoned_id = format!("{tenant}-abandoned");
    let message = format!(r#"{{"id":"{abandoned_id}","to":"abandoned"}}"#);
    call(&mut conn, &["TOWN.SEND", tenant, &message]).await.expect("send to the abandoned agent");
    let taken_at = Instant::now();
    let mut fire_id = None;
    while fire_id.is_none() && taken_at.elapsed() < DEADLINE {
        if let Ok(Value::BulkString(payload)) =
            call(&mut conn, &["DREAMS.DRAIN", tenant, "1", "NOQUIET", "LEASE", &lease]).await
        {
            fire_id = self::fire_id(&payload);
        }
    }
    let received =
        call(&mut conn, &["TOWN.RECV", tenant, "abandoned", "BLOCK", "5", "RELIABLE", "LEASE", &lease]).await;
    let got = match &received {
        Ok(Value::Array(messages)) => messages.first().and_then(|m| match m {
            Value::BulkString(bytes) => message_id(bytes),
            _ => None,
        }),
        _ => None,
    };
    assert_eq!(
        got.as_deref(),
        Some(abandoned_id.as_str()),
        "{tenant}: the abandoned message was received: {received:?}"
    );
    Abandoned {
        tenant: tenant.to_owned(),
        fire_id: fire_id.expect("an abandoned fire"),
        message_id: abandoned_id,
        taken_at,
    }
}

/// The abandoned items come back once their lease ran out (not before):
/// the fire to the load's drainers (once), the message to its agent.
async fn check_abandoned_came_back(cluster: &Cluster, abandoned: Abandoned, ledger: &Shared) {
    let mut conn = connect(cluster).await;
    let tenant = &abandoned.tenant;
    let lease = Duration::from_secs(ABANDONED_LEASE_SECS);
    let started = Instant::now();
    let message = loop {
        let reply = call(&mut conn, &["TOWN.RECV", tenant, "abandoned", "BLOCK", "1", "RELIABLE"]).await;
        if let Ok(Value::Array(messages)) = &reply
            && let Some(Value::BulkString(bytes)) = messages.first()
        {
            break message_id(bytes);
        }
        assert!(started.elapsed() < DEADLINE, "{tenant}: the abandoned message never came back: {reply:?}");
    };
    assert!(
        abandoned.taken_at.elapsed() + Duration::from_millis(50) >= lease,
        "{tenant}: came back before its lease ran out"
    );
    assert_eq!(message.as_deref(), Some(abandoned.message_id.as_str()));
    let acked = call(&mut conn, &["TOWN.ACK", tenant, "abandoned", &abandoned.message_id]).await;
    assert!(matches!(acked, Ok(Value::Int(1))), "{tenant}: ACK of the returned message: {acked:?}");
    common::wait_until(&format!("{tenant}: the abandoned fire handed out again"), || {
        let ledger = ledger.lock().expect("ledger");
        ledger.drained.get(tenant).is_some_and(|ids| ids.contains(&abandoned.fire_id))
    });
}

/// A raw `DREAMS.DRAIN` and a `TOWN.RECV BLOCK`, straight on `node`, for
/// `tenant` (which gets no traffic): (reply, when it came) each.
type BlockedReply = (redis::RedisResult<Value>, Instant);

async fn block_on(node: &common::Server, tenant: &str) -> Vec<tokio::task::JoinHandle<BlockedReply>> {
    let mut handles = Vec::new();
    for args in [
        vec!["DREAMS.DRAIN".to_owned(), tenant.to_owned(), "30".into(), "NOQUIET".into()],
        vec!["TOWN.RECV".to_owned(), tenant.to_owned(), "idle".into(), "BLOCK".into(), "30".into(), "RELIABLE".into()],
    ] {
        let mut conn = node.multiplexed().await;
        handles.push(tokio::spawn(async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let reply = call(&mut conn, &args).await;
            (reply, Instant::now())
        }));
    }
    handles
}

/// Wait until `count` clients are blocked on `node`.
fn wait_blocked(node: &common::Server, count: usize) {
    common::wait_until("the idle waiters blocked", || {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut node.connect()).expect("CLIENT LIST");
        list.lines().filter(|line| line.contains("flags=b")).count() >= count
    });
}

/// Every master's replica has the same dataset (`DEBUG DIGEST`).
fn assert_replicas_digest_equal(cluster: &Cluster, masters: &[usize]) {
    for master in masters {
        common::wait_until("the master's replica is in sync", || replica_of(cluster, *master).is_some());
        let replica = replica_of(cluster, *master).expect("replica");
        common::wait_until(&format!("replica {replica} digest-equal to master {master}"), || {
            cluster.nodes[*master].digest() == cluster.nodes[replica].digest()
        });
    }
}

/// Give `tenant` filler keys in its slot (plain strings of 512 bytes), so
/// the snapshot has something to carry besides the tenant.
async fn add_filler(cluster: &Cluster, tenant: &str, keys: usize) {
    let mut conn = connect(cluster).await;
    let value = "x".repeat(512);
    let mut pipe = redis::pipe();
    for i in 0..keys {
        pipe.cmd("SET").arg(format!("filler:{{{tenant}}}:{i}")).arg(&value).ignore();
    }
    let _: () = pipe.query_async(&mut conn).await.expect("filler keys");
}

/// A deep backlog for `tenant`: `depth` fires (one per new region) and
/// `depth` messages for each load agent, on the books of `ledger`.
async fn seed_backlog(cluster: &Cluster, tenant: &str, depth: usize, ledger: &Shared) {
    let mut conn = connect(cluster).await;
    for i in 0..depth {
        let fired = call(&mut conn, &["DREAMS.FIRE", tenant, &format!("deep{i}"), "3"]).await.expect("seed fire");
        assert_eq!(text(&fired).as_deref(), Some("queued"), "{tenant}: seeded fire {i}");
        *ledger.lock().expect("ledger").queued.entry(tenant.to_owned()).or_default() += 1;
        for agent in ["plain", "reliable"] {
            let id = format!("{tenant}-{agent}-deep{i}");
            let message = format!(r#"{{"id":"{id}","to":"{agent}"}}"#);
            call(&mut conn, &["TOWN.SEND", tenant, &message]).await.expect("seed message");
            ledger.lock().expect("ledger").sent.entry(tenant.to_owned()).or_default().push(id);
        }
    }
}

/// Tenants whose slot a node owns: it gets all of them.
fn tenants_for_asm(label: &str) -> Vec<String> {
    tenants_in(0..5_000, 4, label)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn atomic_slot_migration_moves_live_tenants_losing_nothing() {
    require_atomic_slot_migration!();
    let cluster = Arc::new(Cluster::start_with_replicas(3, 1));
    let mut tenants = tenants_for_asm("asm");
    let idle = tenants.pop().expect("idle tenant");
    let from = cluster.owner_of_slot(slot_of(&tenants[0]));
    let to = (from + 1) % 3;
    for tenant in &tenants {
        add_regions(&cluster, tenant, 300).await;
        add_filler(&cluster, tenant, 2_000).await;
    }
    // Producers about as fast as the slow consumers, over a deep backlog;
    // one drainer per tenant goes through the client crate.
    let load = Load::start_paced(cluster.clone(), &tenants, true, Duration::from_millis(150));
    for tenant in &tenants {
        seed_backlog(&cluster, tenant, 40, &load.ledger).await;
    }
    load.warm_up().await;
    let mut held = Vec::new();
    let mut abandoned = Vec::new();
    for tenant in &tenants {
        held.push(hold(&cluster, tenant, &load.ledger).await);
        abandoned.push(abandon(&cluster, tenant).await);
    }
    let mut waiters = block_on(&cluster.nodes[from], &idle).await;
    let blocked = cluster.clone();
    tokio::task::spawn_blocking(move || wait_blocked(&blocked.nodes[from], 2)).await.expect("blocked");

    let slots: Vec<u16> = tenants.iter().chain([&idle]).map(|t| slot_of(t)).collect();
    let moving = cluster.clone();
    let held_tenants = tenants.clone();
    tokio::task::spawn_blocking(move || {
        prevent_pause(&moving.nodes[from], true);
        migrate_and_hold(&moving, &slots, from, to);
        // Held streaming: the target holds the importing keys but does not
        // serve the tenants; the source still does.
        assert_eq!(dreamtown_info(&moving.nodes[from], "slot_exports_in_progress"), Some(1));
        assert_eq!(dreamtown_info(&moving.nodes[to], "slot_imports_in_progress"), Some(1));
        for tenant in &held_tenants {
            assert!(redirects(&moving.nodes[to], tenant), "{tenant}: the importing target redirects");
            assert!(serves(&moving.nodes[from], tenant), "{tenant}: the exporting source serves");
        }
    })
    .await
    .expect("migrate");
    // The load runs against the held move for a while, and the abandoned
    // items' leases run out during it: the exporting source leaves them
    // alone (a write of its own might never reach the target), so they are
    // still in flight there.
    let lease_over =
        abandoned.iter().map(|a| a.taken_at).max().expect("abandoned") + Duration::from_secs(ABANDONED_LEASE_SECS);
    tokio::time::sleep(
        Duration::from_millis(1_500)
            .max((lease_over + Duration::from_millis(1_000)).saturating_duration_since(Instant::now())),
    )
    .await;
    for a in &abandoned {
        let lens: Vec<i64> = common::cmd(&["TOWN.LEN", &a.tenant, "abandoned"])
            .query(&mut cluster.nodes[from].connect())
            .expect("TOWN.LEN on the source");
        assert_eq!(lens, vec![0, 0, 1], "{}: the source expired nothing of an exporting tenant", a.tenant);
    }
    // Work for the idle tenant during the export: its drainer blocked on
    // the source is answered TRYAGAIN (to retry) rather than served by
    // the source on its own; the fire stays queued for the new owner.
    let mut conn = connect(&cluster).await;
    assert_eq!(
        text(&call(&mut conn, &["DREAMS.FIRE", &idle, "p", "3"]).await.expect("fire")).as_deref(),
        Some("queued")
    );
    let (woken, _) = waiters.remove(0).await.expect("drain waiter");
    let error = woken.expect_err("a drainer woken on an exporting source");
    assert_eq!(error.code(), Some("TRYAGAIN"), "{error}");
    let lens: Vec<i64> =
        common::cmd(&["DREAMS.LEN", &idle]).query(&mut cluster.nodes[from].connect()).expect("DREAMS.LEN");
    assert_eq!(lens, vec![1, 0, 0], "the woken drainer took nothing");
    let switching = cluster.clone();
    let moved_at = tokio::task::spawn_blocking(move || {
        prevent_pause(&switching.nodes[from], false);
        common::wait_until("the source's export completed", || {
            newest_job_state(&switching.nodes[from]).as_deref() == Some("success")
        });
        let moved_at = Instant::now();
        common::wait_until("the target's import completed", || {
            newest_job_state(&switching.nodes[to]).as_deref() == Some("success")
        });
        switching.wait_stable();
        moved_at
    })
    .await
    .expect("switch");
    assert_eq!(cluster.owner_of_slot(slot_of(&tenants[0])), to, "the target owns the slots");
    assert_eq!(dreamtown_info(&cluster.nodes[from], "slot_exports_completed"), Some(1));
    assert_eq!(dreamtown_info(&cluster.nodes[to], "slot_imports_completed"), Some(1));
    // Replicas follow the target's import from its replication stream.
    let following = cluster.clone();
    tokio::task::spawn_blocking(move || {
        common::wait_until("no node sees a move in progress", || {
            following.nodes.iter().all(|node| {
                dreamtown_info(node, "slot_imports_in_progress") == Some(0)
                    && dreamtown_info(node, "slot_exports_in_progress") == Some(0)
            })
        })
    })
    .await
    .expect("moves over");

    // Clients blocked on the source were redirected by the cluster cron,
    // long before their 30 s timeout, and lost nothing.
    for waiter in waiters {
        let (reply, at) = waiter.await.expect("waiter");
        let error = reply.expect_err("a client blocked on a moved slot is redirected");
        assert_eq!(error.code(), Some("MOVED"), "{error}");
        assert!(at.saturating_duration_since(moved_at) < Duration::from_secs(5), "redirected within the cron's second");
    }
    let drained = call(&mut conn, &["DREAMS.DRAIN", &idle, "5", "NOQUIET"]).await.expect("drain on the new owner");
    let Value::BulkString(payload) = &drained else { panic!("the idle tenant's fire on the new owner: {drained:?}") };
    let fire: serde_json::Value = serde_json::from_slice(payload).expect("fire json");
    assert_eq!(fire["region"]["org"].as_str(), Some(idle.as_str()), "the fire queued during the export: {fire}");

    // Held across the move, acknowledged after it: applied (no stale ACK).
    for held in held {
        release(&cluster, held, &load.ledger).await;
    }
    // Abandoned before the move: back on the new owner when the lease ran out.
    for abandoned in abandoned {
        check_abandoned_came_back(&cluster, abandoned, &load.ledger).await;
    }
    load.finish().await;
    let mut all = tenants.clone();
    all.push(idle);
    let checking = cluster.clone();
    tokio::task::spawn_blocking(move || {
        assert_keys_where_owned(&checking, &all);
        assert_replicas_digest_equal(&checking, &[0, 1, 2]);
    })
    .await
    .expect("checks");
}

/// Does `node` answer at all (a killed node does not)?
fn alive(node: &common::Server) -> bool {
    redis::Client::open(node.url())
        .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(1)))
        .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con))
        .is_ok()
}

/// Keys of `slots` on each of `nodes` (`CLUSTER COUNTKEYSINSLOT`).
fn keys_in(node: &common::Server, slots: &[u16]) -> u64 {
    let mut con = node.connect();
    slots
        .iter()
        .map(|slot| {
            redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query::<u64>(&mut con).expect("COUNTKEYSINSLOT")
        })
        .sum()
}

/// Aborted atomic moves leave the tenants whole on the source: first
/// `CLUSTER CANCELSLOTMIGRATIONS` on the source, then the target killed
/// mid-import (its replica takes over and drops the half import). Each is
/// held streaming while the load, held and abandoned items run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn aborted_atomic_slot_migrations_leave_the_tenants_whole_on_the_source() {
    require_atomic_slot_migration!();
    let cluster = Arc::new(Cluster::start_with_replicas(3, 1));
    let tenants = tenants_in(0..5_000, 2, "asm-abort");
    let from = cluster.owner_of_slot(slot_of(&tenants[0]));
    let to = (from + 1) % 3;
    let other = (from + 2) % 3;
    let slots: Vec<u16> = tenants.iter().map(|t| slot_of(t)).collect();
    for tenant in &tenants {
        add_filler(&cluster, tenant, 2_000).await;
    }
    // The target is killed later: the rest of the cluster keeps serving.
    for node in &cluster.nodes {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-require-full-coverage")
            .arg("no")
            .query(&mut node.connect())
            .expect("CONFIG SET");
    }
    let load = Load::start_paced(cluster.clone(), &tenants, false, Duration::from_millis(150));
    for tenant in &tenants {
        seed_backlog(&cluster, tenant, 20, &load.ledger).await;
    }
    load.warm_up().await;

    for abort in ["cancel", "kill"] {
        let mut held = Vec::new();
        let mut abandoned = Vec::new();
        for tenant in &tenants {
            held.push(hold(&cluster, tenant, &load.ledger).await);
            abandoned.push(abandon(&cluster, tenant).await);
        }
        let (moving, moved) = (cluster.clone(), slots.clone());
        tokio::task::spawn_blocking(move || {
            prevent_pause(&moving.nodes[from], true);
            migrate_and_hold(&moving, &moved, from, to);
        })
        .await
        .expect("migrate");
        let lease_over =
            abandoned.iter().map(|a| a.taken_at).max().expect("abandoned") + Duration::from_secs(ABANDONED_LEASE_SECS);
        tokio::time::sleep((lease_over + Duration::from_millis(500)).saturating_duration_since(Instant::now())).await;
        let (aborting, moved) = (cluster.clone(), slots.clone());
        tokio::task::spawn_blocking(move || {
            let source = &aborting.nodes[from];
            if abort == "cancel" {
                let reply: String = redis::cmd("CLUSTER")
                    .arg("CANCELSLOTMIGRATIONS")
                    .query(&mut source.connect())
                    .expect("CANCELSLOTMIGRATIONS");
                assert_eq!(reply, "OK");
                common::wait_until("the source's export is cancelled", || {
                    newest_job_state(source).as_deref() == Some("cancelled")
                });
                common::wait_until("the target's import failed and was cleaned up", || {
                    newest_job_state(&aborting.nodes[to]).as_deref() == Some("failed")
                });
                assert_eq!(keys_in(&aborting.nodes[to], &moved), 0, "the target dropped what it had imported");
            } else {
                signal(&aborting.nodes[to], "KILL");
                common::wait_until("the source's export failed", || {
                    newest_job_state(source).as_deref() == Some("failed")
                });
            }
            prevent_pause(source, false);
            for slot in &moved {
                assert_eq!(aborting.owner_of_slot(*slot), from, "the source still owns slot {slot}");
            }
        })
        .await
        .expect("abort");
        // The source serves its tenants again on its own: the abandoned
        // items come back there, the held ones are acknowledged there.
        for held in held {
            release(&cluster, held, &load.ledger).await;
        }
        for abandoned in abandoned {
            check_abandoned_came_back(&cluster, abandoned, &load.ledger).await;
        }
    }

    assert_eq!(dreamtown_info(&cluster.nodes[from], "slot_exports_aborted"), Some(2));
    assert_eq!(dreamtown_info(&cluster.nodes[from], "slot_exports_in_progress"), Some(0));
    // The killed target's replica took over and dropped the half import.
    let promoted = cluster.clone();
    tokio::task::spawn_blocking(move || {
        common::wait_until("the killed target's replica took over", || {
            promoted.nodes.iter().enumerate().any(|(i, node)| {
                i >= 3 && alive(node) && info_field(node, "replication", "role").as_deref() == Some("master")
            })
        });
    })
    .await
    .expect("promoted");
    load.finish().await;
    let checking = cluster.clone();
    tokio::task::spawn_blocking(move || {
        let masters: Vec<usize> = (0..checking.nodes.len())
            .filter(|i| {
                alive(&checking.nodes[*i])
                    && info_field(&checking.nodes[*i], "replication", "role").as_deref() == Some("master")
            })
            .collect();
        for master in &masters {
            let count = keys_in(&checking.nodes[*master], &slots);
            if *master == from {
                assert!(count > 0, "the source still holds the tenants");
            } else {
                assert_eq!(count, 0, "master {master} holds no key of the tenants' slots");
            }
        }
        let with_replicas: Vec<usize> = masters.into_iter().filter(|m| *m == from || *m == other).collect();
        assert_replicas_digest_equal(&checking, &with_replicas);
    })
    .await
    .expect("checks");
}
