//! The module's one keyspace-event subscription, shared by the mechanisms
//! that listen: waiters (work arriving in a watched list or sorted set),
//! leases (a lease set arriving by `RESTORE`, or gone: its last lease
//! removed, or the key deleted, expired or evicted), limits (a limits key
//! arriving by `RESTORE`, `RENAME`, `COPY` or `MOVE`) and fire ages (a
//! Dreams list deleted, expired or evicted by someone else: its timings go
//! with it); a key of a slot this node is importing by atomic slot
//! migration goes to `slot_migration` only. The module's own writes are
//! told apart (`effects::own_write`) where whoever wrote them already kept
//! the side tables (fire ages).
//!
//! Why one: Redis gives every subscriber an event reaches a context of its
//! own, a temporary client set up and torn down around the callback
//! (module.c `moduleNotifyKeyspaceEvent`), several hundred instructions
//! each. A generic event (`del`, `restore`, `rename_to` ...) reached two
//! subscribers, and an acknowledgement that empties the in-flight list
//! fires one; one subscriber that hands each event to both pays that once.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{lease_timer, limits_index, slot_migration, waiters};
use crate::glue::ctx::{Ctx, RawString};
use crate::glue::keyspace_events::{self, EventClasses, KeyspaceListener};
use crate::metrics::fire_ages;

/// Subscribe to the event classes any listener needs (module load).
pub fn subscribe(ctx: Ctx) -> Result<(), String> {
    // Expired and evicted keys (their own classes): a Dreams list or a
    // lease set gone by a TTL or eviction takes its side-table entries
    // along. Each costs the server one callback (a prefix check here).
    let classes =
        EventClasses::LIST | EventClasses::ZSET | EventClasses::GENERIC | EventClasses::EXPIRED | EventClasses::EVICTED;
    keyspace_events::subscribe::<Listeners>(ctx, classes)
}

/// The module's one keyspace-event subscriber.
struct Listeners;

impl KeyspaceListener for Listeners {
    fn on_event(ctx: Ctx, event: &[u8], key: RawString) {
        on_keyspace_event(ctx, event, key);
    }
}

/// Every listener sees the event, in this order (waiters first, as when
/// they subscribed on their own), each under its own `catch_unwind`.
fn on_keyspace_event(ctx: Ctx, event: &[u8], key: RawString) {
    // A key of a slot this node is importing (atomic slot migration)
    // reaches no listener: it only teaches the lease index. Nothing is
    // importing unless some slot is moving: then the key's name is not
    // even read (a `RedisModule_StringPtrLen` call per event).
    let importing = catch_unwind(AssertUnwindSafe(|| {
        super::slot_moves::any_moving() && slot_migration::on_keyspace_event(ctx, crate::glue::string::bytes_of(key))
    }));
    if importing.unwrap_or(true) {
        return;
    }
    let own_write = crate::glue::effects::own_write();
    let _ = catch_unwind(AssertUnwindSafe(|| waiters::on_keyspace_event(ctx, event, key)));
    let _ = catch_unwind(AssertUnwindSafe(|| lease_timer::on_keyspace_event(ctx, event, key)));
    if limits_index::wants(event) {
        let _ = catch_unwind(AssertUnwindSafe(|| limits_index::on_keyspace_event(ctx, key)));
    }
    if !own_write {
        let _ = catch_unwind(AssertUnwindSafe(|| fire_ages::on_keyspace_event(ctx, event, key)));
    }
}
