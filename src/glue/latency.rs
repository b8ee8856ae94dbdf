//! Latency events of the module's own, in the server's latency monitor
//! (`LATENCY LATEST`, `HISTORY`, `DOCTOR`, `GRAPH`), as the server reports
//! its own background work (`expire-cycle`, `eviction-cycle`): a sample is
//! kept only when `latency-monitor-threshold` is set and the work took at
//! least that many milliseconds (`RedisModule_LatencyAddSample`, the
//! server's `latencyAddSampleIfNeeded`).
//!
//! What runs outside a client's command shows nowhere else: `SLOWLOG`
//! logs commands, and on Redis 7.0 not even a blocked `DREAMS.DRAIN` or
//! `TOWN.RECV ... BLOCK` that a waiters' pass served (docs/operations.md,
//! "Latency events and SLOWLOG").

use std::ffi::CStr;
use std::time::Instant;

use redis_module::raw;

/// A lease timer tick: a catch-up turn and the expiry of due leases.
pub const LEASE_TICK: &CStr = c"dreamtown-lease-tick";
/// A waiters' pass: blocked `DREAMS.DRAIN` / `TOWN.RECV ... BLOCK` calls
/// served after work arrived (each runs its command then).
pub const WAITER_PASS: &CStr = c"dreamtown-waiter-pass";

/// Report `event`, begun at `started`, to the latency monitor (whole
/// milliseconds, truncated, as the server times `expire-cycle`).
pub fn report(event: &'static CStr, started: Instant) {
    let ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    if ms == 0 {
        // Below any threshold the server takes (at least 1 ms).
        return;
    }
    // SAFETY: reads the API table's entry, filled once at load.
    if let Some(add) = unsafe { raw::RedisModule_LatencyAddSample } {
        // SAFETY: the event name is NUL-terminated; the server copies it.
        unsafe { add(event.as_ptr(), ms) };
    }
}

/// CPU time used by the calling thread so far (µs).
pub fn thread_cpu_us() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec for the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return 0;
    }
    u64::try_from(now.tv_sec).unwrap_or(0).saturating_mul(1_000_000) + u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000
}
