//! Which server, command-line client and module the tests run, from the
//! environment `make test SERVER=...` sets (`DREAMTOWN_SERVER`,
//! `DREAMTOWN_CLI`, `DREAMTOWN_MODULE`), so both test crates, the Python
//! tests, `scripts/cluster.sh` and `bench/` always run the same binaries;
//! and whether that server is a sanitized build (`DREAMTOWN_SANITIZED`,
//! set by `make test-asan`).

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

/// The built module: `DREAMTOWN_MODULE` (set by `make test`), or else the
/// newest of the workspace's `target/release` and `target/debug` builds.
pub fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("DREAMTOWN_MODULE").filter(|s| !s.is_empty()) {
        return PathBuf::from(path);
    }
    // This crate sits one level below the workspace root.
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("target");
    let candidates = ["release", "debug"].map(|profile| target.join(profile).join("libdreamtown.so"));
    candidates
        .iter()
        .filter(|path| path.exists())
        .max_by_key(|path| path.metadata().and_then(|m| m.modified()).ok())
        .cloned()
        .unwrap_or_else(|| {
            panic!("build the module first (cargo build --release -p dreamtown), or set DREAMTOWN_MODULE")
        })
}

/// Is the server under test built with a sanitizer (`DREAMTOWN_SANITIZED=1`,
/// set by `make test-asan`, scripts/test-asan.sh)? Then a [`crate::Server`]
/// is stopped with `SHUTDOWN` rather than killed, so that the sanitizer's
/// checks at exit (LeakSanitizer) run.
pub fn sanitized() -> bool {
    std::env::var("DREAMTOWN_SANITIZED").is_ok_and(|value| value == "1")
}
