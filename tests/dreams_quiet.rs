//! Quiet hours (R-Dr14) in DREAMS.DRAIN: during the window an item not yet
//! marked is marked `quiet_deferred` and moved behind other work, once,
//! only while other work exists and the backlog is below
//! `dreamtown.quiet-backlog-min`; DRAIN carries on and returns the first
//! item that should run.
//!
//! Windows are computed from the server's clock at test time: a window
//! that starts at the current UTC hour and lasts two hours covers the whole
//! test even if an hour boundary passes; one that starts three hours later
//! covers none of it.

use crate::common;
use crate::dreams_support;

use common::{tenant, Server};
use dreams_support::*;

fn fire_all(dreams: &mut Dreams<'_>, projects: &[&str]) {
    for project in projects {
        assert_eq!(dreams.fire(project, 1, &[]), "queued");
    }
}

fn parsed(payloads: &[Vec<u8>]) -> Vec<(String, bool)> {
    payloads
        .iter()
        .map(|p| {
            let message = SeedFireMessage::parse(p);
            (message.region.project, message.quiet_deferred)
        })
        .collect()
}

#[test]
fn two_unmarked_items_are_both_marked_and_the_first_comes_back() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-two");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b"]);
    let original = dreams.ready();
    let payload = dreams.drain("1", &["QUIET", &covering]).expect("an item runs");
    let message = SeedFireMessage::parse(&payload);
    assert_eq!((message.region.project.as_str(), message.quiet_deferred), ("a", true));
    // The marked payload is the seed's serde output of the marked message.
    let mut expected = SeedFireMessage::parse(&original[0]);
    expected.quiet_deferred = true;
    assert_eq!(payload, expected.to_payload().into_bytes());
    assert!(String::from_utf8_lossy(&payload).ends_with(r#","quiet_deferred":true}"#));
    assert_eq!(dreams.processing(), [payload.as_slice()]);
    assert_eq!(parsed(&dreams.ready()), [("b".to_string(), true)]);
    assert_eq!(dreams.len(), (1, 0, 1), "nothing left in the deferred set");
    assert_eq!(info(dreams.con)["quiet_deferred"], 2);
    // Marked work runs next time, whatever the window.
    let next = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(parsed(&[next]), [("b".to_string(), true)]);
    assert_eq!(info(dreams.con)["quiet_deferred"], 2);
}

#[test]
fn a_marked_counted_fire_still_acknowledges() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-ack");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, NEVER_SECS);
    dreams.record("p", 1, 2, 0, &strs(&t));
    dreams.fire("other", 1, &[]);
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert!(SeedFireMessage::parse(&payload).quiet_deferred);
    assert_eq!(dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1, 1, NEVER_SECS))), ("acknowledged".into(), 0, 0));
    assert_eq!(dreams.len(), (1, 0, 0));
}

#[test]
fn a_lone_item_runs_at_once_in_quiet_hours() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-lone");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a"]);
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), false)]);
    assert_eq!(info(dreams.con)["quiet_deferred"], 0);
}

#[test]
fn deferred_items_count_as_other_work() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-deferred-work");
    let covering = window(&mut con, 0, 2);
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    let now = server_time(dreams.con);
    let _: () = redis::cmd("ZADD").arg(&keys.deferred).arg(now + 100_000).arg("future").query(dreams.con).unwrap();
    fire_all(&mut dreams, &["a"]);
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), true)], "moved behind the deferred item once, then run");
    assert_eq!(dreams.len(), (0, 1, 1));
}

#[test]
fn outside_the_window_the_head_runs_unmarked() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-outside");
    let outside = window(&mut con, 3, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b"]);
    let payload = dreams.drain("1", &["QUIET", &outside]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), false)]);
    assert_eq!(parsed(&dreams.ready()), [("b".to_string(), false)]);
}

#[test]
fn noquiet_ignores_the_configured_window() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-none");
    let covering = window(&mut con, 0, 2);
    set_config(&mut con, "quiet-hours", &covering);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b"]);
    let payload = dreams.drain("1", &["NOQUIET"]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), false)]);
    assert_eq!(info(dreams.con)["quiet_deferred"], 0);
}

#[test]
fn the_configured_window_applies_without_quiet() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-config");
    let covering = window(&mut con, 0, 2);
    let outside = window(&mut con, 3, 2);
    set_config(&mut con, "quiet-hours", &covering);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b"]);
    let payload = dreams.drain("1", &[]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), true)]);
    // QUIET overrides the configuration.
    fire_all(&mut dreams, &["c"]);
    let payload = dreams.drain("1", &["QUIET", &outside]).unwrap();
    assert_eq!(parsed(&[payload]), [("b".to_string(), true)], "already marked");
    let payload = dreams.drain("1", &["QUIET", &outside]).unwrap();
    assert_eq!(parsed(&[payload]), [("c".to_string(), false)]);
    // An empty setting means no quiet hours.
    set_config(dreams.con, "quiet-hours", "");
    fire_all(&mut dreams, &["d", "e"]);
    let payload = dreams.drain("1", &[]).unwrap();
    assert_eq!(parsed(&[payload]), [("d".to_string(), false)]);
}

#[test]
fn offset_shifts_the_local_hour() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-offset");
    // Two hours ahead of UTC, the local hour is HH+2.
    let ahead = window(&mut con, 2, 2);
    let behind = window(&mut con, -3, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b"]);
    let payload = dreams.drain("1", &["QUIET", &ahead]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), false)], "UTC is outside the shifted window");
    fire_all(&mut dreams, &["c"]);
    let payload = dreams.drain("1", &["QUIET", &ahead, "OFFSET", "120"]).unwrap();
    assert_eq!(parsed(&[payload]), [("b".to_string(), true)]);
    fire_all(&mut dreams, &["d", "e"]);
    dreams.take_one();
    let payload = dreams.drain("1", &["QUIET", &behind, "OFFSET", "-180"]).unwrap();
    assert_eq!(parsed(&[payload]), [("d".to_string(), true)]);
    // The configured offset applies to QUIET too, and OFFSET overrides it.
    set_config(dreams.con, "quiet-utc-offset", "120");
    dreams.take_one();
    fire_all(&mut dreams, &["f", "g"]);
    let payload = dreams.drain("1", &["QUIET", &ahead]).unwrap();
    assert_eq!(parsed(&[payload]), [("f".to_string(), true)]);
    dreams.take_one();
    fire_all(&mut dreams, &["h", "i"]);
    let payload = dreams.drain("1", &["QUIET", &ahead, "OFFSET", "0"]).unwrap();
    assert_eq!(parsed(&[payload]), [("h".to_string(), false)]);
}

#[test]
fn a_backlog_at_the_threshold_runs_anyway() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-backlog");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    // Default threshold 32: 32 items in total run in order.
    let projects: Vec<String> = (0..32).map(|i| format!("p{i:02}")).collect();
    fire_all(&mut dreams, &projects.iter().map(String::as_str).collect::<Vec<_>>());
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(parsed(&[payload]), [("p00".to_string(), false)]);
    // 31 items: short enough to reorder.
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    let (project, marked) = parsed(&[payload]).remove(0);
    assert!(marked, "{project}");
    assert_eq!(info(dreams.con)["quiet_deferred"], 31, "every unmarked item was marked once, then the first ran");
}

#[test]
fn the_backlog_threshold_is_configurable() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "quiet-backlog-min", "3");
    let org = tenant("quiet-backlog-config");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b", "c"]);
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), false)], "3 items meet the threshold");
    let payload = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(parsed(&[payload]), [("b".to_string(), true)], "2 items are below it");
    assert_eq!(parsed(&dreams.ready()), [("c".to_string(), true)]);
}

#[test]
fn a_window_wrapping_midnight_is_honoured() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("quiet-wrap");
    let hour = server_hour(&mut con);
    // A window that wraps midnight and leaves out only the hour after next.
    let wrapping = format!("{:02}-{:02}", (hour + 3) % 24, (hour + 2) % 24);
    let mut dreams = Dreams::new(&mut con, &org);
    fire_all(&mut dreams, &["a", "b"]);
    let payload = dreams.drain("1", &["QUIET", &wrapping]).unwrap();
    assert_eq!(parsed(&[payload]), [("a".to_string(), true)], "window {wrapping}");
}
