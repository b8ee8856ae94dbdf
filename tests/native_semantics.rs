//! What Redis users rely on for every write also holds for the module's
//! writes: `WATCH` sees them (a transaction over a key a module command
//! changed is aborted, one over a key it only read is not), and client-side
//! caching (`CLIENT TRACKING`) is told of them.

use crate::common;

use std::time::Duration;

use common::{cmd, tenant, Server};
use redis::Value;

fn message(town_agent: &str) -> String {
    format!(
        r#"{{"id":"00000000-0000-4000-8000-000000000001","from":"lead","to":"{town_agent}","type":"task","description":"watch me","priority":"normal","created_at":"2026-12-06T00:00:00Z","correlation_id":null}}"#
    )
}

/// `WATCH key`, let `other` run `write`, then `MULTI; LLEN key; EXEC`: was
/// the transaction aborted (nil)?
fn aborted_after(server: &Server, key: &str, write: &[&str]) -> bool {
    let mut con = server.connect();
    let mut other = server.connect();
    let _: () = cmd(&["WATCH", key]).query(&mut con).expect("WATCH");
    let _: Value = cmd(write).query(&mut other).unwrap_or_else(|error| panic!("{write:?}: {error}"));
    let reply: Value = redis::pipe().atomic().cmd("LLEN").arg(key).query(&mut con).expect("EXEC");
    reply == Value::Nil
}

#[test]
fn watch_sees_module_writes_and_only_real_changes() {
    let server = Server::start();
    let org = tenant("watch");
    let queue = format!("exocortex:dreams:{{{org}}}:queue");
    assert!(
        aborted_after(&server, &queue, &["DREAMS.FIRE", &org, "p", "1"]),
        "a FIRE must abort a WATCH on the ready list"
    );
    assert!(!aborted_after(&server, &queue, &["DREAMS.LEN", &org]), "a read must not abort it");
    assert!(
        !aborted_after(&server, &queue, &["DREAMS.DRAIN", &format!("{org}-other"), "0.01", "NOQUIET"]),
        "another tenant's command must not abort it"
    );
    assert!(
        aborted_after(&server, &queue, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]),
        "a DRAIN that takes the item must abort it"
    );

    let town = tenant("watch-town");
    let inbox = format!("tt:{{{town}}}:inbox:w1");
    assert!(
        aborted_after(&server, &inbox, &["TOWN.SEND", &town, &message("w1")]),
        "a SEND must abort a WATCH on the inbox"
    );
    assert!(!aborted_after(&server, &inbox, &["TOWN.LEN", &town, "w1"]), "a read must not abort it");
}

#[test]
fn client_tracking_is_told_of_module_writes() {
    let server = Server::start();
    let org = tenant("tracking");
    let queue = format!("exocortex:dreams:{{{org}}}:queue");
    // The invalidation channel, on a connection of its own (RESP2 redirect).
    let mut listener = server.connect();
    let listener_id: i64 = cmd(&["CLIENT", "ID"]).query(&mut listener).expect("CLIENT ID");
    listener.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe("__redis__:invalidate").expect("SUBSCRIBE");
    // A caching client reads the ready list: the key is now tracked for it.
    let mut cached = server.connect();
    let _: () =
        cmd(&["CLIENT", "TRACKING", "ON", "REDIRECT", &listener_id.to_string()]).query(&mut cached).expect("TRACKING");
    let _: i64 = cmd(&["LLEN", &queue]).query(&mut cached).expect("LLEN");
    // Another client's module command changes it.
    let mut writer = server.connect();
    let _: Value = cmd(&["DREAMS.FIRE", &org, "p", "1"]).query(&mut writer).expect("FIRE");
    let message = pubsub.get_message().expect("an invalidation message before the timeout");
    let keys: Vec<String> = message.get_payload().expect("invalidated keys");
    assert!(keys.contains(&queue), "invalidated {keys:?}, expected {queue}");
}
