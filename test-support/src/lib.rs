//! The harness of every Rust integration test, the module crate's
//! (`tests/`) and the client crate's (`client/tests/`): which binaries and
//! module to run ([`env`](mod@env)), free loopback ports ([`ports`]), a real server
//! with the module on one of them, stopped by its own pid when the handle
//! drops ([`server`]), a local cluster of such servers ([`cluster`]), which
//! server it is ([`version`]), a raw RESP connection that keeps every
//! reply's exact type ([`resp`]), and waiting for a condition with one deadline
//! (here).
//!
//! Each test crate's `tests/common/mod.rs` re-exports all of it and adds
//! only what is its own, so tests keep writing `common::Server`.

use std::time::{Duration, Instant};

pub mod cluster;
pub mod env;
pub mod ports;
pub mod resp;
pub mod server;
pub mod version;

pub use cluster::{Cluster, SlotOwner};
pub use env::{cli_bin, module_path, sanitized, server_bin};
pub use ports::{free_port, free_port_run, free_ports};
pub use resp::{Frame, RawConnection};
pub use server::{Server, scratch_dir};
pub use version::{ServerKind, ServerVersion, binary_version, info_field, server_version};

/// How long anything a test waits on may take before the test fails: a
/// server answering its first PING, a replica's sync, a cluster agreeing on
/// one slot map after `--cluster create` or a move, a failover (nodes time
/// out after 5 s), a blocked client being answered.
///
/// 30 s because the machine is a shared 2-core box running several suites,
/// each two test threads at once, so these take seconds, not milliseconds.
/// A passing test never waits it out, so the length costs only the time a
/// failing test takes to say so. It was 20 s in the module crate's harness
/// and 30 s in the client crate's: the longer one, so nothing that passed on
/// either side times out now.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Between two looks at a condition in [`wait_until`] (and a server's first
/// PING): short beside anything waited on, so a test never waits a whole
/// period it need not, and long enough that polling is not the load.
pub const POLL: Duration = Duration::from_millis(10);

/// The longest a connection attempt to a test server may take (loopback: a
/// refused or dead port fails at once; this bounds a stopped process).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Poll `condition` every [`POLL`] until it holds; panic with `what` at the
/// [`DEADLINE`].
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        if started.elapsed() > DEADLINE {
            panic!("timed out waiting for: {what}");
        }
        std::thread::sleep(POLL);
    }
}

/// A tenant name unique to this test run and `label`.
pub fn tenant(label: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{label}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A command built from string arguments.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// Run a command, returning the raw reply or the error text.
pub fn run(con: &mut redis::Connection, args: &[&[u8]]) -> Result<redis::Value, String> {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query::<redis::Value>(con).map_err(|e| e.to_string())
}

/// The number of blocked clients (`INFO clients`).
pub fn blocked_clients(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("clients").query(con).expect("INFO clients");
    info.lines().find_map(|line| line.strip_prefix("blocked_clients:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// `MODULE UNLOAD dreamtown`: `Ok(true)` when it unloaded; `Ok(false)` on
/// Valkey 8.1, where the server's own checks passed (no blocked client, no
/// timer: it makes them before asking the module) and dreamtown's
/// `OnUnload` then refused, as it must there (`module::unload_guard`:
/// Valkey 8.1 crashes freeing a module's subcommands), so the module is
/// still loaded and working; `Err` with the server's message otherwise.
pub fn unload_module(con: &mut redis::Connection) -> Result<bool, String> {
    match redis::cmd("MODULE").arg("UNLOAD").arg("dreamtown").query::<()>(con) {
        Ok(()) => Ok(true),
        Err(error) => {
            let message = error.to_string();
            let info: String = redis::cmd("INFO").arg("server").query(con).unwrap_or_default();
            let valkey_8_1 = ServerVersion::from_info(&info).is_some_and(|v| v.is_release(ServerKind::Valkey, 8, 1));
            if valkey_8_1 && message.contains("operation not possible") {
                let listed: redis::Value = redis::cmd("MODULE").arg("LIST").query(con).expect("MODULE LIST");
                assert!(format!("{listed:?}").contains("dreamtown"), "refused, so still loaded: {listed:?}");
                Ok(false)
            } else {
                Err(message)
            }
        }
    }
}

/// The `*.rs` files of `tests_dir` (but `integration.rs`, the one test
/// binary) that `declared` does not name as `mod <name>;` or as a
/// `[[test]]`'s `path = "tests/<name>.rs"`: with Cargo's one binary per
/// file off, such a file compiles nowhere and its tests silently never run.
/// `declared` is integration.rs's text, and the manifest's if it has
/// `[[test]]` entries.
pub fn test_files_left_out(tests_dir: &std::path::Path, declared: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(tests_dir).expect("read tests/") {
        let path = entry.expect("a tests/ entry").path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        if path.extension().is_some_and(|e| e == "rs")
            && name != "integration"
            && !declared.contains(&format!("\nmod {name};\n"))
            && !declared.contains(&format!("path = \"tests/{name}.rs\""))
        {
            missing.push(format!("{name}.rs"));
        }
    }
    missing
}
