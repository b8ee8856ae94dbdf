//! DREAMS.RECORD and DREAMS.SETTLE: shared per-region counters that
//! saturate, one pending fire per region, thresholds by memories, edges or
//! age, the minimum interval, and exactly-once counting by event identity
//! and settled generation.
//!
//! Time is the server's clock: instead of sleeping, a test moves a region's
//! `last_success` into the past with HSET, as an earlier cycle would have.

use crate::common;
use crate::dreams_support;

use common::{tenant, Server};
use dreams_support::*;

fn set_last_success(dreams: &mut Dreams<'_>, project: &str, memory_type: u32, at: i64) {
    let key = dreams.keys.counters(project, memory_type);
    let _: () = redis::cmd("HSET").arg(key).arg("last_success").arg(at).query(dreams.con).unwrap();
}

#[test]
fn one_pending_fire_per_region() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("coalesce");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, NEVER_SECS);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)), ("queued".into(), 1, 0));
    let pending = dreams.counters("p", 1)["pending"].clone();
    for n in 2..=5 {
        assert_eq!(dreams.record("p", 1, 1, 1, &strs(&t)), ("accumulated".into(), n, n - 1));
    }
    assert_eq!(dreams.len(), (1, 0, 0), "one fire for the region, however many writes");
    assert_eq!(dreams.counters("p", 1)["pending"], pending);
    // Another region of the same organization has its own pending fire.
    assert_eq!(dreams.record("q", 1, 1, 0, &strs(&t)).0, "queued");
    assert_eq!(dreams.record("p", 2, 1, 0, &strs(&t)).0, "queued");
    assert_eq!(dreams.len(), (3, 0, 0));
    // While in flight, the region's fire is still pending: no second fire.
    let first = dreams.take_one();
    assert_eq!(SeedFireMessage::parse(&first).fire_id.unwrap(), pending);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "accumulated");
    assert_eq!(dreams.len(), (2, 0, 1));
}

#[test]
fn counters_saturate_at_u32_max() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("saturate");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(u32::MAX as u64, u32::MAX as u64, 0, NEVER_SECS);
    let max = 4_294_967_295u64;
    assert_eq!(dreams.record("p", 1, max - 1, 7, &strs(&t)), ("accumulated".into(), (max - 1) as i64, 7));
    assert_eq!(dreams.record("p", 1, max, max, &strs(&t)), ("queued".into(), max as i64, max as i64));
    assert_eq!(dreams.record("p", 1, max, max, &strs(&t)), ("accumulated".into(), max as i64, max as i64));
    let counters = dreams.counters("p", 1);
    assert_eq!(counters["memories"], "4294967295");
    assert_eq!(counters["edges"], "4294967295");
    let fired = SeedFireMessage::parse(&dreams.ready()[0]).fired_at.unwrap();
    assert_eq!((fired.memories_since_last_cycle, fired.edges_since_last_cycle), (u32::MAX, u32::MAX));
    // Beyond u32 is refused, not wrapped.
    let error = error_of(dreams.con, &["DREAMS.RECORD", &org, "p", "1", "4294967296", "0"]);
    assert!(error.starts_with("ERR memories"), "{error}");
}

#[test]
fn last_success_is_set_by_the_first_write_only() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("last-success");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(100, 100, 0, NEVER_SECS);
    let before = server_time(dreams.con);
    dreams.record("p", 1, 1, 0, &strs(&t));
    let after = server_time(dreams.con);
    let first = dreams.counter("p", 1, "last_success").expect("set on first write");
    assert!((before..=after).contains(&first), "{before} <= {first} <= {after}");
    set_last_success(&mut dreams, "p", 1, 1_000);
    dreams.record("p", 1, 1, 0, &strs(&t));
    assert_eq!(dreams.counter("p", 1, "last_success"), Some(1_000), "later writes keep it (HSETNX)");
}

#[test]
fn threshold_by_memories() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("by-memories");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(5, 1_000, 0, NEVER_SECS);
    assert_eq!(dreams.record("p", 1, 4, 999, &strs(&t)).0, "accumulated");
    assert_eq!(dreams.len(), (0, 0, 0));
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)), ("queued".into(), 5, 999));
    let fired = SeedFireMessage::parse(&dreams.ready()[0]).fired_at.unwrap();
    assert_eq!((fired.memories_since_last_cycle, fired.edges_since_last_cycle), (5, 999));
}

#[test]
fn threshold_by_edges() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("by-edges");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1_000, 3, 0, NEVER_SECS);
    assert_eq!(dreams.record("p", 1, 100, 2, &strs(&t)).0, "accumulated");
    assert_eq!(dreams.record("p", 1, 0, 1, &strs(&t)), ("queued".into(), 100, 3));
}

#[test]
fn threshold_by_age_floor() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("by-age");
    let mut dreams = Dreams::new(&mut con, &org);
    let now = server_time(dreams.con);
    set_last_success(&mut dreams, "p", 1, now - 100);
    // 100 s since the last cycle: below an age floor of 500, above one of 50.
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&trigger(1_000, 1_000, 10, 500))).0, "accumulated");
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&trigger(1_000, 1_000, 10, 50))).0, "queued");
    let fired = SeedFireMessage::parse(&dreams.ready()[0]).fired_at.unwrap();
    assert!((100..110).contains(&fired.seconds_since_last_cycle), "{fired:?}");
    assert_eq!(fired.memories_since_last_cycle, 0);
}

#[test]
fn an_age_floor_of_zero_fires_on_every_record_without_a_pending_fire() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("age-zero");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1_000, 1_000, 0, 0);
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&t)).0, "queued");
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&t)).0, "accumulated", "pending");
}

#[test]
fn nothing_fires_before_the_min_interval() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("min-interval");
    let mut dreams = Dreams::new(&mut con, &org);
    // Every threshold is met (age floor 0), but the min interval is not.
    let t = trigger(1, 1, 60, 0);
    for n in 1..=3 {
        assert_eq!(dreams.record("p", 1, 10, 10, &strs(&t)), ("accumulated".into(), 10 * n, 10 * n));
    }
    assert_eq!(dreams.len(), (0, 0, 0), "the first record never fires while the min interval is above 0");
    let now = server_time(dreams.con);
    set_last_success(&mut dreams, "p", 1, now - 30);
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&t)).0, "accumulated", "30 s < 60 s");
    set_last_success(&mut dreams, "p", 1, now - 61);
    assert_eq!(dreams.record("p", 1, 0, 0, &strs(&t)).0, "queued");
    let fired = SeedFireMessage::parse(&dreams.ready()[0]).fired_at.unwrap();
    assert_eq!(fired.memories_since_last_cycle, 30);
    assert!(fired.seconds_since_last_cycle >= 61);
}

#[test]
fn a_last_success_in_the_future_counts_as_zero_elapsed() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("future");
    let mut dreams = Dreams::new(&mut con, &org);
    let now = server_time(dreams.con);
    set_last_success(&mut dreams, "p", 1, now + 10_000);
    assert_eq!(dreams.record("p", 1, 5, 0, &strs(&trigger(1, 1, 1, 0))).0, "accumulated");
    assert_eq!(dreams.record("p", 1, 5, 0, &strs(&trigger(1, 1, 0, 0))).0, "queued");
    let fired = SeedFireMessage::parse(&dreams.ready()[0]).fired_at.unwrap();
    assert_eq!(fired.seconds_since_last_cycle, 0);
}

#[test]
fn configured_trigger_defaults_apply_without_trigger() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("defaults");
    let mut dreams = Dreams::new(&mut con, &org);
    // Defaults: 50 memories, 200 edges, 3600 s min interval, 7 days age floor.
    assert_eq!(dreams.record("p", 1, 60, 0, &[]).0, "accumulated", "the min interval holds the first record");
    let now = server_time(dreams.con);
    set_last_success(&mut dreams, "p", 1, now - 3_601);
    assert_eq!(dreams.record("p", 1, 0, 0, &[]).0, "queued");
    set_last_success(&mut dreams, "q", 1, now - 3_601);
    assert_eq!(dreams.record("q", 1, 49, 199, &[]).0, "accumulated");
    assert_eq!(dreams.record("q", 1, 0, 1, &[]).0, "queued");
}

#[test]
fn a_replayed_event_is_counted_once() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("event-dedupe");
    let mut dreams = Dreams::new(&mut con, &org);
    let mut extra = vec!["EVENT", "e-1", "GENERATION", "1"];
    let t = trigger(100, 100, 0, NEVER_SECS);
    extra.extend(strs(&t));
    assert_eq!(dreams.record("p", 1, 3, 2, &extra), ("accumulated".into(), 3, 2));
    let digest_before = digest(dreams.con);
    assert_eq!(dreams.record("p", 1, 3, 2, &extra), ("accumulated".into(), 3, 2), "replay");
    assert_eq!(dreams.record("p", 1, 9, 9, &extra), ("accumulated".into(), 3, 2), "same identity, any values");
    assert_eq!(digest(dreams.con), digest_before, "a replay writes nothing");
    let members: Vec<String> = redis::cmd("SMEMBERS").arg(dreams.keys.events("p", 1)).query(dreams.con).unwrap();
    assert_eq!(members, ["e-1"]);
    // The identity is per region.
    assert_eq!(dreams.record("q", 1, 3, 2, &extra), ("accumulated".into(), 3, 2));
    // A replayed event that would have crossed the threshold still fires nothing.
    let mut crossing = vec!["EVENT", "e-2", "GENERATION", "2"];
    let low = trigger(4, 100, 0, NEVER_SECS);
    crossing.extend(strs(&low));
    assert_eq!(dreams.record("p", 1, 1, 0, &crossing).0, "queued");
    assert!(!dreams.take_one().is_empty());
    assert_eq!(dreams.record("p", 1, 1, 0, &crossing), ("accumulated".into(), 4, 2));
    // Without EVENT nothing is deduplicated.
    assert_eq!(dreams.record("r", 1, 1, 0, &strs(&t)).1, 1);
    assert_eq!(dreams.record("r", 1, 1, 0, &strs(&t)).1, 2);
}

#[test]
fn settled_generations_fence_later_replays() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("generation");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(100, 100, 0, NEVER_SECS);
    let record = |dreams: &mut Dreams<'_>, event: &str, generation: u64| {
        let g = generation.to_string();
        let mut extra = vec!["EVENT", event, "GENERATION", &g];
        extra.extend(strs(&t));
        dreams.record("p", 1, 1, 0, &extra)
    };
    assert_eq!(record(&mut dreams, "e-1", 4).1, 1);
    dreams.settle("p", 1, "e-1", 5, &[]);
    let counters = dreams.counters("p", 1);
    assert_eq!(counters["settled_generation"], "5");
    let members: Vec<String> = redis::cmd("SMEMBERS").arg(dreams.keys.events("p", 1)).query(dreams.con).unwrap();
    assert!(members.is_empty(), "SETTLE forgets the identity: {members:?}");
    // Forgotten identity, but generation <= settled: still not counted.
    assert_eq!(record(&mut dreams, "e-1", 4), ("accumulated".into(), 1, 0));
    assert_eq!(record(&mut dreams, "e-9", 5), ("accumulated".into(), 1, 0), "equal to settled");
    assert_eq!(record(&mut dreams, "e-9", 6), ("accumulated".into(), 2, 0), "above settled counts");
    assert_eq!(record(&mut dreams, "e-9", 7), ("accumulated".into(), 2, 0), "identity remembered");
    let stats = info(dreams.con);
    assert_eq!(stats["records_deduplicated"], 3);
}

#[test]
fn settle_is_monotonic_and_retain_keeps_the_identity() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("settle");
    let mut dreams = Dreams::new(&mut con, &org);
    let mut extra = vec!["EVENT", "e-1", "GENERATION", "9"];
    let t = trigger(100, 100, 0, NEVER_SECS);
    extra.extend(strs(&t));
    dreams.record("p", 1, 1, 0, &extra);
    dreams.settle("p", 1, "e-1", 7, &["RETAIN"]);
    dreams.settle("p", 1, "e-1", 3, &["retain"]);
    assert_eq!(dreams.counter("p", 1, "settled_generation"), Some(7), "never lowered");
    let members: Vec<String> = redis::cmd("SMEMBERS").arg(dreams.keys.events("p", 1)).query(dreams.con).unwrap();
    assert_eq!(members, ["e-1"], "RETAIN keeps the identity");
    // Generation 9 > 7 but the identity is retained: still a replay.
    assert_eq!(dreams.record("p", 1, 1, 0, &extra), ("accumulated".into(), 1, 0));
    dreams.settle("p", 1, "e-1", 2, &[]);
    assert_eq!(dreams.counter("p", 1, "settled_generation"), Some(7));
    let members: Vec<String> = redis::cmd("SMEMBERS").arg(dreams.keys.events("p", 1)).query(dreams.con).unwrap();
    assert!(members.is_empty());
    assert_eq!(dreams.record("p", 1, 1, 0, &extra), ("accumulated".into(), 2, 0), "forgotten and above settled");
    // Settling a region never written creates only the fence.
    dreams.settle("fresh", 1, "x", 1, &[]);
    assert_eq!(
        dreams.counters("fresh", 1).into_iter().collect::<Vec<_>>(),
        [("settled_generation".to_string(), "1".to_string())]
    );
}

#[test]
fn counters_of_a_fresh_region_are_empty() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("fresh");
    let mut dreams = Dreams::new(&mut con, &org);
    assert!(dreams.counters("never", 1).is_empty());
    assert_eq!(dreams.len(), (0, 0, 0));
}
