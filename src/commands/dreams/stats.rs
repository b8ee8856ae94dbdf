//! `DREAMS.STATS <org>`: an organization's queue at a glance for operators
//! and exporters, as field/value pairs. Cheap by construction: lengths of
//! its lists and sets, the lowest score of the deferred and lease sets and
//! one `ZCOUNT`, the head of the ready and in-flight lists, so O(log n)
//! whatever the queue holds; no walk over items. The ages of those heads
//! come from `metrics::fire_ages` (fire payloads carry no enqueue time) and
//! the organization's totals from `metrics::tenant_stats`: both in memory on
//! this node, not replicated (see docs/dreams.md#dreamsstats).

use crate::dreams::limits::Limits;
use crate::dreams::region::QueueKey;
use crate::entry::entry_point;
use crate::events::DREAMS_FIELDS;
use crate::glue::access::{Mode, Read, ReadsValues};
use crate::glue::call;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::glue::string::OwnedString;
use crate::lease::EXPIRED;
use crate::metrics::fire_ages::{self, Age, List};
use crate::metrics::tenant_stats::{self, Family, TenantId};
use crate::stores::dreams::limits;
use crate::stores::dreams::queue_names::queue_names;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;
use dreamtown_protocol::stats::{self, dreams};

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::STATS,
    entry: entry_point!(run),
    flags: "readonly fast",
    tenant: TenantUse::Read,
    arity: 2,
    summary: "An organization's queue statistics: lengths, leases, ages of the oldest items, totals since this node started counting (field/value pairs)",
    complexity: "O(log N + M) where N is the number of leased items and M the size of the head items",
    args: &[Arg::tenant("org")],
};

/// The parse step ([`request::Stats`]): the organization.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    request::Stats::parse(argv).map(|request| request.org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let names =
        queue_names(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing, QueueKey::Dead, QueueKey::Leases]);
    let [ready, deferred, processing, dead, leases] = session.check_all::<Read, 5>(names)?;
    let limits = limits::check_read(session, org)?;
    let leases_name = leases.name_string().clone();
    let [ready, deferred, processing, dead, leases] = [
        ready.open(session)?,
        deferred.open(session)?,
        processing.open(session)?,
        dead.open(session)?,
        leases.open(session)?,
    ];
    for (key, kind) in [
        (&ready, KeyKind::List),
        (&deferred, KeyKind::ZSet),
        (&processing, KeyKind::List),
        (&dead, KeyKind::List),
        (&leases, KeyKind::ZSet),
    ] {
        key.require(kind)?;
    }
    let limits = limits::open_read(session, limits)?;
    let now_ms = session.now_ms();
    // Deferred items are scored by the second they were deferred.
    let oldest_deferred =
        lowest_score(&deferred, f64::NEG_INFINITY).map(|secs| now_ms.saturating_sub(secs.saturating_mul(1000)).max(0));
    let expired_waiting = expired_markers(session, &leases, &leases_name);
    let leased = leases.len().saturating_sub(expired_waiting);
    let next_deadline = lowest_score(&leases, (EXPIRED + 1) as f64);
    let org_id = TenantId::of(org);
    let ready_age = fire_ages::head_age(org_id, List::Ready, ready.get(0).as_deref(), now_ms);
    let in_flight_age = fire_ages::head_age(org_id, List::InFlight, processing.get(0).as_deref(), now_ms);
    let mut fields: Vec<(&'static str, Option<i64>)> = vec![
        (dreams::READY.name, count(ready.len())),
        (dreams::DEFERRED.name, count(deferred.len())),
        (dreams::IN_FLIGHT.name, count(processing.len())),
        (dreams::DEAD_LETTERS.name, count(dead.len())),
        (dreams::LEASED.name, count(leased)),
        (dreams::EXPIRED_LEASES_WAITING.name, count(expired_waiting)),
        (dreams::NEXT_LEASE_DEADLINE_MS.name, next_deadline),
        (dreams::OLDEST_DEFERRED_AGE_MS.name, oldest_deferred),
        (dreams::OLDEST_READY_AGE_MS.name, ready_age.map(|age| age.ms)),
        (dreams::OLDEST_READY_AGE_EXACT.name, exact(ready_age)),
        (dreams::OLDEST_IN_FLIGHT_AGE_MS.name, in_flight_age.map(|age| age.ms)),
        (dreams::OLDEST_IN_FLIGHT_AGE_EXACT.name, exact(in_flight_age)),
        (stats::NOW_MS.name, Some(now_ms)),
    ];
    fields.extend(limit_fields(&limits, now_ms));
    let totals = tenant_stats::dreams_totals(org_id);
    fields.extend(totals_values(totals.map(|totals| totals.since_ms), Family::Orgs));
    for field in DREAMS_FIELDS.iter().filter(|field| field.per_tenant()) {
        fields.push((field.name, count(totals.map_or(0, |totals| totals.sum(field)))));
    }
    let idle = [&ready, &deferred, &processing, &dead, &leases].iter().all(|key| key.is_empty());
    if idle {
        tenant_stats::idle_seen(org_id, None);
    }
    let fields = fields.into_iter().map(|(name, value)| (name.into(), value)).collect();
    Ok(Reply::of(reply::Stats { fields }))
}

/// A count as the reply's integer (past `i64::MAX`, `i64::MAX`).
pub(crate) fn count(value: u64) -> Option<i64> {
    Some(i64::try_from(value).unwrap_or(i64::MAX))
}

/// The organization's limits (`DREAMS.LIMIT`, `DREAMS.PAUSE`) as they
/// stand: each nil when not set, the rate's tokens left, and how long the
/// current pause has lasted (nil when not paused).
fn limit_fields(limits: &Limits, now_ms: i64) -> [(&'static str, Option<i64>); 6] {
    let optional_count = |value: Option<u64>| value.and_then(count);
    [
        (dreams::LIMIT_CONCURRENCY.name, optional_count(limits.concurrency)),
        (dreams::LIMIT_RATE_COUNT.name, optional_count(limits.rate.map(|rate| rate.count))),
        (dreams::LIMIT_RATE_SECONDS.name, optional_count(limits.rate.map(|rate| rate.seconds))),
        (dreams::TOKENS_LEFT.name, optional_count(limits.tokens_at(now_ms))),
        (dreams::PAUSED.name, Some(i64::from(limits.paused_since_ms.is_some()))),
        (dreams::PAUSED_FOR_MS.name, limits.paused_since_ms.map(|since| now_ms.saturating_sub(since).max(0))),
    ]
}

/// `1` when an age was timed as its item entered the list, `0` when it is
/// a lower bound, nil when there is no item.
fn exact(age: Option<Age>) -> Option<i64> {
    age.map(|age| i64::from(age.exact))
}

/// `totals_tracked` (whether this node counts the tenant: not beyond the
/// caps of `tenant_stats`) and `totals_since_ms` (when it started, nil if
/// it has counted nothing yet).
pub(crate) fn totals_values(since_ms: Option<i64>, family: Family) -> [(&'static str, Option<i64>); 2] {
    let tracked = since_ms.is_some() || !tenant_stats::at_cap(family);
    [(stats::TOTALS_TRACKED.name, Some(i64::from(tracked))), (stats::TOTALS_SINCE_MS.name, since_ms)]
}

/// How many expiry markers (score [`EXPIRED`]) a lease set holds: items
/// whose lease ran out, back in ready, their late ACK still honoured. One
/// `ZCOUNT` (O(log n)); the key API could only count them by walking.
pub(crate) fn expired_markers<M: Mode>(session: &Session, leases: &Key<M>, name: &OwnedString) -> u64 {
    match leases.exists() {
        true => call::zcount(session.ctx(), name, c"0", c"0").unwrap_or(0).max(0) as u64,
        false => 0,
    }
}

/// The lowest score of a sorted set at or above `min`, as an integer.
pub(crate) fn lowest_score<M: ReadsValues>(set: &Key<M>, min: f64) -> Option<i64> {
    set.zrange_by_score(min, f64::INFINITY, 1).first().map(|(_, score)| *score as i64)
}
