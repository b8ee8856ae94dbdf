//! Async (swapdb) replica loading with the module loaded (issue 24): the
//! module declares `REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD`, so a
//! replica with `repl-diskless-load swapdb` that resyncs from the same
//! master loads the new dataset in the background (`async_loading:1` in `INFO persistence`)
//! while it serves the old one, module commands included; the swap (or
//! the abort) leaves it digest-equal to its master, and a promotion right
//! after still expires every lease.
//!
//! The forced interleaving, as in Redis's own `integration/replication`
//! test: the master kills its replica's link and overflows a tiny backlog
//! in one `MULTI`, so the replica must full-sync again with a matching
//! replication id (the condition for an async load); `rdb-key-save-delay`
//! slows the master's RDB so the load can be watched, and the replica
//! answers between every KiB it loads
//! (`loading-process-events-interval-bytes`).

use crate::common;
use crate::dreams_support;

use common::{tenant, wait_until, Server};
use dreams_support::*;
use redis::{Connection, Value};

fn replication(con: &mut Connection) -> String {
    redis::cmd("INFO").arg("replication").query(con).unwrap_or_default()
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(|v| v.trim().to_owned()))
}

fn persistence(con: &mut Connection) -> String {
    redis::cmd("INFO").arg("persistence").query(con).unwrap_or_default()
}

/// `INFO persistence`'s `async_loading:1`.
fn async_loading(con: &mut Connection) -> bool {
    field(&persistence(con), "async_loading").as_deref() == Some("1")
}

fn persistence_loading(con: &mut Connection) -> bool {
    field(&persistence(con), "loading").as_deref() == Some("1")
}

fn link_up(con: &mut Connection) -> bool {
    field(&replication(con), "master_link_status").as_deref() == Some("up")
}

/// Payloads in flight for `org` (`DREAMS.INFLIGHT`, a read command).
fn in_flight(con: &mut Connection, org: &str) -> Vec<Vec<u8>> {
    match ok(con, &["DREAMS.INFLIGHT", org]) {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| match item {
                Value::Array(pair) => match pair.into_iter().next() {
                    Some(Value::BulkString(payload)) => Some(payload),
                    _ => None,
                },
                _ => None,
            })
            .collect(),
        other => panic!("INFLIGHT replied {other:?}"),
    }
}

/// A master (diskless sync) and a swapdb replica in sync with it, each
/// with 2,000 filler keys of its own kind; the master holds `org`'s fire
/// in flight under a lease of `lease` seconds.
struct Pair {
    master: Server,
    replica: Server,
    org: String,
    payload: Vec<u8>,
}

/// The tests of this file one at a time: each times a replica's load against
/// its master's deliberately slowed transfer, and two pairs syncing at once
/// on a 2-core machine stretched those timings past what the tests assume
/// (an aborted load was seen to complete instead).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn pair(lease: &str) -> Pair {
    // Uncompressed values of 20 KB: the master's RDB child flushes its
    // buffer (16 KB) to the replica after every key, and a replica that
    // async-loads answers clients only as bytes arrive; with small or
    // compressible values a flush came every ~150 keys (1.5 s at 10 ms a
    // key), each probe of the test waited for one, and on a loaded machine
    // the whole transfer could end before the test had aborted it.
    let master = Server::start_with(&["--repl-diskless-sync", "yes", "--rdbcompression", "no"]);
    let replica =
        Server::start_with(&["--repl-diskless-load", "swapdb", "--loading-process-events-interval-bytes", "1024"]);
    let mut m = master.connect();
    let mut r = replica.connect();
    ok(&mut r, &["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
    wait_until("first sync", || link_up(&mut r));
    ok(&mut m, &["DEBUG", "POPULATE", "2000", "master", "20000"]);
    let org = tenant("async-load");
    let mut dreams = Dreams::new(&mut m, &org);
    assert_eq!(dreams.fire("p", 1, &[]), "queued");
    let payload = dreams.drain("0.01", &["NOQUIET", "LEASE", lease]).expect("the fire");
    wait_until("the replica has the lease", || in_flight(&mut r, &org) == vec![payload.clone()]);
    Pair { master, replica, org, payload }
}

/// Make the replica full-sync again with a matching replication id: kill
/// its link and overflow the backlog in one transaction; `then` adds
/// writes of the new dataset to the same transaction.
fn force_resync(m: &mut Connection, then: &[&[&str]]) {
    ok(m, &["MULTI"]);
    ok(m, &["CLIENT", "KILL", "TYPE", "replica"]);
    ok(m, &["CONFIG", "SET", "repl-backlog-size", "16384"]);
    let filler = "A".repeat(16384);
    for id in 0..10 {
        ok(m, &["SET", &format!("backlog-filler-{id}"), &filler]);
    }
    for command in then {
        ok(m, command);
    }
    ok(m, &["EXEC"]);
}

/// While async loading, the replica serves the old dataset: plain and
/// module reads, and it is not in (blocking) `loading`.
fn assert_serves_old(r: &mut Connection, org: &str, payload: &[u8], dbsize: i64) {
    assert!(!persistence_loading(r), "an async load, not a blocking one");
    assert_eq!(in_flight(r, org), vec![payload.to_vec()], "DREAMS.INFLIGHT answers from the old dataset");
    assert_eq!(int(&ok(r, &["DBSIZE"])), dbsize, "the old dataset");
    assert_eq!(int(&ok(r, &["EXISTS", "backlog-filler-0"])), 0, "not the new one");
    assert!(async_loading(r), "still loading: the reads above saw the old dataset during the load");
}

#[test]
fn a_swapdb_replica_loads_async_serves_old_data_swaps_and_a_promotion_after_expires_leases() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Pair { master, replica, org, payload } = pair("600");
    let mut m = master.connect();
    let mut r = replica.connect();
    let dbsize = int(&ok(&mut r, &["DBSIZE"]));
    // 2,000 keys at 1 ms each: the load takes about 2 s.
    ok(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "1000"]);
    // The new dataset: the old lease recovered, a new one granted for 8 s.
    let fresh = tenant("async-load-fresh");
    force_resync(
        &mut m,
        &[
            &["DREAMS.RECOVER", &org],
            &["DREAMS.FIRE", &fresh, "p", "1"],
            &["DREAMS.DRAIN", &fresh, "0.01", "NOQUIET", "LEASE", "8"],
        ],
    );
    let fresh_payload = lrange(&mut m, &Keys::new(&fresh).processing);
    assert_eq!(fresh_payload.len(), 1);
    wait_until("the replica async-loads", || async_loading(&mut r));
    assert_serves_old(&mut r, &org, &payload, dbsize);
    wait_until("the swap", || !async_loading(&mut r) && link_up(&mut r));
    ok(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    wait_until("digest-equal to the master", || digest(&mut m) == digest(&mut r));
    assert!(in_flight(&mut r, &org).is_empty(), "the new dataset");
    assert_eq!(in_flight(&mut r, &fresh), fresh_payload);
    // Promoted right after: the lease granted in the new dataset expires.
    drop(m);
    drop(master);
    assert_eq!(lrange(&mut r, &Keys::new(&fresh).processing), fresh_payload, "not expired before the promotion");
    ok(&mut r, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the promoted replica expires the lease", || lrange(&mut r, &Keys::new(&fresh).ready) == fresh_payload);
}

#[test]
fn an_aborted_async_load_keeps_the_old_data_then_resyncs_and_a_promotion_after_expires_leases() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Pair { master, replica, org, payload } = pair("600");
    let mut m = master.connect();
    let mut r = replica.connect();
    let dbsize = int(&ok(&mut r, &["DBSIZE"]));
    let old_digest = digest(&mut r);
    // 10 ms a key: 20 s, far longer than the test waits.
    ok(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    force_resync(&mut m, &[]);
    wait_until("the replica async-loads", || async_loading(&mut r));
    assert_serves_old(&mut r, &org, &payload, dbsize);
    // Abort the transfer: the next sync waits 5 s, so the replica can be
    // watched between the two.
    ok(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "5"]);
    ok(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]);
    wait_until("the load aborted", || !async_loading(&mut r));
    assert_eq!(digest(&mut r), old_digest, "the old dataset, unchanged");
    assert_eq!(in_flight(&mut r, &org), vec![payload.clone()]);
    // The next sync completes and the replica ends digest-equal.
    ok(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    ok(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    wait_until("the resync", || link_up(&mut r));
    wait_until("digest-equal to the master", || digest(&mut m) == digest(&mut r));
    // A lease for the promotion below, granted once the replica is in sync.
    ok(&mut m, &["DREAMS.FIRE", &org, "q", "1"]);
    let leased = Dreams::new(&mut m, &org).drain("0.01", &["NOQUIET", "LEASE", "3"]).expect("the fire");
    wait_until("the replica has the lease", || in_flight(&mut r, &org).contains(&leased));
    drop(m);
    drop(master);
    assert!(in_flight(&mut r, &org).contains(&leased), "not expired before the promotion");
    ok(&mut r, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the promoted replica expires the lease", || lrange(&mut r, &Keys::new(&org).ready).contains(&leased));
}
