//! Module configuration and INFO: every `dreamtown.*` setting through
//! CONFIG GET/SET (bad values refused, the old value kept), through
//! `loadmodule` arguments and `MODULE LOADEX ... CONFIG`, a bad load
//! argument failing the load, the settings taking effect, and the
//! `INFO dreamtown` totals.

use crate::common;
use crate::dreams_support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{module_path, tenant, Server, DEADLINE};
use dreams_support::*;
use redis::Connection;

const DEFAULTS: [(&str, &str); 11] = [
    ("queue-max", "1000"),
    ("catch-up-keys-per-turn", "10000"),
    ("lease", "0"),
    ("town-lease", "0"),
    ("quiet-hours", "02-06"),
    ("quiet-utc-offset", "0"),
    ("quiet-backlog-min", "32"),
    ("memory-threshold", "50"),
    ("edge-threshold", "200"),
    ("min-interval", "3600"),
    ("age-floor", "604800"),
];

fn get_config(con: &mut Connection, name: &str) -> String {
    let reply = ok(con, &["CONFIG", "GET", &format!("dreamtown.{name}")]);
    let pairs = pairs(&reply);
    pairs.get(&format!("dreamtown.{name}")).cloned().unwrap_or_else(|| panic!("no dreamtown.{name}: {reply:?}"))
}

fn project_of(payload: &[u8]) -> String {
    SeedFireMessage::parse(payload).region.project
}

/// Does redis-server refuse to start with these module arguments? It
/// listens on a private unix socket only: it either exits (the load
/// failed), or answers PING there (it loaded, and is stopped).
fn load_fails(module_args: &[&str]) -> bool {
    let dir = std::env::temp_dir().join(format!("dreamtown-badload-{}-{}", std::process::id(), tenant("d")));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("redis.sock");
    let mut child = Command::new(common::server_bin())
        .args(["--port", "0", "--save", "", "--appendonly", "no", "--unixsocket"])
        .arg(&socket)
        .arg("--dir")
        .arg(&dir)
        .arg("--loadmodule")
        .arg(module_path())
        .args(module_args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server");
    let answers = || -> bool {
        let Ok(mut stream) = UnixStream::connect(&socket) else { return false };
        let mut reply = [0u8; 5];
        stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG"
    };
    let started = Instant::now();
    let failed = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break !status.success();
        }
        if answers() {
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-server with {module_args:?} neither exited nor answered");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = std::fs::remove_dir_all(&dir);
    failed
}

#[test]
fn every_setting_has_its_default() {
    let server = Server::start();
    let mut con = server.connect();
    for (name, default) in DEFAULTS {
        assert_eq!(get_config(&mut con, name), default, "{name}");
    }
    let all = pairs(&ok(&mut con, &["CONFIG", "GET", "dreamtown.*"]));
    assert_eq!(all.len(), DEFAULTS.len(), "{all:?}");
}

#[test]
fn every_setting_can_be_set_and_bad_values_are_refused() {
    let server = Server::start();
    let mut con = server.connect();
    let cases: [(&str, &[&str], &[&str]); 8] = [
        ("queue-max", &["1", "5", "1000000000"], &["0", "-1", "abc", "1000000001", "", "1.5"]),
        ("quiet-hours", &["23-07", "", "00-23", "02-06"], &["2-06", "24-06", "02-02", "0206", "ab-cd", "02-06-08"]),
        ("quiet-utc-offset", &["-1439", "1439", "90", "0"], &["1440", "-1440", "x"]),
        ("quiet-backlog-min", &["0", "3", "1000000000"], &["-1", "x", "1000000001"]),
        ("memory-threshold", &["0", "4294967295", "7"], &["-1", "4294967296", "x"]),
        ("edge-threshold", &["0", "4294967295", "9"], &["-1", "4294967296", "x"]),
        ("min-interval", &["0", "371085174374400", "60"], &["-1", "9223372036854775808", "x"]),
        ("age-floor", &["0", "371085174374400", "86400"], &["-1", "9223372036854775808", "x"]),
    ];
    for (name, good, bad) in cases {
        let key = format!("dreamtown.{name}");
        for value in good {
            set_config(&mut con, name, value);
            assert_eq!(get_config(&mut con, name), *value, "{name}");
        }
        let kept = get_config(&mut con, name);
        for value in bad {
            let reply = call(&mut con, &["CONFIG", "SET", &key, value]);
            assert!(reply.is_err(), "CONFIG SET {key} {value:?} accepted");
            assert_eq!(get_config(&mut con, name), kept, "{name} unchanged after {value:?}");
        }
    }
}

#[test]
fn trigger_settings_take_effect_at_once() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "min-interval", "0");
    set_config(&mut con, "memory-threshold", "2");
    set_config(&mut con, "edge-threshold", "3");
    set_config(&mut con, "age-floor", &NEVER_SECS.to_string());
    let org = tenant("config-trigger");
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.record("m", 1, 1, 0, &[]).0, "accumulated");
    assert_eq!(dreams.record("m", 1, 1, 0, &[]).0, "queued", "memory-threshold 2");
    assert_eq!(dreams.record("e", 1, 0, 2, &[]).0, "accumulated");
    assert_eq!(dreams.record("e", 1, 0, 1, &[]).0, "queued", "edge-threshold 3");
    set_config(dreams.con, "age-floor", "0");
    assert_eq!(dreams.record("a", 1, 0, 0, &[]).0, "queued", "age-floor 0 fires at once");
    set_config(dreams.con, "min-interval", "60");
    assert_eq!(dreams.record("i", 1, 100, 100, &[]).0, "accumulated", "min-interval 60 holds a first record");
}

#[test]
fn loadmodule_arguments_set_the_configuration() {
    let server = Server::start_with_module_args(
        &[],
        &[
            "queue-max",
            "5",
            "quiet-hours",
            "23-07",
            "quiet-utc-offset",
            "-60",
            "quiet-backlog-min",
            "4",
            "memory-threshold",
            "1",
            "edge-threshold",
            "2",
            "min-interval",
            "0",
            "age-floor",
            "99",
        ],
    );
    let mut con = server.connect();
    for (name, value) in [
        ("queue-max", "5"),
        ("quiet-hours", "23-07"),
        ("quiet-utc-offset", "-60"),
        ("quiet-backlog-min", "4"),
        ("memory-threshold", "1"),
        ("edge-threshold", "2"),
        ("min-interval", "0"),
        ("age-floor", "99"),
    ] {
        assert_eq!(get_config(&mut con, name), value, "{name}");
    }
    let org = tenant("loadmodule");
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.record("p", 1, 1, 0, &[]).0, "queued", "memory-threshold 1, min-interval 0");
    for _ in 0..4 {
        assert_eq!(dreams.fire("p", 1, &[]), "queued");
    }
    assert_eq!(dreams.fire("p", 1, &[]), "dropped", "queue-max 5");
}

#[test]
fn an_empty_quiet_hours_argument_disables_quiet_hours() {
    let server = Server::start_with_module_args(&[], &["quiet-hours", ""]);
    let mut con = server.connect();
    assert_eq!(get_config(&mut con, "quiet-hours"), "");
}

#[test]
fn a_bad_loadmodule_argument_fails_the_load() {
    assert!(!load_fails(&["queue-max", "5"]), "a good argument loads");
    for args in [
        &["queue-max", "abc"][..],
        &["queue-max", "0"],
        &["queue-max", "1000000001"],
        &["quiet-hours", "2-06"],
        &["quiet-hours", "02-02"],
        &["quiet-utc-offset", "1440"],
        &["quiet-backlog-min", "-1"],
        &["memory-threshold", "4294967296"],
        &["edge-threshold", "-5"],
        &["min-interval", "9223372036854775808"],
        &["age-floor", "x"],
        &["queue-max"],
        &["queue-max", "5", "min-interval"],
        &["no-such-setting", "1"],
        &["QUEUE-MAX", "5"],
        &["queue-max", "5", "queue-max", "6"],
    ] {
        assert!(load_fails(args), "loadmodule ... {args:?} should fail");
    }
}

#[test]
fn module_loadex_config_sets_the_configuration() {
    let server = Server::start_without_module(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    let path = module_path().display().to_string();
    ok(
        &mut con,
        &["MODULE", "LOADEX", &path, "CONFIG", "dreamtown.queue-max", "7", "CONFIG", "dreamtown.quiet-hours", "23-07"],
    );
    assert_eq!(get_config(&mut con, "queue-max"), "7");
    assert_eq!(get_config(&mut con, "quiet-hours"), "23-07");
    if !common::unload_module(&mut con).expect("MODULE UNLOAD") {
        return; // Valkey 8.1: kept loaded (glue::unload_guard), no second load.
    }
    for (name, value) in [("queue-max", "abc"), ("queue-max", "0"), ("quiet-hours", "2-06")] {
        let reply = call(&mut con, &["MODULE", "LOADEX", &path, "CONFIG", &format!("dreamtown.{name}"), value]);
        assert!(reply.is_err(), "LOADEX CONFIG {name} {value} loaded");
    }
    assert!(call(&mut con, &["MODULE", "LOADEX", &path, "ARGS", "no-such-setting", "1"]).is_err());
    ok(&mut con, &["MODULE", "LOADEX", &path, "ARGS", "queue-max", "9"]);
    assert_eq!(get_config(&mut con, "queue-max"), "9");
}

#[test]
fn info_reports_every_total() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("info");
    let keys = Keys::new(&org);
    let stats = info(&mut con);
    for field in [
        "fired",
        "fired_fire",
        "fired_record",
        "fired_ack_requeue",
        "dropped",
        "dropped_capacity_fire",
        "dropped_capacity_record",
        "dropped_capacity_ack",
        "records_deduplicated",
        "drained",
        "quiet_deferred",
        "promoted",
        "dead_lettered",
        "acks_acknowledged",
        "acks_stale",
        "recovered",
    ] {
        assert_eq!(stats.get(field), Some(&0), "{field} starts at 0: {stats:?}");
    }
    set_config(&mut con, "queue-max", "3");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(1, 1, 0, NEVER_SECS);
    let mut once = vec!["EVENT", "e", "GENERATION", "1"];
    once.extend(strs(&t));
    assert_eq!(dreams.record("p", 1, 1, 0, &once).0, "queued"); // fired_record
    assert_eq!(dreams.record("p", 1, 1, 0, &once).0, "accumulated"); // records_deduplicated
    assert_eq!(dreams.fire("f", 1, &[]), "queued"); // fired_fire
                                                    // Quiet hours mark both, the first runs (drained, quiet_deferred 2, promoted 2).
    let counted = dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert!(SeedFireMessage::parse(&counted).quiet_deferred);
    assert_eq!(dreams.fire("g", 1, &[]), "queued");
    assert_eq!(dreams.fire("h", 1, &[]), "dropped"); // dropped_capacity_fire
    assert_eq!(dreams.record("q", 1, 1, 0, &strs(&t)).0, "dropped"); // dropped_capacity_record
    assert_eq!(dreams.ack(&counted, "FAILURE", &[]).0, "requeued"); // fired_ack_requeue, acks_acknowledged
    let again = dreams.take_one(); // drained: the marked explicit fire
    assert_eq!(dreams.ack(&again, "SUCCESS", &[]).0, "acknowledged");
    assert_eq!(dreams.ack(&again, "SUCCESS", &[]).0, "stale"); // acks_stale
                                                               // Both left in flight, recovered, and drained again.
    assert_eq!(project_of(&dreams.take_one()), "g");
    assert_eq!(project_of(&dreams.take_one()), "p");
    assert_eq!(dreams.recover(), 2); // recovered
    let g = dreams.take_one();
    let retried = dreams.take_one();
    assert_eq!(project_of(&retried), "p");
    // 'g' in flight fills a ceiling of 1: the retry is dropped.
    set_config(dreams.con, "queue-max", "1");
    assert_eq!(dreams.ack(&retried, "FAILURE", &[]).0, "dropped");
    assert_eq!(dreams.ack(&g, "SUCCESS", &[]).0, "acknowledged");
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("junk").query(dreams.con).unwrap();
    while dreams.take().is_some() {} // dead_lettered
    let stats = info(dreams.con);
    let expect = [
        ("fired_fire", 2),
        ("fired_record", 1),
        ("fired_ack_requeue", 1),
        ("fired", 4),
        ("dropped_capacity_fire", 1),
        ("dropped_capacity_record", 1),
        ("dropped_capacity_ack", 1),
        ("dropped", 3),
        ("records_deduplicated", 1),
        ("quiet_deferred", 2),
        ("promoted", 2),
        ("dead_lettered", 1),
        ("acks_acknowledged", 4),
        ("acks_stale", 1),
        ("recovered", 2),
        ("drained", 6),
    ];
    for (field, value) in expect {
        assert_eq!(stats[field], value, "{field}: {stats:?}");
    }
}
