//! The Dreams stores over the Redis key API: an organization's queue keys
//! and a region's counter keys, opened with ACL and type checks up front so
//! that every later write is certain to succeed.

use std::ffi::CStr;

use super::queue_names::{queue_names, queue_names_and_tenant};
use crate::dreams::message::PayloadBuffer;
use crate::dreams::region::{QueueKey, RegionKey, RegionKeys, RegionRef};
use crate::dreams::store::{DeadLetters, QueueAppend, QueueStore, RegionCounters, RegionStore};
use crate::glue::access::{Meta, Mode, Read, ReadWrite, ReadsValues, Write};
use crate::glue::call;
use crate::glue::ctx::RawString;
use crate::glue::key::{End, FieldValue, Key, KeyKind, Taken};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, EveryKey, Session};
use crate::glue::string::{KeyName, OwnedString, StaticString};
use crate::metrics::fire_ages::{self, List};
use crate::metrics::tenant_stats::TenantId;
use crate::stores::leases::RedisLeases;

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

/// An organization's queue keys, checked (ACL, read and write) and not yet
/// opened: what a [`RedisQueue`] opens.
pub struct QueueChecked {
    ready: Checked<ReadWrite>,
    deferred: Checked<ReadWrite>,
    processing: Checked<ReadWrite>,
    dead: Option<Checked<ReadWrite>>,
    org: TenantId,
}

impl RedisQueue {
    /// Check `org`'s queue keys (`with_dead`: and its dead-letter list):
    /// a command that changes a queue reads and writes each (as the seed's
    /// scripts, whose `EVALSHA` declares them all).
    pub fn check(session: &Session, org: &str, with_dead: bool) -> Result<QueueChecked, CommandError> {
        let (names, org_id) = queue_names_and_tenant(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing]);
        let [ready, deferred, processing] = session.check_all(names)?;
        let dead = match with_dead {
            true => {
                let [dead] = session.check_all(queue_names(org, [QueueKey::Dead]))?;
                Some(dead)
            }
            false => None,
        };
        Ok(QueueChecked { ready, deferred, processing, dead, org: org_id })
    }

    fn with_keys(ready: Key, deferred: Key, processing: Key, dead: Option<Key>, org: TenantId) -> Self {
        Self { ready, deferred, processing, dead, popped: None, popped_hash: 0, deferred_absent: false, org }
    }
}

impl RedisQueue {
    /// The lengths of `org`'s ready list, deferred set and in-flight list
    /// (`DREAMS.LEN`: type and length only, as `LLEN`/`ZCARD`).
    pub fn lengths(session: &Session, org: &str) -> Result<[u64; 3], CommandError> {
        let names = queue_names(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing]);
        let [ready, deferred, processing] = session.check_all::<Meta, 3>(names)?;
        let keys = [ready.open(session)?, deferred.open(session)?, processing.open(session)?];
        for (key, kind) in keys.iter().zip([KeyKind::List, KeyKind::ZSet, KeyKind::List]) {
            key.require(kind)?;
        }
        Ok(keys.map(|key| key.len()))
    }

    /// Check `org`'s in-flight list alone for mode `M`.
    pub fn check_in_flight<M: Mode>(session: &Session, org: &str) -> Result<Checked<M>, CommandError> {
        let [processing] = queue_names(org, [QueueKey::Processing]);
        session.check(processing)
    }

    /// Up to `count` in-flight payloads of a checked in-flight list from
    /// position `start` (0 = the oldest), oldest first.
    pub fn read_in_flight<M: ReadsValues>(
        session: &Session,
        processing: Checked<M>,
        start: u64,
        count: u64,
    ) -> Result<Vec<Vec<u8>>, CommandError> {
        let processing = processing.open(session)?;
        processing.require(KeyKind::List)?;
        Ok(processing.range(start, count))
    }
}

impl QueueChecked {
    /// Open the queue, refusing keys of another type.
    pub fn open(self, session: &Session) -> Result<RedisQueue, CommandError> {
        let dead = self.dead.map(|dead| dead.open(session)).transpose()?;
        let queue = RedisQueue::with_keys(
            self.ready.open(session)?,
            self.deferred.open(session)?,
            self.processing.open(session)?,
            dead,
            self.org,
        );
        queue.ready.require(KeyKind::List)?;
        queue.deferred.require(KeyKind::ZSet)?;
        queue.processing.require(KeyKind::List)?;
        if let Some(dead) = &queue.dead {
            dead.require(KeyKind::List)?;
        }
        Ok(queue)
    }

    /// Open the queue for a command that always uses its in-flight list
    /// and uses the ready list and deferred set (and the dead-letter list)
    /// on some paths only (an acknowledgement that requeues, or that finds
    /// its fire back in ready): the in-flight list opens now (type-checked),
    /// the others on first use; the command calls
    /// [`RedisQueue::require_waiting_types`] before its first write on a
    /// path that uses them, or has checked their types itself
    /// ([`QueueChecked::inspect_for_drain`]).
    pub fn open_in_flight(self, session: &Session) -> Result<RedisQueue, CommandError> {
        let dead = self.dead.map(|dead| dead.open_lazily(session)).transpose()?;
        let queue = RedisQueue::with_keys(
            self.ready.open_lazily(session)?,
            self.deferred.open_lazily(session)?,
            self.processing.open(session)?,
            dead,
            self.org,
        );
        queue.processing.require(KeyKind::List)?;
        Ok(queue)
    }

    /// For a one-trip drain, before its acknowledgement writes: the types
    /// of the keys a drain uses beyond the acknowledgement's (ready,
    /// deferred, dead), read without opening them for the queue; and
    /// whether the deferred set is absent (the drain then need not open it
    /// to find nothing due: usually so, the module defers only inside
    /// quiet hours).
    pub fn inspect_for_drain(&self, session: &Session) -> Result<bool, CommandError> {
        self.ready.peek(session).require(KeyKind::List)?;
        let deferred = self.deferred.peek(session);
        deferred.require(KeyKind::ZSet)?;
        let absent = !deferred.exists();
        drop(deferred);
        if let Some(dead) = &self.dead {
            dead.peek(session).require(KeyKind::List)?;
        }
        Ok(absent)
    }
}

impl RedisQueue {
    /// Note that this command found the deferred set absent when it
    /// inspected it ([`QueueChecked::inspect_for_drain`], before anything
    /// was written): while this queue has not opened the set since, its
    /// length is 0 and nothing in it is due, answered without opening it
    /// (an absent key's write open has no effect anyone sees: no
    /// statistics, no events).
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

    /// Refuse (`WRONGTYPE`) a ready list or deferred set of another type,
    /// for a queue opened with [`QueueChecked::open_in_flight`] on a path
    /// that uses them (opening them).
    pub fn require_waiting_types(&self) -> Result<(), CommandError> {
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

impl QueueAppend for RedisQueue {
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
    fn take_payload_buffer(&mut self) -> PayloadBuffer {
        super::payload_buffer::take()
    }
    fn keep_payload_buffer(&mut self, buffer: PayloadBuffer) {
        super::payload_buffer::keep(buffer);
    }
}

impl QueueStore for RedisQueue {
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

impl DeadLetters for RedisQueue {
    fn dead_len(&self) -> u64 {
        self.dead.as_ref().map_or(0, |dead| dead.len())
    }
    fn move_dead_head(&mut self, to_ready: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        self.settle();
        let dead = self.dead.as_ref()?;
        let len = dead.len();
        let head = dead.get(0)?;
        let ready = to_ready(&head);
        // Moved as `LMOVE dead queue LEFT RIGHT` (or `dead dead LEFT
        // RIGHT`): one replicated command, the events LMOVE fires. A lone
        // item that stays is left where it is (the same list either way).
        if ready {
            let taken = dead.take(End::Head)?;
            self.ready.push_taken(dead, &taken, End::Tail);
            fire_ages::entered(self.org, List::Ready, taken.as_bytes(), clock_ms());
        } else if len > 1 {
            let taken = dead.take(End::Head)?;
            dead.push_taken(dead, &taken, End::Tail);
        }
        Some(ready)
    }
}

/// An organization's queue as adding work needs it (`DREAMS.FIRE`, a
/// `DREAMS.RECORD` that fires): the ready list to append to (written, not
/// read), the lengths of all three lists for the ceiling. As `LPUSH`, a
/// caller allowed only to write the queue may fire.
pub struct FireQueue {
    ready: Key<Write>,
    deferred: Key<Meta>,
    processing: Key<Meta>,
    org: TenantId,
}

/// [`FireQueue`]'s keys, checked and not yet opened.
pub enum FireQueueChecked<'a> {
    /// Each key checked by name.
    Named { ready: Checked<Write>, deferred: Checked<Meta>, processing: Checked<Meta>, org: TenantId },
    /// The caller may use every key: named only if opened (a
    /// `DREAMS.RECORD` that does not fire names no queue key).
    EveryKey(EveryKey, &'a str),
}

impl FireQueue {
    /// Check `org`'s queue keys as adding work uses them.
    pub fn check<'a>(session: &Session, org: &'a str) -> Result<FireQueueChecked<'a>, CommandError> {
        if let Some(every) = session.every_key() {
            return Ok(FireQueueChecked::EveryKey(every, org));
        }
        let ([ready, deferred, processing], org_id) =
            queue_names_and_tenant(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing]);
        Ok(FireQueueChecked::Named {
            ready: session.check(ready)?,
            deferred: session.check(deferred)?,
            processing: session.check(processing)?,
            org: org_id,
        })
    }

    /// The organization, as the per-tenant tables know it.
    pub fn tenant(&self) -> TenantId {
        self.org
    }
}

impl FireQueueChecked<'_> {
    /// The three proofs, named now if they were not.
    fn proofs(self) -> (Checked<Write>, Checked<Meta>, Checked<Meta>, TenantId) {
        match self {
            Self::Named { ready, deferred, processing, org } => (ready, deferred, processing, org),
            Self::EveryKey(every, org) => {
                let ([ready, deferred, processing], org) =
                    queue_names_and_tenant(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing]);
                (
                    Checked::for_every_key(&every, ready),
                    Checked::for_every_key(&every, deferred),
                    Checked::for_every_key(&every, processing),
                    org,
                )
            }
        }
    }

    /// Open the queue, refusing keys of another type.
    pub fn open(self, session: &Session) -> Result<FireQueue, CommandError> {
        let (ready, deferred, processing, org) = self.proofs();
        // Opened as the write they serve: looking at the lengths counts
        // no keyspace miss.
        let queue = FireQueue {
            ready: ready.open(session)?,
            deferred: deferred.open_beside_writes(session)?,
            processing: processing.open_beside_writes(session)?,
            org,
        };
        queue.ready.require(KeyKind::List)?;
        queue.deferred.require(KeyKind::ZSet)?;
        queue.processing.require(KeyKind::List)?;
        Ok(queue)
    }

    /// Is none of the queue's keys there (ready, in flight, deferred)?
    /// Looked at without opening them for the queue.
    pub fn all_absent(self, session: &Session) -> (bool, Self) {
        let (ready, deferred, processing, org) = self.proofs();
        let absent =
            !ready.peek(session).exists() && !processing.peek(session).exists() && !deferred.peek(session).exists();
        (absent, FireQueueChecked::Named { ready, deferred, processing, org })
    }
}

impl QueueAppend for FireQueue {
    fn ready_len(&self) -> u64 {
        self.ready.len()
    }
    fn deferred_len(&self) -> u64 {
        self.deferred.len()
    }
    fn processing_len(&self) -> u64 {
        self.processing.len()
    }
    fn push_ready(&mut self, payload: &[u8]) {
        self.ready.push(End::Tail, &[payload]);
        fire_ages::entered(self.org, List::Ready, payload, clock_ms());
    }
    fn take_payload_buffer(&mut self) -> PayloadBuffer {
        super::payload_buffer::take()
    }
    fn keep_payload_buffer(&mut self, buffer: PayloadBuffer) {
        super::payload_buffer::keep(buffer);
    }
}

/// The server clock (unix ms), for timing items as they move.
fn clock_ms() -> i64 {
    crate::glue::ctx::milliseconds()
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

/// An organization's lease set (`exocortex:dreams:{<org>}:leases`).
impl RedisLeases {
    /// The name of `org`'s lease set.
    pub fn name(org: &str) -> KeyName {
        let [name] = queue_names(org, [QueueKey::Leases]);
        name
    }

    /// Check `org`'s lease set (to read and write).
    pub fn check(session: &Session, org: &str) -> Result<Checked<ReadWrite>, CommandError> {
        session.check(Self::name(org))
    }

    /// Check `org`'s lease set to read it only.
    pub fn check_read(session: &Session, org: &str) -> Result<Checked<Read>, CommandError> {
        session.check(Self::name(org))
    }
}

/// The counters hash's `memories`, `edges`, `last_success` and
/// `settled_generation` (`fields`, in that order). The last is read only
/// if the hash holds more fields than the first three found: a region
/// never settled (the common case) has no `settled_generation`, and
/// looking up an absent field costs `RM_HashGet` a scan of the whole hash
/// (about 500 instructions) where its field count (`RM_ValueLength`)
/// costs about 40. Same values either way.
fn counters_without_pending<M: ReadsValues>(
    counters: &Key<M>,
    fields: [&'static StaticString; 4],
) -> [Option<OwnedString>; 4] {
    let [memories, edges, success, settled] = fields;
    let [m, e, l] = counters.hget_fields([memories, edges, success]);
    let s = settled_if_held(counters, settled, [&m, &e, &l]);
    [m, e, l, s]
}

/// The counters hash's `settled_generation` (named `settled`), read only
/// if the hash holds more fields than those already `found`: when it
/// holds no others the field is absent, and asking for it would cost a
/// scan of the whole hash (see [`counters_without_pending`]).
fn settled_if_held<M: ReadsValues, const N: usize>(
    counters: &Key<M>,
    settled: &'static StaticString,
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
    event_argument: Option<(*const u8, usize, RawString)>,
}

/// A hash's fields and values.
pub type FieldPairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A region's keys, checked (ACL, read and write) and not yet opened: what
/// a [`RedisRegion`] opens.
pub struct RegionChecked {
    counters: Checked<ReadWrite>,
    /// Written only (`SADD`/`SREM`, through `RM_Call`), as those need.
    events: Option<Checked<Write>>,
    use_of_events: EventSet,
}

impl RedisRegion<'_> {
    /// Check `region`'s counters hash, and its counted-event set unless
    /// `events` leaves it untouched.
    pub fn check(session: &Session, region: RegionRef<'_>, events: EventSet) -> Result<RegionChecked, CommandError> {
        let mut digits = [0u8; 11];
        let [counters_parts, events_parts] = RegionKeys::name_parts(region, &mut digits);
        let (counters, checked_events) = match events {
            EventSet::Untouched => (session.check(OwnedString::concat(&counters_parts))?, None),
            EventSet::Open | EventSet::CheckedByWrite => {
                let counters = session.check(OwnedString::concat(&counters_parts))?;
                let events = session.check(OwnedString::concat(&events_parts))?;
                (counters, Some(events))
            }
        };
        Ok(RegionChecked { counters, events: checked_events, use_of_events: events })
    }

    /// A region's counter fields as stored (`DREAMS.COUNTERS`): the hash is
    /// read, the event set's type checked as the seed's scripts do.
    pub fn read_fields(session: &Session, region: &RegionKey) -> Result<FieldPairs, CommandError> {
        let keys = RegionKeys::new(region);
        let counters = session.check::<Read>(keys.counters.as_bytes())?;
        let events = session.check::<Meta>(keys.events.as_bytes())?;
        let counters = counters.open(session)?;
        counters.require(KeyKind::Hash)?;
        events.open(session)?.require(KeyKind::Set)?;
        let pairs = counters.hgetall();
        let value = |name: &str| pairs.iter().find(|(field, _)| field == name.as_bytes()).map(|(_, v)| v.as_slice());
        RegionCounters::from_values(RegionCounters::FIELDS.map(value)).map_err(|bad| {
            CommandError::err(format_args!(
                "Dreams counter metadata is not numeric (field '{}' of {})",
                bad.0,
                String::from_utf8_lossy(counters.name())
            ))
        })?;
        Ok(pairs)
    }
}

impl RegionChecked {
    /// Open the region and read its counters, refusing wrong types and
    /// non-numeric fields; the `pending` field only if `read_pending`
    /// (else it reads as absent until [`RedisRegion::read_pending`]).
    pub fn open(self, session: &Session, read_pending: bool) -> Result<RedisRegion<'_>, CommandError> {
        let counters = self.counters.open(session)?;
        counters.require(KeyKind::Hash)?;
        if let (EventSet::Open, Some(events)) = (self.use_of_events, &self.events) {
            events.peek(session).require(KeyKind::Set)?;
        }
        let events = self.events.map(|events| events.name_string().clone());
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
        Ok(RedisRegion { session, counters, events, fields, refused: None, event_argument: None })
    }
}

impl RedisRegion<'_> {
    /// `event_id` is the command's argument `string` (its bytes, as the
    /// command read them): a set write of that event id passes the string.
    pub fn event_id_is_argument(&mut self, event_id: &[u8], string: RawString) {
        self.event_argument = Some((event_id.as_ptr(), event_id.len(), string));
    }

    /// Read the `pending` field skipped by [`RegionChecked::open`].
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
