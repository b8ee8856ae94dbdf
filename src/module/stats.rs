//! Totals reported by `INFO dreamtown`, kept per server since it started
//! (a replica counts nothing: it applies effects, not commands).

use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::raw;

use super::api::api;

/// A monotonically increasing total.
pub struct Total(AtomicU64);

impl Total {
    /// Zero.
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Add `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Add one.
    pub fn bump(&self) {
        self.add(1);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Fires queued by `DREAMS.FIRE`.
pub static FIRED_FIRE: Total = Total::new();
/// Fires queued by `DREAMS.RECORD`.
pub static FIRED_RECORD: Total = Total::new();
/// Fires requeued by `DREAMS.ACK`.
pub static FIRED_ACK_REQUEUE: Total = Total::new();
/// `DREAMS.FIRE` fires dropped at the ceiling.
pub static DROPPED_FIRE: Total = Total::new();
/// `DREAMS.RECORD` fires dropped at the ceiling.
pub static DROPPED_RECORD: Total = Total::new();
/// `DREAMS.ACK` requeues dropped at the ceiling.
pub static DROPPED_ACK: Total = Total::new();
/// Records ignored as already counted (event identity or settled generation).
pub static RECORDS_DEDUPLICATED: Total = Total::new();
/// Items drained and handed to a worker.
pub static DRAINED: Total = Total::new();
/// Items moved behind other work by quiet hours.
pub static QUIET_DEFERRED: Total = Total::new();
/// Deferred items promoted back to ready.
pub static PROMOTED: Total = Total::new();
/// Ready items moved to the dead-letter list.
pub static DEAD_LETTERED: Total = Total::new();
/// Acknowledgements that counted (including those that requeued or dropped).
pub static ACKS_ACKNOWLEDGED: Total = Total::new();
/// Acknowledgements that were stale.
pub static ACKS_STALE: Total = Total::new();
/// Pending fires `DREAMS.RECORD` found gone with every queue key of their
/// organization (evicted, deleted) and cleared, so the region fires again.
pub static STALE_PENDING_CLEARED: Total = Total::new();
/// Items moved back to ready by `DREAMS.RECOVER`.
pub static RECOVERED: Total = Total::new();

/// Dreams items whose lease ran out and went back to ready.
pub static LEASES_EXPIRED: Total = Total::new();
/// Town messages whose lease ran out and went back to the inbox.
pub static TOWN_LEASES_EXPIRED: Total = Total::new();

/// Messages stored by `TOWN.SEND` (urgent ones included).
pub static TOWN_SENT: Total = Total::new();
/// Of those, sent to an urgent inbox.
pub static TOWN_SENT_URGENT: Total = Total::new();
/// Messages handed out by `TOWN.RECV`.
pub static TOWN_RECEIVED: Total = Total::new();
/// Of those, also kept pending (`RELIABLE`).
pub static TOWN_RECEIVED_RELIABLE: Total = Total::new();
/// Pending messages removed by `TOWN.ACK`.
pub static TOWN_ACKED: Total = Total::new();
/// Messages a `TOWN.ACK` of many ids read (its one pass over the pending
/// list, and over the inbox when needed): at most their lengths per call,
/// whatever the number of ids. (A batch of up to 32 ids over a pending
/// list no longer than it goes id by id, uncounted.)
pub static TOWN_ACK_SCANNED: Total = Total::new();
/// Pending messages handed back by `TOWN.REQUEUE`.
pub static TOWN_REQUEUED: Total = Total::new();
/// Messages moved by `TOWN.RECLAIM`.
pub static TOWN_RECLAIMED: Total = Total::new();
/// Of those, moved unchanged because they no longer parse.
pub static TOWN_RECLAIMED_UNPARSED: Total = Total::new();
/// `TOWN.BROADCAST` messages published.
pub static TOWN_BROADCASTS: Total = Total::new();
/// Stop flags set by `TOWN.STOP REQUEST`.
pub static TOWN_STOP_REQUESTS: Total = Total::new();
/// Entries written by `TOWN.ACTIVITY LOG`.
pub static TOWN_ACTIVITY_LOGGED: Total = Total::new();
/// `TOWN.RESET` calls.
pub static TOWN_RESETS: Total = Total::new();
/// Keys deleted by `TOWN.RESET`.
pub static TOWN_RESET_KEYS: Total = Total::new();

/// A section of `INFO dreamtown`: its name and its fields.
type Section = (&'static CStr, Vec<(&'static CStr, u64)>);

fn sections() -> Vec<Section> {
    let waiters = super::waiters::info_fields();
    let fired = FIRED_FIRE.get() + FIRED_RECORD.get() + FIRED_ACK_REQUEUE.get();
    let dropped = DROPPED_FIRE.get() + DROPPED_RECORD.get() + DROPPED_ACK.get();
    vec![
        (
            c"dreams",
            vec![
                (c"fired", fired),
                (c"fired_fire", FIRED_FIRE.get()),
                (c"fired_record", FIRED_RECORD.get()),
                (c"fired_ack_requeue", FIRED_ACK_REQUEUE.get()),
                (c"dropped", dropped),
                (c"dropped_capacity_fire", DROPPED_FIRE.get()),
                (c"dropped_capacity_record", DROPPED_RECORD.get()),
                (c"dropped_capacity_ack", DROPPED_ACK.get()),
                (c"records_deduplicated", RECORDS_DEDUPLICATED.get()),
                (c"drained", DRAINED.get()),
                (c"quiet_deferred", QUIET_DEFERRED.get()),
                (c"promoted", PROMOTED.get()),
                (c"dead_lettered", DEAD_LETTERED.get()),
                (c"acks_acknowledged", ACKS_ACKNOWLEDGED.get()),
                (c"acks_stale", ACKS_STALE.get()),
                (c"recovered", RECOVERED.get()),
                (c"stale_pending_cleared", STALE_PENDING_CLEARED.get()),
                (c"leases_expired", LEASES_EXPIRED.get()),
            ],
        ),
        (
            c"town",
            vec![
                (c"messages_sent", TOWN_SENT.get()),
                (c"messages_sent_urgent", TOWN_SENT_URGENT.get()),
                (c"messages_received", TOWN_RECEIVED.get()),
                (c"messages_received_reliable", TOWN_RECEIVED_RELIABLE.get()),
                (c"messages_acked", TOWN_ACKED.get()),
                (c"ack_messages_scanned", TOWN_ACK_SCANNED.get()),
                (c"messages_requeued", TOWN_REQUEUED.get()),
                (c"messages_reclaimed", TOWN_RECLAIMED.get()),
                (c"messages_lease_expired", TOWN_LEASES_EXPIRED.get()),
                (c"messages_reclaimed_unparsed", TOWN_RECLAIMED_UNPARSED.get()),
                (c"broadcasts", TOWN_BROADCASTS.get()),
                (c"stop_requests", TOWN_STOP_REQUESTS.get()),
                (c"activity_logged", TOWN_ACTIVITY_LOGGED.get()),
                (c"resets", TOWN_RESETS.get()),
                (c"reset_keys_deleted", TOWN_RESET_KEYS.get()),
            ],
        ),
        (c"waiters", waiters),
        (c"tenant_stats", tenant_stats_fields()),
        (c"leases", super::leases::info_fields()),
        (c"cluster", super::slot_migration::info_fields()),
        (c"write_gate", super::write_gate::info_fields()),
    ]
}

/// What the per-tenant tables hold (`tenant_stats`, `fire_ages`).
fn tenant_stats_fields() -> Vec<(&'static CStr, u64)> {
    let mut fields = super::tenant_stats::info_fields();
    fields.extend(super::fire_ages::info_fields());
    fields
}

/// The INFO callback: one section per concern, `dreamtown_<section>`.
pub unsafe extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let outcome = std::panic::catch_unwind(|| {
        // `dreamtown_build`: which release this server runs (MODULE LIST
        // shows it as a number, MMmmpp).
        unsafe { api!(RedisModule_InfoAddSection)(ctx, c"build".as_ptr()) };
        if let Ok(version) = std::ffi::CString::new(crate::version::VERSION) {
            unsafe { api!(RedisModule_InfoAddFieldCString)(ctx, c"version".as_ptr(), version.as_ptr()) };
        }
        for (name, fields) in sections() {
            unsafe { api!(RedisModule_InfoAddSection)(ctx, name.as_ptr()) };
            for (field, value) in fields {
                unsafe { api!(RedisModule_InfoAddFieldULongLong)(ctx, field.as_ptr(), value) };
            }
        }
    });
    let _ = outcome;
}
