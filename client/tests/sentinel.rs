//! The client through Sentinel: a master and a replica (both with the
//! module) watched by one Sentinel, and the client's
//! [`SentinelConnection`] under [`Durable`] (`WAIT 1`). A Dreams producer
//! and worker loop (`DREAMS.FIRE` one region per fire, `DREAMS.DRAIN ...
//! LEASE` + `DREAMS.ACK`) and a Town sender and agent loop (`TOWN.SEND`,
//! `TOWN.RECV ... RELIABLE LEASE` + `TOWN.ACK`) run while
//! `SENTINEL FAILOVER` promotes the replica and Sentinel demotes the old
//! master. Every operation has an outcome: ok (a reply, and `WAIT` counted
//! the replica), failed (an error reply: nothing changed) or unknown. The
//! loops go on until they have done work on the new master, then
//! everything left is recovered and drained, and the checker asserts that
//! every fire and message acknowledged ok was delivered (nothing lost), and
//! prints the figures docs/reliability.md quotes (operations, how long the
//! failover took as the client saw it, what was delivered twice).

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{DEADLINE, Server, free_port, scratch_dir, server_bin, tenant, wait_until};
use dreamtown_client::connect::Options;
use dreamtown_client::dreams::{DrainResult, DreamsTrigger, FireOutcome, QuietHours, RedisFireQueue, RegionKey};
use dreamtown_client::sentinel::SentinelConnection;
use dreamtown_client::town::{AgentId, Channel, Message, MessageType};
use dreamtown_client::{Durable, Error};

const MASTER: &str = "dreamtown";
const LEASE: Duration = Duration::from_secs(2);

/// The Sentinel for `conf`: `DREAMTOWN_SENTINEL`, else Debian's
/// `redis-sentinel` with the default server, else the matrix's server in
/// `--sentinel` mode (the config file comes first).
fn sentinel_command(conf: &std::path::Path) -> Command {
    if let Ok(path) = std::env::var("DREAMTOWN_SENTINEL")
        && !path.is_empty()
    {
        let mut command = Command::new(path);
        command.arg(conf);
        return command;
    }
    let server = server_bin();
    if server == "redis-server" {
        let mut command = Command::new("redis-sentinel");
        command.arg(conf);
        return command;
    }
    let mut command = Command::new(server);
    command.arg(conf).arg("--sentinel");
    command
}

struct Sentinel {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Sentinel {
    fn start(master_port: u16) -> Sentinel {
        let port = free_port();
        let dir = scratch_dir("sentinel", port);
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER} 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds {MASTER} 2000\nsentinel failover-timeout {MASTER} 10000\n",
                dir.display()
            ),
        )
        .expect("sentinel.conf");
        let child = sentinel_command(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-sentinel on PATH");
        let sentinel = Sentinel { child, port, dir };
        wait_until("the Sentinel to answer", || sentinel.query::<String>(&["PING"]).is_some());
        sentinel
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> Option<T> {
        let mut con = redis::Client::open(self.url()).ok()?.get_connection_with_timeout(Duration::from_secs(2)).ok()?;
        common::cmd(args).query(&mut con).ok()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The server's replication role, or "" when it cannot be asked now: a
/// failover's Sentinel closes the normal clients of the servers it
/// reconfigures (`CLIENT KILL TYPE normal`), a connection being made then
/// included ("connection reset by peer"). Callers poll it with a deadline,
/// so a server that stays unreachable still fails the test.
fn role(server: &Server) -> String {
    let Ok(mut con) = server.try_connect() else { return String::new() };
    let info: String = redis::cmd("INFO").arg("replication").query(&mut con).unwrap_or_default();
    info.lines().find_map(|l| l.trim().strip_prefix("role:")).unwrap_or_default().to_owned()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fire,
    Send,
    FireDelivered,
    MessageDelivered,
    FireAck,
    MessageAck,
}

#[derive(Clone, Debug)]
struct Op {
    kind: Kind,
    item: String,
    outcome: Outcome,
    /// When its reply came back, since the run started.
    done: Duration,
}

type Conn = Durable<SentinelConnection>;

#[derive(Clone)]
struct Run {
    tenant: String,
    agent: AgentId,
    log: Arc<Mutex<Vec<Op>>>,
    stop: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
    started: Instant,
}

impl Run {
    fn push(&self, kind: Kind, item: String, outcome: Outcome) {
        let done = self.started.elapsed();
        if let Ok(mut log) = self.log.lock() {
            log.push(Op { kind, item, outcome, done });
        }
    }

    fn ops(&self) -> Vec<Op> {
        self.log.lock().map(|log| log.clone()).unwrap_or_default()
    }

    /// Ok operations of `kind` whose reply came after `after`.
    fn ok_since(&self, kind: Kind, after: Duration) -> usize {
        self.ops().iter().filter(|op| op.kind == kind && op.outcome == Outcome::Ok && op.done > after).count()
    }
}

fn outcome_of<T>(result: &Result<T, Error>, conn: &Conn, shortfalls_before: u64) -> Outcome {
    match result {
        Ok(_) if conn.shortfalls() > shortfalls_before => Outcome::Unknown,
        Ok(_) => Outcome::Ok,
        Err(Error::Server { .. }) => Outcome::Failed,
        Err(_) => Outcome::Unknown,
    }
}

fn no_trigger() -> DreamsTrigger {
    DreamsTrigger {
        memory_threshold: u32::MAX,
        edge_threshold: u32::MAX,
        min_interval_hours: 10_000,
        age_floor_days: 30_000,
    }
}

/// The producers: a fire (a region of its own) and a message per step.
async fn produce(run: Run, conn: Conn) {
    let mut queue = RedisFireQueue::new(conn.clone(), QuietHours::none(), run.tenant.clone());
    let channel = Channel::new(conn.clone(), run.tenant.clone());
    while !run.stop.load(Ordering::Relaxed) {
        let id = run.next.fetch_add(1, Ordering::Relaxed);
        let before = conn.shortfalls();
        let region = RegionKey::new(run.tenant.clone(), format!("fire-{id}"), 1);
        let result = queue.fire(&region, "producer").await;
        let outcome = match result {
            Ok(FireOutcome::Dropped) => Outcome::Failed,
            ref other => outcome_of(other, &conn, before),
        };
        run.push(Kind::Fire, region.project, outcome);

        let message = Message::new(AgentId::new(), run.agent, MessageType::Task { description: id.to_string() });
        let before = conn.shortfalls();
        let result = channel.send(&message).await;
        run.push(Kind::Send, message.id.to_string(), outcome_of(&result, &conn, before));
        if result.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The Dreams worker: drain with a lease, acknowledge.
async fn work(run: Run, conn: Conn, until_empty: bool) {
    let mut queue = RedisFireQueue::new(conn.clone(), QuietHours::none(), run.tenant.clone());
    loop {
        if !until_empty && run.stop.load(Ordering::Relaxed) {
            return;
        }
        match queue.drain_leased(Duration::from_millis(200), LEASE).await {
            Ok(DrainResult::Ready(fire)) => {
                let item = fire.region.project.clone();
                run.push(Kind::FireDelivered, item.clone(), Outcome::Ok);
                let before = conn.shortfalls();
                let result = queue.acknowledge(&fire, true, no_trigger(), "worker").await;
                run.push(Kind::FireAck, item, outcome_of(&result, &conn, before));
            }
            Ok(_) if until_empty => return,
            Ok(_) => {}
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// The Town agent: receive reliably with a lease, acknowledge.
async fn agent(run: Run, conn: Conn, until_empty: bool) {
    let channel = Channel::new(conn.clone(), run.tenant.clone());
    loop {
        if !until_empty && run.stop.load(Ordering::Relaxed) {
            return;
        }
        match channel.receive_leased(run.agent, 1, Some(Duration::from_millis(200)), LEASE).await {
            Ok(deliveries) if deliveries.is_empty() && until_empty => return,
            Ok(deliveries) => {
                for delivery in deliveries {
                    let Some(id) = delivery.ack_id() else { continue };
                    run.push(Kind::MessageDelivered, id.clone(), Outcome::Ok);
                    let before = conn.shortfalls();
                    let result = channel.ack_message(run.agent, &id).await;
                    run.push(Kind::MessageAck, id, outcome_of(&result, &conn, before));
                }
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Poll `done` (which may block briefly: an admin query) until it holds; panic at the deadline.
async fn until(what: &str, done: &dyn Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < DEADLINE, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn sentinel_conn(sentinel: &Sentinel) -> Conn {
    let client = Options::default().sentinel_client(&[sentinel.url()], MASTER).expect("sentinel client");
    let conn = SentinelConnection::connect(client).await.expect("the master through Sentinel");
    Durable::new(conn, 1, Duration::from_millis(500))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_under_dreams_and_town_loops_loses_nothing_acknowledged() {
    let master = Server::start();
    let replica = Server::start_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    wait_until("the replica in sync", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut replica.connect()).unwrap_or_default();
        info.contains("master_link_status:up")
    });
    let sentinel = Sentinel::start(master.port);
    wait_until("the Sentinel to know the replica", || {
        sentinel.query::<Vec<redis::Value>>(&["SENTINEL", "REPLICAS", MASTER]).is_some_and(|r| !r.is_empty())
    });

    let run = Run {
        tenant: tenant("sentinel"),
        agent: AgentId::new(),
        log: Arc::default(),
        stop: Arc::default(),
        next: Arc::default(),
        started: Instant::now(),
    };
    // A connection per loop, as separate processes would have: a Durable
    // `WAIT` then waits for its own loop's writes only.
    let conns = [sentinel_conn(&sentinel).await, sentinel_conn(&sentinel).await, sentinel_conn(&sentinel).await];
    let conn = conns[0].clone();
    let tasks = vec![
        tokio::spawn(produce(run.clone(), conns[0].clone())),
        tokio::spawn(work(run.clone(), conns[1].clone(), false)),
        tokio::spawn(agent(run.clone(), conns[2].clone(), false)),
    ];
    until("work on the first master", &|| {
        run.ok_since(Kind::FireAck, Duration::ZERO) >= 30 && run.ok_since(Kind::MessageAck, Duration::ZERO) >= 30
    })
    .await;

    // The failover: asked until Sentinel takes it (it refuses while it has
    // not yet judged the replica fit), then the replica is master and the
    // old master its replica.
    let asked = run.started.elapsed();
    until("SENTINEL FAILOVER accepted", &|| sentinel.query::<String>(&["SENTINEL", "FAILOVER", MASTER]).is_some())
        .await;
    until("the replica promoted", &|| role(&replica) == "master").await;
    let promoted = run.started.elapsed();
    until("the old master demoted", &|| role(&master) == "slave").await;
    let demoted = run.started.elapsed();
    // The loops follow: work done on the new master.
    let started = Instant::now();
    while run.ok_since(Kind::FireAck, demoted) < 30 || run.ok_since(Kind::MessageAck, demoted) < 30 {
        if started.elapsed() > DEADLINE {
            let recent: Vec<Op> = run.ops().into_iter().filter(|op| op.done > demoted).take(20).collect();
            let info = |s: &Server| {
                let mut con = s.try_connect().ok();
                con.as_mut()
                    .and_then(|con| redis::cmd("INFO").arg("replication").query::<String>(con).ok())
                    .unwrap_or_default()
            };
            panic!(
                "no work on the new master: {}\n{}\n{recent:?}, shortfalls {} (last {:?})",
                info(&master),
                info(&replica),
                conn.shortfalls(),
                conn.last_shortfall()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run.stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("a loop");
    }
    let reconnects: u64 = conns.iter().map(|c| c.clone().inner_mut().reconnects()).sum();
    let shortfalls: u64 = conns.iter().map(Durable::shortfalls).sum();

    // Everything left: in-flight items back (leases, or recovery), then drained.
    let fresh = sentinel_conn(&sentinel).await;
    RedisFireQueue::new(fresh.clone(), QuietHours::none(), run.tenant.clone())
        .recover_inflight()
        .await
        .expect("recover");
    Channel::new(fresh.clone(), run.tenant.clone()).requeue_pending(run.agent).await.expect("requeue");
    work(run.clone(), fresh.clone(), true).await;
    agent(run.clone(), fresh.clone(), true).await;

    // The record.
    let ops = run.ops();
    let mut delivered: BTreeMap<(bool, String), usize> = BTreeMap::new();
    for op in &ops {
        match op.kind {
            Kind::FireDelivered => *delivered.entry((true, op.item.clone())).or_default() += 1,
            Kind::MessageDelivered => *delivered.entry((false, op.item.clone())).or_default() += 1,
            _ => {}
        }
    }
    let count = |kind: Kind, outcome: Outcome| ops.iter().filter(|op| op.kind == kind && op.outcome == outcome).count();
    let lost = |kind: Kind, fire: bool| {
        ops.iter()
            .filter(|op| {
                op.kind == kind && op.outcome == Outcome::Ok && !delivered.contains_key(&(fire, op.item.clone()))
            })
            .count()
    };
    let twice = |fire: bool| delivered.iter().filter(|((f, _), n)| *f == fire && **n > 1).count();
    // The longest stretch without an ok write around the failover, as the client saw it.
    let mut oks: Vec<Duration> = ops
        .iter()
        .filter(|op| matches!(op.kind, Kind::Fire | Kind::Send) && op.outcome == Outcome::Ok)
        .map(|op| op.done)
        .collect();
    oks.sort();
    let gap = oks.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
    let report = format!(
        "fires ok/failed/unknown {}/{}/{}, lost {}, delivered twice {}; messages ok/failed/unknown {}/{}/{}, lost {}, delivered twice {}; \
         acks ok/unknown: fires {}/{}, messages {}/{}; failover asked at {asked:?}, replica promoted after {:?}, old master demoted after {:?}; \
         longest time without an ok write {gap:?}; reconnects through Sentinel {reconnects}; shortfalls {}",
        count(Kind::Fire, Outcome::Ok),
        count(Kind::Fire, Outcome::Failed),
        count(Kind::Fire, Outcome::Unknown),
        lost(Kind::Fire, true),
        twice(true),
        count(Kind::Send, Outcome::Ok),
        count(Kind::Send, Outcome::Failed),
        count(Kind::Send, Outcome::Unknown),
        lost(Kind::Send, false),
        twice(false),
        count(Kind::FireAck, Outcome::Ok),
        count(Kind::FireAck, Outcome::Unknown),
        count(Kind::MessageAck, Outcome::Ok),
        count(Kind::MessageAck, Outcome::Unknown),
        promoted - asked,
        demoted - asked,
        shortfalls,
    );
    eprintln!("sentinel failover: {report}");
    assert_eq!(lost(Kind::Fire, true) + lost(Kind::Send, false), 0, "acknowledged writes lost: {report}");
    assert!(reconnects >= 1, "the client asked Sentinel for the new master: {report}");
    // Asked until it answers (see `role`: Sentinel may still close clients).
    let mut new_master_fires = None;
    wait_until("the new master answers DREAMS.LEN", || {
        let mut con = replica.try_connect().ok();
        let len = con.as_mut().and_then(|con| redis::cmd("DREAMS.LEN").arg(&run.tenant).query::<Vec<i64>>(con).ok());
        new_master_fires = len.map(|lengths| lengths.iter().sum::<i64>());
        new_master_fires.is_some()
    });
    assert_eq!(new_master_fires, Some(0), "everything drained on the new master: {report}");
}
