//! The harness itself: the module loads, answers, and is named dreamtown.

use crate::common;

use common::Server;

#[test]
fn module_loads_and_is_listed() {
    let server = Server::start();
    let mut con = server.connect();
    let modules: redis::Value = redis::cmd("MODULE").arg("LIST").query(&mut con).unwrap();
    let text = format!("{modules:?}");
    assert!(text.contains("dreamtown"), "{text}");
}

#[test]
fn commands_declare_the_tenant_as_first_key() {
    let server = Server::start();
    let mut con = server.connect();
    let info: redis::Value = redis::cmd("COMMAND").arg("INFO").arg("DREAMS.FIRE").query(&mut con).unwrap();
    let redis::Value::Array(entries) = info else { panic!("{info:?}") };
    let redis::Value::Array(fields) = &entries[0] else { panic!("{entries:?}") };
    // name, arity, flags, first key, last key, step
    assert_eq!(fields[3], redis::Value::Int(1));
    assert_eq!(fields[4], redis::Value::Int(1));
    assert_eq!(fields[5], redis::Value::Int(1));
}
