//! Test harness: a real `redis-server` with the module loaded, on a free
//! loopback port, stopped (by its own pid) when the handle drops.
//!
//! The module path comes from `DREAMTOWN_MODULE` (set by `make test`), or
//! else the newest of `target/release` and `target/debug`.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A generous deadline for anything a test waits on (a loaded 2-core box).
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The built module.
pub fn module_path() -> PathBuf {
    if let Ok(path) = std::env::var("DREAMTOWN_MODULE") {
        return PathBuf::from(path);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = ["release", "debug"].map(|profile| root.join("target").join(profile).join("libdreamtown.so"));
    candidates
        .iter()
        .filter(|path| path.exists())
        .max_by_key(|path| path.metadata().and_then(|m| m.modified()).ok())
        .cloned()
        .unwrap_or_else(|| panic!("build the module first (cargo build --release), or set DREAMTOWN_MODULE"))
}

#[path = "../../src/test_random.rs"]
pub mod random;
mod servers;
#[allow(unused_imports)]
pub use servers::{cli_bin, server_bin};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

/// A running redis-server with the module.
pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    /// Everything after `--port <port>`, to start the same server again.
    args: Vec<String>,
}

impl Server {
    /// Start a server with the module and extra arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        Self::start_with_module_args(extra, &[])
    }

    /// Start a server; `module_args` follow the module path on `--loadmodule`.
    pub fn start_with_module_args(extra: &[&str], module_args: &[&str]) -> Server {
        let mut loadmodule = vec!["--loadmodule".to_owned(), module_path().display().to_string()];
        loadmodule.extend(module_args.iter().map(|s| s.to_string()));
        Self::start_args(&loadmodule, extra)
    }

    /// Start a server without the module (to load it at run time).
    pub fn start_without_module(extra: &[&str]) -> Server {
        Self::start_args(&[], extra)
    }

    fn start_args(loadmodule: &[String], extra: &[&str]) -> Server {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!("dreamtown-test-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("test dir");
            let mut args: Vec<String> = [
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--enable-debug-command",
                "yes",
                // A replica syncs at once instead of after the default 5 s.
                "--repl-diskless-sync-delay",
                "0",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.push("--dir".into());
            args.push(dir.display().to_string());
            args.extend(loadmodule.iter().cloned());
            args.extend(extra.iter().map(|s| s.to_string()));
            let child = Self::spawn(port, &args);
            let mut server = Server { child, port, dir, args };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("redis-server did not start: {last_error}");
    }

    fn spawn(port: u16, args: &[String]) -> Child {
        Command::new(server_bin())
            .arg("--port")
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH")
    }

    /// Kill the process (no shutdown save: what is on disk is what the
    /// test saved) and start it again on the same port, directory and
    /// arguments.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let started = Instant::now();
        loop {
            self.child = Self::spawn(self.port, &self.args);
            match self.wait_ready() {
                Ok(()) => return,
                Err(error) if started.elapsed() > DEADLINE => panic!("restart failed: {error}"),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// Start a plain server with the module.
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}"));
            }
            if let Ok(mut con) = self.try_connect() {
                if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                    return Ok(());
                }
            }
            if started.elapsed() > DEADLINE {
                return Err("no PING reply before the deadline".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        client.get_connection_with_timeout(Duration::from_secs(2))
    }

    /// A new connection.
    pub fn connect(&self) -> redis::Connection {
        self.try_connect().expect("connect to test server")
    }

    /// A connection authenticated as `user`.
    pub fn connect_as(&self, user: &str, password: &str) -> redis::Connection {
        let mut con = self.connect();
        redis::cmd("AUTH").arg(user).arg(password).query::<()>(&mut con).expect("AUTH");
        con
    }

    /// Is the process still alive and answering?
    pub fn alive(&self) -> bool {
        match self.try_connect() {
            Ok(mut con) => redis::cmd("PING").query::<String>(&mut con).is_ok(),
            Err(_) => false,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `DEBUG DIGEST`.
    pub fn digest(&self) -> String {
        redis::cmd("DEBUG").arg("DIGEST").query(&mut self.connect()).expect("DEBUG DIGEST")
    }

    /// Start a replica of this server, and wait until its link is up.
    pub fn start_replica(&self) -> Server {
        let port = self.port.to_string();
        let replica = Server::start_with(&["--replicaof", "127.0.0.1", &port]);
        let mut con = replica.connect();
        wait_until("replica link up", || {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut con).unwrap_or_default();
            info.contains("master_link_status:up")
        });
        replica
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Poll `condition` until it holds; panic with `what` at the deadline.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        if started.elapsed() > DEADLINE {
            panic!("timed out waiting for: {what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The number of blocked clients (`INFO clients`).
pub fn blocked_clients(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("clients").query(con).expect("INFO clients");
    info.lines().find_map(|line| line.strip_prefix("blocked_clients:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// A tenant name unique to this test run and `label`.
pub fn tenant(label: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{label}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Run a command, returning the raw reply or the error text.
pub fn run(con: &mut redis::Connection, args: &[&[u8]]) -> Result<redis::Value, String> {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query::<redis::Value>(con).map_err(|e| e.to_string())
}

/// A command built from string arguments.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
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
            if info.contains("valkey_version:8.1.") && message.contains("operation not possible") {
                let listed: redis::Value = redis::cmd("MODULE").arg("LIST").query(con).expect("MODULE LIST");
                assert!(format!("{listed:?}").contains("dreamtown"), "refused, so still loaded: {listed:?}");
                Ok(false)
            } else {
                Err(message)
            }
        }
    }
}
