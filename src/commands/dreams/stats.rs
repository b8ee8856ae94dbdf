//! `DREAMS.STATS <org>`: an organization's queue at a glance for operators
//! and exporters, as field/value pairs. Cheap by construction: lengths of
//! its lists and sets, the lowest score of the deferred and lease sets and
//! one `ZCOUNT`, so O(log n) whatever the queue holds; no walk over items.
//! Fire payloads carry no enqueue time, so the age of the oldest ready or
//! in-flight item is not known without storing more (see docs/dreams.md);
//! per-organization totals are not kept (the per-node totals are in
//! `INFO dreamtown`).

use super::organization;
use super::queue_names::queue_names;
use crate::dreams::lease::EXPIRED;
use crate::dreams::region::QueueKey;
use crate::module::args::Args;
use crate::module::call;
use crate::module::command::{entry_point, Arg, CommandSpec, TenantUse};
use crate::module::key::{Key, KeyKind};
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::module::string::OwnedString;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "DREAMS.STATS",
    entry: entry_point!(run),
    flags: "readonly fast",
    tenant: TenantUse::Read,
    arity: 2,
    summary: "An organization's queue statistics: lengths, leases, the oldest deferral's age (field/value pairs)",
    complexity: "O(log N) where N is the number of leased items",
    args: &[Arg::tenant("org")],
};

/// The parse step: the organization.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    let mut args = Args::new(argv);
    let org = organization(&mut args)?;
    args.end()?;
    Ok(org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let names = queue_names(org, [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing, QueueKey::Dead, QueueKey::Leases]);
    let [ready, deferred, processing, dead, leases] = session.check_strings(names, Access::Read)?;
    let leases_name = leases.clone();
    let [ready, deferred, processing, dead, leases] =
        [ready, deferred, processing, dead, leases].map(|name| session.open_checked(name, Access::Read));
    for (key, kind) in [(&ready, KeyKind::List), (&deferred, KeyKind::ZSet), (&processing, KeyKind::List), (&dead, KeyKind::List), (&leases, KeyKind::ZSet)] {
        key.require(kind)?;
    }
    let now_ms = session.now_ms();
    // Deferred items are scored by the second they were deferred.
    let oldest_deferred = lowest_score(&deferred, f64::NEG_INFINITY).map(|secs| now_ms.saturating_sub(secs.saturating_mul(1000)).max(0));
    let expired_waiting = expired_markers(session, &leases, &leases_name);
    let leased = leases.len().saturating_sub(expired_waiting);
    let next_deadline = lowest_score(&leases, (EXPIRED + 1) as f64);
    let fields: [(&str, Reply); 9] = [
        ("ready", Reply::count(ready.len())),
        ("deferred", Reply::count(deferred.len())),
        ("in_flight", Reply::count(processing.len())),
        ("dead_letters", Reply::count(dead.len())),
        ("leased", Reply::count(leased)),
        ("expired_leases_waiting", Reply::count(expired_waiting)),
        ("next_lease_deadline_ms", optional(next_deadline)),
        ("oldest_deferred_age_ms", optional(oldest_deferred)),
        ("now_ms", Reply::Integer(now_ms)),
    ];
    Ok(pairs(fields))
}

/// How many expiry markers (score [`EXPIRED`]) a lease set holds: items
/// whose lease ran out, back in ready, their late ACK still honoured. One
/// `ZCOUNT` (O(log n)); the key API could only count them by walking.
pub(crate) fn expired_markers(session: &Session, leases: &Key, name: &OwnedString) -> u64 {
    match leases.exists() {
        true => call::zcount(session.ctx(), name, c"0", c"0").unwrap_or(0).max(0) as u64,
        false => 0,
    }
}

/// The lowest score of a sorted set at or above `min`, as an integer.
pub(crate) fn lowest_score(set: &Key, min: f64) -> Option<i64> {
    set.zrange_by_score(min, f64::INFINITY, 1).first().map(|(_, score)| *score as i64)
}

/// An integer, or nil when there is none.
pub(crate) fn optional(value: Option<i64>) -> Reply {
    value.map_or(Reply::Nil, Reply::Integer)
}

/// Field/value pairs as one flat array (as `CONFIG GET` and `XINFO` reply).
pub(crate) fn pairs<const N: usize>(fields: [(&str, Reply); N]) -> Reply {
    Reply::Array(fields.into_iter().flat_map(|(name, value)| [Reply::Bulk(name.as_bytes().to_vec()), value]).collect())
}
