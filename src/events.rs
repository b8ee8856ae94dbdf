//! The one table of counted events: every event the module counts, the
//! fields they are reported as, and where each field shows. `INFO
//! dreamtown` (server-wide totals, `crate::module::info`), `DREAMS.STATS` /
//! `TOWN.STATS` (per tenant) and the exporter's `_total` counters (the
//! client crate, which reads this table through the pure crate) are all
//! derived from it, so an event is named once, here.
//!
//! An event is counted once, where it happens (`crate::metrics::count`),
//! into the server's total and, for the events that belong to a tenant,
//! into that tenant's. A field is the sum of one or more events
//! (`fired` = FIRE's + RECORD's + requeueing acknowledgements' fires).

/// A Dreams event. The per-tenant events come first ([`DREAMS_TENANT_EVENTS`]
/// of them): a tenant's totals are an array over those.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dreams {
    /// A fire queued by `DREAMS.FIRE`.
    FiredFire,
    /// A fire queued by `DREAMS.RECORD`.
    FiredRecord,
    /// A fire requeued by an acknowledgement (a failure, or a success with more due).
    FiredAckRequeue,
    /// A `DREAMS.FIRE` fire dropped at the ceiling.
    DroppedFire,
    /// A `DREAMS.RECORD` fire dropped at the ceiling.
    DroppedRecord,
    /// An acknowledgement's requeue dropped at the ceiling.
    DroppedAck,
    /// A record ignored as already counted (event identity or settled generation).
    RecordsDeduplicated,
    /// An item drained and handed to a worker.
    Drained,
    /// An item moved behind other work by quiet hours.
    QuietDeferred,
    /// A deferred item promoted back to ready.
    Promoted,
    /// A ready item moved to the dead-letter list.
    DeadLettered,
    /// An acknowledgement with `SUCCESS` that counted.
    AckSuccess,
    /// An acknowledgement with `FAILURE` that counted.
    AckFailure,
    /// A stale acknowledgement.
    AckStale,
    /// An item moved back to ready by `DREAMS.RECOVER`.
    Recovered,
    /// An item whose lease ran out and went back to ready.
    LeaseExpired,
    /// A drain that handed out less than it asked for (nothing, or fewer
    /// than `COUNT`) while work was waiting, because the organization had
    /// its concurrency cap's worth in flight.
    ThrottledConcurrency,
    /// The same, because the organization's rate had no token left.
    ThrottledRate,
    /// The same, because the organization was paused.
    ThrottledPaused,
    /// Milliseconds an organization was paused, counted when it resumes.
    PausedMs,
    /// (Server only.) A pending fire `DREAMS.RECORD` found gone with every
    /// queue key of its organization (evicted, deleted) and cleared.
    StalePendingCleared,
}

/// How many Dreams events there are.
pub const DREAMS_EVENTS: usize = 21;
/// How many of them are counted per organization (the first ones).
pub const DREAMS_TENANT_EVENTS: usize = 20;

/// A Town event. The per-tenant events come first ([`TOWN_TENANT_EVENTS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Town {
    /// A message stored by `TOWN.SEND` (urgent ones included).
    Sent,
    /// Of those, one sent to an urgent inbox.
    SentUrgent,
    /// A message handed out by `TOWN.RECV`.
    Received,
    /// Of those, one also kept pending (`RELIABLE`).
    ReceivedReliable,
    /// A pending message removed by an acknowledgement.
    Acked,
    /// A pending message handed back by `TOWN.REQUEUE`.
    Requeued,
    /// A message moved by `TOWN.RECLAIM`.
    Reclaimed,
    /// Of those, one moved unchanged because it no longer parses.
    ReclaimedUnparsed,
    /// A pending message whose lease ran out, back in the inbox.
    LeaseExpired,
    /// A stop flag set by `TOWN.STOP REQUEST`.
    StopRequests,
    /// An entry written by `TOWN.ACTIVITY LOG`.
    ActivityLogged,
    /// A `TOWN.BROADCAST` message published (a town's, no agent's).
    Broadcasts,
    /// (Server only.) A message a `TOWN.ACK` of many ids read in its one
    /// pass over the pending list (and the inbox when needed).
    AckScanned,
    /// (Server only.) A `TOWN.RESET` call.
    Resets,
    /// (Server only.) A key deleted by `TOWN.RESET`.
    ResetKeys,
}

/// How many Town events there are.
pub const TOWN_EVENTS: usize = 15;
/// How many of them are counted per town and agent (the first ones).
pub const TOWN_TENANT_EVENTS: usize = 12;

/// Where a field is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// In `INFO dreamtown` and per tenant (STATS, the exporter).
    Both,
    /// Only in `INFO dreamtown` (a server-wide figure).
    Server,
    /// Only per tenant.
    Tenant,
}

/// A reported field: its name (the same in INFO, STATS and, with the
/// family's prefix and `_total`, the exporter), the events it sums, where
/// it shows, and its help text (the exporter's `# HELP`).
#[derive(Clone, Copy, Debug)]
pub struct Field<E: 'static> {
    /// The field's name.
    pub name: &'static str,
    /// The events it sums.
    pub sum_of: &'static [E],
    /// Where it shows.
    pub shown: Shown,
    /// What it counts, for a person reading a dashboard.
    pub help: &'static str,
}

impl<E> Field<E> {
    /// Is the field in `INFO dreamtown`?
    pub fn in_info(&self) -> bool {
        self.shown != Shown::Tenant
    }

    /// Is the field in a tenant's STATS (and the exporter's per-tenant counters)?
    pub fn per_tenant(&self) -> bool {
        self.shown != Shown::Server
    }
}

const fn field<E>(name: &'static str, sum_of: &'static [E], shown: Shown, help: &'static str) -> Field<E> {
    Field { name, sum_of, shown, help }
}

/// The Dreams fields: `INFO dreamtown`'s `dreamtown_dreams` section,
/// `DREAMS.STATS`' totals, `dreamtown_dreams_<name>_total`.
pub const DREAMS_FIELDS: [Field<Dreams>; 25] = {
    use Dreams::*;
    use Shown::*;
    [
        field(
            "fired",
            &[FiredFire, FiredRecord, FiredAckRequeue],
            Both,
            "Fires queued (by FIRE, RECORD and requeueing acknowledgements)",
        ),
        field("fired_fire", &[FiredFire], Both, "Fires queued by DREAMS.FIRE"),
        field("fired_record", &[FiredRecord], Both, "Fires queued by DREAMS.RECORD"),
        field("fired_ack_requeue", &[FiredAckRequeue], Both, "Fires requeued by an acknowledgement"),
        field("dropped", &[DroppedFire, DroppedRecord, DroppedAck], Both, "Fires dropped at the queue ceiling"),
        field("dropped_capacity_fire", &[DroppedFire], Both, "DREAMS.FIRE fires dropped at the ceiling"),
        field("dropped_capacity_record", &[DroppedRecord], Both, "DREAMS.RECORD fires dropped at the ceiling"),
        field("dropped_capacity_ack", &[DroppedAck], Both, "Requeues dropped at the ceiling"),
        field("records_deduplicated", &[RecordsDeduplicated], Both, "Records ignored as already counted"),
        field("drained", &[Drained], Both, "Fires handed to a worker"),
        field("quiet_deferred", &[QuietDeferred], Both, "Fires moved behind other work by quiet hours"),
        field("promoted", &[Promoted], Both, "Deferred fires promoted back to ready"),
        field("dead_lettered", &[DeadLettered], Both, "Ready items moved to the dead-letter list"),
        field(
            "acks_acknowledged",
            &[AckSuccess, AckFailure],
            Both,
            "Acknowledgements that counted (success or failure)",
        ),
        field("acks_success", &[AckSuccess], Tenant, "Acknowledgements with SUCCESS that counted"),
        field("acks_failure", &[AckFailure], Tenant, "Acknowledgements with FAILURE that counted"),
        field("acks_stale", &[AckStale], Both, "Acknowledgements of fires no longer in flight"),
        field("recovered", &[Recovered], Both, "Fires moved back to ready by DREAMS.RECOVER"),
        field(
            "stale_pending_cleared",
            &[StalePendingCleared],
            Server,
            "Pending fires cleared because every queue key of their organization was gone",
        ),
        field("leases_expired", &[LeaseExpired], Both, "Fires whose lease ran out"),
        field(
            "drains_throttled",
            &[ThrottledConcurrency, ThrottledRate, ThrottledPaused],
            Both,
            "Drains that handed out less than asked while work waited, held back by the organization's limits",
        ),
        field("drains_throttled_concurrency", &[ThrottledConcurrency], Both, "Drains held back by the concurrency cap"),
        field("drains_throttled_rate", &[ThrottledRate], Both, "Drains held back by the rate"),
        field("drains_throttled_paused", &[ThrottledPaused], Both, "Drains held back by a pause"),
        field("paused_ms", &[PausedMs], Both, "Milliseconds paused, counted when resumed"),
    ]
};

/// The Town fields: `INFO dreamtown`'s `dreamtown_town` section,
/// `TOWN.STATS`' totals (`broadcasts`: a town's only),
/// `dreamtown_town[_agent]_<name>_total`.
pub const TOWN_FIELDS: [Field<Town>; 15] = {
    use Shown::*;
    use Town::*;
    [
        field("messages_sent", &[Sent], Both, "Messages stored by TOWN.SEND"),
        field("messages_sent_urgent", &[SentUrgent], Both, "Messages sent to an urgent inbox"),
        field("messages_received", &[Received], Both, "Messages handed out by TOWN.RECV"),
        field("messages_received_reliable", &[ReceivedReliable], Both, "Messages received RELIABLE (kept pending)"),
        field("messages_acked", &[Acked], Both, "Pending messages acknowledged"),
        field("ack_messages_scanned", &[AckScanned], Server, "Messages a TOWN.ACK of many ids read in its one pass"),
        field("messages_requeued", &[Requeued], Both, "Pending messages handed back by TOWN.REQUEUE"),
        field("messages_reclaimed", &[Reclaimed], Both, "Messages moved away by TOWN.RECLAIM"),
        field(
            "messages_reclaimed_unparsed",
            &[ReclaimedUnparsed],
            Both,
            "Reclaimed messages moved unchanged (unparsable)",
        ),
        field("messages_lease_expired", &[LeaseExpired], Both, "Pending messages whose lease ran out"),
        field("stop_requests", &[StopRequests], Both, "Stop flags set by TOWN.STOP REQUEST"),
        field("activity_logged", &[ActivityLogged], Both, "Entries written by TOWN.ACTIVITY LOG"),
        field("broadcasts", &[Broadcasts], Both, "TOWN.BROADCAST messages published"),
        field("resets", &[Resets], Server, "TOWN.RESET calls"),
        field("reset_keys_deleted", &[ResetKeys], Server, "Keys deleted by TOWN.RESET"),
    ]
};

/// The sum of `field`'s events in `counts` (indexed by event).
pub fn sum<E: Copy + Into<usize>>(field: &Field<E>, counts: &[u64]) -> u64 {
    field.sum_of.iter().fold(0u64, |sum, event| sum.saturating_add(counts.get((*event).into()).copied().unwrap_or(0)))
}

impl From<Dreams> for usize {
    fn from(event: Dreams) -> usize {
        event as usize
    }
}

impl From<Town> for usize {
    fn from(event: Town) -> usize {
        event as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_match_the_enums() {
        assert_eq!(Dreams::StalePendingCleared as usize + 1, DREAMS_EVENTS);
        assert_eq!(Dreams::PausedMs as usize + 1, DREAMS_TENANT_EVENTS);
        assert_eq!(Town::ResetKeys as usize + 1, TOWN_EVENTS);
        assert_eq!(Town::Broadcasts as usize + 1, TOWN_TENANT_EVENTS);
    }

    #[test]
    fn tenant_fields_sum_only_tenant_events_and_names_are_unique() {
        for field in DREAMS_FIELDS.iter().filter(|field| field.per_tenant()) {
            assert!(field.sum_of.iter().all(|event| (*event as usize) < DREAMS_TENANT_EVENTS), "{}", field.name);
        }
        for field in TOWN_FIELDS.iter().filter(|field| field.per_tenant()) {
            assert!(field.sum_of.iter().all(|event| (*event as usize) < TOWN_TENANT_EVENTS), "{}", field.name);
        }
        let mut names: Vec<&str> =
            DREAMS_FIELDS.iter().map(|f| f.name).chain(TOWN_FIELDS.iter().map(|f| f.name)).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
    }

    #[test]
    fn a_field_sums_its_events() {
        let mut counts = [0u64; DREAMS_EVENTS];
        counts[Dreams::FiredFire as usize] = 2;
        counts[Dreams::FiredAckRequeue as usize] = 3;
        assert_eq!(sum(&DREAMS_FIELDS[0], &counts), 5);
        assert_eq!(sum(&DREAMS_FIELDS[1], &counts), 2);
    }
}
