//! The migration guard's memo of settled slots (cluster mode only): which
//! slots a full routing check found stable and served by this master, and
//! the command filter that forgets them whenever a slot's migration state
//! may change. `migration_guard::check` lets a client's command on a
//! settled slot run with no call at all.
//!
//! What "settled" claims. A slot is settled only after a full check passed
//! (`migration_guard`: the slot was then owned by this master, neither
//! `IMPORTING` nor `MIGRATING`), and it stays settled only while no
//! `CLUSTER SETSLOT` for it can have changed its `IMPORTING`/`MIGRATING`
//! state since. Ownership itself is not claimed: a client's command reaches
//! the module only after the server's own routing on the tenant argument
//! (a `NOT_KEY` key spec), which answers `MOVED` for a slot this node does
//! not serve and `ASK` on a `MIGRATING` source (the bare tenant name is
//! never a key). What the memo stands in for is what that routing lets
//! through and the guard must refuse: a command under `ASKING` on an
//! `IMPORTING` target, and one on a `MIGRATING` source where a key named
//! exactly like the tenant exists. Both states are set only by `CLUSTER
//! SETSLOT` (and by `nodes.conf` at startup, before this memo exists), and
//! `IMPORTING` only on a slot the node does not own, which no full check
//! passes on.
//!
//! When it forgets. A command filter sees every command before it runs
//! (clients, the replication link, scripts, other modules' `RM_Call`s; a
//! command queued in `MULTI` when it is queued):
//! * `CLUSTER SETSLOT <slot> ...` forgets that slot (every slot when the
//!   slot does not parse), and any other `CLUSTER` subcommand that is not a
//!   read forgets every slot (`ADDSLOTS*`, `DELSLOTS*`, `FLUSHSLOTS`,
//!   `RESET`, `FAILOVER`, `REPLICATE`, `MIGRATESLOTS`, ...), as do
//!   `REPLICAOF`/`SLAVEOF`;
//! * `SETSLOT` may be applied after the filter saw it: Valkey 8+ first
//!   replicates it and blocks its client until the replicas acknowledge
//!   (`CLUSTER SETSLOT ... TIMEOUT`, 2 s by default), then runs it again
//!   without the filter; a write pause can hold that second run longer
//!   (the client is postponed). So the client that sent it is *pending*,
//!   and no slot is settled while any client is pending. A timer clears a
//!   pending client once it has seen it not blocked at two successive
//!   firings (the first may fall between its unblocking and its re-run,
//!   which happens in the next `beforeSleep`, before any other command);
//!   a client gone is not blocked;
//! * a `SETSLOT` queued in `MULTI` is applied at `EXEC`: the client is
//!   remembered and its `EXEC` forgets every slot and makes it pending
//!   again (where the filter cannot name clients, Redis 7.0, every `EXEC`
//!   after a `SETSLOT` forgets every slot; there `SETSLOT` applies at once).
//!
//! Only a master's context uses the memo; a role change goes through
//! `REPLICAOF` or a failover, after which the promoted node's slot states
//! came from `SETSLOT`s its filter saw on the replication link (Valkey 8+)
//! or are stable (Redis). Outside cluster mode nothing is registered.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::glue::context_flags::ContextFlags;
use crate::glue::ctx::Ctx;
use crate::glue::filter::{in_multi, is_blocked, Filtered};
use crate::glue::module_state::PerLoad;
use crate::glue::timer;

/// The memo's part of the module state.
struct State {
    /// One bit a slot (16,384 slots).
    settled: [AtomicU64; 256],
    /// The filter is registered (cluster mode): only then may slots
    /// settle.
    active: AtomicBool,
    /// Clients whose `SETSLOT` may not be applied yet, each with how many
    /// successive timer firings found it not blocked.
    pending: RefCell<Vec<(u64, u8)>>,
    /// `pending` is not empty (read without borrowing it on the fast
    /// path).
    any_pending: AtomicBool,
    /// The pending timer is scheduled.
    timer_armed: AtomicBool,
    /// Clients that queued a `SETSLOT` in `MULTI` (their `EXEC` applies
    /// it).
    queued_in_multi: RefCell<Vec<u64>>,
    /// Every `EXEC` forgets every slot: a `SETSLOT` was seen where the
    /// filter cannot name its client, or too many clients queued one.
    exec_forgets: AtomicBool,
}

impl Default for State {
    fn default() -> Self {
        State {
            settled: [const { AtomicU64::new(0) }; 256],
            active: AtomicBool::new(false),
            pending: RefCell::default(),
            any_pending: AtomicBool::new(false),
            timer_armed: AtomicBool::new(false),
            queued_in_multi: RefCell::default(),
            exec_forgets: AtomicBool::new(false),
        }
    }
}

static STATE: PerLoad<State> = PerLoad::new();

/// At most this many clients remembered as pending or queued in `MULTI`
/// (beyond: the conservative fallbacks).
const MAX_CLIENTS: usize = 1024;

/// How often the timer looks at pending clients.
const PENDING_POLL_MS: i64 = 10;

/// The slot of a tenant ([`crate::cluster_slot::tenant_slot`]).
pub use crate::cluster_slot::tenant_slot;

/// Is `slot` settled? One load.
#[inline]
pub fn is_settled(slot: u16) -> bool {
    let (word, bit) = position(slot);
    STATE.with(|state| state.settled.get(word).is_some_and(|w| w.load(Ordering::Relaxed) & bit != 0))
}

fn position(slot: u16) -> (usize, u64) {
    (usize::from(slot >> 6), 1u64 << (slot & 63))
}

/// A full check just passed for `slot` on this master: settle it, unless a
/// `SETSLOT` may still be on its way to being applied (then make sure the
/// timer that clears pending clients runs).
pub fn settle(ctx: Ctx, slot: u16) {
    let wait = STATE.with(|state| {
        if !state.active.load(Ordering::Relaxed) {
            return false;
        }
        if state.any_pending.load(Ordering::Relaxed) {
            return true;
        }
        let (word, bit) = position(slot);
        if let Some(w) = state.settled.get(word) {
            w.fetch_or(bit, Ordering::Relaxed);
        }
        false
    });
    if wait {
        arm_timer(ctx);
    }
}

fn forget(slot: u16) {
    let (word, bit) = position(slot);
    STATE.with(|state| {
        if let Some(w) = state.settled.get(word) {
            w.fetch_and(!bit, Ordering::Relaxed);
        }
    });
}

/// Forget every slot.
pub fn forget_all() {
    STATE.with(|state| {
        for w in &state.settled {
            w.store(0, Ordering::Relaxed);
        }
    });
}

/// Start remembering when the server runs in cluster mode and the
/// module's command filter is registered (module load). Without it
/// nothing ever settles and the guard checks every command, as before.
pub fn activate(ctx: Ctx, filter_registered: bool) {
    forget_all();
    set_active(filter_registered && ContextFlags::of(ctx).in_cluster());
}

fn set_active(active: bool) {
    STATE.with(|state| state.active.store(active, Ordering::Relaxed));
}

/// Is the memo in use (cluster mode, filter registered)?
pub fn is_active() -> bool {
    STATE.with(|state| state.active.load(Ordering::Relaxed))
}

fn set_exec_forgets() {
    STATE.with(|state| state.exec_forgets.store(true, Ordering::Relaxed));
}

/// What a command means to the memo.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Nothing,
    /// `CLUSTER SETSLOT` for this slot (`None`: it did not parse).
    SetSlot(Option<u16>),
    /// Anything else that may change slot states or the node's role.
    ForgetAll,
    Exec,
    Discard,
}

/// Classify a command by its name and first arguments.
fn classify(name: &[u8], sub: Option<&[u8]>, third: Option<&[u8]>) -> Seen {
    if name.eq_ignore_ascii_case(b"CLUSTER") {
        let Some(sub) = sub else { return Seen::Nothing };
        if sub.eq_ignore_ascii_case(b"SETSLOT") {
            return Seen::SetSlot(third.and_then(parse_slot));
        }
        const READS: [&[u8]; 16] = [
            b"INFO",
            b"NODES",
            b"SLOTS",
            b"SHARDS",
            b"KEYSLOT",
            b"COUNTKEYSINSLOT",
            b"GETKEYSINSLOT",
            b"MYID",
            b"MYSHARDID",
            b"LINKS",
            b"COUNT-FAILURE-REPORTS",
            b"REPLICAS",
            b"SLAVES",
            b"HELP",
            b"GETSLOTMIGRATIONS",
            b"SLOT-STATS",
        ];
        if READS.iter().any(|read| sub.eq_ignore_ascii_case(read)) {
            return Seen::Nothing;
        }
        return Seen::ForgetAll;
    }
    if name.eq_ignore_ascii_case(b"EXEC") {
        return Seen::Exec;
    }
    if name.eq_ignore_ascii_case(b"DISCARD") {
        return Seen::Discard;
    }
    if name.eq_ignore_ascii_case(b"REPLICAOF") || name.eq_ignore_ascii_case(b"SLAVEOF") {
        return Seen::ForgetAll;
    }
    Seen::Nothing
}

fn parse_slot(text: &[u8]) -> Option<u16> {
    std::str::from_utf8(text).ok()?.parse::<u16>().ok().filter(|slot| *slot < 16_384)
}

/// A command the filter passes on (`command_filter`), named `name`.
pub fn on_command(command: &Filtered, name: &[u8]) {
    let argc = command.argc();
    let sub = (argc > 1).then(|| command.arg(1));
    let third = (argc > 2).then(|| command.arg(2));
    let seen = classify(name, sub, third);
    if seen == Seen::Nothing {
        return;
    }
    let client = command.client_id();
    match seen {
        Seen::Nothing => {}
        Seen::ForgetAll => forget_all(),
        Seen::SetSlot(slot) => {
            match slot {
                Some(slot) => forget(slot),
                None => forget_all(),
            }
            match client {
                Some(id) => {
                    if in_multi(id) {
                        remember_queued(id);
                    }
                    make_pending(id);
                }
                None => set_exec_forgets(),
            }
        }
        Seen::Exec => {
            let (queued, exec_forgets) = STATE.with(|state| {
                let queued = client.is_some_and(|id| {
                    let mut queued = state.queued_in_multi.borrow_mut();
                    let before = queued.len();
                    queued.retain(|q| *q != id);
                    queued.len() != before
                });
                (queued, state.exec_forgets.load(Ordering::Relaxed))
            });
            if queued || exec_forgets {
                forget_all();
                if let Some(id) = client {
                    make_pending(id);
                }
            }
        }
        Seen::Discard => {
            if let Some(id) = client {
                STATE.with(|state| state.queued_in_multi.borrow_mut().retain(|q| *q != id));
            }
        }
    }
}

fn remember_queued(id: u64) {
    STATE.with(|state| {
        let mut queued = state.queued_in_multi.borrow_mut();
        if queued.contains(&id) {
            return;
        }
        if queued.len() >= MAX_CLIENTS {
            state.exec_forgets.store(true, Ordering::Relaxed);
            return;
        }
        queued.push(id);
    });
}

fn make_pending(id: u64) {
    let full = STATE.with(|state| {
        let mut pending = state.pending.borrow_mut();
        state.any_pending.store(true, Ordering::Relaxed);
        if let Some(entry) = pending.iter_mut().find(|(p, _)| *p == id) {
            entry.1 = 0;
        } else if pending.len() < MAX_CLIENTS {
            pending.push((id, 0));
        } else {
            return true;
        }
        false
    });
    if full {
        // Full (a thousand clients sending SETSLOT at once): nothing
        // settles until they clear, and then this client's SETSLOT may
        // still be pending, so never settle again (every command is checked).
        set_active(false);
        forget_all();
    }
}

fn arm_timer(ctx: Ctx) {
    if STATE.with(|state| state.timer_armed.swap(true, Ordering::Relaxed)) {
        return;
    }
    timer::after(ctx, PENDING_POLL_MS, on_timer);
}

/// Clear pending clients seen not blocked twice in a row; run again while
/// any is left.
fn on_timer(ctx: Ctx) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let left = STATE.with(|state| {
            state.timer_armed.store(false, Ordering::Relaxed);
            if !state.active.load(Ordering::Relaxed) {
                return false;
            }
            let mut pending = state.pending.borrow_mut();
            for (id, quiet) in pending.iter_mut() {
                let blocked = is_blocked(*id);
                *quiet = if blocked { 0 } else { quiet.saturating_add(1) };
            }
            pending.retain(|(_, quiet)| *quiet < 2);
            let left = !pending.is_empty();
            if !left {
                state.any_pending.store(false, Ordering::Relaxed);
            }
            left
        });
        if left {
            arm_timer(ctx);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle_for_test(slot: u16) {
        let (word, bit) = position(slot);
        STATE.with(|state| state.settled[word].fetch_or(bit, Ordering::Relaxed));
    }

    #[test]
    fn commands_are_classified() {
        assert_eq!(classify(b"cluster", Some(b"setslot"), Some(b"42")), Seen::SetSlot(Some(42)));
        assert_eq!(classify(b"CLUSTER", Some(b"SETSLOT"), Some(b"16384")), Seen::SetSlot(None));
        assert_eq!(classify(b"CLUSTER", Some(b"SETSLOT"), None), Seen::SetSlot(None));
        assert_eq!(classify(b"CLUSTER", Some(b"GETKEYSINSLOT"), Some(b"1")), Seen::Nothing);
        assert_eq!(classify(b"CLUSTER", Some(b"addslotsrange"), Some(b"1")), Seen::ForgetAll);
        assert_eq!(classify(b"CLUSTER", Some(b"FAILOVER"), None), Seen::ForgetAll);
        assert_eq!(classify(b"CLUSTER", None, None), Seen::Nothing);
        assert_eq!(classify(b"exec", None, None), Seen::Exec);
        assert_eq!(classify(b"DISCARD", None, None), Seen::Discard);
        assert_eq!(classify(b"replicaof", Some(b"no"), Some(b"one")), Seen::ForgetAll);
        assert_eq!(classify(b"GET", Some(b"x"), None), Seen::Nothing);
    }

    #[test]
    fn tenant_slots_are_the_clusters() {
        for tenant in [&b"acme"[..], b"foo", b"123456789", b"a", b"exocortex-tenant-with-a-long-name"] {
            let mut name = b"{".to_vec();
            name.extend_from_slice(tenant);
            name.extend_from_slice(b"}x");
            assert_eq!(tenant_slot(tenant), crate::cluster_slot::key_slot(&name), "{tenant:?}");
        }
        assert_eq!(tenant_slot(b"foo"), 12182);
    }

    #[test]
    fn slots_settle_and_are_forgotten() {
        set_active(true);
        settle_for_test(16_383);
        assert!(is_settled(16_383));
        forget(16_383);
        assert!(!is_settled(16_383));
        set_active(false);
    }
}
