//! Fair shares in Redis Cluster (issue 45): an organization's limits live
//! in its own slot (`exocortex:dreams:{<org>}:limits`), so they move with
//! it and fail over with it, and the node that serves it next enforces
//! them from its first command:
//!
//! * a slot move by the manual procedure (`MIGRATE`: the limits key
//!   arrives by `RESTORE`), and by Valkey 9's atomic slot migration (the
//!   import's stream; the target walks the arrived slots for limits keys
//!   before it trusts its index again);
//! * a coordinated `CLUSTER FAILOVER` while workers drain and acknowledge
//!   under a cap: the in-flight list is sampled on the master and on the
//!   replica throughout (server-side lengths, not a client's count) and
//!   never holds more than the cap; every fire is delivered exactly once.
//!
//! After each move the three organizations are checked on their new owner:
//! the capped one (its place in flight held across the move) hands out
//! nothing until the held item is acknowledged, the paused one nothing
//! until resumed, the rated one nothing (its bucket's state moved too).

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::{Cluster, Server, wait_until};
use redis::{Connection, Value};

fn slot_of(tenant: &str) -> u16 {
    dreamtown::cluster_slot::tenant_slot(tenant.as_bytes())
}

/// `count` tenant names, each in a different slot owned by node `owner`.
fn tenants_on(cluster: &Cluster, owner: usize, count: usize, label: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut slots = HashSet::new();
    for n in 0.. {
        let name = format!("{label}-{}-{n}", std::process::id());
        let slot = slot_of(&name);
        if cluster.owner_of_slot(slot) == owner && slots.insert(slot) {
            found.push(name);
            if found.len() == count {
                break;
            }
        }
    }
    found
}

fn call(con: &mut Connection, args: &[&str]) -> Result<Value, String> {
    common::cmd(args).query::<Value>(con).map_err(|error| format!("{error}"))
}

fn ok(con: &mut Connection, args: &[&str]) -> Value {
    call(con, args).unwrap_or_else(|error| panic!("{args:?}: {error}"))
}

fn bulk(value: Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        _ => None,
    }
}

fn processing(org: &str) -> String {
    format!("exocortex:dreams:{{{org}}}:processing")
}

fn llen(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("LLEN").arg(key).query(con).unwrap_or(0)
}

/// A `dreamtown_<name>` field of `INFO dreamtown`.
fn dreamtown_info(node: &Server, name: &str) -> Option<u64> {
    let text: String = redis::cmd("INFO").arg("dreamtown").query(&mut node.connect()).ok()?;
    let prefix = format!("dreamtown_{name}:");
    text.lines().find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
}

/// Three organizations on one node: capped at 1 with its place held (the
/// held payload returned), paused, and rated at one per hour with its
/// token taken; each with work ready.
struct Limited {
    capped: String,
    held: Vec<u8>,
    paused: String,
    rated: String,
}

fn set_up_limits(node: &Server, tenants: &[String]) -> Limited {
    let mut con = node.connect();
    let [capped, paused, rated] = [0, 1, 2].map(|at| tenants[at].clone());
    for org in [&capped, &paused, &rated] {
        for project in ["a", "b", "c"] {
            ok(&mut con, &["DREAMS.FIRE", org, project, "1"]);
        }
    }
    ok(&mut con, &["DREAMS.LIMIT", "SET", &capped, "CONCURRENCY", "1"]);
    let held = bulk(ok(&mut con, &["DREAMS.DRAIN", &capped, "0", "NOQUIET"])).expect("the capped org's first item");
    ok(&mut con, &["DREAMS.PAUSE", &paused]);
    ok(&mut con, &["DREAMS.LIMIT", "SET", &rated, "RATE", "1", "3600"]);
    assert!(bulk(ok(&mut con, &["DREAMS.DRAIN", &rated, "0", "NOQUIET"])).is_some(), "the rate's one token");
    Limited { capped, held, paused, rated }
}

/// On `node`, the new owner: every limit holds from the first command,
/// and lifts as it should.
fn check_limits_hold(node: &Server, limited: &Limited) {
    let mut con = node.connect();
    for org in [&limited.capped, &limited.paused, &limited.rated] {
        let drained = ok(&mut con, &["DREAMS.DRAIN", org, "0.2", "NOQUIET"]);
        assert_eq!(drained, Value::Nil, "{org}: nothing handed out on the new owner");
    }
    // The held item's acknowledgement frees the capped org's place.
    let mut ack: Vec<&[u8]> = vec![b"DREAMS.ACK", limited.capped.as_bytes(), &limited.held, b"SUCCESS"];
    let reply = {
        let mut cmd = redis::Cmd::new();
        for arg in ack.drain(..) {
            cmd.arg(arg);
        }
        cmd.query::<Value>(&mut con).expect("ACK on the new owner")
    };
    assert!(format!("{reply:?}").contains("acknowledged"), "{reply:?}");
    assert!(bulk(ok(&mut con, &["DREAMS.DRAIN", &limited.capped, "0.2", "NOQUIET"])).is_some());
    assert_eq!(ok(&mut con, &["DREAMS.DRAIN", &limited.capped, "0.2", "NOQUIET"]), Value::Nil, "the cap again");
    // RESUME on the new owner.
    assert!(matches!(ok(&mut con, &["DREAMS.RESUME", &limited.paused]), Value::Int(1)));
    assert!(bulk(ok(&mut con, &["DREAMS.DRAIN", &limited.paused, "0.2", "NOQUIET"])).is_some());
    // The rate's bucket moved empty.
    let state = ok(&mut con, &["DREAMS.LIMIT", "GET", &limited.rated]);
    assert_eq!(tokens_left(&state), Some(0), "{state:?}");
}

fn tokens_left(value: &Value) -> Option<i64> {
    let Value::Array(items) = value else { return None };
    items.chunks(2).find_map(|pair| match pair {
        [Value::BulkString(name), Value::Int(n)] if name == b"tokens_left" => Some(*n),
        _ => None,
    })
}

/// The manual procedure for one slot (as `redis-cli --cluster reshard`).
fn move_slot(cluster: &Cluster, slot: u16, from: usize, to: usize) {
    let (source, target) = (&cluster.nodes[from], &cluster.nodes[to]);
    let (source_id, target_id) = (source.node_id(), target.node_id());
    let (mut src, mut dst) = (source.connect(), target.connect());
    let ok = |reply: redis::RedisResult<String>, what: &str| assert_eq!(reply.as_deref(), Ok("OK"), "{what}");
    ok(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("IMPORTING").arg(&source_id).query(&mut dst), "IMPORTING");
    ok(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("MIGRATING").arg(&target_id).query(&mut src), "MIGRATING");
    loop {
        let keys: Vec<String> =
            redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(10).query(&mut src).expect("GETKEYSINSLOT");
        if keys.is_empty() {
            break;
        }
        let reply = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(target.port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query(&mut src);
        ok(reply, "MIGRATE");
    }
    for node in &cluster.nodes {
        let _: redis::RedisResult<String> =
            redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&target_id).query(&mut node.connect());
    }
}

#[test]
fn limits_move_with_a_manual_reshard() {
    let cluster = Cluster::start(3);
    let tenants = tenants_on(&cluster, 0, 3, "reshard");
    let limited = set_up_limits(&cluster.nodes[0], &tenants);
    for tenant in &tenants {
        move_slot(&cluster, slot_of(tenant), 0, 1);
    }
    cluster.wait_stable();
    assert_eq!(cluster.owner_of_slot(slot_of(&tenants[0])), 1);
    // The limits keys arrived by RESTORE: the target's index knows them.
    assert!(dreamtown_info(&cluster.nodes[1], "limits_indexed_orgs").unwrap_or(0) >= 3);
    check_limits_hold(&cluster.nodes[1], &limited);
}

/// `CLUSTER GETSLOTMIGRATIONS` shows the newest job in `state`.
fn newest_job_is(node: &Server, state: &str) -> bool {
    let Ok(Value::Array(jobs)) = redis::cmd("CLUSTER").arg("GETSLOTMIGRATIONS").query::<Value>(&mut node.connect())
    else {
        return false;
    };
    jobs.first().is_some_and(|job| format!("{job:?}").contains(&format!("\"{state}\"")))
}

#[test]
fn limits_move_with_atomic_slot_migration() {
    if !common::binary_version().at_least(common::ServerKind::Valkey, 9, 0) {
        eprintln!("skipped: this server has no atomic slot migration (CLUSTER MIGRATESLOTS needs Valkey 9 or newer)");
        return;
    }
    let cluster = Cluster::start(3);
    let tenants = tenants_on(&cluster, 0, 3, "asm");
    let limited = set_up_limits(&cluster.nodes[0], &tenants);
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("MIGRATESLOTS").arg("SLOTSRANGE");
    for tenant in &tenants {
        cmd.arg(slot_of(tenant)).arg(slot_of(tenant));
    }
    cmd.arg("NODE").arg(cluster.nodes[1].node_id());
    let reply: redis::RedisResult<String> = cmd.query(&mut cluster.nodes[0].connect());
    assert_eq!(reply.as_deref(), Ok("OK"));
    wait_until("the import completed", || newest_job_is(&cluster.nodes[1], "success"));
    wait_until("the export completed", || newest_job_is(&cluster.nodes[0], "success"));
    cluster.wait_stable();
    assert_eq!(cluster.owner_of_slot(slot_of(&tenants[0])), 1);
    check_limits_hold(&cluster.nodes[1], &limited);
    // The catch-up of the arrived slots found every limits key still
    // there (the paused org's went with its RESUME).
    wait_until("the target trusts its limits index", || {
        dreamtown_info(&cluster.nodes[1], "limits_index_trusted") == Some(1)
    });
    assert!(dreamtown_info(&cluster.nodes[1], "limits_indexed_orgs").unwrap_or(0) >= 2);
}

#[test]
fn a_cap_holds_across_a_coordinated_failover_under_load() {
    let cluster = Arc::new(Cluster::start_with_replicas(3, 1));
    let org = tenants_on(&cluster, 0, 1, "failover").remove(0);
    let cap = 2i64;
    let master = 0usize;
    let replica = (3..6)
        .find(|at| {
            let text: String =
                redis::cmd("INFO").arg("replication").query(&mut cluster.nodes[*at].connect()).unwrap_or_default();
            text.contains(&format!("master_port:{}", cluster.nodes[master].port))
        })
        .expect("the master's replica");
    let mut con = cluster.nodes[master].connect();
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", &cap.to_string()]);
    let fired: HashSet<String> = (0..120).map(|n| format!("p{n}")).collect();
    for project in &fired {
        ok(&mut con, &["DREAMS.FIRE", &org, project, "1"]);
    }
    // Sample the in-flight list on both nodes for as long as the test runs.
    let stop = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicI64::new(0));
    let samplers: Vec<_> = [master, replica]
        .into_iter()
        .map(|at| {
            let (cluster, stop, most, key) = (cluster.clone(), stop.clone(), most.clone(), processing(&org));
            thread::spawn(move || {
                let mut con = cluster.nodes[at].connect();
                let _: redis::RedisResult<Value> = redis::cmd("READONLY").query(&mut con);
                while !stop.load(Ordering::Relaxed) {
                    most.fetch_max(llen(&mut con, &key), Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Workers: drain (on whichever node serves the org), work, acknowledge.
    let delivered = Arc::new(Mutex::new(Vec::<String>::new()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (cluster, stop, delivered, org) = (cluster.clone(), stop.clone(), delivered.clone(), org.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let owner = [master, replica].into_iter().find(|at| {
                        let text: String = redis::cmd("INFO")
                            .arg("replication")
                            .query(&mut cluster.nodes[*at].connect())
                            .unwrap_or_default();
                        text.contains("role:master")
                    });
                    let Some(owner) = owner else { continue };
                    let Ok(mut con) = cluster.nodes[owner].try_connect() else { continue };
                    let Ok(Value::BulkString(payload)) = call(&mut con, &["DREAMS.DRAIN", &org, "0.2", "NOQUIET"])
                    else {
                        continue;
                    };
                    thread::sleep(Duration::from_millis(20));
                    let fire: serde_json::Value = serde_json::from_slice(&payload).expect("a fire");
                    let project = fire["region"]["project"].as_str().unwrap_or_default().to_owned();
                    // Acknowledged where the org is served now (retried
                    // across the failover until it answers).
                    loop {
                        let owner = [master, replica].into_iter().find(|at| {
                            let text: String = redis::cmd("INFO")
                                .arg("replication")
                                .query(&mut cluster.nodes[*at].connect())
                                .unwrap_or_default();
                            text.contains("role:master")
                        });
                        let Some(owner) = owner else { continue };
                        let mut cmd = redis::Cmd::new();
                        cmd.arg("DREAMS.ACK").arg(&org).arg(&payload).arg("SUCCESS");
                        match cmd.query::<Value>(&mut cluster.nodes[owner].connect()) {
                            Ok(reply) => {
                                assert!(format!("{reply:?}").contains("acknowledged"), "{reply:?}");
                                break;
                            }
                            Err(_) => thread::sleep(Duration::from_millis(20)),
                        }
                    }
                    delivered.lock().unwrap().push(project);
                }
            })
        })
        .collect();
    wait_until("some work done before the failover", || delivered.lock().unwrap().len() >= 20);
    cluster.fail_over_to(replica, slot_of(&org));
    wait_until("every fire delivered", || delivered.lock().unwrap().len() >= fired.len());
    stop.store(true, Ordering::Relaxed);
    for handle in workers.into_iter().chain(samplers) {
        handle.join().expect("thread");
    }
    let delivered = delivered.lock().unwrap().clone();
    let unique: HashSet<String> = delivered.iter().cloned().collect();
    assert_eq!(unique.len(), delivered.len(), "delivered twice: {delivered:?}");
    assert_eq!(unique, fired);
    let seen = most.load(Ordering::Relaxed);
    assert!((1..=cap).contains(&seen), "{seen} in flight at once, cap {cap}");
    // The new master rebuilt its limits index (a promotion's catch-up).
    wait_until("the new master trusts its limits index", || {
        dreamtown_info(&cluster.nodes[replica], "limits_index_trusted") == Some(1)
    });
}

/// The client crate sets and reads limits through a cluster connection:
/// `DREAMS.LIMIT <subcommand> <org>` is routed by the organization (its
/// second argument), to the node that owns it, with no redirect.
#[tokio::test]
async fn the_crate_sets_limits_through_a_cluster_connection() {
    use dreamtown_client::dreams::{LimitChange, QuietHours, RedisFireQueue};
    let cluster = Cluster::start(3);
    // On node 0: the subcommand names (SET, GET, CLEAR) hash to node 2, where
    // a client routing by the first argument would send them.
    let org = tenants_on(&cluster, 0, 1, "crate").remove(0);
    let mut queue = RedisFireQueue::new(cluster.connection().await, QuietHours::none(), org.clone());
    let moved = |cluster: &Cluster| -> Vec<u64> {
        cluster
            .nodes
            .iter()
            .map(|node| {
                let stats: String = redis::cmd("INFO").arg("errorstats").query(&mut node.connect()).unwrap_or_default();
                stats
                    .lines()
                    .find_map(|line| line.strip_prefix("errorstat_MOVED:count="))
                    .and_then(|count| count.trim().parse().ok())
                    .unwrap_or(0)
            })
            .collect()
    };
    // One call first, so whatever the connection's set-up costs is counted before.
    queue.limits().await.expect("LIMIT GET");
    let before = moved(&cluster);
    queue.set_limits(LimitChange::default().concurrency(3)).await.expect("LIMIT SET through the cluster");
    assert_eq!(queue.limits().await.expect("LIMIT GET").concurrency, Some(3));
    assert!(queue.pause().await.expect("PAUSE"));
    assert!(queue.resume().await.expect("RESUME"));
    let stored: Option<String> = redis::cmd("GET")
        .arg(format!("exocortex:dreams:{{{org}}}:limits"))
        .query(&mut cluster.nodes[0].connect())
        .expect("GET on the owner");
    assert_eq!(stored.as_deref(), Some("concurrency=3"));
    // Sent to the owner directly: no node answered MOVED for them.
    assert_eq!(moved(&cluster), before, "a DREAMS.LIMIT call was redirected");
}
