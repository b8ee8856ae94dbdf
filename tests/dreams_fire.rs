//! DREAMS.FIRE and the hard ceiling (R-Dr15): ready + deferred + in-flight
//! never exceed `dreamtown.queue-max`; at the ceiling the newest fire is
//! dropped, existing work is untouched, and recorded counters are kept.
//! Payloads are the seed's `FireMessage` JSON, byte for byte.

use crate::common;
use crate::dreams_support;

use common::{tenant, Server};
use dreams_support::*;

#[test]
fn explicit_fire_queues_the_seed_payload_byte_for_byte() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("fire-payload");
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.fire("web", 3, &["NODE", "node-a"]), "queued");
    let ready = dreams.ready();
    assert_eq!(ready.len(), 1);
    let message = SeedFireMessage::parse(&ready[0]);
    let fire_id = message.fire_id.clone().expect("explicit fires carry a fire id, as the seed's");
    assert!(is_uuid_v4(&fire_id), "{fire_id}");
    let expected = format!(
        r#"{{"region":{{"org":"{org}","project":"web","memory_type":3}},"fired_by":"node-a","fire_id":"{fire_id}"}}"#
    );
    assert_eq!(String::from_utf8(ready[0].clone()).unwrap(), expected);
    assert_eq!(message.to_payload().into_bytes(), ready[0], "the seed's serde writes the same bytes");
}

#[test]
fn fire_without_node_names_the_module() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("fire-node");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("p", 0, &[]);
    assert_eq!(SeedFireMessage::parse(&dreams.ready()[0]).fired_by, "dreamtown");
}

#[test]
fn fire_ids_are_unique_per_fire() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("fire-ids");
    let mut dreams = Dreams::new(&mut con, &org);
    for _ in 0..20 {
        dreams.fire("p", 1, &[]);
    }
    let mut ids: Vec<String> = dreams.ready().iter().map(|p| SeedFireMessage::parse(p).fire_id.unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20);
}

#[test]
fn recorded_fire_payload_is_byte_compatible_with_the_seed() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("record-payload");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(5, 100, 0, NEVER_SECS);
    let mut extra = vec!["NODE", "node-a"];
    extra.extend(strs(&t));
    assert_eq!(dreams.record("p", 3, 5, 0, &extra).0, "queued");
    let payload = dreams.ready().remove(0);
    let message = SeedFireMessage::parse(&payload);
    let fire_id = message.fire_id.clone().unwrap();
    assert!(is_uuid_v4(&fire_id));
    let expected = format!(
        r#"{{"region":{{"org":"{org}","project":"p","memory_type":3}},"fired_by":"node-a","fired_at":{{"memories_since_last_cycle":5,"edges_since_last_cycle":0,"seconds_since_last_cycle":0}},"fire_id":"{fire_id}"}}"#
    );
    assert_eq!(String::from_utf8(payload.clone()).unwrap(), expected);
    assert_eq!(message.to_payload().into_bytes(), payload);
}

#[test]
fn strings_are_escaped_as_serde_escapes_them() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("fire-escape");
    let mut dreams = Dreams::new(&mut con, &org);
    let project = "a\"b\\c/d\u{1}é\u{2028}";
    dreams.fire(project, 4_294_967_295, &["NODE", "n\tx"]);
    let payload = dreams.ready().remove(0);
    let message = SeedFireMessage::parse(&payload);
    assert_eq!(message.region.project, project);
    assert_eq!(message.region.memory_type, u32::MAX);
    assert_eq!(message.fired_by, "n\tx");
    assert_eq!(message.to_payload().into_bytes(), payload);
}

#[test]
fn the_ceiling_counts_ready_deferred_and_in_flight_and_drops_the_newest() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "queue-max", "4");
    let org = tenant("ceiling");
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b", "c"] {
        assert_eq!(dreams.fire(project, 1, &[]), "queued");
    }
    let in_flight = dreams.take_one();
    assert_eq!(SeedFireMessage::parse(&in_flight).region.project, "a");
    // One deferred item (as quiet hours would leave it), scored in the future.
    let _: () = redis::cmd("ZADD").arg(&keys.deferred).arg(i64::MAX / 2).arg("later").query(dreams.con).unwrap();
    assert_eq!(dreams.len(), (2, 1, 1));
    let before = dreams.ready();
    assert_eq!(dreams.fire("d", 1, &[]), "dropped");
    assert_eq!(dreams.ready(), before, "existing work is untouched");
    assert_eq!(dreams.len(), (2, 1, 1));
    // Freeing one slot anywhere admits one more fire.
    let _: () = redis::cmd("ZREM").arg(&keys.deferred).arg("later").query(dreams.con).unwrap();
    assert_eq!(dreams.fire("e", 1, &[]), "queued");
    assert_eq!(dreams.fire("f", 1, &[]), "dropped");
    let projects: Vec<String> = dreams.ready().iter().map(|p| SeedFireMessage::parse(p).region.project).collect();
    assert_eq!(projects, ["b", "c", "e"]);
}

#[test]
fn a_record_at_the_ceiling_drops_the_fire_but_keeps_its_counters() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "queue-max", "2");
    let org = tenant("ceiling-record");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("x", 1, &[]);
    dreams.fire("y", 1, &[]);
    let t = trigger(3, 100, 0, NEVER_SECS);
    let (outcome, memories, edges) = dreams.record("p", 1, 4, 2, &strs(&t));
    assert_eq!((outcome.as_str(), memories, edges), ("dropped", 4, 2));
    let counters = dreams.counters("p", 1);
    assert_eq!(counters.get("memories").map(String::as_str), Some("4"));
    assert_eq!(counters.get("edges").map(String::as_str), Some("2"));
    assert!(!counters.contains_key("pending"), "a dropped fire is not pending");
    assert_eq!(dreams.len(), (2, 0, 0));
    // Once there is room, the next record fires with everything retained.
    let done = dreams.take_one();
    assert_eq!(dreams.ack(&done, "SUCCESS", &[]).0, "acknowledged");
    let (outcome, memories, _) = dreams.record("p", 1, 1, 0, &strs(&t));
    assert_eq!((outcome.as_str(), memories), ("queued", 5));
    let fired = SeedFireMessage::parse(dreams.ready().last().unwrap());
    assert_eq!(fired.fired_at.unwrap().memories_since_last_cycle, 5);
    assert_eq!(fired.fired_at.unwrap().edges_since_last_cycle, 2);
}

#[test]
fn the_default_ceiling_is_1000() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ceiling-default");
    let keys = Keys::new(&org);
    // Fill 999 slots directly, then the module fires into the last one.
    let filler: Vec<String> = (0..999).map(|i| format!("item-{i}")).collect();
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg(&filler).query(&mut con).unwrap();
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.fire("p", 1, &[]), "queued");
    assert_eq!(dreams.fire("p", 1, &[]), "dropped");
    assert_eq!(dreams.len(), (1000, 0, 0));
}
