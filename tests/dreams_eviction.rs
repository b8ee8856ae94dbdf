//! A region whose pending fire was lost with every queue key of its
//! organization (evicted under an `allkeys-*` policy; here deleted, which
//! is what eviction does to a key) fires again on the next `DREAMS.RECORD`
//! that is due, instead of answering `accumulated` forever (issue 32,
//! point 11). The stale `pending` is cleared as a replicated effect
//! (`INFO`: `stale_pending_cleared`); while any key that could hold the
//! fire exists (ready, in flight, deferred), nothing changes.

use crate::common;
use crate::dreams_support;

use common::{tenant, wait_until, Server};
use dreams_support::*;

const NEVER_SECS: u64 = 604_800;

fn cleared(con: &mut redis::Connection) -> u64 {
    let info = text(&ok(con, &["INFO", "dreamtown"]));
    info.lines()
        .find_map(|line| line.strip_prefix("dreamtown_stale_pending_cleared:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no stale_pending_cleared in INFO: {info}"))
}

#[test]
fn a_region_whose_queue_was_evicted_fires_again() {
    let server = Server::start();
    let replica = server.start_replica();
    let mut con = server.connect();
    let org = tenant("evicted");
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, NEVER_SECS);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
    let first = dreams.counters("p", 1)["pending"].clone();
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "accumulated", "the fire is still queued");
    let before = cleared(dreams.con);

    // The ready list is gone (nothing in flight, nothing deferred).
    ok(dreams.con, &["DEL", &keys.ready]);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
    let second = dreams.counters("p", 1)["pending"].clone();
    assert_ne!(second, first);
    assert_eq!(dreams.len(), (1, 0, 0));
    assert_eq!(cleared(dreams.con) - before, 1);

    // In flight, then the in-flight list is gone.
    let taken = dreams.take_one();
    assert!(String::from_utf8_lossy(&taken).contains(&second));
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "accumulated", "in flight");
    ok(dreams.con, &["DEL", &keys.processing]);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
    assert_eq!(cleared(dreams.con) - before, 2);

    // Any key that could hold the fire keeps the region waiting for it.
    ok(dreams.con, &["DEL", &keys.ready]);
    ok(dreams.con, &["ZADD", &keys.deferred, "1", "someone else's"]);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "accumulated", "a deferred set exists");
    assert_eq!(cleared(dreams.con) - before, 2);

    // The replica reproduces the recovery.
    wait_until("the replica caught up", || server.digest() == replica.digest());
}

#[test]
fn a_queue_expired_under_a_volatile_policy_is_recovered_too() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("expired-queue");
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, NEVER_SECS);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
    ok(dreams.con, &["PEXPIRE", &keys.ready, "1"]);
    wait_until("the ready list expired", || int(&ok(dreams.con, &["EXISTS", &keys.ready])) == 0);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
}
