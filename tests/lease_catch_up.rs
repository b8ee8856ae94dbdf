//! The lease catch-up (`src/services/lease_catch_up.rs`): a server that must take
//! over leases no command of its own noted (a promoted replica, a restarted
//! server, a module loaded at run time) indexes them in bounded turns and
//! expires every lease by itself; the work per event-loop turn stays
//! bounded however many keys the server holds (`INFO dreamtown_leases`).
//!
//! Each test waits for conditions (`wait_until`), never for time.

use crate::common;
use crate::dreams_support;

use common::{tenant, wait_until, Server};
use dreams_support::*;
use redis::{Connection, Value};

/// Keys per catch-up turn in these tests: small, so a modest filler
/// keyspace takes many turns.
const KEYS_PER_TURN: u64 = 1_000;
/// What one turn may examine past its limit: `RedisModule_Scan` hands
/// over a hash bucket (two while the dictionary rehashes) at a time.
const BUCKET_SLACK: u64 = 64;

fn leases_key(org: &str) -> String {
    format!("exocortex:dreams:{{{org}}}:leases")
}

fn town_leases_key(town: &str, agent: &str) -> String {
    format!("tt:{{{town}}}:leases:{agent}")
}

/// A fire of `org` drained under a lease of `secs`: the payload.
fn leased_fire(con: &mut Connection, org: &str, secs: &str) -> Vec<u8> {
    let mut dreams = Dreams::new(con, org);
    assert_eq!(dreams.fire("p", 1, &[]), "queued");
    dreams.drain("0.01", &["NOQUIET", "LEASE", secs]).expect("the fire")
}

/// A Town message sent to `agent` and received under a lease of `secs`.
fn leased_message(con: &mut Connection, town: &str, agent: &str, secs: &str) {
    let message = format!(r#"{{"id":"m-{agent}","from":"lead","to":"{agent}","priority":"normal"}}"#);
    ok(con, &["TOWN.SEND", town, &message]);
    let received = ok(con, &["TOWN.RECV", town, agent, "RELIABLE", "LEASE", secs]);
    assert!(matches!(received, Value::Array(ref items) if items.len() == 1), "{received:?}");
}

fn inbox_len(con: &mut Connection, town: &str, agent: &str) -> i64 {
    int(&ok(con, &["LLEN", &format!("tt:{{{town}}}:inbox:{agent}")]))
}

fn populate(con: &mut Connection, keys: u64) {
    ok(con, &["DEBUG", "POPULATE", &keys.to_string(), "filler"]);
}

/// Promote a master-less server: point it at a port where no one listens,
/// then make it a master again.
fn promote(con: &mut Connection) {
    ok(con, &["REPLICAOF", "NO", "ONE"]);
}

fn demote(con: &mut Connection) {
    // Port 1 on loopback: nothing listens there, the link never comes up.
    ok(con, &["REPLICAOF", "127.0.0.1", "1"]);
}

/// The per-turn work of every catch-up this server ran stayed bounded.
fn assert_bounded_turns(stats: &std::collections::HashMap<String, u64>, filler: u64) {
    assert!(
        stats["catch_up_max_keys_per_turn"] <= KEYS_PER_TURN + BUCKET_SLACK,
        "one turn examined {} keys (limit {KEYS_PER_TURN}): {stats:?}",
        stats["catch_up_max_keys_per_turn"]
    );
    assert!(stats["catch_up_keys_examined"] >= filler, "the whole keyspace was examined: {stats:?}");
    assert!(stats["catch_up_turns"] >= filler / (KEYS_PER_TURN + BUCKET_SLACK), "in many turns: {stats:?}");
}

fn module_args() -> [&'static str; 2] {
    ["catch-up-keys-per-turn", "1000"]
}

#[test]
fn a_promoted_replica_catches_up_in_bounded_turns_and_expires_every_lease() {
    let filler = 50_000;
    let master = Server::start_with_module_args(&[], &module_args());
    let mut con = master.connect();
    populate(&mut con, filler);
    let replica = {
        let port = master.port.to_string();
        let replica = Server::start_with_module_args(&["--replicaof", "127.0.0.1", &port], &module_args());
        let mut r = replica.connect();
        wait_until("replica link up", || {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap_or_default();
            info.contains("master_link_status:up")
        });
        replica
    };
    let org = tenant("catch-up-promoted");
    let town = tenant("catch-up-town");
    let payload = leased_fire(&mut con, &org, "3");
    leased_message(&mut con, &town, "w1", "3");
    let mut r = replica.connect();
    wait_until("the leases reached the replica", || {
        int(&ok(&mut r, &["EXISTS", &leases_key(&org), &town_leases_key(&town, "w1")])) == 2
    });
    drop(con);
    drop(master);
    // Still in flight: the replica expires nothing, and the master died
    // before the deadline (else this test proves nothing).
    assert_eq!(lrange(&mut r, &Keys::new(&org).processing), vec![payload.clone()]);
    assert_eq!(inbox_len(&mut r, &town, "w1"), 0);
    let before = info(&mut r);
    assert_eq!(before["lease_tenants_indexed"], 0, "a replica keeps no index");
    promote(&mut r);
    wait_until("the promoted replica expires the Dreams lease", || {
        lrange(&mut r, &Keys::new(&org).ready) == vec![payload.clone()]
    });
    wait_until("and the Town lease", || inbox_len(&mut r, &town, "w1") == 1);
    wait_until("the catch-up completed", || info(&mut r)["catch_ups_completed"] > before["catch_ups_completed"]);
    let stats = info(&mut r);
    assert_bounded_turns(&stats, filler);
    assert_eq!(stats["catch_up_tenants_indexed"], 2, "{stats:?}");
    assert_eq!(stats["catching_up"], 0);
}

#[test]
fn a_restarted_server_expires_its_leases_from_rdb_and_from_aof() {
    for persistence in
        [&["--save", "", "--appendonly", "no"][..], &["--appendonly", "yes", "--appendfsync", "always"][..]]
    {
        let filler = 20_000;
        let mut server = Server::start_with_module_args(persistence, &module_args());
        let mut con = server.connect();
        populate(&mut con, filler);
        let org = tenant("catch-up-restart");
        let town = tenant("catch-up-restart-town");
        let payload = leased_fire(&mut con, &org, "1");
        leased_message(&mut con, &town, "w1", "1");
        if persistence.contains(&"no") {
            ok(&mut con, &["SAVE"]);
        } else {
            // DEBUG POPULATE is not written to the AOF: a rewrite puts
            // the filler there too.
            ok(&mut con, &["BGREWRITEAOF"]);
            wait_until("the AOF rewrite ended", || {
                let text: String = redis::cmd("INFO").arg("persistence").query(&mut con).unwrap_or_default();
                text.contains("aof_rewrite_in_progress:0") && text.contains("aof_rewrite_scheduled:0")
            });
        }
        drop(con);
        server.restart();
        let mut con = server.connect();
        assert!(int(&ok(&mut con, &["DBSIZE"])) as u64 >= filler, "the filler was reloaded");
        wait_until("the restarted server expires the Dreams lease", || {
            lrange(&mut con, &Keys::new(&org).ready) == vec![payload.clone()]
        });
        wait_until("and the Town lease", || inbox_len(&mut con, &town, "w1") == 1);
        wait_until("the catch-up completed", || info(&mut con)["catch_ups_completed"] >= 1);
        let stats = info(&mut con);
        assert_bounded_turns(&stats, filler);
        assert_eq!(stats["leases_expired"], 1, "{persistence:?}: {stats:?}");
        assert_eq!(stats["messages_lease_expired"], 1, "{persistence:?}: {stats:?}");
    }
}

#[test]
fn a_module_loaded_at_run_time_expires_the_leases_already_in_the_keyspace() {
    // The lease state is made by the module on one server and copied, key
    // by key, into a server that has no module yet.
    let source = Server::start();
    let mut from = source.connect();
    let org = tenant("catch-up-loaded");
    let town = tenant("catch-up-loaded-town");
    let payload = leased_fire(&mut from, &org, "2");
    leased_message(&mut from, &town, "w1", "2");
    let target = Server::start_without_module(&["--enable-module-command", "yes"]);
    let mut to = target.connect();
    let filler = 20_000;
    populate(&mut to, filler);
    for tag in [&org, &town] {
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg(format!("*{{{tag}}}*")).query(&mut from).expect("KEYS");
        assert!(!keys.is_empty());
        for key in keys {
            let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut from).expect("PTTL");
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut from).expect("DUMP");
            redis::cmd("RESTORE").arg(&key).arg(ttl.max(0)).arg(dump).query::<()>(&mut to).expect("RESTORE");
        }
    }
    drop(from);
    drop(source);
    assert_eq!(lrange(&mut to, &Keys::new(&org).processing), vec![payload.clone()]);
    let path = common::module_path().display().to_string();
    ok(&mut to, &["MODULE", "LOADEX", &path, "ARGS", "catch-up-keys-per-turn", "1000"]);
    wait_until("the loaded module expires the Dreams lease", || {
        lrange(&mut to, &Keys::new(&org).ready) == vec![payload.clone()]
    });
    wait_until("and the Town lease", || inbox_len(&mut to, &town, "w1") == 1);
    wait_until("the catch-up completed", || info(&mut to)["catch_ups_completed"] >= 1);
    assert_bounded_turns(&info(&mut to), filler);
}

#[test]
fn a_catch_up_expires_while_it_runs_restarts_on_a_reload_and_stops_on_a_demotion() {
    // 100 keys a turn over 300,000 keys: at least 3,000 turns, each at
    // least 1 ms after the last, so the catch-up runs for seconds.
    let filler = 300_000;
    let server = Server::start_with_module_args(&[], &["catch-up-keys-per-turn", "100"]);
    let mut con = server.connect();
    populate(&mut con, filler);
    let base = info(&mut con);
    let completed = base["catch_ups_completed"];
    let abandoned = base["catch_ups_abandoned"];
    demote(&mut con);
    promote(&mut con);
    wait_until("the catch-up runs", || {
        let stats = info(&mut con);
        stats["catching_up"] == 1 && stats["catch_up_turns"] >= 1
    });
    // A lease granted during the catch-up is noted by its command and runs
    // out on time, before the catch-up reaches its end.
    let org = tenant("catch-up-during");
    let payload = leased_fire(&mut con, &org, "0.2");
    wait_until("the new lease expires", || lrange(&mut con, &Keys::new(&org).ready) == vec![payload.clone()]);
    let stats = info(&mut con);
    assert_eq!(stats["catching_up"], 1, "expired during the catch-up: {stats:?}");
    assert_eq!(stats["catch_ups_completed"], completed, "{stats:?}");
    // A reload (a new load of the dataset) restarts it from the start: the
    // reload's flush drops it (nothing is left to find), the load's end
    // starts a new one.
    let long = tenant("catch-up-long");
    let long_payload = leased_fire(&mut con, &long, "1");
    let started = info(&mut con)["catch_ups_started"];
    ok(&mut con, &["DEBUG", "RELOAD"]);
    wait_until("the catch-up restarted", || {
        let stats = info(&mut con);
        stats["catch_ups_abandoned"] == abandoned + 1
            && stats["catch_ups_started"] == started + 1
            && stats["catching_up"] == 1
    });
    // Becoming a replica stops it (and the index is dropped).
    demote(&mut con);
    wait_until("the catch-up stopped", || {
        let stats = info(&mut con);
        stats["catch_ups_abandoned"] == abandoned + 2
            && stats["catching_up"] == 0
            && stats["lease_tenants_indexed"] == 0
    });
    assert_eq!(info(&mut con)["catch_ups_completed"], completed);
    // Promoted again: a full catch-up finds the lease granted before the
    // reload and expires it.
    promote(&mut con);
    wait_until("the lease granted before the reload expires", || {
        lrange(&mut con, &Keys::new(&long).ready) == vec![long_payload.clone()]
    });
    wait_until("the catch-up completed", || info(&mut con)["catch_ups_completed"] == completed + 1);
    let stats = info(&mut con);
    assert!(stats["catch_up_max_keys_per_turn"] <= 100 + BUCKET_SLACK, "{stats:?}");
    assert!(stats["catch_up_keys_examined"] >= filler, "{stats:?}");
}
