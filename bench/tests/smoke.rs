//! Smoke test of `loadgen`: every mode, run briefly against a real server
//! with the module (`DREAMTOWN_MODULE`, `DREAMTOWN_SERVER` as the other
//! tests), prints the line bench/run.py parses, and the server counted the
//! mode's commands (INFO commandstats). No figure is asserted: this checks
//! the tool drives what it claims, not how fast. The server comes from the
//! workspace's test harness (test-support).

use std::collections::HashMap;
use std::process::Command;

use dreamtown_bench::resp::{Conn, Reply};
use dreamtown_test_support::Server;

/// The repository's root (fixtures live there).
fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A connection of loadgen's own RESP client to `server`.
fn conn(server: &Server) -> Conn {
    Conn::open(server.port).expect("connect")
}

/// Calls per command since the last `CONFIG RESETSTAT`, by lowercase name
/// (`dreams.drain`, `town.agent|list`).
fn command_calls(conn: &mut Conn) -> HashMap<String, u64> {
    let info = conn.call(&[b"INFO", b"commandstats"]).and_then(Reply::bulk).expect("INFO commandstats");
    String::from_utf8_lossy(&info)
        .lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|field| field.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_ascii_lowercase(), calls))
        })
        .collect()
}

/// A mode's run: consumers, items, and the commands (lowercase, as INFO
/// commandstats names them) the server must have run at least so often.
struct Case {
    consumers: u64,
    items: u64,
    at_least: Vec<(&'static str, u64)>,
}

/// Every mode's case; `None` for a mode this test does not know (a new
/// mode needs its case here).
fn case(mode: &str) -> Option<Case> {
    const N: u64 = 20;
    let loop_of = |consumers, at_least| Some(Case { consumers, items: N, at_least });
    let once = |at_least| Some(Case { consumers: 1, items: 1, at_least });
    match mode {
        "dreams-module" | "dreams-module-lease" => {
            loop_of(2, vec![("dreams.record", N), ("dreams.drain", N), ("dreams.ack", N)])
        }
        "dreams-module-onetrip" => loop_of(2, vec![("dreams.record", N), ("dreams.drain", N), ("dreams.ack", 1)]),
        "dreams-module-onetrip-capped" => {
            loop_of(2, vec![("dreams.record", N), ("dreams.limit|set", 1), ("dreams.drain", N), ("dreams.ack", 1)])
        }
        "dreams-module-count10" => loop_of(2, vec![("dreams.record", N), ("dreams.drain", N / 10), ("dreams.ack", N)]),
        "dreams-seed" => loop_of(2, vec![("evalsha", 3 * N), ("blmove", N), ("llen", N), ("zcard", N)]),
        "dreams-native" => loop_of(2, vec![("rpush", N), ("blmove", N), ("lrem", N)]),
        "agent-onetrip" => loop_of(2, vec![("town.send", N), ("town.recv", N), ("town.ack", 1)]),
        "agent-twotrip" => loop_of(2, vec![("town.send", N), ("town.recv", N), ("town.ack", N)]),
        "agent-count10" => loop_of(2, vec![("town.send", N), ("town.recv", N / 10), ("town.ack", N / 10)]),
        "agent-docket" => loop_of(2, vec![("xgroup|create", 1), ("xadd", N), ("xreadgroup", N), ("xack", N)]),
        "agent-native" => loop_of(2, vec![("rpush", N), ("blmove", N), ("lrem", N)]),
        "agent-native-onetrip" => loop_of(2, vec![("rpush", N), ("blmove", N)]),
        "town-reclaim-module" => once(vec![("rpush", 20), ("town.reclaim", 1), ("llen", 2)]),
        "town-reclaim-seed" => once(vec![("rpush", 20), ("lpop", 10_001), ("llen", 2)]),
        "town-list-module" => once(vec![("set", 100_000), ("town.agent|set", 1_000), ("town.agent|list", 1)]),
        "town-list-seed" => once(vec![("set", 100_000), ("hset", 1_000), ("keys", 1), ("hgetall", 1_000)]),
        "handoff-dreams" => loop_of(2, vec![("dreams.fire", N + 2), ("dreams.drain", N + 2), ("dreams.ack", N + 2)]),
        "handoff-native" => loop_of(2, vec![("rpush", N + 2), ("blmove", N + 2), ("lrem", N + 2)]),
        "handoff-town" => loop_of(2, vec![("town.send", N + 2), ("town.recv", N + 2)]),
        "handoff-town-native" => loop_of(2, vec![("rpush", N + 2), ("blpop", N + 2)]),
        _ => None,
    }
}

/// Run loadgen; its line's fields, or its stderr.
fn loadgen(server: &Server, mode: &str, consumers: u64, items: u64) -> Result<HashMap<String, String>, String> {
    let done = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["--port", &server.port.to_string(), "--mode", mode])
        .args(["--consumers", &consumers.to_string(), "--items", &items.to_string(), "--org", "bench"])
        .arg("--lua-dir")
        .arg(root().join("tests/fixtures/seed-lua"))
        .args(["--server-pid", &server.pid().to_string()])
        .output()
        .map_err(|e| format!("running loadgen: {e}"))?;
    if !done.status.success() {
        return Err(String::from_utf8_lossy(&done.stderr).into_owned());
    }
    // As bench/run.py reads it: whitespace-separated key=value pairs.
    let stdout = String::from_utf8_lossy(&done.stdout).into_owned();
    stdout
        .split_whitespace()
        .map(|pair| pair.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect::<Option<_>>()
        .ok_or(format!("not a line of key=value pairs: {stdout:?}"))
}

#[test]
fn every_mode_runs_and_the_server_sees_its_commands() {
    let server = Server::start();
    let mut conn = conn(&server);
    let mut failures = Vec::new();
    for mode in dreamtown_bench::modes() {
        let Some(case) = case(mode) else {
            failures.push(format!("{mode}: no smoke case (add one to bench/tests/smoke.rs)"));
            continue;
        };
        for command in [&[b"FLUSHALL".as_slice()][..], &[b"CONFIG", b"RESETSTAT"]] {
            assert_eq!(conn.call(command), Ok(Reply::Status("OK".into())));
        }
        let fields = match loadgen(&server, mode, case.consumers, case.items) {
            Ok(fields) => fields,
            Err(e) => {
                failures.push(format!("{mode}: loadgen failed: {e}"));
                continue;
            }
        };
        let field = |name: &str| fields.get(name).map(String::as_str);
        let mut problems = Vec::new();
        for (name, want) in
            [("mode", mode.to_owned()), ("consumers", case.consumers.to_string()), ("items", case.items.to_string())]
        {
            if field(name) != Some(want.as_str()) {
                problems.push(format!("{name}={:?}, expected {want}", field(name)));
            }
        }
        // bench/run.py's float() of these; the server's CPU is read from its pid.
        for name in ["seconds", "ops_per_sec", "server_cpu_secs"] {
            if !field(name).and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v.is_finite() && v >= 0.0) {
                problems.push(format!("{name}={:?} is not a finite number", field(name)));
            }
        }
        if !mode.starts_with("handoff-") && field("round_trips_per_item").and_then(|v| v.parse::<f64>().ok()).is_none()
        {
            problems.push("no round_trips_per_item".into());
        }
        let calls = command_calls(&mut conn);
        for (command, least) in &case.at_least {
            let seen = calls.get(*command).copied().unwrap_or(0);
            if seen < *least {
                problems.push(format!("the server ran {command} {seen} times, expected at least {least}"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{mode}: {}", problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unknown_mode_or_flag_fails_without_a_line() {
    for argv in [&["--mode", "dreams-nothing"][..], &["--mode", "town-nothing"], &["--frobnicate", "1"]] {
        let done = Command::new(env!("CARGO_BIN_EXE_loadgen")).args(argv).output().expect("run loadgen");
        assert!(!done.status.success(), "{argv:?} succeeded");
        assert!(done.stdout.is_empty(), "{argv:?} printed {:?}", String::from_utf8_lossy(&done.stdout));
        assert!(String::from_utf8_lossy(&done.stderr).starts_with("loadgen: "), "{argv:?}");
    }
}
