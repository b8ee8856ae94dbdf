//! The migration guard's memo against Valkey 8's replicated `CLUSTER
//! SETSLOT`, with the interleaving forced. Valkey 8+ replicates `SETSLOT`
//! to the master's replicas first and applies it only once they
//! acknowledge (its client blocked meanwhile); the module's command filter
//! sees the command before that. Here the replica is stopped (`SIGSTOP`)
//! so the `SETSLOT ... MIGRATING` stays held between its replication and
//! its application, tenant commands run on the source during that window
//! (correctly: the slot is still stable there), then the replica resumes,
//! the state is applied, and the next tenant command on the source must be
//! refused: `-TRYAGAIN` from the guard while a key named exactly like the
//! tenant exists (the server's own routing finds that key and lets the
//! command through), `ASK` from the server once it does not.
//!
//! It fails for a memo that a command passing its check during the window
//! may refill (checked by building without the pending-client rule: the
//! command after the application answered a length instead of
//! `TRYAGAIN`). On Redis, `SETSLOT` applies at once (nothing to hold):
//! the test runs the same sequence there without the window.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::{Cluster, Server, cmd, wait_until};

fn info_field(node: &Server, section: &str, name: &str) -> Option<String> {
    let text: String = redis::cmd("INFO").arg(section).query(&mut node.connect()).ok()?;
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(|v| v.trim().to_string()))
}

/// Valkey 8 or newer: `SETSLOT` waits for the replicas' acknowledgement.
fn setslot_waits_for_replicas(node: &Server) -> bool {
    info_field(node, "server", "valkey_version")
        .and_then(|v| v.split('.').next().and_then(|m| m.parse::<u32>().ok()))
        .is_some_and(|major| major >= 8)
}

fn signal(node: &Server, name: &str) {
    let pid = node.pid().to_string();
    let sent = Command::new("kill").args([&format!("-{name}"), &pid]).status().expect("kill");
    assert!(sent.success(), "kill -{name} {pid}");
}

/// `CLUSTER NODES` of `node` shows `slot` migrating (`[<slot>->-<id>]`).
fn shows_migrating(node: &Server, slot: u16) -> bool {
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut node.connect()).unwrap_or_default();
    nodes.contains(&format!("[{slot}->-"))
}

fn len(node: &Server, tenant: &str) -> redis::RedisResult<Vec<i64>> {
    cmd(&["DREAMS.LEN", tenant]).query(&mut node.connect())
}

#[test]
fn a_setslot_held_between_replication_and_application_does_not_let_the_memo_settle() {
    let cluster = Cluster::start_with_replicas(3, 1);
    let tenant = common::tenant("held-setslot");
    let mut admin = cluster.nodes[0].connect();
    let slot: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&tenant).query(&mut admin).unwrap();
    let source = &cluster.nodes[cluster.owner_of_slot(slot)];
    let source_id = source.node_id();
    let target = cluster
        .nodes
        .iter()
        .find(|n| n.port != source.port && cluster.slot_owners().iter().any(|o| o.port == n.port))
        .expect("another master");
    let replica = cluster
        .nodes
        .iter()
        .find(|n| {
            let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut n.connect()).unwrap_or_default();
            nodes.lines().any(|line| line.contains("myself") && line.contains(&format!("slave {source_id}")))
        })
        .expect("the source's replica");
    let held = setslot_waits_for_replicas(source);

    // The slot settles on the source: a command, then a key named exactly
    // like the tenant (the server's routing then finds the tenant argument
    // as a key and sends no ASK while the slot migrates).
    cmd(&["DREAMS.FIRE", &tenant, "web", "3"]).query::<redis::Value>(&mut source.connect()).unwrap();
    assert!(len(source, &tenant).is_ok(), "served");
    let _: () = cmd(&["SET", &tenant, "a user's own key"]).query(&mut source.connect()).unwrap();

    // The replica in sync (a replica not yet online is not waited for),
    // then unable to acknowledge: Valkey holds the SETSLOT.
    wait_until("the source's replica online", || {
        info_field(source, "replication", "slave0").is_some_and(|v| v.contains("state=online"))
    });
    signal(replica, "STOP");
    let mut setslot = Some({
        let mut con = source.connect();
        let target_id = target.node_id();
        std::thread::spawn(move || {
            let slot = slot.to_string();
            let mut args = vec!["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id];
            // Valkey 8's own option (older servers refuse it): longer than
            // the test holds the replica.
            if held {
                args.extend(["TIMEOUT", "30000"]);
            }
            cmd(&args).query::<String>(&mut con)
        })
    });
    if held {
        wait_until("the SETSLOT blocked waiting for the replica", || {
            if setslot.as_ref().is_some_and(|t| t.is_finished()) {
                let early = setslot.take().map(|t| t.join());
                panic!("SETSLOT returned while its replica was stopped: {early:?}");
            }
            info_field(source, "clients", "blocked_clients").is_some_and(|v| v != "0")
        });
        // Commands during the window: the slot is still stable here, so
        // they run (each passes the full check and must not settle it).
        for _ in 0..20 {
            assert!(len(source, &tenant).is_ok(), "served before the state applies");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!shows_migrating(source, slot), "still held: not applied");
    }
    signal(replica, "CONT");
    assert_eq!(setslot.take().expect("running").join().expect("the SETSLOT thread").as_deref(), Ok("OK"));
    assert!(shows_migrating(source, slot), "applied");

    // Applied: the guard refuses (the tenant's name exists as a key, so the
    // server's routing let the command through)...
    let refused = len(source, &tenant).expect_err("refused on a migrating source");
    assert_eq!(refused.code(), Some("TRYAGAIN"), "{refused}");
    // ...and without that key the server answers ASK itself.
    let _: () = cmd(&["DEL", &tenant]).query(&mut source.connect()).unwrap();
    let asked = len(source, &tenant).expect_err("ASK on a migrating source");
    assert!(asked.to_string().contains("ASK") || asked.code() == Some("ASK"), "{asked}");

    // Back to stable: served again.
    let _: String = cmd(&["CLUSTER", "SETSLOT", &slot.to_string(), "STABLE"]).query(&mut source.connect()).unwrap();
    wait_until("served again once stable", || len(source, &tenant).is_ok());
}

/// A `SETSLOT` queued in `MULTI` applies at `EXEC`, long after the filter
/// saw it queued: commands between the queueing and the `EXEC` settle the
/// slot again (it is still stable), so the `EXEC` must forget it. Fails
/// when `EXEC` does not (the command after it answered a length on the
/// migrating source).
#[test]
fn a_setslot_queued_in_multi_is_forgotten_again_at_exec() {
    let cluster = Cluster::start(3);
    let tenant = common::tenant("multi-setslot");
    let mut admin = cluster.nodes[0].connect();
    let slot: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&tenant).query(&mut admin).unwrap();
    let source = &cluster.nodes[cluster.owner_of_slot(slot)];
    let target = cluster.nodes.iter().find(|n| n.port != source.port).expect("another master");
    let _: () = cmd(&["SET", &tenant, "a user's own key"]).query(&mut source.connect()).unwrap();

    let mut transaction = source.connect();
    let _: () = cmd(&["MULTI"]).query(&mut transaction).unwrap();
    let queued: String = cmd(&["CLUSTER", "SETSLOT", &slot.to_string(), "MIGRATING", &target.node_id()])
        .query(&mut transaction)
        .unwrap();
    assert_eq!(queued, "QUEUED");
    // Still stable: served, and settled again once the pending timer has
    // seen the SETSLOT's client unblocked (twice, 10 ms apart).
    for _ in 0..20 {
        assert!(len(source, &tenant).is_ok(), "served before EXEC");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _: Vec<String> = cmd(&["EXEC"]).query(&mut transaction).unwrap();
    assert!(shows_migrating(source, slot), "applied at EXEC");
    let refused = len(source, &tenant).expect_err("refused on a migrating source");
    assert_eq!(refused.code(), Some("TRYAGAIN"), "{refused}");
    let _: String = cmd(&["CLUSTER", "SETSLOT", &slot.to_string(), "STABLE"]).query(&mut source.connect()).unwrap();
}
