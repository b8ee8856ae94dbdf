//! The Dreams stores over the Redis key API: an organization's queue keys
//! and a region's counter keys, opened with ACL and type checks up front so
//! that every later write is certain to succeed.

use std::ffi::CStr;

use super::queue_names::{queue_names, queue_names_and_tenant};
use crate::dreams::lease::{LeaseStore, EXPIRED};
use crate::dreams::region::{QueueKey, RegionKey, RegionKeys, RegionRef};
use crate::dreams::store::{QueueStore, RegionCounters, RegionStore};
use crate::glue::api::api;
use crate::glue::call;
use crate::glue::key::{End, FieldValue, Key, KeyKind, Taken};
use crate::glue::reply::CommandError;
use crate::glue::session::{Access, Session};
use crate::glue::string::{KeyName, OwnedString, StaticString};
use crate::metrics::fire_ages::{self, List};
use crate::metrics::tenant_stats::TenantId;
use redis_module::raw;

/// The counter hash's field names as Redis strings, made once.
static COUNTER_FIELDS: [StaticString; 5] = {
    let names = RegionCounters::FIELDS;
    [
        StaticString::new(names[0]),
        StaticString::new(names[1]),
        StaticString::new(names[2]),
        StaticString::new(names[3]),
        StaticString::new(names[4]),
    ]
};

/// An organization's queue.
pub struct RedisQueue {
    ready: Key,
    deferred: Key,
    processing: Key,
    dead: Option<Key>,
    /// The head of ready just popped, its `LPOP` not yet replicated: if it
    /// goes in flight next, pop and push replicate as one `LMOVE`; any
    /// other write (or the end of the command) replicates the `LPOP` first.
    popped: Option<Taken>,
    /// The popped head's `fire_ages` hash, reused when it goes in flight.
    popped_hash: u64,
    /// The deferred set was found absent earlier in this command (by a
    /// check that opened it for reading), and nothing has opened it here
    /// since: while `deferred` stays unopened it is still absent (every
    /// write to it goes through that handle), so its length and due items
    /// are known without opening it (see [`RedisQueue::with_deferred_absent`]).
    deferred_absent: bool,
    /// The organization, for its per-tenant totals and for timing its
    /// items (`fire_ages`: every push, pop, move and removal here is noted).
    org: TenantId,
}

impl RedisQueue {
    /// Open `org`'s queue; `with_dead` also opens the dead-letter list.
    pub fn open(session: &Session, org: &str, access: Access, with_dead: bool) -> Result<Self, CommandError> {
        let (names, tenant) = queue_names_and_tenant(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing]);
        let [ready, deferred, processing] = session.check_strings(names, access)?;
        let dead = match with_dead {
            true => Some(session.check_strings(queue_names(org, [QueueKey::Dead]), access)?),
            false => None,
        };
        let queue = Self {
            ready: session.open_checked(ready, access),
            deferred: session.open_checked(deferred, access),
            processing: session.open_checked(processing, access),
            dead: dead.map(|[dead]| session.open_checked(dead, access)),
            popped: None,
            popped_hash: 0,
            deferred_absent: false,
            org: tenant,
        };
        queue.ready.require(KeyKind::List)?;
        queue.deferred.require(KeyKind::ZSet)?;
        queue.processing.require(KeyKind::List)?;
        if let Some(dead) = &queue.dead {
            dead.require(KeyKind::List)?;
        }
        Ok(queue)
    }

    /// Add the dead-letter list to a queue opened for writing with
    /// [`RedisQueue::open_in_flight`], opened on first use with no checks:
    /// for a call that has already ACL- and type-checked it (and the ready
    /// list and deferred set) earlier in the same command, and opened each
    /// (so any expiry has happened).
    pub fn with_dead_checked_before(mut self, session: &Session, org: &str) -> Self {
        let [dead] = queue_names(org, [QueueKey::Dead]);
        self.dead = Some(Key::unopened(session.ctx(), dead, true));
        self
    }

    /// Note that this command found the deferred set absent when it
    /// checked it (opened for reading, before anything was written):
    /// while this queue has not opened the set since, its length is 0 and
    /// nothing in it is due, answered without opening it (an absent key's
    /// write open has no effect anyone sees: no statistics, no events).
    pub fn with_deferred_absent(mut self, absent: bool) -> Self {
        self.deferred_absent = absent;
        self
    }

    /// Is the deferred set known absent without opening it?
    fn deferred_known_absent(&self) -> bool {
        self.deferred_absent && self.deferred.is_unopened()
    }

    /// Signal every written key modified now, as dropping the queue would
    /// (after replicating a pop still held back), and at drop only the
    /// keys written again: for a queue kept open past the point where the
    /// command used to close it.
    pub fn signal_modified_now(&mut self) {
        self.settle();
        self.ready.signal_modified_now();
        self.deferred.signal_modified_now();
        self.processing.signal_modified_now();
        if let Some(dead) = &self.dead {
            dead.signal_modified_now();
        }
    }

    /// Open `org`'s queue for a command that always uses its in-flight
    /// list and uses the ready list and deferred set on some paths only
    /// (an acknowledgement that requeues, or that finds its fire back in
    /// ready): only the in-flight list is checked and opened now; the
    /// command calls [`RedisQueue::check_waiting`] before its first write
    /// on a path that uses the other two. Should a path reach them
    /// unchecked all the same, they open on first use, unchecked.
    pub fn open_in_flight(session: &Session, org: &str, access: Access) -> Result<Self, CommandError> {
        let ([ready, deferred, processing], tenant) =
            queue_names_and_tenant(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing]);
        let [processing] = session.check_strings([processing], access)?;
        let write = access == Access::Write;
        let queue = Self {
            ready: Key::unopened(session.ctx(), ready, write),
            deferred: Key::unopened(session.ctx(), deferred, write),
            processing: session.open_checked(processing, access),
            dead: None,
            popped: None,
            popped_hash: 0,
            deferred_absent: false,
            org: tenant,
        };
        queue.processing.require(KeyKind::List)?;
        Ok(queue)
    }

    /// Check (ACL, then type) and open the ready list and deferred set of
    /// a queue opened with [`RedisQueue::open_in_flight`].
    pub fn check_waiting(&self, session: &Session, access: Access) -> Result<(), CommandError> {
        session.check_name(self.ready.name_string(), access)?;
        session.check_name(self.deferred.name_string(), access)?;
        self.ready.require(KeyKind::List)?;
        self.deferred.require(KeyKind::ZSet)?;
        Ok(())
    }
}

impl RedisQueue {
    /// The organization, as the per-tenant tables know it.
    pub fn tenant(&self) -> TenantId {
        self.org
    }

    /// Every in-flight payload, oldest first.
    pub fn in_flight(&self) -> Vec<Vec<u8>> {
        self.processing.all()
    }

    /// Replicate a pop still held back, before the next write.
    fn settle(&mut self) {
        if let Some(popped) = self.popped.take() {
            self.ready.replicate_taken(&popped);
        }
    }
}

impl Drop for RedisQueue {
    fn drop(&mut self) {
        self.settle();
    }
}

impl QueueStore for RedisQueue {
    fn ready_len(&self) -> u64 {
        self.ready.len()
    }
    fn deferred_len(&self) -> u64 {
        match self.deferred_known_absent() {
            true => 0,
            false => self.deferred.len(),
        }
    }
    fn processing_len(&self) -> u64 {
        self.processing.len()
    }
    fn push_ready(&mut self, payload: &[u8]) {
        self.settle();
        self.ready.push(End::Tail, &[payload]);
        fire_ages::entered(self.org, List::Ready, payload, clock_ms());
    }
    fn push_ready_head(&mut self, payload: &[u8]) {
        self.settle();
        self.ready.push(End::Head, &[payload]);
        fire_ages::entered(self.org, List::Ready, payload, clock_ms());
    }
    fn pop_ready(&mut self) -> Option<Vec<u8>> {
        self.settle();
        let popped = self.ready.take(End::Head)?;
        let payload = popped.as_bytes().to_vec();
        // A list its last element left is deleted: no length to read.
        let emptied = popped.emptied();
        self.popped = Some(popped);
        // Hashed once for leaving ready and, usually next, entering flight.
        self.popped_hash = fire_ages::payload_hash(&payload);
        fire_ages::left_hashed(self.org, List::Ready, self.popped_hash, emptied);
        Some(payload)
    }
    fn push_popped_to_processing(&mut self, payload: &[u8]) {
        match self.popped.take() {
            Some(popped) if popped.as_bytes() == payload => {
                self.processing.push_taken(&self.ready, &popped, End::Tail);
                fire_ages::entered_hashed(self.org, List::InFlight, self.popped_hash, clock_ms());
            }
            other => {
                self.popped = other;
                self.push_processing(payload);
            }
        }
    }
    fn remove_ready(&mut self, payload: &[u8]) -> bool {
        self.settle();
        let removed = self.ready.remove_first(payload);
        if removed {
            fire_ages::left(self.org, List::Ready, payload, !self.ready.exists());
        }
        removed
    }
    fn push_processing(&mut self, payload: &[u8]) {
        self.settle();
        self.processing.push(End::Tail, &[payload]);
        fire_ages::entered(self.org, List::InFlight, payload, clock_ms());
    }
    fn remove_processing(&mut self, payload: &[u8]) -> bool {
        self.settle();
        let removed = self.processing.remove_first(payload);
        if removed {
            fire_ages::left(self.org, List::InFlight, payload, !self.processing.exists());
        }
        removed
    }
    fn scan_processing(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        self.settle();
        self.processing.scan_list(visit);
    }
    fn remove_processing_at(&mut self, index: u64, payload: &[u8]) {
        self.settle();
        if self.processing.remove_at(index, payload) {
            fire_ages::left(self.org, List::InFlight, payload, !self.processing.exists());
        }
    }
    fn take_processing(&mut self) -> Vec<Vec<u8>> {
        self.settle();
        let payloads = self.processing.all();
        self.processing.delete();
        fire_ages::emptied(self.org, List::InFlight);
        payloads
    }
    fn add_deferred(&mut self, score: i64, payload: &[u8]) {
        self.settle();
        self.deferred.zadd(score as f64, payload);
    }
    fn due_deferred(&self, now: i64, limit: u64) -> Vec<Vec<u8>> {
        if self.deferred_known_absent() {
            return Vec::new();
        }
        self.deferred
            .zrange_by_score(f64::NEG_INFINITY, now as f64, limit)
            .into_iter()
            .map(|(member, _)| member)
            .collect()
    }
    fn promote(&mut self, payloads: &[Vec<u8>]) {
        self.settle();
        let members: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        self.deferred.zrem(&members);
        self.ready.push(End::Tail, &members);
        fire_ages::entered_all(self.org, List::Ready, &members, clock_ms());
    }
    fn push_dead(&mut self, payload: &[u8]) {
        self.settle();
        match &self.dead {
            Some(dead) => dead.push(End::Tail, &[payload]),
            // Only a drain dead-letters, and it opens the list; never drop data.
            None => {
                self.ready.push(End::Tail, &[payload]);
                fire_ages::entered(self.org, List::Ready, payload, clock_ms());
            }
        }
    }
}

/// The server clock (unix ms), for timing items as they move.
fn clock_ms() -> i64 {
    unsafe { api!(RedisModule_Milliseconds)() }
}

/// How a command uses a region's counted-event set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventSet {
    /// ACL-checked and type-checked when the region is opened (SETTLE and
    /// COUNTERS: the seed's scripts check it on every call).
    Open,
    /// ACL-checked when opened; its type is checked by the one write that
    /// touches it (`SADD`, the first write of a counted record), which
    /// fails with `WRONGTYPE` before anything has changed.
    CheckedByWrite,
    /// Not used on this path: neither named, checked nor opened.
    Untouched,
}

/// A lease set: an organization's (`exocortex:dreams:{<org>}:leases`), or
/// a Town agent's (`tt:{<town>}:leases:<agent>`).
pub struct RedisLeases {
    key: Key,
}

impl RedisLeases {
    /// Open `org`'s lease set with ACL and type checks.
    pub fn open(session: &Session, org: &str, access: Access) -> Result<Self, CommandError> {
        let [name] = queue_names(org, [QueueKey::Leases]);
        Self::open_name(session, name, access)
    }

    /// Open `org`'s lease set for writing, with no checks: for a call that
    /// has already ACL- and type-checked it earlier in the same command.
    pub fn open_checked_before(session: &Session, org: &str) -> Self {
        let [name] = queue_names(org, [QueueKey::Leases]);
        Self { key: session.open_checked(name, Access::Write) }
    }

    /// Open the lease set named `name` (Town keeps one per agent).
    pub fn open_name(session: &Session, name: impl Into<KeyName>, access: Access) -> Result<Self, CommandError> {
        let [name] = session.check_strings([name.into()], access)?;
        let key = session.open_checked(name, access);
        key.require(KeyKind::ZSet)?;
        Ok(Self { key })
    }

    /// Every entry, lowest score first (markers, then deadlines).
    pub fn entries(&self) -> Vec<(Vec<u8>, i64)> {
        self.key
            .zrange_by_score(f64::NEG_INFINITY, f64::INFINITY, u64::MAX)
            .into_iter()
            .map(|(member, score)| (member, score as i64))
            .collect()
    }

    /// Is the set absent or empty (no payload leased, none expired)?
    pub fn is_empty(&self) -> bool {
        self.key.is_empty()
    }

    /// Delete the whole set (everything in flight went back to ready).
    pub fn clear(&self) {
        self.key.delete();
    }
}

impl LeaseStore for RedisLeases {
    fn score(&self, payload: &[u8]) -> Option<i64> {
        self.key.zscore(payload).map(|score| score as i64)
    }
    fn set(&mut self, payload: &[u8], score: i64) {
        self.key.zadd(score as f64, payload);
    }
    fn remove(&mut self, payload: &[u8]) -> bool {
        self.key.zrem(&[payload]) > 0
    }
    fn due(&self, now_ms: i64, limit: u64) -> Vec<Vec<u8>> {
        self.key
            .zrange_by_score((EXPIRED + 1) as f64, now_ms as f64, limit)
            .into_iter()
            .map(|(member, _)| member)
            .collect()
    }
    fn earliest(&self) -> Option<i64> {
        self.key.zrange_by_score((EXPIRED + 1) as f64, f64::INFINITY, 1).first().map(|(_, score)| *score as i64)
    }
}

/// The counters hash's `memories`, `edges`, `last_success` and
/// `settled_generation` (`fields`, in that order). The last is read only
/// if the hash holds more fields than the first three found: a region
/// never settled (the common case) has no `settled_generation`, and
/// looking up an absent field costs `RM_HashGet` a scan of the whole hash
/// (about 500 instructions) where its field count (`RM_ValueLength`)
/// costs about 40. Same values either way.
fn counters_without_pending(counters: &Key, fields: [&StaticString; 4]) -> [Option<OwnedString>; 4] {
    let [memories, edges, success, settled] = fields;
    let [m, e, l] = counters.hget_fields([memories, edges, success]);
    let s = settled_if_held(counters, settled, [&m, &e, &l]);
    [m, e, l, s]
}

/// The counters hash's `settled_generation` (named `settled`), read only
/// if the hash holds more fields than those already `found`: when it
/// holds no others the field is absent, and asking for it would cost a
/// scan of the whole hash (see [`counters_without_pending`]).
fn settled_if_held<const N: usize>(
    counters: &Key,
    settled: &StaticString,
    found: [&Option<OwnedString>; N],
) -> Option<OwnedString> {
    let found = found.iter().filter(|value| value.is_some()).count() as u64;
    match counters.len() > found {
        true => {
            let [s] = counters.hget_fields([settled]);
            s
        }
        false => None,
    }
}

/// One region's counters and counted-event set.
pub struct RedisRegion<'s> {
    session: &'s Session,
    counters: Key,
    events: Option<OwnedString>,
    fields: RegionCounters,
    /// Set when the event set's `SADD` was refused for its type: the store
    /// then reported the event as counted (nothing written) and the command
    /// must reply with this error instead.
    refused: Option<CommandError>,
    /// The command's own argument string for an event id (the bytes' start
    /// and length, and the string they were read from), handed to `SADD`
    /// as it is rather than copied into a new string.
    event_argument: Option<(*const u8, usize, *mut raw::RedisModuleString)>,
}

impl<'s> RedisRegion<'s> {
    /// Open `region`'s keys and read its counters, refusing wrong types and
    /// non-numeric fields.
    pub fn open(session: &'s Session, region: &RegionKey, access: Access) -> Result<Self, CommandError> {
        Self::open_with(session, region.borrowed(), access, EventSet::Open, true)
    }

    /// [`RedisRegion::open`], using the event set as `events` says, and
    /// reading the `pending` field only if `read_pending` (else it reads as
    /// absent until [`RedisRegion::read_pending`]).
    pub fn open_with(
        session: &'s Session,
        region: RegionRef<'_>,
        access: Access,
        events: EventSet,
        read_pending: bool,
    ) -> Result<Self, CommandError> {
        let mut digits = [0u8; 11];
        let [counters_parts, events_parts] = RegionKeys::name_parts(region, &mut digits);
        let use_of_events = events;
        let (counters, events) = match use_of_events {
            EventSet::Untouched => {
                let [counters] = session.check_strings([OwnedString::concat(&counters_parts)], access)?;
                (counters, None)
            }
            EventSet::Open | EventSet::CheckedByWrite => {
                let names = [counters_parts, events_parts].map(|parts| OwnedString::concat(&parts));
                let [counters, events] = session.check_strings(names, access)?;
                (counters, Some(events))
            }
        };
        let counters = session.open_checked(counters, access);
        counters.require(KeyKind::Hash)?;
        if let (EventSet::Open, Some(names)) = (use_of_events, &events) {
            session.open_checked(names.clone(), Access::Read).require(KeyKind::Set)?;
        }
        let [memories, edges, success, settled, pending] = COUNTER_FIELDS.each_ref();
        let (values, pending) = match read_pending {
            true => {
                // `settled_generation` last, and only if the hash holds
                // more fields than the four found (see `settled_if_held`).
                let [m, e, l, p] = counters.hget_fields([memories, edges, success, pending]);
                let s = settled_if_held(&counters, settled, [&m, &e, &l, &p]);
                ([m, e, l, s], p)
            }
            false => (counters_without_pending(&counters, [memories, edges, success, settled]), None),
        };
        let [m, e, l, s] = values.each_ref().map(|v| v.as_ref().map(OwnedString::as_bytes));
        let fields =
            RegionCounters::from_values([m, e, l, s, pending.as_ref().map(OwnedString::as_bytes)]).map_err(|bad| {
                CommandError::err(format_args!(
                    "Dreams counter metadata is not numeric (field '{}' of {})",
                    bad.0,
                    String::from_utf8_lossy(counters.name())
                ))
            })?;
        Ok(Self { session, counters, events, fields, refused: None, event_argument: None })
    }

    /// `event_id` is the command's argument `string` (its bytes, as the
    /// command read them): a set write of that event id passes the string.
    pub fn event_id_is_argument(&mut self, event_id: &[u8], string: *mut raw::RedisModuleString) {
        self.event_argument = Some((event_id.as_ptr(), event_id.len(), string));
    }

    /// Read the `pending` field skipped by [`RedisRegion::open_with`].
    pub fn read_pending(&mut self) {
        let [_, _, _, _, pending] = &COUNTER_FIELDS;
        let [value] = self.counters.hget_fields([pending]);
        self.fields.pending = value.map(|v| v.as_bytes().to_vec());
    }

    /// Take the `pending` field read by [`RedisRegion::read_pending`] as
    /// absent, writing nothing (the caller clears it once every key it
    /// writes is checked).
    pub fn forget_pending_read(&mut self) {
        self.fields.pending = None;
    }

    /// The error a write refused after the store was opened (the event
    /// set's type, see [`EventSet::CheckedByWrite`]); nothing was written.
    pub fn refused(&mut self) -> Option<CommandError> {
        self.refused.take()
    }

    /// The counters hash key.
    pub fn counters_key(&self) -> &Key {
        &self.counters
    }

    /// `SADD`/`SREM` of the counted-event set. Through RM_Call, which fires
    /// the keyspace event, signals the key and (`!`) replicates the command
    /// when it changed the set.
    fn set_command(&mut self, command: &CStr, member: &[u8]) -> i64 {
        // Only a path that names the set calls this (a store opened with
        // `EventSet::Untouched` is never asked to count an event).
        let Some(events) = &self.events else { return 0 };
        let member = match self.event_argument {
            // The very bytes read from the argument (same start and length).
            Some((start, len, string)) if std::ptr::eq(start, member.as_ptr()) && len == member.len() => {
                call::Member::String(string)
            }
            _ => call::Member::Bytes(member),
        };
        match call::integer_replicated(self.session.ctx(), command, events, member) {
            Ok(count) => count.unwrap_or(0),
            Err(call::Refused) => {
                // The set has another type (checked by this write when it
                // was opened `CheckedByWrite`); nothing has been written.
                self.refused = Some(CommandError::wrong_type(events.as_bytes()));
                0
            }
        }
    }
}

impl RegionStore for RedisRegion<'_> {
    fn counters(&self) -> &RegionCounters {
        &self.fields
    }

    fn set_counts(&mut self, memories: i64, edges: i64, last_success: Option<i64>) {
        let [memories_field, edges_field, success_field, _, _] = &COUNTER_FIELDS;
        let counts = [(memories_field, FieldValue::Integer(memories)), (edges_field, FieldValue::Integer(edges))];
        match last_success {
            Some(at) => {
                let [memories, edges] = counts;
                self.counters.hset_fields(&[memories, edges, (success_field, FieldValue::Second(at))]);
            }
            None => self.counters.hset_fields(&counts),
        }
        self.fields.memories = Some(memories);
        self.fields.edges = Some(edges);
        if last_success.is_some() {
            self.fields.last_success = last_success;
        }
    }

    fn set_pending(&mut self, fire_id: &str) {
        let [_, _, _, _, pending] = &COUNTER_FIELDS;
        self.counters.hset_fields(&[(pending, FieldValue::Bytes(fire_id.as_bytes()))]);
        self.fields.pending = Some(fire_id.as_bytes().to_vec());
    }

    fn clear_pending(&mut self) {
        let [_, _, _, _, pending] = &COUNTER_FIELDS;
        self.counters.hdel_fields(&[pending]);
        self.fields.pending = None;
    }

    fn set_settled_generation(&mut self, generation: i64) {
        let [_, _, _, settled, _] = &COUNTER_FIELDS;
        self.counters.hset_fields(&[(settled, FieldValue::Integer(generation))]);
        self.fields.settled_generation = Some(generation);
    }

    fn remember_event(&mut self, event_id: &[u8]) -> bool {
        self.set_command(c"SADD", event_id) == 1
    }

    fn forget_event(&mut self, event_id: &[u8]) {
        self.set_command(c"SREM", event_id);
    }
}
