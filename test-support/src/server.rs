//! One real server process ([`crate::server_bin`]) on a free loopback port,
//! with the module loaded or not, in its own scratch directory; killed by
//! its own pid (a sanitized build: shut down first), and its directory
//! removed, when the handle drops.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{CONNECT_TIMEOUT, DEADLINE, POLL, free_ports, module_path, sanitized, server_bin, wait_until};

/// Arguments every test server gets: loopback only, nothing written to disk
/// unless a test saves, `DEBUG` allowed (DIGEST, RELOAD, SLEEP...).
const BASE_ARGS: &[&str] = &[
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
];

/// A cluster node's: its node timeout is the time a failover takes.
const CLUSTER_ARGS: &[&str] =
    &["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"];

/// How many ports a start tries (another process may take a free port
/// between the check and the server's bind).
const START_ATTEMPTS: usize = 5;

/// A fresh, empty scratch directory for `label` and `port`, unique to this
/// test process.
pub fn scratch_dir(label: &str, port: u16) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dreamtown-test-{label}-{}-{port}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("test dir");
    dir
}

/// A running server, with the module unless started without it.
pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    /// Everything after `--port <port>`, to start the same server again.
    args: Vec<String>,
}

impl Server {
    /// A plain server with the module.
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    /// A server with the module and extra arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        Self::start_with_module_args(extra, &[])
    }

    /// A server with the module; `module_args` follow the module path on
    /// `--loadmodule`.
    pub fn start_with_module_args(extra: &[&str], module_args: &[&str]) -> Server {
        Self::launch("server", Some(module_args), extra, false)
    }

    /// A server without the module (to load it at run time).
    pub fn start_without_module(extra: &[&str]) -> Server {
        Self::launch("plain", None, extra, false)
    }

    /// A server without the module (a seed deployment).
    pub fn start_plain() -> Server {
        Self::start_without_module(&[])
    }

    /// A cluster-enabled server with the module that has not joined any
    /// cluster yet (it owns no slot).
    pub fn start_cluster_node() -> Server {
        Self::launch("cluster", Some(&[]), &[], true)
    }

    fn launch(label: &str, module_args: Option<&[&str]>, extra: &[&str], cluster: bool) -> Server {
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_ports(1, cluster);
            let dir = scratch_dir(label, port);
            let mut args: Vec<String> = BASE_ARGS.iter().map(|s| s.to_string()).collect();
            args.push("--dir".into());
            args.push(dir.display().to_string());
            if let Some(module_args) = module_args {
                args.push("--loadmodule".into());
                args.push(module_path().display().to_string());
                args.extend(module_args.iter().map(|s| s.to_string()));
            }
            args.extend(extra.iter().map(|s| s.to_string()));
            if cluster {
                args.extend(CLUSTER_ARGS.iter().map(|s| s.to_string()));
            }
            let child = Self::spawn(port, &args);
            let mut server = Server { child, port, dir, args };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("{} did not start: {last_error}", server_bin());
    }

    fn spawn(port: u16, args: &[String]) -> Child {
        Command::new(server_bin())
            .arg("--port")
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {} (set DREAMTOWN_SERVER): {error}", server_bin()))
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
            std::thread::sleep(POLL);
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A new blocking connection, or why not.
    pub fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection_with_timeout(CONNECT_TIMEOUT)
    }

    /// A new blocking connection.
    pub fn connect(&self) -> redis::Connection {
        self.try_connect().expect("connect to test server")
    }

    /// A blocking connection authenticated as `user`.
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

    /// Is the process still running (answering or not)?
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `DEBUG DIGEST`.
    pub fn digest(&self) -> String {
        redis::cmd("DEBUG").arg("DIGEST").query(&mut self.connect()).expect("DEBUG DIGEST")
    }

    /// `CLUSTER MYID`.
    pub fn node_id(&self) -> String {
        redis::cmd("CLUSTER").arg("MYID").query(&mut self.connect()).expect("CLUSTER MYID")
    }

    /// Which server this is (`INFO server`).
    pub fn version(&self) -> crate::ServerVersion {
        crate::server_version(&mut self.connect())
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

#[cfg(feature = "async")]
impl Server {
    /// An async multiplexed connection without a response timeout (blocking
    /// drains need it).
    pub async fn multiplexed(&self) -> redis::aio::MultiplexedConnection {
        self.multiplexed_url(self.url()).await
    }

    /// An async multiplexed connection authenticated as `user`.
    pub async fn multiplexed_as(&self, user: &str, password: &str) -> redis::aio::MultiplexedConnection {
        self.multiplexed_url(format!("redis://{user}:{password}@127.0.0.1:{}/", self.port)).await
    }

    async fn multiplexed_url(&self, url: String) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        redis::Client::open(url)
            .expect("client")
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("async connection")
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
}

impl Server {
    /// `SHUTDOWN NOSAVE NOW FORCE` (no save, no wait for lagging replicas,
    /// whatever the errors), and wait for the process to exit: a
    /// sanitized server then runs its checks at exit (LeakSanitizer). A
    /// server that does not let the harness in (an ACL test changed the
    /// default user), or has not exited by the [`DEADLINE`], is killed
    /// after all, unchecked.
    fn shut_down(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        let Ok(mut con) = self.try_connect() else { return };
        let _ = con.set_read_timeout(Some(DEADLINE));
        // A server that shuts down closes the connection; an error reply
        // (NOAUTH, NOPERM) means it will not.
        match redis::cmd("SHUTDOWN").arg("NOSAVE").arg("NOW").arg("FORCE").query::<redis::Value>(&mut con) {
            Err(error) if !error.is_io_error() && !error.is_connection_dropped() => return,
            _ => {}
        }
        let started = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && started.elapsed() < DEADLINE {
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if sanitized() {
            self.shut_down();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
