//! ACL: the organization argument is declared `NOT_KEY`, so Redis does not
//! match it against key patterns; the module checks every key it opens.
//! A user limited to `~exocortex:dreams:{a}:*` does all of `a`'s work and
//! is refused (`NOPERM`, nothing changed) on every command for `b`; a user
//! missing one of the keys a command needs is refused before anything moves.

mod common;
mod dreams_support;

use common::{tenant, Server};
use dreams_support::*;
use redis::Connection;

fn set_user(con: &mut Connection, name: &str, rules: &[&str]) {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER").arg(name).arg("reset").arg("on").arg(">pw").arg("+@all");
    for rule in rules {
        cmd.arg(*rule);
    }
    let _: () = cmd.query(con).expect("ACL SETUSER");
}

/// Work for `org`: one counted fire in flight (returned), one fire ready.
fn busy(con: &mut Connection, org: &str) -> Vec<u8> {
    let mut dreams = Dreams::new(con, org);
    dreams.record("p", 1, 3, 0, &strs(&trigger(3, 100, 0, NEVER_SECS)));
    let payload = dreams.take_one();
    dreams.fire("q", 1, &[]);
    payload
}

fn all_commands<'a>(org: &'a str, payload: &'a [u8]) -> Vec<Vec<&'a [u8]>> {
    let o = org.as_bytes();
    vec![
        vec![b"DREAMS.FIRE", o, b"p", b"1"],
        vec![b"DREAMS.RECORD", o, b"p", b"1", b"5", b"5", b"EVENT", b"e", b"GENERATION", b"1"],
        vec![b"DREAMS.SETTLE", o, b"p", b"1", b"e", b"9"],
        vec![b"DREAMS.DRAIN", o, b"0.01", b"NOQUIET"],
        vec![b"DREAMS.ACK", o, payload, b"SUCCESS"],
        vec![b"DREAMS.RECOVER", o],
        vec![b"DREAMS.LEN", o],
        vec![b"DREAMS.COUNTERS", o, b"p", b"1"],
    ]
}

#[test]
fn a_tenant_user_is_refused_on_another_organization_and_changes_nothing() {
    let server = Server::start();
    let mut admin = server.connect();
    let a = tenant("acl-a");
    let b = tenant("acl-b");
    set_user(&mut admin, "tenant-a", &[&format!("~exocortex:dreams:{{{a}}}:*")]);
    let payload_b = busy(&mut admin, &b);
    // The same payload shape, relabelled for b, is what tenant-a might send.
    let mut user = server.connect_as("tenant-a", "pw");
    let before = digest(&mut admin);
    for args in all_commands(&b, &payload_b) {
        let reply = call_bytes(&mut user, &args);
        let error = reply.expect_err("refused");
        assert!(error.starts_with("NOPERM"), "{:?}: {error}", String::from_utf8_lossy(args[0]));
        assert!(error.contains(&format!("{{{b}}}")), "names the refused key: {error}");
    }
    assert_eq!(digest(&mut admin), before, "nothing changed");
    let log: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert!(!log.is_empty(), "refusals are in the ACL log");
}

#[test]
fn a_tenant_user_does_all_of_its_own_work() {
    let server = Server::start();
    let mut admin = server.connect();
    let a = tenant("acl-own");
    set_user(&mut admin, "tenant-a", &[&format!("~exocortex:dreams:{{{a}}}:*")]);
    let mut user = server.connect_as("tenant-a", "pw");
    let payload = busy(&mut user, &a);
    for args in all_commands(&a, &payload) {
        let reply = call_bytes(&mut user, &args);
        assert!(reply.is_ok(), "{:?}: {reply:?}", String::from_utf8_lossy(args[0]));
    }
    // Garbage in ready is dead-lettered under the same permission.
    let keys = Keys::new(&a);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("garbage").query(&mut user).unwrap();
    let mut dreams = Dreams::new(&mut user, &a);
    while dreams.take().is_some() {}
    assert_eq!(dreams.dead(), [b"garbage".to_vec()]);
}

#[test]
fn drain_without_permission_on_processing_moves_nothing() {
    let server = Server::start();
    let mut admin = server.connect();
    let org = tenant("acl-partial");
    let keys = Keys::new(&org);
    set_user(&mut admin, "queue-only", &[&format!("~{}", keys.ready)]);
    Dreams::new(&mut admin, &org).fire("p", 1, &[]);
    let mut user = server.connect_as("queue-only", "pw");
    let before = digest(&mut admin);
    let error = call(&mut user, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).expect_err("refused");
    assert!(error.starts_with("NOPERM"), "{error}");
    assert_eq!(digest(&mut admin), before);
    assert_eq!(Dreams::new(&mut admin, &org).len(), (1, 0, 0), "the item is still ready");
    // Every key but the dead-letter list is not enough either.
    set_user(&mut admin, "no-dead", &[
        &format!("~{}", keys.ready),
        &format!("~{}", keys.deferred),
        &format!("~{}", keys.processing),
    ]);
    let mut user = server.connect_as("no-dead", "pw");
    let error = call(&mut user, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).expect_err("refused");
    assert!(error.contains(&keys.dead), "{error}");
    assert_eq!(digest(&mut admin), before);
}

#[test]
fn read_only_permission_allows_inspection_only() {
    let server = Server::start();
    let mut admin = server.connect();
    let org = tenant("acl-read");
    set_user(&mut admin, "reader", &[&format!("%R~exocortex:dreams:{{{org}}}:*")]);
    let payload = busy(&mut admin, &org);
    let mut user = server.connect_as("reader", "pw");
    assert_eq!(Dreams::new(&mut user, &org).len(), (1, 0, 1));
    assert_eq!(Dreams::new(&mut user, &org).counter("p", 1, "memories"), Some(3));
    let before = digest(&mut admin);
    for args in all_commands(&org, &payload) {
        if args[0] == b"DREAMS.LEN" || args[0] == b"DREAMS.COUNTERS" {
            continue;
        }
        let error = call_bytes(&mut user, &args).expect_err("refused");
        assert!(error.starts_with("NOPERM"), "{:?}: {error}", String::from_utf8_lossy(args[0]));
    }
    assert_eq!(digest(&mut admin), before);
}

#[test]
fn a_user_without_the_command_is_refused_by_redis() {
    let server = Server::start();
    let mut admin = server.connect();
    let org = tenant("acl-command");
    let _: () = redis::cmd("ACL")
        .arg("SETUSER").arg("no-fire").arg("on").arg(">pw").arg("~*").arg("+@all").arg("-dreams.fire")
        .query(&mut admin)
        .unwrap();
    let mut user = server.connect_as("no-fire", "pw");
    let error = call(&mut user, &["DREAMS.FIRE", &org, "p", "1"]).expect_err("refused");
    assert!(error.starts_with("NOPERM"), "{error}");
    assert_eq!(Dreams::new(&mut user, &org).len(), (0, 0, 0));
}
