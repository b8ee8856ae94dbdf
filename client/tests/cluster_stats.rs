//! The migration guard leaves the server's statistics alone: the same
//! module commands on a plain server and on a one-node cluster leave the
//! same `INFO stats` keyspace hits and misses, the same `INFO
//! commandstats` (every command, with its calls, failed and rejected
//! counts) and the same `keymiss` events. Before the memo and the dry run,
//! cluster mode added one `EXISTS` call and two keyspace misses (and two
//! `keymiss` events) to every module command (issue 35).
//!
//! Where the server has no dry run for `RedisModule_Call` (Redis before
//! 7.2), the first command on each slot after the module loads still makes
//! the guard's full check through `EXISTS`: there the test holds the
//! difference to exactly one `EXISTS` call and two misses (and two
//! `keymiss` events) per tenant slot, whatever the number of commands.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::{Server, cmd, wait_until};
use redis::Value;

/// Tenants of the workload (each its own slot here; checked below).
const TENANTS: [&str; 4] = ["stats-acme", "stats-globex", "stats-initech", "stats-umbrella"];
/// Rounds of the workload per tenant.
const ROUNDS: usize = 25;

/// The workload: every hot command of both families, on every tenant,
/// `ROUNDS` times; answers no error anywhere.
fn workload(con: &mut redis::Connection) {
    for round in 0..ROUNDS {
        for tenant in TENANTS {
            let project = format!("p{round}");
            let id = format!("4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d{round:04}");
            let message = format!(
                r#"{{"id":"{id}","from":"lead","to":"worker-1","type":"task","description":"d","priority":"normal","created_at":"2025-01-01T09:00:00Z","correlation_id":null}}"#
            );
            let calls: Vec<Vec<String>> = vec![
                vec!["DREAMS.RECORD".into(), tenant.into(), project.clone(), "3".into(), "1".into(), "1".into()],
                vec!["DREAMS.FIRE".into(), tenant.into(), project.clone(), "3".into()],
                vec!["DREAMS.LEN".into(), tenant.into()],
                vec!["TOWN.SEND".into(), tenant.into(), message],
                vec!["TOWN.LEN".into(), tenant.into(), "worker-1".into()],
                vec!["TOWN.PEEK".into(), tenant.into(), "worker-1".into(), "1".into()],
            ];
            for call in calls {
                let args: Vec<&str> = call.iter().map(String::as_str).collect();
                let reply: Value = cmd(&args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"));
                assert!(!matches!(reply, Value::ServerError(_)), "{args:?}: {reply:?}");
            }
            let payload: Option<String> =
                cmd(&["DREAMS.DRAIN", tenant, "0.01", "NOQUIET"]).query(con).expect("DREAMS.DRAIN");
            let payload = payload.expect("a fire to drain");
            let _: Value = cmd(&["DREAMS.ACK", tenant, &payload, "SUCCESS"]).query(con).expect("DREAMS.ACK");
            let _: Value = cmd(&["TOWN.RECV", tenant, "worker-1", "RELIABLE"]).query(con).expect("TOWN.RECV");
            let _: Value = cmd(&["TOWN.ACK", tenant, "worker-1", &id]).query(con).expect("TOWN.ACK");
        }
    }
}

/// What the workload left in the statistics: keyspace hits and misses,
/// `cmdstat_*` without timings, and how many `keymiss` events it fired.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Stats {
    hits: u64,
    misses: u64,
    commands: BTreeMap<String, String>,
    keymiss_events: u64,
}

fn info(con: &mut redis::Connection, section: &str) -> String {
    redis::cmd("INFO").arg(section).query(con).expect("INFO")
}

fn field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in {text}"))
}

/// Run the workload on `server` from `CONFIG RESETSTAT`, counting keymiss
/// events through a subscriber, and read the statistics.
fn measure(server: &Server) -> Stats {
    let mut con = server.connect();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("Em").query(&mut con).unwrap();
    let mut subscriber = server.connect();
    subscriber.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.psubscribe("__keyevent@*__:keymiss").unwrap();
    pubsub.subscribe("stats-marker").unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut con).unwrap();
    workload(&mut con);
    let stats = info(&mut con, "stats");
    let commandstats = info(&mut con, "commandstats");
    // Published after the workload on the same server: once it arrives,
    // every keymiss event of the workload has (one server, one order).
    let _: () = redis::cmd("PUBLISH").arg("stats-marker").arg("end").query(&mut con).unwrap();
    let mut keymiss_events = 0;
    loop {
        let message = pubsub.get_message().expect("the marker within 10 s");
        if message.get_channel_name() == "stats-marker" {
            break;
        }
        keymiss_events += 1;
    }
    let commands = commandstats
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            // calls, failed_calls, rejected_calls; not the timings.
            let counts: Vec<&str> = rest.split(',').filter(|kv| kv.contains("calls")).collect();
            Some((name.to_ascii_lowercase(), counts.join(",")))
        })
        .collect();
    Stats { hits: field(&stats, "keyspace_hits"), misses: field(&stats, "keyspace_misses"), commands, keymiss_events }
}

/// A one-node cluster: a cluster-enabled server that owns every slot.
fn one_node_cluster() -> Server {
    let node = Server::start_cluster_node();
    let mut con = node.connect();
    let _: () = redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(0).arg(16_383).query(&mut con).unwrap();
    wait_until("the one-node cluster is ok", || {
        let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap_or_default();
        info.contains("cluster_state:ok")
    });
    node
}

/// Redis before 7.2 (Valkey reports 7.2.4 here): no dry run for
/// `RedisModule_Call`.
fn lacks_dry_run(server: &Server) -> bool {
    let text = info(&mut server.connect(), "server");
    let version =
        text.lines().find_map(|line| line.strip_prefix("redis_version:")).expect("redis_version").trim().to_string();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) < (7, 2)
}

#[test]
fn module_commands_leave_the_same_statistics_in_cluster_mode_as_on_a_plain_server() {
    let plain = Server::start();
    let cluster = one_node_cluster();
    let mut admin = cluster.connect();
    let slots: BTreeSet<u16> = TENANTS
        .iter()
        .map(|tenant| redis::cmd("CLUSTER").arg("KEYSLOT").arg(*tenant).query(&mut admin).unwrap())
        .collect();
    assert_eq!(slots.len(), TENANTS.len(), "each tenant its own slot");

    let alone = measure(&plain);
    let clustered = measure(&cluster);
    for command in ["dreams.record", "dreams.fire", "dreams.drain", "dreams.ack", "town.send", "town.recv", "town.ack"]
    {
        assert!(alone.commands.contains_key(command), "{command} ran: {alone:?}");
    }
    if lacks_dry_run(&cluster) {
        // One full check through EXISTS per slot, then the memo: the
        // difference does not grow with the number of commands.
        let per_slot = slots.len() as u64;
        let mut expected = alone.clone();
        expected.misses += 2 * per_slot;
        expected.keymiss_events += 2 * per_slot;
        expected.commands.insert("exists".into(), format!("calls={per_slot},rejected_calls=0,failed_calls=0"));
        assert_eq!(clustered, expected, "Redis before 7.2: one EXISTS per slot, nothing else");
    } else {
        assert_eq!(clustered, alone, "cluster mode leaves the statistics of a plain server");
    }
}
