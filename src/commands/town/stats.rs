//! `TOWN.STATS <town> [<agent>]`: for operators and exporters, as
//! field/value pairs. With an agent: its inboxes, pending list and leases,
//! and the ages (from the messages' `created_at`) of the message the next
//! `TOWN.RECV` gets and of the oldest pending one; without: the town's
//! indexes and backlog. Cheap by construction: lengths, the head item of a
//! list, the lowest score of the lease set and one `ZCOUNT` — O(log n),
//! no walk over messages or agents (town-wide sums of the per-agent depths
//! are the exporter's job, agent by agent). Both also report totals (sent,
//! received, acked, requeued, reclaimed, leases expired...) counted in
//! memory on this node by `metrics::tenant_stats`, not replicated: 0 on a
//! replica, from 0 again after a restart or failover.

use super::{AGENT_ARG, TOWN_ARG};
use crate::commands::dreams::stats::{count, expired_markers, lowest_score, totals_values};
use crate::entry::entry_point;
use crate::events::{Town, TOWN_FIELDS};
use crate::glue::access::Read;
use crate::glue::command::{CommandSpec, TenantUse};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::glue::string::OwnedString;
use crate::lease::EXPIRED;
use crate::metrics::tenant_stats::{self, Family, TenantId};
use crate::town::age::{age_ms, created_at_ms};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;
use dreamtown_protocol::stats::{self, town as schema};

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::STATS,
    entry: entry_point!(run),
    flags: "readonly fast",
    tenant: TenantUse::Read,
    arity: -2,
    summary: "A town's statistics (indexes, backlog, totals) or one agent's (inboxes, pending, leases, ages, totals) as field/value pairs",
    complexity: "O(log N) where N is the number of the agent's leased messages; O(1) for the town",
    args: &[TOWN_ARG, AGENT_ARG.optional()],
};

/// The parse step ([`request::Stats`]): the town, and the agent if one
/// is named.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, Option<&'a str>), CommandError> {
    let request = request::Stats::parse(argv)?;
    Ok((TownKeys::new(request.town), request.agent))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    match parse(argv)? {
        (keys, None) => town_stats(session, &keys),
        (keys, Some(agent)) => agent_stats(session, &keys, agent),
    }
}

/// Check ACL for every name, then open them and check their types.
fn open_all<const N: usize>(session: &Session, keys: [(String, KeyKind); N]) -> Result<[Key<Read>; N], CommandError> {
    let kinds = keys.each_ref().map(|(_, kind)| *kind);
    let checked = session.check_all::<Read, N>(keys.map(|(name, _)| OwnedString::new(name.as_bytes())))?;
    let mut opened = Vec::with_capacity(N);
    for (checked, kind) in checked.into_iter().zip(kinds) {
        let key = checked.open(session)?;
        key.require(kind)?;
        opened.push(key);
    }
    opened.try_into().map_err(|_| CommandError::err("internal error: keys lost"))
}

fn town_stats(session: &Session, keys: &TownKeys) -> CommandResult {
    let [agents, mailboxes, tasks, backlog] = open_all(
        session,
        [
            (keys.agent_index(), KeyKind::Hash),
            (keys.mailbox_index(), KeyKind::ZSet),
            (keys.task_index(), KeyKind::ZSet),
            (keys.backlog(), KeyKind::List),
        ],
    )?;
    let mut fields = vec![
        (schema::AGENTS.name, count(agents.len())),
        (schema::MAILBOXES.name, count(mailboxes.len())),
        (schema::TASKS.name, count(tasks.len())),
        (schema::BACKLOG.name, count(backlog.len())),
    ];
    fields.extend(totals(TenantId::of(keys.prefix()), None));
    Ok(written(fields))
}

/// The town's totals (with `broadcasts`), or an agent's.
fn totals(town: TenantId, agent: Option<&str>) -> Vec<(&'static str, Option<i64>)> {
    let totals = tenant_stats::town_totals(town, agent.map(|agent| town.agent(agent)));
    let family = match agent {
        Some(_) => Family::Agents,
        None => Family::Towns,
    };
    let mut fields = totals_values(totals.map(|totals| totals.since_ms), family).to_vec();
    for field in TOWN_FIELDS.iter().filter(|field| field.per_tenant()) {
        // An agent has no broadcasts (a town's only).
        if field.sum_of == [Town::Broadcasts] && agent.is_some() {
            continue;
        }
        fields.push((field.name, count(totals.map_or(0, |totals| totals.sum(field)))));
    }
    fields
}

fn agent_stats(session: &Session, keys: &TownKeys, agent: &str) -> CommandResult {
    let leases_name = OwnedString::new(keys.leases(agent).as_bytes());
    let [inbox, urgent, pending, leases] = open_all(
        session,
        [
            (keys.inbox(agent), KeyKind::List),
            (keys.urgent(agent), KeyKind::List),
            (keys.pending(agent), KeyKind::List),
            (keys.leases(agent), KeyKind::ZSet),
        ],
    )?;
    let now_ms = session.now_ms();
    let head_age =
        |list: &Key<Read>| list.get(0).and_then(|message| created_at_ms(&message)).map(|at| age_ms(now_ms, at));
    // RECV reads the urgent inbox first.
    let next_age = match urgent.is_empty() {
        true => head_age(&inbox),
        false => head_age(&urgent),
    };
    let expired_waiting = expired_markers(session, &leases, &leases_name);
    let mut fields = vec![
        (schema::INBOX.name, count(inbox.len())),
        (schema::URGENT.name, count(urgent.len())),
        (schema::PENDING.name, count(pending.len())),
        (schema::LEASED.name, count(leases.len().saturating_sub(expired_waiting))),
        (schema::EXPIRED_LEASES_WAITING.name, count(expired_waiting)),
        (schema::NEXT_LEASE_DEADLINE_MS.name, lowest_score(&leases, (EXPIRED + 1) as f64)),
        (schema::NEXT_MESSAGE_AGE_MS.name, next_age),
        (schema::OLDEST_PENDING_AGE_MS.name, head_age(&pending)),
        (stats::NOW_MS.name, Some(now_ms)),
    ];
    let town = TenantId::of(keys.prefix());
    fields.extend(totals(town, Some(agent)));
    if [&inbox, &urgent, &pending, &leases].iter().all(|key| key.is_empty()) {
        tenant_stats::idle_seen(town, Some(town.agent(agent)));
    }
    Ok(written(fields))
}

/// The fields, as `TOWN.STATS`'s reply writes them.
fn written(fields: Vec<(&'static str, Option<i64>)>) -> Reply {
    Reply::of(reply::Stats { fields: fields.into_iter().map(|(name, value)| (name.into(), value)).collect() })
}
