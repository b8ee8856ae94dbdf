//! The limits index: which organizations have a limits key
//! (`exocortex:dreams:{<org>}:limits`, `crate::dreams::limits`) in which
//! database, in memory, so that a drain of an organization without limits
//! (nearly every drain) opens no extra key: one flag and, when some
//! organization has limits, one hash lookup.
//!
//! The index may hold more than the keyspace (an entry whose key is gone
//! costs a drain one open, which finds it gone and drops the entry), never
//! less while it is *trusted*. It is trusted on a master once everything
//! that may have brought a limits key without a command here noting it
//! has been looked at:
//! * commands note every key they write (`DREAMS.LIMIT SET`, `DREAMS.PAUSE`);
//! * keys that arrive by `RESTORE` (a legacy slot move), `RENAME`, `COPY`
//!   or `MOVE` are noted from their keyspace event ([`on_keyspace_event`]);
//! * a load (RDB, AOF, `DEBUG RELOAD`, a replica's sync), a promotion,
//!   `SWAPDB` or a module load into a populated keyspace restart the lease
//!   catch-up (`lease_timer`, `lease_catch_up`), which walks the keyspace
//!   in bounded turns and notes the limits keys it finds beside the lease
//!   sets; an import of slots by atomic slot migration queues a catch-up of
//!   those slots. Until it completes the index is not trusted, and every
//!   drain opens the organization's limits key (`INFO dreamtown`:
//!   `limits_untrusted_opens`): correct, a few hundred instructions dearer.
//!
//! Not seen: a limits key written by a native command (`SET`) on this
//! master; the module subscribes to no string events (every `SET` of any
//! key would pay for it). Limits are written with `DREAMS.LIMIT`,
//! `DREAMS.PAUSE` and `DREAMS.RESUME` (docs/dreams.md).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::c_int;

use crate::dreams::region::org_of_limits_key;
use crate::glue::ctx::{selected_db, Ctx, RawString};
use crate::glue::module_state::PerLoad;
use crate::glue::session::Session;
use crate::metrics::totals::Total;

/// The index's part of the module state.
#[derive(Default)]
struct State {
    /// Organization → the databases where it may have a limits key.
    index: RefCell<HashMap<String, Vec<c_int>>>,
    /// The index holds every limits key of this node's keyspace.
    trusted: Cell<bool>,
    /// The index has at least one entry (kept beside it, so that the
    /// common answer, "trusted and empty", costs two loads and no borrow).
    any: Cell<bool>,
    /// Drains (and waiter passes) that opened a limits key because the
    /// index was not trusted (counted by the store that opens it).
    untrusted_opens: Total,
    /// Entries dropped because their key was found gone.
    dropped: Total,
}

static STATE: PerLoad<State> = PerLoad::new();

/// May organization `org` (in the session's database) have limits? False
/// only when the index is trusted and has no entry for it: the drain then
/// skips its limits key. Cheap: one load when no organization has limits.
#[inline]
pub fn may_be_limited(session: &Session, org: &str) -> bool {
    if STATE.with(|state| state.trusted.get() && !state.any.get()) && session.is_master() {
        return false;
    }
    indexed(session, org)
}

/// [`may_be_limited`] past its first test: the index not trusted (or not
/// a master), or holding some organization.
#[inline(never)]
fn indexed(session: &Session, org: &str) -> bool {
    if !trusted() || !session.is_master() {
        return true;
    }
    let db = selected_db(session.ctx());
    STATE.with(|state| state.index.borrow().get(org).is_some_and(|dbs| dbs.contains(&db)))
}

/// Is the index trusted (so that a drain that opens a limits key does so
/// because the organization is in it)?
pub fn trusted() -> bool {
    STATE.with(|state| state.trusted.get())
}

/// A drain (or waiter pass) opened a limits key because the index was not
/// trusted.
pub fn count_untrusted_open() {
    STATE.with(|state| state.untrusted_opens.bump());
}

/// Organization `org` has (or may now have) a limits key in the selected
/// database of `ctx`.
pub fn note(ctx: Ctx, org: &str) {
    note_in(selected_db(ctx), org);
}

fn note_in(db: c_int, org: &str) {
    STATE.with(|state| {
        let mut index = state.index.borrow_mut();
        match index.get_mut(org) {
            Some(dbs) if dbs.contains(&db) => {}
            Some(dbs) => dbs.push(db),
            None => {
                index.insert(org.to_owned(), vec![db]);
            }
        }
        state.any.set(true);
    });
}

/// `org`'s limits key is gone from the selected database of `ctx` (found
/// absent by a drain, or cleared by a command).
pub fn forget(ctx: Ctx, org: &str) {
    let db = selected_db(ctx);
    STATE.with(|state| {
        let mut index = state.index.borrow_mut();
        let Some(dbs) = index.get_mut(org) else { return };
        let before = dbs.len();
        dbs.retain(|known| *known != db);
        let dropped = dbs.len() != before;
        if dbs.is_empty() {
            index.remove(org);
        }
        state.any.set(!index.is_empty());
        if dropped {
            state.dropped.bump();
        }
    });
}

/// A catch-up found the limits key of `org` in database `db`.
pub fn note_found(db: c_int, org: &str) {
    note_in(db, org);
}

/// Drop every entry (a full catch-up starts: it finds them all again; or
/// every database was emptied).
pub fn clear() {
    STATE.with(|state| {
        state.index.borrow_mut().clear();
        state.any.set(false);
    });
}

/// The index may now miss keys (a catch-up is due or running, the server
/// became a replica): every drain opens its limits key until [`trust`].
pub fn untrust() {
    STATE.with(|state| state.trusted.set(false));
}

/// Everything that could bring a limits key unseen has been looked at.
pub fn trust() {
    STATE.with(|state| state.trusted.set(true));
}

/// Can keyspace event `event` bring a limits key (`RESTORE`, `RENAME`,
/// `COPY`, `MOVE`)? Asked before [`on_keyspace_event`], so that the hot
/// commands' own events (pushes, pops, removals) end at this test.
#[inline]
pub(super) fn wants(event: &[u8]) -> bool {
    matches!(event, b"restore" | b"rename_to" | b"copy_to" | b"move_to")
}

/// Keyspace events (`keyspace_events`) that [`wants`]: the key is noted
/// if it is a limits key.
pub(super) fn on_keyspace_event(ctx: Ctx, key: RawString) {
    if let Some(org) = org_of_limits_key(crate::glue::string::bytes_of(key)) {
        note(ctx, org);
    }
}

/// The `dreamtown_limits` section of `INFO dreamtown`.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    STATE.with(|state| {
        let (orgs, entries) =
            state.index.borrow().values().fold((0u64, 0u64), |(o, e), dbs| (o + 1, e + dbs.len() as u64));
        vec![
            (c"limits_indexed_orgs", orgs),
            (c"limits_indexed_entries", entries),
            (c"limits_index_trusted", u64::from(state.trusted.get())),
            (c"limits_untrusted_opens", state.untrusted_opens.get()),
            (c"limits_entries_dropped", state.dropped.get()),
        ]
    })
}
