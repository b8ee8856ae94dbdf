//! The release version is reported where operators look: `MODULE LIST`
//! (as MMmmpp), `INFO dreamtown` and `COMMAND DOCS`' `since`.

use crate::common;

use common::Server;
use redis::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn encoded() -> i64 {
    let parts: Vec<i64> = VERSION.split('.').map(|part| part.parse().expect("a numeric version part")).collect();
    parts[0] * 10_000 + parts[1] * 100 + parts[2]
}

#[test]
fn module_list_reports_the_version_as_mmmmpp() {
    let server = Server::start();
    let mut con = server.connect();
    let modules: Vec<Vec<Value>> = redis::cmd("MODULE").arg("LIST").query(&mut con).expect("MODULE LIST");
    let ours = modules
        .iter()
        .find(|fields| fields.iter().any(|v| matches!(v, Value::BulkString(b) if b == b"dreamtown")))
        .expect("dreamtown in MODULE LIST");
    let at = ours.iter().position(|v| matches!(v, Value::BulkString(b) if b == b"ver")).expect("a ver field");
    assert_eq!(ours.get(at + 1), Some(&Value::Int(encoded())), "{ours:?}");
    assert!(encoded() > 1, "a real version, not the placeholder 1");
}

#[test]
fn info_dreamtown_reports_the_version() {
    let server = Server::start();
    let mut con = server.connect();
    let info: String = redis::cmd("INFO").arg("dreamtown").query(&mut con).expect("INFO dreamtown");
    assert!(info.contains("# dreamtown_build"), "{info}");
    assert!(info.lines().any(|line| line.trim() == format!("dreamtown_version:{VERSION}")), "{info}");
}
