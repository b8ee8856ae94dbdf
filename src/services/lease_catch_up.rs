//! The lease catch-up: a server that becomes a master (`REPLICAOF NO
//! ONE`, failover), ends a load (RDB, AOF, `DEBUG RELOAD`, the swap of an
//! async replica load, `SWAPDB`) or loads the module into a populated
//! keyspace must index leases no command here noted (`lease_index`). It
//! walks every database with `RedisModule_Scan` and a cursor kept between
//! turns, at most `dreamtown.catch-up-keys-per-turn` keys (10,000) and
//! [`CATCH_UP_BUDGET_US`] per turn, one turn per lease-timer tick
//! (`lease_timer`, which drives it), so no turn of the event loop costs
//! time that grows with the keyspace. A slot migration's import queues a
//! catch-up of its slots only ([`queue_slots`]). `INFO dreamtown`
//! (`dreamtown_leases`) shows its progress and its longest turn.

use std::cell::RefCell;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::lease_index::{with_index, DeadlineIndex, LeaseFamily, SlotRange};
use crate::glue::config::Numeric;
use crate::glue::db_scope::DbScope;
use crate::glue::latency::thread_cpu_us;
use crate::glue::module_state::PerLoad;
use crate::glue::scan::ScanCursor;
use crate::glue::session::Session;
use crate::metrics::totals::Total;

/// Keys one catch-up turn examines at most: the config
/// `dreamtown.catch-up-keys-per-turn` (default 10,000; `RedisModule_Scan`
/// returns a hash bucket at a time, so a turn may pass it by a bucket).
fn keys_per_turn() -> u64 {
    u64::try_from(CATCH_UP_KEYS_PER_TURN.get()).unwrap_or(10_000)
}

/// `catch-up-keys-per-turn`: keys one turn of the catch-up examines at
/// most: a smaller value means shorter main-thread turns and a longer
/// catch-up.
pub static CATCH_UP_KEYS_PER_TURN: Numeric = Numeric::new("catch-up-keys-per-turn", 10_000, (100, 1_000_000));
/// Time one catch-up turn may take (µs), checked after every
/// `RedisModule_Scan` call: one call is one hash bucket, whose keys each
/// cost a callback and a name check, so a clock read per call is cheap
/// beside it and keeps a turn within a bucket of its budget.
pub const CATCH_UP_BUDGET_US: u128 = 2_000;

/// What a catch-up looks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every lease set (promotion, load, module load): the index is
    /// cleared first.
    Everything,
    /// Only lease sets in these slots (imported by a slot migration); the
    /// index keeps what it has.
    Slots(Vec<SlotRange>),
}

impl Scope {
    pub fn wants(&self, slot_tenant: Option<&str>) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Slots(ranges) => slot_tenant.is_some_and(|tag| {
                let slot = crate::cluster_slot::key_slot(tag.as_bytes());
                ranges.iter().any(|(low, high)| (*low..=*high).contains(&slot))
            }),
        }
    }
}

/// A catch-up under way.
struct Running {
    scope: Scope,
    db: c_int,
    cursor: ScanCursor,
    started_ms: i64,
}

/// The catch-up's state: the one running and the slot ranges queued
/// behind it.
#[derive(Default)]
struct CatchUp {
    running: Option<Running>,
    queued_slots: Vec<SlotRange>,
}

/// The catch-up's part of the module state: the catch-up itself and its
/// figures for `INFO`.
#[derive(Default)]
struct State {
    catch_up: RefCell<CatchUp>,
    /// Catch-ups started (full or by slots) and completed.
    started: Total,
    completed: Total,
    /// Catch-ups dropped unfinished (a restart, or the server became a
    /// replica).
    abandoned: Total,
    /// Of the catch-up running, or else the last one: keys examined,
    /// turns, tenants indexed, and the duration when it completed (ms).
    run_keys: AtomicU64,
    run_turns: AtomicU64,
    run_tenants: AtomicU64,
    last_duration_ms: AtomicU64,
    /// Since the module loaded: all keys examined and turns taken by
    /// catch-ups, the most keys one turn examined, the longest turn (µs).
    keys_examined: Total,
    turns: Total,
    max_keys_per_turn: AtomicU64,
    max_turn_us: AtomicU64,
    /// The most CPU time of the main thread one turn used (µs): unlike the
    /// wall-clock figure, not inflated when the machine preempts the
    /// server.
    max_turn_cpu_us: AtomicU64,
}

static STATE: PerLoad<State> = PerLoad::new();

fn with_catch_up<R>(run: impl FnOnce(&mut CatchUp) -> R) -> R {
    STATE.with(|state| run(&mut state.catch_up.borrow_mut()))
}

/// Queue a catch-up of the lease sets in `ranges` (an import completed);
/// merged with what is queued, run after the one under way.
pub fn queue_slots(ranges: &[SlotRange]) {
    with_catch_up(|catch_up| catch_up.queued_slots.extend_from_slice(ranges));
}

/// Is a catch-up running or queued?
pub fn pending() -> bool {
    with_catch_up(|catch_up| catch_up.running.is_some() || !catch_up.queued_slots.is_empty())
}

/// Microseconds since `since` (the catch-up's turns, the timer's ticks).
pub fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Start a catch-up of `scope`, dropping one under way (a full one clears
/// the index and the queued slot ranges: it covers them).
pub fn begin(scope: Scope, now: i64) {
    let cursor = ScanCursor::new();
    let dropped = with_catch_up(|catch_up| {
        if scope == Scope::Everything {
            catch_up.queued_slots.clear();
        }
        catch_up.running.replace(Running { scope: scope.clone(), db: 0, cursor, started_ms: now })
    });
    if dropped.is_some() {
        STATE.with(|state| state.abandoned.bump());
    }
    if scope == Scope::Everything {
        with_index(DeadlineIndex::clear);
        // It finds every limits key again (limits_index).
        super::limits_index::clear();
    }
    STATE.with(|state| {
        state.started.bump();
        state.run_keys.store(0, Ordering::Relaxed);
        state.run_turns.store(0, Ordering::Relaxed);
        state.run_tenants.store(0, Ordering::Relaxed);
    });
}

/// Drop the catch-up under way and the queued slot ranges (the server
/// became a replica or started loading).
pub fn stop() {
    let dropped = with_catch_up(|catch_up| {
        catch_up.queued_slots.clear();
        catch_up.running.take()
    });
    if dropped.is_some() {
        STATE.with(|state| state.abandoned.bump());
    }
}

/// What the scan callback gathers: keys seen, the names of lease sets,
/// and the organizations of limits keys (`limits_index`).
#[derive(Default)]
struct Gathered {
    examined: u64,
    found: Vec<(usize, String)>,
    families: Vec<&'static LeaseFamily>,
    limits: Vec<String>,
}

impl Gathered {
    /// One key of a scan step. Only names are read here: opening other
    /// keys inside the scan could rehash the dictionary under it.
    fn take(&mut self, name: &[u8]) {
        self.examined += 1;
        for (number, family) in self.families.iter().enumerate() {
            if let Some(tenant) = (family.tenant_of)(name) {
                self.found.push((number, tenant));
            }
        }
        if let Some(org) = crate::dreams::region::org_of_limits_key(name) {
            self.limits.push(org.to_owned());
        }
    }
}

/// One bounded turn of the catch-up, if one runs (or slot ranges are
/// queued); true while it has more to do.
pub fn turn(session: &Session, families: &[&'static LeaseFamily]) -> bool {
    let ctx = session.ctx();
    let Some((scope, mut db, cursor)) = with_catch_up(|catch_up| {
        if catch_up.running.is_none() && !catch_up.queued_slots.is_empty() {
            let ranges = std::mem::take(&mut catch_up.queued_slots);
            return Some(Err(ranges));
        }
        catch_up.running.as_ref().map(|running| Ok((running.scope.clone(), running.db, running.cursor.clone())))
    })
    .and_then(|next| match next {
        Ok(running) => Some(running),
        Err(ranges) => {
            begin(Scope::Slots(ranges), session.now_ms());
            with_catch_up(|catch_up| catch_up.running.as_ref().map(|r| (r.scope.clone(), r.db, r.cursor.clone())))
        }
    }) else {
        return false;
    };
    let started = Instant::now();
    let cpu_started = thread_cpu_us();
    let scope_db = DbScope::new(ctx);
    let mut gathered = Gathered { families: families.to_vec(), ..Gathered::default() };
    let mut indexed = 0u64;
    let mut finished = false;
    let limit = keys_per_turn();
    loop {
        if !scope_db.select(db) {
            // Past the last database.
            finished = true;
            break;
        }
        let more = cursor.step(ctx, |name| gathered.take(name));
        indexed += index_found(session, &scope, db, &mut gathered.found, families);
        // Every limits key found is noted, whatever the scope: the limits
        // index may hold more than the keyspace, never less.
        for org in gathered.limits.drain(..) {
            super::limits_index::note_found(db, &org);
        }
        if !more {
            // This database is done: the next one, with the cursor restarted.
            cursor.restart();
            db += 1;
            continue;
        }
        if gathered.examined >= limit || started.elapsed().as_micros() >= CATCH_UP_BUDGET_US {
            break;
        }
    }
    drop(scope_db);
    let took = micros(started);
    let cpu = thread_cpu_us().saturating_sub(cpu_started);
    STATE.with(|state| {
        state.keys_examined.add(gathered.examined);
        state.turns.bump();
        state.max_keys_per_turn.fetch_max(gathered.examined, Ordering::Relaxed);
        state.max_turn_us.fetch_max(took, Ordering::Relaxed);
        state.max_turn_cpu_us.fetch_max(cpu, Ordering::Relaxed);
        state.run_keys.fetch_add(gathered.examined, Ordering::Relaxed);
        state.run_turns.fetch_add(1, Ordering::Relaxed);
        state.run_tenants.fetch_add(indexed, Ordering::Relaxed);
    });
    let done = with_catch_up(|catch_up| {
        if finished {
            catch_up.running.take()
        } else {
            if let Some(running) = catch_up.running.as_mut() {
                running.db = db;
            }
            None
        }
    });
    if let Some(done) = done {
        drop(cursor);
        let now = session.now_ms();
        let took_ms = u64::try_from(now.saturating_sub(done.started_ms)).unwrap_or(0);
        STATE.with(|state| {
            state.completed.bump();
            state.last_duration_ms.store(took_ms, Ordering::Relaxed);
        });
        // Slot ranges queued meanwhile run next.
        return with_catch_up(|catch_up| !catch_up.queued_slots.is_empty());
    }
    true
}

/// Index the lease sets gathered (in database `db`, selected) that the
/// scope wants; how many were indexed.
fn index_found(
    session: &Session,
    scope: &Scope,
    db: c_int,
    found: &mut Vec<(usize, String)>,
    families: &[&'static LeaseFamily],
) -> u64 {
    let mut indexed = 0;
    for (number, tenant) in found.drain(..) {
        let Some(family) = families.get(number) else { continue };
        if !scope.wants((family.slot_tenant)(&tenant)) {
            continue;
        }
        if let Some(earliest) = (family.earliest)(session, &tenant) {
            with_index(|index| index.note((number, db, tenant), earliest));
            indexed += 1;
        }
    }
    indexed
}

/// The catch-up's fields of `dreamtown_leases` (after the timer's).
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    STATE.with(|state| {
        vec![
            (c"catch_ups_started", state.started.get()),
            (c"catch_ups_completed", state.completed.get()),
            (c"catch_ups_abandoned", state.abandoned.get()),
            (c"catch_up_keys_examined", state.run_keys.load(Ordering::Relaxed)),
            (c"catch_up_turns", state.run_turns.load(Ordering::Relaxed)),
            (c"catch_up_tenants_indexed", state.run_tenants.load(Ordering::Relaxed)),
            (c"catch_up_last_duration_ms", state.last_duration_ms.load(Ordering::Relaxed)),
            (c"catch_up_keys_examined_total", state.keys_examined.get()),
            (c"catch_up_turns_total", state.turns.get()),
            (c"catch_up_max_keys_per_turn", state.max_keys_per_turn.load(Ordering::Relaxed)),
            (c"catch_up_max_turn_us", state.max_turn_us.load(Ordering::Relaxed)),
            (c"catch_up_max_turn_cpu_us", state.max_turn_cpu_us.load(Ordering::Relaxed)),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_scope_wants_its_slots_only() {
        use crate::cluster_slot::key_slot;
        let slot = key_slot(b"acme");
        let scope = Scope::Slots(vec![(slot, slot)]);
        assert!(scope.wants(Some("acme")));
        assert!(!scope.wants(Some("other-tenant-far-away")) || key_slot(b"other-tenant-far-away") == slot);
        assert!(!scope.wants(None));
        assert!(Scope::Everything.wants(None));
    }
}
