//! DREAMS.ACK: success subtracts exactly the fired snapshot and sets
//! `last_success`; failure keeps the counters and requeues the same fire;
//! a stale or repeated acknowledgement changes no counter and takes its
//! exact payload out of the in-flight list; explicit fires are just removed;
//! a follow-up fire is queued in the same step, under the ceiling.

use crate::common;
use crate::dreams_support;

use common::{tenant, Server};
use dreams_support::*;

/// Thresholds that fire at 3 memories, with no min interval and no age floor.
fn fires_at_3() -> Vec<String> {
    trigger(3, 1_000, 0, NEVER_SECS)
}

/// A region with a drained fire of 3 memories and 2 more recorded since:
/// the in-flight payload.
fn in_flight(dreams: &mut Dreams<'_>) -> Vec<u8> {
    let t = fires_at_3();
    assert_eq!(dreams.record("p", 1, 3, 1, &strs(&t)).0, "queued");
    assert_eq!(dreams.record("p", 1, 2, 1, &strs(&t)), ("accumulated".into(), 5, 2));
    let payload = dreams.take_one();
    let fired = SeedFireMessage::parse(&payload).fired_at.unwrap();
    assert_eq!((fired.memories_since_last_cycle, fired.edges_since_last_cycle), (3, 1));
    payload
}

#[test]
fn success_subtracts_exactly_the_fired_snapshot() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-success");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    let last_success = dreams.counter("p", 1, "last_success").unwrap();
    let key = dreams.keys.counters("p", 1);
    let _: () = redis::cmd("HSET").arg(&key).arg("last_success").arg(last_success - 500).query(dreams.con).unwrap();
    let before = server_time(dreams.con);
    // Min interval 1: the 2 left over wait for the next cycle.
    let ack = dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1, 1, NEVER_SECS)));
    assert_eq!(ack, ("acknowledged".into(), 2, 1));
    let counters = dreams.counters("p", 1);
    assert_eq!(counters["memories"], "2");
    assert_eq!(counters["edges"], "1");
    assert!(!counters.contains_key("pending"));
    let at: i64 = counters["last_success"].parse().unwrap();
    assert!(at >= before && at <= server_time(dreams.con), "last_success is now: {at}");
    assert_eq!(dreams.len(), (0, 0, 0), "the payload left the in-flight list");
}

#[test]
fn success_never_goes_below_zero() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-floor");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    let key = dreams.keys.counters("p", 1);
    let _: () = redis::cmd("HSET").arg(&key).arg("memories").arg(1).arg("edges").arg(0).query(dreams.con).unwrap();
    assert_eq!(dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1, 1, NEVER_SECS))), ("acknowledged".into(), 0, 0));
}

#[test]
fn success_requeues_at_once_only_with_a_zero_min_interval() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-requeue");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    let old_id = SeedFireMessage::parse(&payload).fire_id.unwrap();
    let ack = dreams.ack(
        &payload,
        "SUCCESS",
        &["NODE", "acker"].iter().copied().chain(strs(&trigger(2, 1_000, 0, NEVER_SECS))).collect::<Vec<_>>(),
    );
    assert_eq!(ack, ("requeued".into(), 2, 1));
    let ready = dreams.ready();
    assert_eq!(ready.len(), 1);
    let again = SeedFireMessage::parse(&ready[0]);
    let new_id = again.fire_id.clone().unwrap();
    assert_ne!(new_id, old_id, "a success's follow-up is a new fire");
    assert!(is_uuid_v4(&new_id));
    assert_eq!(dreams.counters("p", 1)["pending"], new_id);
    assert_eq!(again.fired_by, "acker");
    let fired = again.fired_at.unwrap();
    assert_eq!(
        (fired.memories_since_last_cycle, fired.edges_since_last_cycle, fired.seconds_since_last_cycle),
        (2, 1, 0)
    );
    assert_eq!(again.to_payload().into_bytes(), ready[0], "seed-compatible bytes");
    assert_eq!(info(dreams.con)["fired_ack_requeue"], 1);
}

#[test]
fn failure_keeps_the_counters_and_requeues_the_same_fire() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-failure");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    let message = SeedFireMessage::parse(&payload);
    let last_success = dreams.counter("p", 1, "last_success");
    let ack = dreams.ack(&payload, "FAILURE", &["NODE", "retrier"]);
    assert_eq!(ack, ("requeued".into(), 5, 2), "failure always retries");
    let counters = dreams.counters("p", 1);
    assert_eq!(counters["memories"], "5");
    assert_eq!(counters["pending"], message.fire_id.clone().unwrap());
    assert_eq!(dreams.counter("p", 1, "last_success"), last_success, "failure keeps last_success");
    assert_eq!(dreams.len(), (1, 0, 0));
    let again = SeedFireMessage::parse(&dreams.ready()[0]);
    assert_eq!(again.fire_id, message.fire_id, "the same identity: a failure may be an ambiguous success");
    assert_eq!(again.fired_by, "retrier");
    let fired = again.fired_at.unwrap();
    assert_eq!((fired.memories_since_last_cycle, fired.edges_since_last_cycle), (3, 1), "the fired snapshot");
    // The retried fire acknowledges normally.
    let retried = dreams.take_one();
    assert_eq!(dreams.ack(&retried, "SUCCESS", &strs(&trigger(1, 1, 1, NEVER_SECS))), ("acknowledged".into(), 2, 1));
}

#[test]
fn an_ack_without_node_keeps_the_payload_s_node() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-node");
    let mut dreams = Dreams::new(&mut con, &org);
    let mut extra = vec!["NODE", "origin"];
    let t = fires_at_3();
    extra.extend(strs(&t));
    dreams.record("p", 1, 3, 0, &extra);
    let payload = dreams.take_one();
    dreams.ack(&payload, "FAILURE", &[]);
    assert_eq!(SeedFireMessage::parse(&dreams.ready()[0]).fired_by, "origin");
}

#[test]
fn a_repeated_ack_is_stale_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-repeat");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    let quiet = trigger(1, 1, 1, NEVER_SECS);
    assert_eq!(dreams.ack(&payload, "SUCCESS", &strs(&quiet)).0, "acknowledged");
    let before = digest(dreams.con);
    assert_eq!(dreams.ack(&payload, "SUCCESS", &strs(&quiet)), ("stale".into(), 0, 0));
    assert_eq!(dreams.ack(&payload, "FAILURE", &strs(&quiet)), ("stale".into(), 0, 0));
    assert_eq!(digest(dreams.con), before);
    assert_eq!(info(dreams.con)["acks_stale"], 2);
}

#[test]
fn a_stale_ack_removes_its_exact_payload_from_processing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-stale");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    // Another fire became the region's pending one meanwhile.
    let key = dreams.keys.counters("p", 1);
    let _: () = redis::cmd("HSET").arg(&key).arg("pending").arg("someone-else").query(dreams.con).unwrap();
    dreams.fire("other", 1, &[]);
    let other = dreams.take_one();
    let counters = dreams.counters("p", 1);
    assert_eq!(dreams.processing(), [payload.clone(), other.clone()]);
    assert_eq!(dreams.ack(&payload, "SUCCESS", &[]), ("stale".into(), 0, 0));
    assert_eq!(dreams.counters("p", 1), counters, "no counter changed");
    assert_eq!(dreams.processing(), [other], "only the exact payload left");
    // A counted payload without a fire id is stale too, and leaves as well.
    let mut orphan = SeedFireMessage::parse(&payload);
    orphan.fire_id = None;
    let orphan = orphan.to_payload();
    let _: () = redis::cmd("RPUSH").arg(&dreams.keys.processing).arg(&orphan).query(dreams.con).unwrap();
    assert_eq!(dreams.ack(orphan.as_bytes(), "FAILURE", &[]), ("stale".into(), 0, 0));
    assert_eq!(dreams.len(), (0, 0, 1));
    assert_eq!(dreams.counters("p", 1), counters);
}

#[test]
fn an_ack_removes_one_copy_only() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-one-copy");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("p", 1, &[]);
    let payload = dreams.take_one();
    let _: () = redis::cmd("RPUSH").arg(&dreams.keys.processing).arg(&payload).query(dreams.con).unwrap();
    assert_eq!(dreams.ack(&payload, "SUCCESS", &[]).0, "acknowledged");
    assert_eq!(dreams.processing(), [payload.as_slice()]);
    assert_eq!(dreams.ack(&payload, "SUCCESS", &[]).0, "acknowledged");
    assert_eq!(dreams.ack(&payload, "SUCCESS", &[]).0, "stale");
}

#[test]
fn explicit_fire_payloads_are_just_removed() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-fire");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, 0);
    dreams.record("p", 1, 7, 0, &strs(&t));
    let counted = dreams.take_one();
    dreams.fire("p", 1, &[]);
    dreams.fire("p", 1, &[]);
    let first = dreams.take_one();
    let second = dreams.take_one();
    let counters = dreams.counters("p", 1);
    assert_eq!(dreams.ack(&first, "SUCCESS", &strs(&t)), ("acknowledged".into(), 0, 0));
    assert_eq!(
        dreams.ack(&second, "FAILURE", &strs(&t)),
        ("acknowledged".into(), 0, 0),
        "no retry for an explicit fire"
    );
    assert_eq!(dreams.counters("p", 1), counters, "explicit fires own no counters");
    assert_eq!(dreams.processing(), [counted]);
    assert_eq!(dreams.len(), (0, 0, 1));
    assert_eq!(dreams.ack(&first, "SUCCESS", &[]), ("stale".into(), 0, 0), "already removed");
}

#[test]
fn a_requeue_is_admitted_by_the_slot_its_own_ack_frees() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "queue-max", "2");
    let org = tenant("ack-ceiling");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.record("p", 1, 3, 0, &strs(&fires_at_3()));
    let payload = dreams.take_one();
    dreams.fire("other", 1, &[]);
    assert_eq!(dreams.len(), (1, 0, 1), "at the ceiling");
    assert_eq!(dreams.ack(&payload, "FAILURE", &[]).0, "requeued", "the acked item's slot admits its retry");
    assert_eq!(dreams.len(), (2, 0, 0));
}

#[test]
fn a_requeue_at_the_ceiling_is_dropped_and_keeps_the_counters() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "queue-max", "3");
    let org = tenant("ack-drop");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = fires_at_3();
    dreams.record("p", 1, 3, 0, &strs(&t));
    let payload = dreams.take_one();
    dreams.fire("x", 1, &[]);
    dreams.fire("y", 1, &[]);
    // Full even without the acked item's slot (the ceiling was lowered).
    set_config(dreams.con, "queue-max", "2");
    let ack = dreams.ack(&payload, "FAILURE", &[]);
    assert_eq!(ack, ("dropped".into(), 3, 0));
    let counters = dreams.counters("p", 1);
    assert_eq!(counters["memories"], "3");
    assert!(!counters.contains_key("pending"), "nothing is pending any more");
    assert_eq!(dreams.len(), (2, 0, 0));
    let stats = info(dreams.con);
    assert_eq!(stats["dropped_capacity_ack"], 1);
    // With room again, the next record fires with the retained counters.
    let x = dreams.take_one();
    dreams.ack(&x, "SUCCESS", &[]);
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&t)), ("queued".into(), 3, 0));
}

#[test]
fn an_ack_after_recover_counts_and_leaves_the_recovered_copy() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-recovered");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    assert_eq!(dreams.recover(), 1);
    let quiet = trigger(1, 1, 1, NEVER_SECS);
    // The dead worker's ack still matches the pending fire (as in the seed).
    assert_eq!(dreams.ack(&payload, "SUCCESS", &strs(&quiet)), ("acknowledged".into(), 2, 1));
    assert_eq!(dreams.len(), (1, 0, 0));
    let again = dreams.take_one();
    assert_eq!(again, payload);
    assert_eq!(dreams.ack(&again, "SUCCESS", &strs(&quiet)), ("stale".into(), 0, 0));
    assert_eq!(dreams.len(), (0, 0, 0));
    assert_eq!(dreams.counter("p", 1, "memories"), Some(2));
}

#[test]
fn ack_uses_configured_trigger_defaults() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "min-interval", "0");
    set_config(&mut con, "memory-threshold", "2");
    let org = tenant("ack-defaults");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = in_flight(&mut dreams);
    assert_eq!(dreams.ack(&payload, "SUCCESS", &[]).0, "requeued", "2 left >= 2 with no min interval");
    let payload = dreams.take_one();
    set_config(dreams.con, "memory-threshold", "3");
    assert_eq!(dreams.ack(&payload, "SUCCESS", &[]), ("acknowledged".into(), 0, 0));
}
