//! `DREAMS.ACK <org> <payload> SUCCESS|FAILURE [NODE <id>] [TRIGGER ...]`:
//! acknowledge a drained fire by its exact payload. Reply
//! `[stale|acknowledged|requeued|dropped, memories, edges]`.

use super::{NODE_ARG, TRIGGER_ARG};
use crate::commands::dreams::settings;
use crate::dreams::ack::{acknowledge, requeue_due, AckOutcome};
use crate::dreams::lease::LeaseAwareQueue;
use crate::dreams::message::ReadFire;
use crate::dreams::store::RegionStore;
use crate::dreams::trigger::Trigger;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::services::{limits_index, waiters};
use crate::stores::dreams::store::{EventSet, RedisQueue, RedisRegion};
use crate::stores::leases::RedisLeases;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::ACK,
    entry: entry_point!(run),
    // As XACK and LREM: allowed when memory is full, since acknowledging
    // is what frees it (a requeue moves the item, it adds none).
    flags: "write",
    tenant: TenantUse::Write,
    arity: -4,
    summary: "Acknowledge a drained fire by its exact payload, retrying or requeueing in the same step",
    complexity: "O(N) where N is the number of in-flight items",
    args: &[
        Arg::tenant("org"),
        Arg::new("payload", ArgKind::String),
        Arg::new("result", ArgKind::OneOf(&[Arg::keyword("SUCCESS"), Arg::keyword("FAILURE")])),
        NODE_ARG,
        TRIGGER_ARG,
    ],
};

/// The parse step ([`request::Ack`]; the payload is read when the
/// request is applied).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<AckRequest<'a>, CommandError> {
    let request = request::Ack::parse(argv)?;
    Ok(AckRequest::new(request.org, request.clause))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let request = parse(argv)?;
    let reply = acknowledge_now(session, &request)?;
    // A place in flight may be free for a limited organization's first
    // blocked drainer (one flag when nobody waits anywhere).
    if limits_index::may_be_limited(session, request.org) && waiters::anyone_waits() {
        super::wake_drainers(session, request.org);
    }
    Ok(reply)
}

/// One acknowledgement: what `DREAMS.ACK` and the `ACK` clause of
/// `DREAMS.DRAIN` both carry.
pub struct AckRequest<'a> {
    org: &'a str,
    payload: &'a [u8],
    success: bool,
    fired_by: Option<&'a str>,
    thresholds: Option<Trigger>,
}

impl<'a> AckRequest<'a> {
    /// The acknowledgement `clause` for organization `org` (`DREAMS.ACK`'s,
    /// or the `ACK` clause of `DREAMS.DRAIN`). The payload is read (and
    /// refused if it is not a fire of `org`) when the request is applied,
    /// before any write.
    pub fn new(org: &'a str, clause: request::AckClause<'a>) -> Self {
        let request::AckClause { payload, success, node, trigger } = clause;
        Self { org, payload, success, fired_by: node, thresholds: trigger }
    }
}

/// Apply `request`: every key it may touch is checked (ACL) before any
/// opens, and every key it uses (type) before the first write, so an error
/// means nothing changed. The ACK's reply.
pub fn acknowledge_now(session: &Session, request: &AckRequest<'_>) -> CommandResult {
    // The queue's keys close (and are signalled modified) last, after the
    // region's and the lease set's, as they always have.
    acknowledge_keeping_queue(session, request, false).map(|acked| acked.reply)
}

/// What [`acknowledge_keeping_queue`] hands back to a one-trip drain.
pub struct Acknowledged {
    /// The ACK's reply.
    pub reply: Reply,
    /// The lease set, still open for a drain (its writes signalled).
    pub leases: Option<RedisLeases>,
    /// The organization's queue as the acknowledgement leaves it: its
    /// in-flight list open, the ready list and deferred set opened if the
    /// path used them (else opened on first use), and with the dead-letter
    /// list (unopened) for the drain.
    pub queue: RedisQueue,
    /// The deferred set was absent when inspected, before any write.
    pub deferred_absent: bool,
}

/// [`acknowledge_now`], handing back what it opened (see [`Acknowledged`]);
/// `for_drain`: the one-trip drain's keys are checked too (the dead-letter
/// list) and inspected (types) before the acknowledgement writes, so the
/// drain goes on with the same keys rather than check and open them again.
pub fn acknowledge_keeping_queue(
    session: &Session,
    request: &AckRequest<'_>,
    for_drain: bool,
) -> Result<Acknowledged, CommandError> {
    let (org, payload, success) = (request.org, request.payload, request.success);
    // Read in place (no copies) when the payload is in the module's layout.
    let read = ReadFire::read(payload).ok_or_else(|| CommandError::err("payload is not a Dreams fire message"))?;
    let message = read.get();
    if message.region.org != org {
        return Err(CommandError::err(format_args!(
            "Dreams queue for organization {org:?} rejects region organization {:?}",
            message.region.org
        )));
    }
    // Every key the call may touch is checked first: the queue (a requeue
    // writes ready and deferred, a fire found back in ready is taken out of
    // it), the region's counters (the seed's ACKNOWLEDGE never names the
    // counted-event set; neither does this path) and the lease set (an
    // acknowledgement ends the payload's lease).
    let queue_keys = RedisQueue::check(session, org, for_drain)?;
    let region_keys = RedisRegion::check(session, message.region, EventSet::Untouched)?;
    let lease_keys = RedisLeases::check(session, org)?;
    let deferred_absent = match for_drain {
        true => queue_keys.inspect_for_drain(session)?,
        false => false,
    };
    // Only the keys this call's path reads or writes are opened
    // (docs/bench.md, "Only the keys of the path a command takes"): the
    // in-flight list now, the ready list and deferred set below, when needed.
    let mut queue = queue_keys.open_in_flight(session)?;
    let mut counters = region_keys.open(session, true)?;
    let mut leases = RedisLeases::open(session, lease_keys)?;
    let thresholds = request.thresholds.unwrap_or_else(settings::trigger);
    let now = session.now_secs();
    // The ready list and deferred set are used by a requeue, and the ready
    // list by a fire found back there (only where leases exist): their
    // types checked now, before anything is written, on those paths (a
    // one-trip drain inspected them already).
    if !for_drain && (requeue_due(counters.counters(), message, success, &thresholds, now) || !leases.is_empty()) {
        queue.require_waiting_types()?;
    }
    let tenant = queue.tenant();
    let mut lease_aware = LeaseAwareQueue { queue: &mut queue, leases: &mut leases };
    let fired_by = request.fired_by.unwrap_or(message.fired_by);
    let acked = acknowledge(
        &mut lease_aware,
        &mut counters,
        message,
        payload,
        success,
        fired_by,
        &thresholds,
        now,
        settings::queue_max(),
        super::new_fire_id,
    );
    let result = match success {
        true => Dreams::AckSuccess,
        false => Dreams::AckFailure,
    };
    match acked.outcome {
        AckOutcome::Stale => {
            count::dreams(tenant, Dreams::AckStale, 1);
        }
        AckOutcome::Acknowledged => {
            count::dreams(tenant, result, 1);
        }
        AckOutcome::Requeued => {
            count::dreams(tenant, result, 1);
            count::dreams(tenant, Dreams::FiredAckRequeue, 1);
        }
        AckOutcome::Dropped => {
            count::dreams(tenant, result, 1);
            count::dreams(tenant, Dreams::DroppedAck, 1);
        }
    }
    // Closed (and signalled modified) in the order they always were: the
    // lease set, the region, then (with the reply) the queue.
    let leases = match for_drain {
        true => {
            leases.signal_modified_now();
            Some(leases)
        }
        false => {
            drop(leases);
            None
        }
    };
    drop(counters);
    Ok(Acknowledged {
        reply: Reply::of(reply::Ack { outcome: acked.outcome, memories: acked.memories, edges: acked.edges }),
        leases,
        queue,
        deferred_absent,
    })
}
