//! The seeds' whole input domain (issue 33): every value exocortex-dreams'
//! and tinytown's types let a caller pass reaches DREAMS.* and TOWN.*
//! without a refusal, and answers as the seed would: `u32` hours and days
//! in `TRIGGER` (the seed's "never" is `u32::MAX` days, 371,085,174,374,400
//! seconds), `u64` delivery generations, and blocking timeouts up to what
//! the seeds' BLMOVE/BRPOP accept (Redis's own bound).

use crate::common;
use crate::dreams_support;

use common::{tenant, Server};
use dreams_support::*;

/// `u32::MAX` days and hours in seconds: what the seed sends for "never".
const SEED_NEVER_AGE: u64 = u32::MAX as u64 * 86_400;
const SEED_NEVER_INTERVAL: u64 = u32::MAX as u64 * 3_600;

#[test]
fn trigger_takes_the_seeds_never_and_answers_as_the_seed() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("seed-never");
    let mut dreams = Dreams::new(&mut con, &org);
    // fire_live.rs's trigger: two memories fire, edges and age never do.
    let t = trigger(2, u64::from(u32::MAX), 0, SEED_NEVER_AGE);
    assert_eq!(dreams.record("p", 3, 1, 0, &strs(&t)), ("accumulated".into(), 1, 0));
    assert_eq!(dreams.record("p", 3, 1, 0, &strs(&t)), ("queued".into(), 2, 0));
    let payload = dreams.take_one();
    assert_eq!(dreams.ack(&payload, "SUCCESS", &strs(&t)), ("acknowledged".into(), 0, 0));
    // A minimum interval of u32::MAX hours: the threshold is met, but the
    // interval never passes, so the region never fires (as the seed's Lua).
    let slow = trigger(1, 1, SEED_NEVER_INTERVAL, SEED_NEVER_AGE);
    assert_eq!(dreams.record("q", 3, 5, 5, &strs(&slow)), ("accumulated".into(), 5, 5));
    // Any u64 is taken and compared exactly.
    let max = trigger(1, 1, u64::MAX, u64::MAX);
    assert_eq!(dreams.record("q", 3, 1, 0, &strs(&max)), ("accumulated".into(), 6, 5));
    assert_eq!(dreams.len(), (0, 0, 0));
    // Beyond u64 nothing a seed sends: refused, nothing changed.
    let refused = error_of(
        dreams.con,
        &["DREAMS.RECORD", &org, "q", "3", "1", "0", "TRIGGER", "1", "1", "0", "18446744073709551616"],
    );
    assert!(
        refused.starts_with("ERR age floor (seconds) must be an integer from 0 to 18446744073709551615"),
        "{refused}"
    );
    assert_eq!(dreams.counters("q", 3)["memories"], "6");
}

#[test]
fn one_trip_ack_takes_the_seeds_never_too() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("seed-never-drain");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, SEED_NEVER_AGE);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
    let payload = dreams.take_one();
    let mut args: Vec<&[u8]> = vec![b"DREAMS.DRAIN", org.as_bytes(), b"0.01", b"NOQUIET", b"ACK", &payload, b"FAILURE"];
    let tail = strs(&t);
    args.extend(tail.iter().map(|a| a.as_bytes()));
    // A failure requeues the same fire, which this call then drains.
    let reply = call_bytes(dreams.con, &args).unwrap_or_else(|e| panic!("DRAIN ... ACK refused: {e}"));
    assert!(matches!(reply, redis::Value::Array(ref items) if items.len() == 2), "{reply:?}");
    assert_eq!(dreams.len(), (0, 0, 1));
}

#[test]
fn generations_take_every_u64() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("seed-generation");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(u64::from(u32::MAX), u64::from(u32::MAX), 0, SEED_NEVER_AGE);
    let with_event = |dreams: &mut Dreams<'_>, event: &str, generation: &str| {
        let mut extra = vec!["EVENT", event, "GENERATION", generation];
        extra.extend(strs(&t));
        dreams.record("p", 1, 1, 0, &extra)
    };
    assert_eq!(with_event(&mut dreams, "a", "18446744073709551615"), ("accumulated".into(), 1, 0));
    assert_eq!(with_event(&mut dreams, "a", "18446744073709551615"), ("accumulated".into(), 1, 0), "counted once");
    ok(dreams.con, &["DREAMS.SETTLE", &org, "p", "1", "a", "18446744073709551615"]);
    // Settled at the top: every later delivery of any generation is fenced,
    // as the seed's settled_generation fences it.
    assert_eq!(with_event(&mut dreams, "b", "9223372036854775807"), ("accumulated".into(), 1, 0));
    assert_eq!(dreams.counters("p", 1)["memories"], "1");
    let refused = error_of(dreams.con, &["DREAMS.SETTLE", &org, "p", "1", "a", "18446744073709551616"]);
    assert!(
        refused
            .starts_with("ERR Dreams delivery generation must be positive (an integer from 1 to 18446744073709551615)"),
        "{refused}"
    );
}

#[test]
fn blocking_timeouts_reach_redis_own_bound() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("seed-timeout");
    // 9e15 s: a Duration the seed's BLMOVE takes (Redis accepts up to
    // LLONG_MAX ms less now). With work ready the call answers at once.
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1", "NODE", "n"]);
    let reply = ok(&mut con, &["DREAMS.DRAIN", &org, "9000000000000000", "NOQUIET"]);
    assert!(matches!(reply, redis::Value::BulkString(_)), "{reply:?}");
    let message = r#"{"id":"4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d5e11","from":"lead","to":"worker-1","type":"task","description":"Write the parser","priority":"normal","created_at":"2025-01-01T09:00:00Z","correlation_id":null}"#;
    let town = tenant("seed-timeout-town");
    ok(&mut con, &["TOWN.SEND", &town, message]);
    let reply = ok(&mut con, &["TOWN.RECV", &town, "worker-1", "BLOCK", "9000000000000000"]);
    assert!(matches!(reply, redis::Value::Array(ref items) if items.len() == 1), "{reply:?}");
    // Past Redis's bound (BLPOP refuses it too): refused.
    let refused = error_of(&mut con, &["DREAMS.DRAIN", &org, "1e16", "NOQUIET"]);
    assert!(refused.starts_with("ERR timeout is not a float or out of range"), "{refused}");
}

#[test]
fn trigger_configs_take_the_seeds_never() {
    let server = Server::start();
    let mut con = server.connect();
    for name in ["dreamtown.age-floor", "dreamtown.min-interval"] {
        ok(&mut con, &["CONFIG", "SET", name, &SEED_NEVER_AGE.to_string()]);
        let got: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(&mut con).unwrap();
        assert_eq!(got, vec![name.to_owned(), SEED_NEVER_AGE.to_string()]);
    }
    // With the configured never and a zero interval, only counts fire.
    ok(&mut con, &["CONFIG", "SET", "dreamtown.min-interval", "0"]);
    ok(&mut con, &["CONFIG", "SET", "dreamtown.memory-threshold", "2"]);
    let org = tenant("seed-never-config");
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.record("p", 1, 1, 0, &[]).0, "accumulated");
    assert_eq!(dreams.record("p", 1, 1, 0, &[]).0, "queued");
}
