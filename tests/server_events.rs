//! What `SWAPDB`, `FLUSHALL`/`FLUSHDB` and `MODULE UNLOAD`/`LOAD` do to the
//! module's state beside the keyspace (issue 32, points 6, 7 and 9):
//!
//! * `SWAPDB` serves a blocked `DREAMS.DRAIN` and `TOWN.RECV ... BLOCK` at
//!   once when the swap brings work in (as it serves a blocked `BLPOP`);
//! * `FLUSHALL` empties the lease index, the per-tenant totals and the fire
//!   ages (a tenant table at its cap takes new tenants again), and `MODULE
//!   UNLOAD` then succeeds at once although the leases were due in an hour;
//!   `FLUSHDB` forgets the flushed database's leases only, and the tables
//!   once no other database the module served holds a key;
//! * fire ages do not grow over FIRE/DRAIN/DEL cycles (a list deleted,
//!   unlinked or expired behind the module's back takes its timings along);
//! * a reloaded module starts from nothing, and unload/load cycles leave
//!   `used_memory` where it was.
//!
//! Timing is never asserted: a served waiter is one whose reply arrives
//! well before its (long) timeout could have produced one.

use crate::common;
use crate::dreams_support;

use std::sync::mpsc;
use std::thread;

use common::{module_path, tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::{Connection, Value};

type Reply = mpsc::Receiver<Result<Value, String>>;

/// Run `args` on a new connection (database `db`) in a thread; the reply
/// on the channel.
fn in_thread(server: &Server, db: u32, args: &[&str]) -> Reply {
    let mut con = server.connect();
    ok(&mut con, &["SELECT", &db.to_string()]);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = sender.send(call(&mut con, &refs));
    });
    receiver
}

fn field(con: &mut Connection, name: &str) -> u64 {
    info(con).get(name).copied().unwrap_or_else(|| panic!("INFO dreamtown has no {name}"))
}

fn select(con: &mut Connection, db: u32) {
    ok(con, &["SELECT", &db.to_string()]);
}

fn town_message(id: &str, to: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{to}","type":"task","description":"do {id}","priority":"normal","created_at":"2025-01-01T00:00:00Z","correlation_id":null}}"#
    )
}

/// `DREAMS.STATS` / `TOWN.STATS` as name -> integer (nil fields left out).
fn stats(con: &mut Connection, args: &[&str]) -> std::collections::HashMap<String, i64> {
    let Value::Array(items) = ok(con, args) else { panic!("{args:?}: not an array") };
    items
        .chunks(2)
        .filter_map(|pair| match pair {
            [Value::BulkString(name), Value::Int(value)] => Some((String::from_utf8_lossy(name).into_owned(), *value)),
            _ => None,
        })
        .collect()
}

/// Send `commands` in one pipeline, every reply checked to be no error.
fn pipeline(con: &mut Connection, commands: &[Vec<String>]) {
    let mut pipe = redis::pipe();
    for args in commands {
        pipe.add_command(command(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>()));
    }
    let replies: Vec<Value> = pipe.query(con).expect("pipeline");
    assert_eq!(replies.len(), commands.len());
}

/// `n` organizations in the selected database, each with one fire in
/// flight under a lease due in an hour.
fn leased_orgs(con: &mut Connection, label: &str, n: usize) -> Vec<String> {
    let orgs: Vec<String> = (0..n).map(|i| format!("{}-{i}", tenant(label))).collect();
    let mut commands = Vec::new();
    for org in &orgs {
        commands.push(["DREAMS.FIRE", org, "p", "1"].map(String::from).to_vec());
        commands.push(["DREAMS.DRAIN", org, "0", "NOQUIET", "LEASE", "3600"].map(String::from).to_vec());
    }
    pipeline(con, &commands);
    orgs
}

/// An agent with one message received `RELIABLE` under a lease due in an
/// hour, in the selected database.
fn leased_agent(con: &mut Connection, town: &str) {
    ok(con, &["TOWN.SEND", town, &town_message("m1", "a")]);
    let received = ok(con, &["TOWN.RECV", town, "a", "RELIABLE", "LEASE", "3600"]);
    assert_ne!(received, Value::Nil);
}

/// `MODULE UNLOAD`: `Ok(false)` where dreamtown keeps itself loaded after
/// the server's own checks passed (Valkey 8.1, `common::unload_module`).
fn module_unload(con: &mut Connection) -> Result<bool, String> {
    common::unload_module(con)
}

fn module_load(con: &mut Connection) {
    ok(con, &["MODULE", "LOAD", &module_path().display().to_string()]);
}

fn payload_of(reply: &Reply, what: &str) -> Value {
    match reply.recv_timeout(DEADLINE) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => panic!("{what}: {error}"),
        Err(_) => panic!("{what}: still blocked after {DEADLINE:?}: SWAPDB woke nobody"),
    }
}

#[test]
fn swapdb_serves_a_blocked_drain_and_recv_at_once() {
    let server = Server::start();
    let mut con = server.connect();
    let (org, town) = (tenant("swap-org"), tenant("swap-town"));
    // Blocked on database 0 for a minute, longer than the test waits.
    let drain = in_thread(&server, 0, &["DREAMS.DRAIN", &org, "60", "NOQUIET"]);
    wait_until("the drain blocks", || field(&mut con, "waiters") == 1);
    let recv = in_thread(&server, 0, &["TOWN.RECV", &town, "a", "BLOCK", "60"]);
    wait_until("the receive blocks", || field(&mut con, "waiters") == 2);
    // A swap that brings no work wakes the pass, which finds nothing (a
    // length probe: no command runs) and keeps both waiting.
    let wakeups = field(&mut con, "empty_wakeups");
    ok(&mut con, &["SWAPDB", "0", "1"]);
    ok(&mut con, &["PING"]);
    assert_eq!(field(&mut con, "waiters"), 2);
    assert_eq!(field(&mut con, "empty_wakeups"), wakeups);
    // The work is written into database 1, where nobody waits.
    select(&mut con, 1);
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    let message = town_message("s1", "a");
    ok(&mut con, &["TOWN.SEND", &town, &message]);
    assert_eq!(field(&mut con, "waiters"), 2, "work in another database serves nobody");
    ok(&mut con, &["SWAPDB", "0", "1"]);

    let fired = payload_of(&drain, "the drain");
    assert!(text(&fired).contains(&format!(r#""org":"{org}""#)), "{fired:?}");
    let received = payload_of(&recv, "the receive");
    assert!(format!("{received:?}").contains("s1"), "{received:?}");
    // Served from database 0 (the swapped-in work): database 1 is empty.
    assert_eq!(int(&ok(&mut con, &["DBSIZE"])), 0);
    select(&mut con, 0);
    assert_eq!(int(&ok(&mut con, &["LLEN", &format!("exocortex:dreams:{{{org}}}:processing")])), 1);
    assert_eq!(field(&mut con, "waiters"), 0);
}

#[test]
fn flushall_forgets_leases_totals_and_fire_ages_and_unload_works_at_once() {
    let server = Server::start_with(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    // More organizations than the per-tenant table holds (10,000), each
    // with a lease due in an hour; and a town agent with one.
    let orgs = leased_orgs(&mut con, "flushall", 10_001);
    leased_agent(&mut con, &tenant("flushall-town"));
    let before = info(&mut con);
    assert_eq!(before["lease_tenants_indexed"], 10_002, "{before:?}");
    assert_eq!(before["orgs_tracked"], 10_000);
    assert!(before["orgs_refused"] > 0);
    assert!(before["fire_ages_entries"] > 0 && before["towns_tracked"] == 1 && before["agents_tracked"] == 1);
    let late = stats(&mut con, &["DREAMS.STATS", orgs.last().unwrap()]);
    assert_eq!(late["totals_tracked"], 0, "the table was full");

    ok(&mut con, &["FLUSHALL"]);
    let after = info(&mut con);
    for name in [
        "lease_tenants_indexed",
        "lease_index_bytes",
        "orgs_tracked",
        "towns_tracked",
        "agents_tracked",
        "fire_ages_orgs",
        "fire_ages_entries",
        "catching_up",
    ] {
        assert_eq!(after[name], 0, "{name} after FLUSHALL: {after:?}");
    }
    // Nothing is due anywhere: the module holds no timer.
    if module_unload(&mut con).expect("MODULE UNLOAD right after FLUSHALL") {
        module_load(&mut con);
    }
    // A new organization is counted again.
    let org = tenant("after-flushall");
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    assert_eq!(stats(&mut con, &["DREAMS.STATS", &org])["totals_tracked"], 1);
}

#[test]
fn flushall_async_and_flushdb_forget_what_they_flushed() {
    let server = Server::start_with(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    leased_orgs(&mut con, "db0", 30);
    select(&mut con, 1);
    leased_orgs(&mut con, "db1", 20);
    leased_agent(&mut con, &tenant("db1-town"));
    assert_eq!(field(&mut con, "lease_tenants_indexed"), 51);
    // A database the module never served: nothing changes.
    select(&mut con, 5);
    ok(&mut con, &["SET", "unrelated", "1"]);
    ok(&mut con, &["FLUSHDB"]);
    assert_eq!(field(&mut con, "lease_tenants_indexed"), 51);
    // Database 1: its leases go; database 0 still holds the module's
    // keys, so the totals and fire ages (not per database) stay.
    select(&mut con, 1);
    ok(&mut con, &["FLUSHDB", "ASYNC"]);
    let after_1 = info(&mut con);
    assert_eq!(after_1["lease_tenants_indexed"], 30, "{after_1:?}");
    assert!(after_1["orgs_tracked"] >= 30 && after_1["fire_ages_entries"] >= 30, "{after_1:?}");
    let refused = module_unload(&mut con);
    assert!(refused.is_err(), "leases due in database 0 keep the timer: {refused:?}");
    // Database 0 too: nothing the module served holds a key any more.
    select(&mut con, 0);
    ok(&mut con, &["FLUSHDB"]);
    let after_0 = info(&mut con);
    for name in ["lease_tenants_indexed", "orgs_tracked", "towns_tracked", "agents_tracked", "fire_ages_entries"] {
        assert_eq!(after_0[name], 0, "{name} after FLUSHDB of both: {after_0:?}");
    }
    module_unload(&mut con).expect("MODULE UNLOAD right after the last FLUSHDB");
}

#[test]
fn fire_ages_do_not_grow_over_fire_drain_del_cycles() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ages");
    let (ready, processing) =
        (format!("exocortex:dreams:{{{org}}}:queue"), format!("exocortex:dreams:{{{org}}}:processing"));
    for cycle in 0..30 {
        let mut commands = Vec::new();
        for i in 0..100 {
            commands.push(vec!["DREAMS.FIRE".to_owned(), org.clone(), format!("p{cycle}-{i}"), "1".into()]);
        }
        for _ in 0..80 {
            commands.push(["DREAMS.DRAIN", &org, "0", "NOQUIET"].map(String::from).to_vec());
        }
        pipeline(&mut con, &commands);
        // 20 ready, 80 in flight; then both lists go behind the module's back.
        match cycle % 3 {
            0 => ok(&mut con, &["DEL", &ready, &processing]),
            1 => ok(&mut con, &["UNLINK", &ready, &processing]),
            _ => {
                ok(&mut con, &["PEXPIRE", &ready, "1"]);
                ok(&mut con, &["PEXPIRE", &processing, "1"]);
                wait_until("the lists expire", || int(&ok(&mut con, &["EXISTS", &ready, &processing])) == 0);
                Value::Nil
            }
        };
        let entries = field(&mut con, "fire_ages_entries");
        assert_eq!(entries, 0, "cycle {cycle}: {entries} fire ages outlived their lists");
    }
    // A native pop that empties a list forgets its timings too.
    ok(&mut con, &["DREAMS.FIRE", &org, "last", "1"]);
    assert_eq!(field(&mut con, "fire_ages_entries"), 1);
    ok(&mut con, &["LPOP", &ready]);
    assert_eq!(field(&mut con, "fire_ages_entries"), 0);
}

#[test]
fn deleting_every_lease_set_stops_the_timer() {
    let server = Server::start_with(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    let orgs = leased_orgs(&mut con, "del-leases", 50);
    assert_eq!(field(&mut con, "lease_tenants_indexed"), 50);
    for (i, org) in orgs.iter().enumerate() {
        let leases = format!("exocortex:dreams:{{{org}}}:leases");
        ok(&mut con, &[if i % 2 == 0 { "DEL" } else { "UNLINK" }, &leases]);
    }
    assert_eq!(field(&mut con, "lease_tenants_indexed"), 0);
    module_unload(&mut con).expect("MODULE UNLOAD once no lease set is left");
}

/// The lease index's figures (`INFO dreamtown`).
fn lease_index(con: &mut Connection) -> (u64, u64) {
    let stats = info(con);
    (stats["lease_tenants_indexed"], stats["lease_index_bytes"])
}

#[test]
fn acknowledging_the_last_lease_forgets_its_tenant_at_once_as_a_del_does() {
    let server = Server::start_with(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    assert_eq!(lease_index(&mut con), (0, 0));
    // Many agents, each with one message received under a lease due in an
    // hour: one index entry each.
    let agents = 4_000;
    let town = tenant("acked");
    let mut commands = Vec::new();
    for i in 0..agents {
        let agent = format!("agent-{i}");
        commands.push(vec!["TOWN.SEND".to_owned(), town.clone(), town_message(&format!("m{i}"), &agent)]);
        commands.push(["TOWN.RECV", &town, &agent, "RELIABLE", "LEASE", "3600"].map(String::from).to_vec());
    }
    pipeline(&mut con, &commands);
    let (indexed, bytes) = lease_index(&mut con);
    assert_eq!(indexed, agents as u64);
    let per_agent = bytes / indexed;
    // Half by acknowledgement, half by the native way (a DEL of the lease
    // set), each half in one pipeline: each frees the same at once.
    let (acked, deleted) = (agents / 2, agents - agents / 2);
    let acks: Vec<Vec<String>> = (0..acked)
        .map(|i| ["TOWN.ACK".to_owned(), town.clone(), format!("agent-{i}"), format!("m{i}")].to_vec())
        .collect();
    pipeline(&mut con, &acks);
    let after_acks = lease_index(&mut con);
    assert_eq!(after_acks.0, deleted as u64, "every acknowledged agent forgotten: {after_acks:?}");
    let dels: Vec<Vec<String>> =
        (acked..agents).map(|i| vec!["DEL".to_owned(), format!("tt:{{{town}}}:leases:agent-{i}")]).collect();
    pipeline(&mut con, &dels);
    assert_eq!(lease_index(&mut con), (0, 0), "and every deleted one");
    assert!(bytes - after_acks.1 >= acked as u64 * (per_agent - 2), "the acknowledged half's bytes freed");

    // Dreams: an acknowledgement, a one-trip DRAIN ... ACK and a RECOVER
    // that take an organization's last lease forget it too.
    let orgs = leased_orgs(&mut con, "acked-org", 3);
    assert_eq!(lease_index(&mut con).0, 3);
    let in_flight = |con: &mut Connection, org: &str| -> String {
        // `[[payload, lease deadline], ...]`, oldest first.
        match ok(con, &["DREAMS.INFLIGHT", org]) {
            Value::Array(items) => match &items[0] {
                Value::Array(entry) => text(&entry[0]),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    };
    let payload = in_flight(&mut con, &orgs[0]);
    ok(&mut con, &["DREAMS.ACK", &orgs[0], &payload, "SUCCESS"]);
    assert_eq!(lease_index(&mut con).0, 2);
    let payload = in_flight(&mut con, &orgs[1]);
    ok(&mut con, &["DREAMS.DRAIN", &orgs[1], "0.01", "NOQUIET", "ACK", &payload, "SUCCESS"]);
    assert_eq!(lease_index(&mut con).0, 1);
    ok(&mut con, &["DREAMS.RECOVER", &orgs[2]]);
    assert_eq!(lease_index(&mut con), (0, 0));
    module_unload(&mut con).expect("MODULE UNLOAD once no lease is left");
}

#[test]
fn a_reloaded_module_starts_from_nothing() {
    let server = Server::start_with(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    let (org, town) = (tenant("reload"), tenant("reload-town"));
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    ok(&mut con, &["DREAMS.STATS", &org]);
    ok(&mut con, &["TOWN.SEND", &town, &town_message("r1", "a")]);
    let before = info(&mut con);
    assert!(
        before["orgs_tracked"] == 1 && before["towns_tracked"] == 1 && before["fire_ages_entries"] == 1,
        "{before:?}"
    );
    ok(&mut con, &["FLUSHDB"]);
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    // A client blocked in a module command keeps the module loaded (the
    // server refuses, as for any module with blocked clients); once it has
    // left, the unload goes through.
    let blocked = in_thread(&server, 0, &["TOWN.RECV", &town, "b", "BLOCK", "60"]);
    wait_until("the receive blocks", || field(&mut con, "waiters") == 1);
    let refused = module_unload(&mut con);
    assert!(refused.is_err(), "unloaded under a blocked client: {refused:?}");
    let clients = text(&ok(&mut con, &["CLIENT", "LIST"]));
    let waiter = clients
        .lines()
        .find(|line| line.to_lowercase().contains("cmd=town.recv"))
        .and_then(|line| line.split(' ').find_map(|field| field.strip_prefix("id=")))
        .expect("the blocked client in CLIENT LIST")
        .to_owned();
    ok(&mut con, &["CLIENT", "UNBLOCK", &waiter]);
    assert_eq!(blocked.recv_timeout(DEADLINE).expect("unblocked"), Ok(Value::Nil));
    if !module_unload(&mut con).expect("MODULE UNLOAD") {
        return; // Valkey 8.1: kept loaded (glue::unload_guard), nothing to reload.
    }
    module_load(&mut con);
    let after = info(&mut con);
    for name in [
        "orgs_tracked",
        "towns_tracked",
        "agents_tracked",
        "fire_ages_orgs",
        "fire_ages_entries",
        "lease_tenants_indexed",
        "waiters",
        "waiter_queues",
    ] {
        assert_eq!(after[name], 0, "{name} after MODULE LOAD: {after:?}");
    }
    // And leases run on the reloaded module: the timer arms again.
    ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "0.2"]);
    wait_until("the lease to expire on the reloaded module", || {
        int(&ok(&mut con, &["LLEN", &format!("exocortex:dreams:{{{org}}}:queue")])) == 1
    });
}

/// The `INFO dreamtown` fields that time something (µs, ms): the only
/// ones a reload may read differently from the first load.
const TIMINGS: &[&str] =
    &["lease_max_tick_us", "catch_up_last_duration_ms", "catch_up_max_turn_us", "catch_up_max_turn_cpu_us"];

/// Plain keys the module's catch-up walks at load.
fn plain_keys(con: &mut Connection) {
    for i in 0..50 {
        ok(con, &["SET", &format!("plain-{i}"), "v"]);
    }
}

/// `MODULE LOAD`, then `INFO dreamtown` once the load's catch-up is done.
fn load_and_settle(con: &mut Connection) -> std::collections::HashMap<String, u64> {
    module_load(con);
    wait_until("the load's catch-up to end", || field(con, "catching_up") == 0);
    info(con)
}

/// An unload and a load leave nothing of the first load behind
/// (`glue::module_state`: the state each load makes is dropped at unload,
/// whether or not the server unmaps the library): after work that touches
/// every service, the same keyspace reloaded reads in every `INFO
/// dreamtown` field but timings as the first load did.
#[test]
fn a_reload_reads_as_the_first_load() {
    let server = Server::start_without_module(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    plain_keys(&mut con);
    let first = load_and_settle(&mut con);
    assert_eq!(first["catch_up_keys_examined_total"], 50, "{first:?}");
    // Work for every service: leases (and their timer), a waiter served,
    // the tables of STATS, a town.
    let (org, town) = (tenant("again"), tenant("again-town"));
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    let fired = ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "60"]);
    ok(&mut con, &["DREAMS.ACK", &org, &text(&fired), "SUCCESS"]);
    ok(&mut con, &["DREAMS.STATS", &org]);
    // A lease that expires (the timer's tick handles it).
    ok(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "0.1"]);
    wait_until("the lease to expire", || field(&mut con, "lease_max_tick_expired") == 1);
    let blocked = in_thread(&server, 0, &["TOWN.RECV", &town, "a", "BLOCK", "60"]);
    wait_until("the receive blocks", || field(&mut con, "waiters") == 1);
    ok(&mut con, &["TOWN.SEND", &town, &town_message("r1", "a")]);
    assert!(format!("{:?}", payload_of(&blocked, "the receive")).contains("r1"));
    ok(&mut con, &["TOWN.STATS", &town]);
    // A second catch-up (the keyspace is walked again).
    ok(&mut con, &["FLUSHALL"]);
    plain_keys(&mut con);
    ok(&mut con, &["DEBUG", "RELOAD"]);
    wait_until("the reload's catch-up to end", || field(&mut con, "catching_up") == 0);
    assert!(field(&mut con, "catch_up_keys_examined_total") > 50, "the catch-up ran again");
    if !module_unload(&mut con).expect("MODULE UNLOAD") {
        return; // Valkey 8.1: kept loaded (glue::unload_guard), nothing to reload.
    }
    let again = load_and_settle(&mut con);
    assert_eq!(again.len(), first.len(), "the same fields: {again:?}");
    for (name, value) in &first {
        if !TIMINGS.contains(&name.as_str()) {
            assert_eq!(again.get(name), Some(value), "{name} after an unload and a load");
        }
    }
}

fn used_memory(con: &mut Connection) -> i64 {
    let text: String = redis::cmd("INFO").arg("memory").query(con).expect("INFO memory");
    text.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("used_memory")
}

/// One load, some of every kind of work (tables, waiters, leases, INFO),
/// and an unload; false where the module kept itself loaded (Valkey 8.1).
fn load_work_unload(con: &mut Connection, round: usize) -> bool {
    module_load(con);
    let (org, town) = (format!("mem-{round}"), format!("mem-town-{round}"));
    ok(con, &["DREAMS.FIRE", &org, "p", "1"]);
    let fired = ok(con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "60"]);
    ok(con, &["DREAMS.ACK", &org, &text(&fired), "SUCCESS"]);
    ok(con, &["DREAMS.STATS", &org]);
    ok(con, &["TOWN.SEND", &town, &town_message("x", "a")]);
    ok(con, &["TOWN.RECV", &town, "a"]);
    ok(con, &["TOWN.STATS", &town]);
    info(con);
    // The acknowledged lease's entry waits for its deadline: FLUSHALL
    // forgets it, and the unload is not refused for a timer.
    ok(con, &["FLUSHALL"]);
    module_unload(con).expect("MODULE UNLOAD")
}

/// Unload/load cycles leave `used_memory` where it was (issue 32 point 9):
/// a few hundred bytes a cycle at most. Before, each cycle left ~59 KB:
/// command metadata (names, flags, COMMAND DOCS trees; now built in an
/// arena freed once the server has copied it, `glue::command`), the
/// settings' private data and the macro's detached context (freed at
/// unload now).
#[test]
fn unload_load_cycles_keep_used_memory() {
    const CYCLES: i64 = 30;
    let server = Server::start_without_module(&["--enable-module-command", "yes"]);
    let mut con = server.connect();
    // Warm-up: the first load maps the library and fills what the server
    // keeps once (its command table slots, client buffers).
    if !load_work_unload(&mut con, 0) {
        return; // Valkey 8.1: kept loaded (glue::unload_guard), no cycle to measure.
    }
    let before = used_memory(&mut con);
    for round in 1..=CYCLES {
        assert!(load_work_unload(&mut con, round as usize), "unloaded once, so every time");
    }
    let per_cycle = (used_memory(&mut con) - before) / CYCLES;
    eprintln!("used_memory: {per_cycle} bytes per unload/load cycle");
    // "A few KB at most" (the issue). Measured per cycle: Redis 7.0.15
    // and Valkey 9.1 about 0, Redis 8.0 and Valkey 8.1 about 1.3 KB,
    // Valkey 8.0 from 0 to 3 KB from run to run (not explained; the
    // module's own allocations are all freed); the old build left ~59 KB.
    assert!(per_cycle <= 8_192, "used_memory grew {per_cycle} bytes per unload/load cycle");
}

/// A `MODULE LOAD` that fails (a bad argument) leaves `used_memory` where it
/// was. The server unmaps the library without calling `OnUnload`, so
/// whatever the load had set up is the load's own to free: before, each
/// failed load left the detached context of the `redis_module!` macro and
/// its client behind (about 17.5 KB; found by LeakSanitizer in `make
/// test-asan`, where a server refusing a bad `--loadmodule` exits).
#[test]
fn failed_loads_keep_used_memory() {
    const ATTEMPTS: i64 = 20;
    // No SLOWLOG: a load can take 10 ms, and each entry keeps its argv.
    let server = Server::start_without_module(&["--enable-module-command", "yes", "--slowlog-log-slower-than", "-1"]);
    let mut con = server.connect();
    let path = module_path().display().to_string();
    let load = &["MODULE", "LOADEX", path.as_str(), "ARGS", "no-such-setting", "1"];
    // Warm-up: what the server keeps once (the library's first mapping,
    // and INFO's own cache, which Redis 7.0 makes at the first INFO after
    // reading `used_memory`: ~24 KB).
    assert!(call(&mut con, load).is_err(), "a bad argument fails the load");
    used_memory(&mut con);
    let before = used_memory(&mut con);
    for _ in 0..ATTEMPTS {
        assert!(call(&mut con, load).is_err(), "a bad argument fails the load");
    }
    let per_attempt = (used_memory(&mut con) - before) / ATTEMPTS;
    eprintln!("used_memory: {per_attempt} bytes per failed load");
    assert!(per_attempt <= 1024, "used_memory grew {per_attempt} bytes per failed MODULE LOAD");
    // And the module still loads afterwards.
    module_load(&mut con);
    ok(&mut con, &["DREAMS.LEN", &tenant("after-failed-loads")]);
}
