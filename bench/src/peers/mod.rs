//! `peers`: the same job loop in each system a user would pick for a work
//! queue on Redis, through the client that user would use (bench/peers.py
//! runs it; BullMQ's side is bench/peers/bullmq.js). One run is one
//! scenario of one system against a server with the module:
//!
//! | scenario | streams (redis crate) | dreams (client crate) | town (client crate) |
//! |---|---|---|---|
//! | `add` | `XADD`, one at a time | `fire`, one at a time | `send`, one at a time |
//! | `bulk50` | 50 `XADD`s in one pipeline | 50 `fire`s at once on one connection | 50 `send`s at once |
//! | `worker1` | `XREADGROUP COUNT 1` + `XACK` | `drain_leased`, then `acknowledge_and_drain_leased` per job | `receive_reliable`, then `ack_and_receive` per job |
//! | `worker100` | 2 consumers of `XREADGROUP COUNT 50` + one `XACK` of the 50, a connection each | 100 of worker1's loops at once on one connection | 100 of worker1's loops at once on one connection |
//! | `batch50` (information) | as `worker100` | 2 workers of `drain_batch` (`COUNT 50`, leased) + the 50 `acknowledge`s at once, a connection each | 2 workers of `receive_reliable` (`COUNT 50`) + one `ack_messages` of the 50, a connection each |
//!
//! Workers take prefilled jobs (filled untimed) with a no-op processor.
//! The timed section starts once every connection is open; the server's
//! CPU is its main thread's (`INFO cpu`: `used_cpu_sys_main_thread` +
//! `used_cpu_user_main_thread`), read just before and after it. Each run
//! checks afterwards that the server holds what the jobs left (every job
//! queued, or every job acknowledged) and prints one line:
//! `system=<s> scenario=<c> jobs=<n> seconds=<t> server_cpu_secs=<cpu>
//! server_sys_secs=<in the kernel> client_cpu_secs=<this process>`.

mod dreams;
mod streams;
mod town;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dreamtown_client::redis::{self, aio::MultiplexedConnection};

/// The systems this binary drives (BullMQ runs under node).
pub const SYSTEMS: [&str; 3] = ["streams", "dreams", "town"];
/// The scenarios, as bench/peers.py names them; `batch50` (information,
/// not one of bullmq-bench's) is each system's batch form with 100 in flight.
pub const SCENARIOS: [&str; 5] = ["add", "bulk50", "worker1", "worker100", "batch50"];
/// Jobs per round trip of `bulk50`.
pub const BULK: usize = 50;
/// Jobs in flight at once in `worker100`.
pub const CONCURRENCY: usize = 100;
/// `batch50` (and Streams' `worker100`): this many workers, each on a
/// connection of its own, each taking this many jobs at once.
pub const BATCH_WORKERS: usize = 2;
/// See [`BATCH_WORKERS`].
pub const BATCH_WORKER: usize = 50;
/// How long a worker's blocking call waits (never, with prefilled jobs).
pub const WAIT: Duration = Duration::from_secs(5);
/// The job every system carries where it carries a payload of its own
/// (streams, BullMQ): what a Dreams fire names.
pub const JOB: &str = r#"{"region":{"org":"bench","project":"web","memory_type":1},"fired_by":"bench-node"}"#;

/// One run's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The server's port on 127.0.0.1.
    pub port: u16,
    /// `streams`, `dreams` or `town`.
    pub system: String,
    /// `add`, `bulk50`, `worker1` or `worker100`.
    pub scenario: String,
    /// Jobs timed (`bulk50` rounds them up to whole batches).
    pub jobs: u64,
}

impl Options {
    /// The settings from the arguments after the program name.
    pub fn parse(argv: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut o = Options { port: 6379, system: String::new(), scenario: String::new(), jobs: 10_000 };
        let mut args = argv.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--port" => o.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
                "--system" => o.system = value()?,
                "--scenario" => o.scenario = value()?,
                "--jobs" => o.jobs = value()?.parse().map_err(|e| format!("--jobs: {e}"))?,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if !SYSTEMS.contains(&o.system.as_str()) {
            return Err(format!("--system must be one of {SYSTEMS:?}"));
        }
        if !SCENARIOS.contains(&o.scenario.as_str()) {
            return Err(format!("--scenario must be one of {SCENARIOS:?}"));
        }
        if o.jobs == 0 {
            return Err("--jobs must be positive".into());
        }
        if o.scenario == "bulk50" {
            o.jobs = o.jobs.div_ceil(BULK as u64) * BULK as u64;
        }
        Ok(o)
    }

    /// Concurrent workers of a worker scenario.
    pub fn workers(&self) -> usize {
        match self.scenario.as_str() {
            "worker100" => CONCURRENCY,
            "batch50" => BATCH_WORKERS,
            _ => 1,
        }
    }
}

/// Run one scenario of one system; the line to print.
pub fn run(o: &Options) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let m = runtime.block_on(async {
        match o.system.as_str() {
            "streams" => streams::run(o).await,
            "dreams" => dreams::run(o).await,
            _ => town::run(o).await,
        }
    })?;
    Ok(format!(
        "system={} scenario={} jobs={} seconds={:.4} server_cpu_secs={:.6} server_sys_secs={:.6} client_cpu_secs={:.6}",
        o.system,
        o.scenario,
        o.jobs,
        m.seconds,
        m.server_sys + m.server_user,
        m.server_sys,
        m.client
    ))
}

/// A connection that waits as long as a blocking command does.
pub async fn connect(port: u16) -> Result<MultiplexedConnection, String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    client.get_multiplexed_async_connection_with_config(&config).await.map_err(|e| e.to_string())
}

/// `n` connections of their own.
pub async fn connections(port: u16, n: usize) -> Result<Vec<MultiplexedConnection>, String> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(connect(port).await?);
    }
    Ok(conns)
}

/// `n` handles of one new connection, for `n` workers that share it as
/// BullMQ's concurrent jobs share its connection: the multiplexed
/// connection pipelines what they send at once. (With work queued no call
/// blocks; an idle worker's blocking call would hold the calls queued
/// behind it on the same connection until it is served.)
pub async fn shared(port: u16, n: usize) -> Result<Vec<MultiplexedConnection>, String> {
    let conn = connect(port).await?;
    Ok(vec![conn; n])
}

/// Send one command, any reply.
pub async fn command(conn: &mut MultiplexedConnection, argv: &[&str]) -> Result<redis::Value, String> {
    let mut cmd = redis::cmd(argv[0]);
    for arg in &argv[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(conn).await.map_err(|e| format!("{}: {e}", argv[0]))
}

/// The server's main-thread CPU seconds (`INFO cpu`): system, user.
async fn server_cpu(conn: &mut MultiplexedConnection) -> Result<(f64, f64), String> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await.map_err(|e| e.to_string())?;
    let field = |name: &str| {
        info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<f64>().ok())
    };
    match (field("used_cpu_sys_main_thread"), field("used_cpu_user_main_thread")) {
        (Some(sys), Some(user)) => Ok((sys, user)),
        _ => Err(format!("INFO cpu has no main-thread counters: {info}")),
    }
}

/// This process's CPU seconds (the runtime has one thread: the workers,
/// the connections' drivers and the client crate all run on it).
fn client_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).map_or(f64::NAN, |ns| ns / 1e9)
}

/// With `DREAMTOWN_PEERS_CALLGRIND=<pid>` (a server under valgrind
/// callgrind, bench/peers.py --callgrind): zero its counts when the timed
/// section starts (`-z`) and dump them when it ends (`-d`).
fn callgrind(flag: &str) -> Result<(), String> {
    let Ok(pid) = std::env::var("DREAMTOWN_PEERS_CALLGRIND") else { return Ok(()) };
    let done = std::process::Command::new("callgrind_control").arg(flag).arg(&pid).output();
    match done {
        Ok(out) if out.status.success() => Ok(()),
        other => Err(format!("callgrind_control {flag} {pid}: {other:?}")),
    }
}

/// What a timed section cost.
pub struct Measured {
    /// Wall clock.
    pub seconds: f64,
    /// The server's main thread, in the kernel and in user space.
    pub server_sys: f64,
    /// See `server_sys`.
    pub server_user: f64,
    /// This process.
    pub client: f64,
}

/// The timed section: wall clock, the server's CPU (read on a connection
/// of its own) and the client's.
pub struct Meter {
    conn: MultiplexedConnection,
    server: (f64, f64),
    client: f64,
    began: Instant,
}

impl Meter {
    /// Start timing now.
    pub async fn start(port: u16) -> Result<Meter, String> {
        let mut conn = connect(port).await?;
        callgrind("-z")?;
        let server = server_cpu(&mut conn).await?;
        Ok(Meter { conn, server, client: client_cpu(), began: Instant::now() })
    }

    /// What the section cost since [`start`](Self::start).
    pub async fn stop(mut self) -> Result<Measured, String> {
        let seconds = self.began.elapsed().as_secs_f64();
        let client = client_cpu() - self.client;
        let (sys, user) = server_cpu(&mut self.conn).await?;
        callgrind("-d")?;
        Ok(Measured { seconds, server_sys: sys - self.server.0, server_user: user - self.server.1, client })
    }
}

/// Jobs handed to workers: each worker takes jobs until all are taken.
pub struct Claims {
    taken: AtomicU64,
    total: u64,
}

impl Claims {
    /// `total` jobs to hand out.
    pub fn new(total: u64) -> Self {
        Claims { taken: AtomicU64::new(0), total }
    }

    /// Up to `n` jobs for the caller; 0 when none are left.
    pub fn take(&self, n: u64) -> u64 {
        let before = self.taken.fetch_add(n, Ordering::Relaxed);
        self.total.saturating_sub(before).min(n)
    }
}

/// Fail unless `got` is `want`.
pub fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want { Ok(()) } else { Err(format!("{what}: {got:?}, expected {want:?}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Options, String> {
        Options::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn flags_parse_and_bulk_rounds_up() {
        let o = parse("--port 7000 --system dreams --scenario bulk50 --jobs 120").unwrap();
        assert_eq!((o.port, o.jobs, o.workers()), (7000, 150, 1));
        assert_eq!(parse("--system town --scenario worker100").unwrap().workers(), CONCURRENCY);
        for bad in ["--system x --scenario add", "--system town --scenario x", "--system town --scenario add --jobs 0"]
        {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn claims_hand_out_exactly_the_total() {
        let claims = Claims::new(120);
        assert_eq!((claims.take(50), claims.take(50), claims.take(50), claims.take(1)), (50, 50, 20, 0));
    }
}
