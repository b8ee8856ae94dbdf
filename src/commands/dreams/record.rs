//! `DREAMS.RECORD <org> <project> <memory-type> <memories> <edges> [NODE <id>]
//! [EVENT <event-id> GENERATION <n>] [TRIGGER <m> <e> <min-interval> <age-floor>]`:
//! count a write against the region's shared counters and, when due, create
//! its one pending fire. Reply `[accumulated|queued|dropped, memories, edges]`.

use super::{DEFAULT_NODE, NODE_ARG, REGION_ARGS, TRIGGER_ARG};
use crate::commands::dreams::settings;
use crate::dreams::record::{fire_due, fire_due_unless_pending, record, Delivery, RecordOutcome, Write};
use crate::dreams::region::RegionRef;
use crate::dreams::store::RegionStore;
use crate::dreams::trigger::Trigger;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::metrics::tenant_stats::TenantId;
use crate::stores::dreams::store::{EventSet, FireQueue, RedisRegion};
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::RECORD,
    entry: entry_point!(run),
    flags: "write deny-oom fast",
    tenant: TenantUse::Write,
    arity: -6,
    summary: "Count writes against a region's shared counters and create its one pending fire when due",
    complexity: "O(1)",
    args: &[
        REGION_ARGS[0],
        REGION_ARGS[1],
        REGION_ARGS[2],
        Arg::new("memories", ArgKind::Integer),
        Arg::new("edges", ArgKind::Integer),
        NODE_ARG,
        Arg::new(
            "delivery",
            ArgKind::Block(&[
                Arg::new("event-id", ArgKind::String),
                Arg::new("generation", ArgKind::Integer).token("GENERATION"),
            ]),
        )
        .token("EVENT")
        .optional(),
        TRIGGER_ARG,
    ],
};

/// The parse step ([`request::Record`]): the region, the write, `NODE`
/// and `TRIGGER` if given, in the core's types.
#[allow(clippy::type_complexity)]
pub(crate) fn parse<'a>(
    argv: &'a [&'a [u8]],
) -> Result<(RegionRef<'a>, Write<'a>, Option<&'a str>, Option<Trigger>), CommandError> {
    let request = request::Record::parse(argv)?;
    let delivery = request.delivery.map(|fence| Delivery { event_id: fence.event_id, generation: fence.generation });
    let write = Write { memories: request.memories, edges: request.edges, delivery };
    Ok((request.region.into(), write, request.node, request.trigger))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (region, write, fired_by, thresholds) = parse(argv)?;
    let thresholds = thresholds.unwrap_or_else(settings::trigger);
    let now = session.now_secs();
    // Every key the call may touch is checked (ACL) first: the region's
    // counters, its event set only with EVENT, and the queue (the write
    // may fire). Only the keys this call's path uses are then opened
    // (docs/bench.md, "Only the keys of the path a command takes"): the
    // queue only when the write is due to fire, before anything is written.
    let events = match write.delivery {
        Some(_) => EventSet::CheckedByWrite,
        None => EventSet::Untouched,
    };
    let region_keys = RedisRegion::check(session, region, events)?;
    let mut queue_keys = FireQueue::check(session, region.org)?;
    let mut counters = region_keys.open(session, false)?;
    // The event id goes to SADD as the argument string Redis already holds.
    if let Some(delivery) = &write.delivery {
        let id = delivery.event_id;
        let index = argv.iter().rposition(|arg| std::ptr::eq(arg.as_ptr(), id.as_ptr()) && arg.len() == id.len());
        if let Some(string) = index.and_then(|index| session.argument(index)) {
            counters.event_id_is_argument(id, string);
        }
    }
    // The pending fire matters (and is read) only when the write would
    // otherwise fire; most records are far from that. If no key that could
    // hold the organization's pending fire is there at all (ready, in
    // flight, deferred), the fire the counters call pending is gone
    // (evicted under an `allkeys-*` policy, or deleted) and would wedge the
    // region forever: every later record would answer `accumulated`. A
    // fire lost while other keys of the queue remain is not detected (that
    // would cost a scan of the queue: docs/dreams.md, "Eviction").
    let mut stale = false;
    if fire_due_unless_pending(counters.counters(), &write, &thresholds, now) {
        counters.read_pending();
        if counters.counters().pending.is_some() {
            (stale, queue_keys) = queue_keys.all_absent(session);
            if stale {
                counters.forget_pending_read();
            }
        }
    }
    let mut queue = match fire_due(counters.counters(), &write, &thresholds, now) {
        true => Some(queue_keys.open(session)?),
        false => None,
    };
    if stale {
        // Every key is checked and opened: the first write.
        counters.clear_pending();
        count::dreams_server(Dreams::StalePendingCleared, 1);
    }
    let recorded = record(
        queue.as_mut(),
        &mut counters,
        region,
        write,
        fired_by.unwrap_or(DEFAULT_NODE),
        &thresholds,
        now,
        settings::queue_max(),
        super::new_fire_id,
    );
    if let Some(refused) = counters.refused() {
        return Err(refused);
    }
    let counted = match recorded.outcome {
        RecordOutcome::Queued => Some(Dreams::FiredRecord),
        RecordOutcome::Dropped => Some(Dreams::DroppedRecord),
        RecordOutcome::Accumulated if recorded.deduplicated => Some(Dreams::RecordsDeduplicated),
        // The common case: nothing more to count.
        RecordOutcome::Accumulated => None,
    };
    if let Some(counted) = counted {
        let org = queue.as_ref().map_or_else(|| TenantId::of(region.org), FireQueue::tenant);
        count::dreams(org, counted, 1);
    }
    Ok(Reply::of(reply::Record { outcome: recorded.outcome, memories: recorded.memories, edges: recorded.edges }))
}
