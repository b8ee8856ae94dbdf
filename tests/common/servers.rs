//! Which server and command-line client the tests run, from the
//! environment `make test SERVER=...` sets. Shared by this crate's harness
//! and the client crate's (`client/tests/common/mod.rs` includes it by
//! path), so both always test the same binaries.

use std::path::PathBuf;

/// The server binary the tests run: `DREAMTOWN_SERVER` (a path to
/// `redis-server` or `valkey-server`, set by `make test SERVER=...`), or
/// `redis-server` from `PATH`.
pub fn server_bin() -> String {
    std::env::var("DREAMTOWN_SERVER").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "redis-server".into())
}

/// The command-line client that goes with [`server_bin`]: `DREAMTOWN_CLI`,
/// else `redis-cli`/`valkey-cli` beside the server binary, else `redis-cli`.
pub fn cli_bin() -> String {
    if let Some(cli) = std::env::var("DREAMTOWN_CLI").ok().filter(|s| !s.is_empty()) {
        return cli;
    }
    let server = PathBuf::from(server_bin());
    let name = server.file_name().and_then(|n| n.to_str()).unwrap_or("redis-server");
    let cli_name = if name.starts_with("valkey") { "valkey-cli" } else { "redis-cli" };
    match server.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        Some(dir) if dir.join(cli_name).exists() => dir.join(cli_name).display().to_string(),
        _ => cli_name.into(),
    }
}
