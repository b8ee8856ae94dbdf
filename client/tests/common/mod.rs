//! Test harness of the client crate: real `redis-server` processes with the
//! module, on free loopback ports — one server, or a 3-master cluster built
//! with `redis-cli --cluster create` — each stopped by its own pid when its
//! handle drops.
//!
//! The module comes from `DREAMTOWN_MODULE` (set by `make test`), or else
//! `../target/release/libdreamtown.so`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

/// A generous deadline for anything a test waits on (a loaded 2-core box).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// The built module.
pub fn module_path() -> PathBuf {
    if let Ok(path) = std::env::var("DREAMTOWN_MODULE") {
        return PathBuf::from(path);
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/libdreamtown.so");
    assert!(path.exists(), "build the module first (cargo build --release -p dreamtown), or set DREAMTOWN_MODULE");
    path
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[path = "../../../tests/common/servers.rs"]
mod servers;
#[allow(unused_imports)]
pub use servers::{cli_bin, server_bin};

/// A free loopback port; for a cluster node, its bus port (+10000) too.
fn free_port(with_bus: bool) -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free loopback port");
        if !with_bus || (port < 55_535 && port_is_free(port + 10_000)) {
            return port;
        }
    }
}

/// `count` consecutive free loopback ports whose bus ports (+10000) are free too.
pub fn free_port_run(count: u16) -> u16 {
    loop {
        let base = free_port(true);
        if base < 55_535 - count && (0..count).all(|i| port_is_free(base + i) && port_is_free(base + i + 10_000)) {
            return base;
        }
    }
}

/// A fresh scratch directory for `label`.
pub fn scratch_dir(label: &str, port: u16) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dreamtown-client-{label}-{}-{port}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("test dir");
    dir
}

/// A running redis-server with the module.
pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Server {
    /// A plain server with the module.
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    /// A server with the module and extra arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        Self::spawn("server", extra, false)
    }

    /// A server without the module (a seed deployment).
    pub fn start_plain() -> Server {
        Self::spawn_with("plain", &[], false, false)
    }

    /// A cluster-enabled server with the module that has not joined any
    /// cluster yet (it owns no slot).
    pub fn start_cluster_node() -> Server {
        Self::spawn("cluster", &[], true)
    }

    fn spawn(label: &str, extra: &[&str], cluster: bool) -> Server {
        Self::spawn_with(label, extra, cluster, true)
    }

    fn spawn_with(label: &str, extra: &[&str], cluster: bool, module: bool) -> Server {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port(cluster);
            let dir = scratch_dir(label, port);
            let mut command = Command::new(server_bin());
            command
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--enable-debug-command", "yes"])
                .arg("--dir")
                .arg(&dir);
            if module {
                command.arg("--loadmodule").arg(module_path());
            }
            command.args(extra).stdout(Stdio::null()).stderr(Stdio::null());
            if cluster {
                command.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
                command.args(["--cluster-node-timeout", "5000"]);
            }
            let child = command.spawn().expect("redis-server on PATH");
            let mut server = Server { child, port, dir };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("redis-server did not start: {last_error}");
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}"));
            }
            if let Ok(mut con) = self.try_connect()
                && redis::cmd("PING").query::<String>(&mut con).is_ok()
            {
                return Ok(());
            }
            if started.elapsed() > DEADLINE {
                return Err("no PING reply before the deadline".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(Duration::from_secs(2))
    }

    /// A blocking admin connection.
    pub fn connect(&self) -> redis::Connection {
        self.try_connect().expect("connect to test server")
    }

    /// An async multiplexed connection without a response timeout (blocking drains need it).
    pub async fn multiplexed(&self) -> MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        redis::Client::open(self.url())
            .expect("client")
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("async connection")
    }

    /// An async multiplexed connection authenticated as `user`.
    pub async fn multiplexed_as(&self, user: &str, password: &str) -> MultiplexedConnection {
        let url = format!("redis://{user}:{password}@127.0.0.1:{}/", self.port);
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        redis::Client::open(url)
            .expect("client")
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("async connection as user")
    }

    /// A connection manager without a response timeout.
    pub async fn manager(&self) -> redis::aio::ConnectionManager {
        let config = redis::aio::ConnectionManagerConfig::new().set_response_timeout(None);
        redis::Client::open(self.url())
            .expect("client")
            .get_connection_manager_with_config(config)
            .await
            .expect("connection manager")
    }

    /// `DEBUG DIGEST`.
    pub fn digest(&self) -> String {
        redis::cmd("DEBUG").arg("DIGEST").query(&mut self.connect()).expect("DEBUG DIGEST")
    }

    /// `CLUSTER MYID`.
    pub fn node_id(&self) -> String {
        redis::cmd("CLUSTER").arg("MYID").query(&mut self.connect()).expect("CLUSTER MYID")
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Is the process still running?
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A local Redis Cluster of masters without replicas, the module on every node.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// One master's view of the slot map: which port owns which slot ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotOwner {
    pub port: u16,
    pub ranges: Vec<(u16, u16)>,
}

impl Cluster {
    /// Start `masters` nodes and join them with `redis-cli --cluster create`.
    pub fn start(masters: usize) -> Cluster {
        Self::start_with_replicas(masters, 0)
    }

    /// Start `masters` masters with `replicas` replicas each (`nodes`:
    /// the masters first, as `redis-cli --cluster create` assigns them).
    pub fn start_with_replicas(masters: usize, replicas: usize) -> Cluster {
        let count = masters * (1 + replicas);
        let nodes: Vec<Server> = (0..count).map(|_| Server::spawn("cluster", &[], true)).collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let output = Command::new(cli_bin())
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli on PATH");
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = Cluster { nodes };
        cluster.wait_converged();
        cluster
    }

    /// Every node says `cluster_state:ok` and sees the same full slot map.
    fn wait_converged(&self) {
        wait_until("cluster_state:ok and one slot map on every node", || {
            let mut maps = Vec::new();
            for node in &self.nodes {
                let Ok(mut con) = node.try_connect() else { return false };
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap_or_default();
                if !info.contains("cluster_state:ok") {
                    return false;
                }
                maps.push(slot_owners(&mut con));
            }
            let covered: u32 = maps
                .first()
                .map(|map| map.iter().flat_map(|o| &o.ranges).map(|(a, b)| u32::from(b - a) + 1).sum())
                .unwrap_or(0);
            covered == 16_384 && maps.windows(2).all(|pair| pair[0] == pair[1])
        });
    }

    /// Wait until every node agrees on one full slot map (after a move).
    pub fn wait_stable(&self) {
        self.wait_converged();
    }

    /// `redis://` URLs of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }

    /// An async cluster connection (no response timeout by default).
    pub async fn connection(&self) -> redis::cluster_async::ClusterConnection {
        redis::cluster::ClusterClient::new(self.urls())
            .expect("cluster client")
            .get_async_connection()
            .await
            .expect("cluster connection")
    }

    /// The slot map as the first node sees it.
    pub fn slot_owners(&self) -> Vec<SlotOwner> {
        slot_owners(&mut self.nodes[0].connect())
    }

    /// The node (by index) that owns `slot`.
    pub fn owner_of_slot(&self, slot: u16) -> usize {
        let owners = self.slot_owners();
        let port = owners
            .iter()
            .find(|o| o.ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .map(|o| o.port)
            .expect("every slot has an owner");
        self.nodes.iter().position(|n| n.port == port).expect("owner is one of ours")
    }
}

/// `CLUSTER SLOTS` as owner port → ranges, sorted.
fn slot_owners(con: &mut redis::Connection) -> Vec<SlotOwner> {
    let slots: Vec<(u16, u16, (String, u16))> = match redis::cmd("CLUSTER").arg("SLOTS").query::<redis::Value>(con) {
        Ok(redis::Value::Array(entries)) => entries
            .into_iter()
            .filter_map(|entry| {
                let redis::Value::Array(parts) = entry else { return None };
                let start: u16 = redis::from_redis_value(parts.first()?.clone()).ok()?;
                let end: u16 = redis::from_redis_value(parts.get(1)?.clone()).ok()?;
                let redis::Value::Array(master) = parts.get(2)?.clone() else { return None };
                let host: String = redis::from_redis_value(master.first()?.clone()).ok()?;
                let port: u16 = redis::from_redis_value(master.get(1)?.clone()).ok()?;
                Some((start, end, (host, port)))
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut by_port: BTreeMap<u16, Vec<(u16, u16)>> = BTreeMap::new();
    for (start, end, (_, port)) in slots {
        by_port.entry(port).or_default().push((start, end));
    }
    by_port
        .into_iter()
        .map(|(port, mut ranges)| {
            ranges.sort();
            SlotOwner { port, ranges }
        })
        .collect()
}

/// Poll `condition` until it holds; panic with `what` at the deadline.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        if started.elapsed() > DEADLINE {
            panic!("timed out waiting for: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
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
