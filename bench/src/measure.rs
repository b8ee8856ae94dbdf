//! How a run is timed and reported: the server's CPU from its main
//! thread's schedstat, the consumers started together on their own
//! connections ([`drive`]), the timed sections of the single-connection
//! modes ([`Clock`]), and the one `key=value` line bench/run.py parses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::options::Options;
use crate::resp::Conn;

/// Unix seconds now.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// CPU time of a server's main thread (where Redis runs every command), in
/// seconds, from its nanosecond schedstat.
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).ok()?;
    let ns: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// The server CPU between two readings (NaN without a pid to read).
pub fn cpu_between(before: Option<f64>, after: Option<f64>) -> f64 {
    match (before, after) {
        (Some(before), Some(after)) => after - before,
        _ => f64::NAN,
    }
}

/// A consumer's whole loop: it claims items from the shared counter until
/// `items` are claimed, on its own connection.
pub type Consumer = Box<dyn FnOnce(&mut Conn, &AtomicU64, u64) -> Result<(), String> + Send>;

/// Run one consumer per `make(worker)` on its own connection, all started
/// together; the mode's line (wall clock, server CPU).
pub fn drive(o: &Options, round_trips: &str, make: impl Fn(u64) -> Consumer) -> Result<String, String> {
    let claimed = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(o.consumers as usize + 1));
    let mut workers = Vec::new();
    for worker in 0..o.consumers {
        let mut conn = Conn::open(o.port).map_err(|e| e.to_string())?;
        conn.call(&[b"PING"])?;
        let (claimed, start, items) = (claimed.clone(), start.clone(), o.items);
        let consume = make(worker);
        workers.push(thread::spawn(move || -> Result<(), String> {
            start.wait();
            consume(&mut conn, &claimed, items)
        }));
    }
    let cpu_before = o.server_pid.and_then(cpu_secs);
    start.wait();
    let began = Instant::now();
    let mut failure = None;
    for worker in workers {
        match worker.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some("a consumer thread panicked".into()),
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    let cpu = cpu_between(cpu_before, o.server_pid.and_then(cpu_secs));
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(format!(
        "mode={} consumers={} items={} seconds={seconds:.4} ops_per_sec={:.1} server_cpu_secs={cpu:.4} round_trips_per_item={round_trips}",
        o.mode,
        o.consumers,
        o.items,
        o.items as f64 / seconds
    ))
}

/// Repeat `one` while items remain to claim.
pub fn each_item(claimed: &AtomicU64, items: u64, mut one: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    while claimed.fetch_add(1, Ordering::Relaxed) < items {
        one()?;
    }
    Ok(())
}

/// A timed section's wall and server CPU seconds.
pub struct Clock {
    /// The server whose main thread's CPU is read.
    pub server_pid: Option<u32>,
    /// Wall seconds timed so far.
    pub wall: f64,
    /// Server CPU seconds timed so far (NaN once a reading failed).
    pub cpu: f64,
}

impl Clock {
    /// A clock at zero.
    pub fn new(server_pid: Option<u32>) -> Self {
        Clock { server_pid, wall: 0.0, cpu: 0.0 }
    }

    /// Run `run`, adding its wall and server CPU time.
    pub fn time<T>(&mut self, run: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        let cpu_before = self.server_pid.and_then(cpu_secs);
        let began = Instant::now();
        let result = run()?;
        self.wall += began.elapsed().as_secs_f64();
        match (cpu_before, self.server_pid.and_then(cpu_secs)) {
            (Some(before), Some(after)) => self.cpu += after - before,
            _ => self.cpu = f64::NAN,
        }
        Ok(result)
    }
}
