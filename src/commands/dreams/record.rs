//! `DREAMS.RECORD <org> <project> <memory-type> <memories> <edges> [NODE <id>]
//! [EVENT <event-id> GENERATION <n>] [TRIGGER <m> <e> <min-interval> <age-floor>]`:
//! count a write against the region's shared counters and, when due, create
//! its one pending fire. Reply `[accumulated|queued|dropped, memories, edges]`.

use super::{counted_reply, node, region_ref, trigger, DEFAULT_NODE, NODE_ARG, REGION_ARGS, TRIGGER_ARG};
use crate::commands::dreams::settings;
use crate::commands::options::{once, unknown_option};
use crate::dreams::record::{fire_due, fire_due_unless_pending, record, Delivery, RecordOutcome, Write};
use crate::dreams::region::RegionRef;
use crate::dreams::store::RegionStore;
use crate::dreams::trigger::Trigger;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::args::{parse_unsigned, Args};
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::metrics::tenant_stats::TenantId;
use crate::stores::dreams::store::{EventSet, FireQueue, RedisRegion};

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

/// Read `<event-id> GENERATION <n>` after `EVENT`.
pub fn delivery<'a>(args: &mut Args<'a>) -> Result<(&'a [u8], i64), CommandError> {
    let event_id = args.required("event id")?;
    if event_id.is_empty() {
        return Err(CommandError::err("Dreams write event id must not be empty"));
    }
    if !args.keyword("GENERATION") {
        return Err(CommandError::err("EVENT <event-id> must be followed by GENERATION <n>"));
    }
    let generation = generation(args)?;
    Ok((event_id, generation))
}

/// Read a delivery generation: a positive integer up to u64::MAX (the
/// seed's `DeliveryFence::generation` is a `u64`). Generations are kept as
/// i64, so those above i64::MAX count as i64::MAX: the one difference from
/// the seed (whose Lua compares them as doubles), listed in dreams.md.
pub fn generation(args: &mut Args<'_>) -> Result<i64, CommandError> {
    // The seed's words first (its callers match them), then the one range
    // every bad value gets.
    let value = args.required("generation")?;
    let value = parse_unsigned(value, u64::MAX).filter(|value| *value > 0).ok_or_else(|| {
        CommandError::err(format_args!(
            "Dreams delivery generation must be positive (an integer from 1 to {})",
            u64::MAX
        ))
    })?;
    Ok(i64::try_from(value).unwrap_or(i64::MAX))
}

/// The parse step: the region, the write, `NODE` and `TRIGGER` if given.
#[allow(clippy::type_complexity)]
pub(crate) fn parse<'a>(
    argv: &'a [&'a [u8]],
) -> Result<(RegionRef<'a>, Write<'a>, Option<&'a str>, Option<Trigger>), CommandError> {
    let mut args = Args::new(argv);
    let region = region_ref(&mut args)?;
    let memories = args.unsigned("memories", u64::from(u32::MAX))?;
    let edges = args.unsigned("edges", u64::from(u32::MAX))?;
    let (mut fired_by, mut delivered, mut thresholds) = (None, None, None);
    // Options matched in place (no upper-cased copy: RECORD is the hot path).
    while let Some(word) = args.next() {
        let is = |name: &str| crate::glue::args::is_word(word, name);
        if is("NODE") {
            once(&mut fired_by, node(&mut args)?, "NODE")?;
        } else if is("EVENT") {
            once(&mut delivered, delivery(&mut args)?, "EVENT")?;
        } else if is("GENERATION") {
            return Err(CommandError::err("GENERATION needs EVENT <event-id> before it"));
        } else if is("TRIGGER") {
            once(&mut thresholds, trigger(&mut args)?, "TRIGGER")?;
        } else {
            return Err(unknown_option(&String::from_utf8_lossy(word).to_ascii_uppercase()));
        }
    }
    let write =
        Write { memories, edges, delivery: delivered.map(|(event_id, generation)| Delivery { event_id, generation }) };
    Ok((region, write, fired_by, thresholds))
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
    Ok(counted_reply(recorded.outcome.as_c_str(), recorded.memories, recorded.edges))
}
