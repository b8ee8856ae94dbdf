//! `DREAMS.DRAIN <org> <timeout-secs> [QUIET <HH-HH> [OFFSET <minutes>] | NOQUIET]`:
//! promote due deferrals, move the head of ready in flight under the
//! quiet-hours rule, and return the first item that should run; block up to
//! the timeout (decimal seconds, 0 = forever) until work is ready; nil on
//! timeout. Inside MULTI or a script it never blocks.
//!
//! `LEASE <secs>` (or the `dreamtown.lease` config when absent and above 0)
//! leases the returned item: unless acknowledged or extended in time, it
//! goes back to the head of ready by itself (see `crate::dreams::lease`).

use super::expiry;
use super::store::{RedisLeases, RedisQueue};
use super::{lease_secs, organization, unknown_option};
use crate::dreams::lease::{deadline, grant};
use crate::dreams::drain::{drain, DrainPolicy};
use crate::dreams::quiet::{check_utc_offset, QuietHours};
use crate::dreams::region::QueueKeys;
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::key::KeyKind;
use crate::module::waiters::{self, Available, WaitOn};
use crate::module::config;
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::module::stats;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "DREAMS.DRAIN",
    entry: entry_point!(run),
    flags: "write deny-oom blocking",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "Move the next fire that should run in flight and return it, blocking until one is ready",
    complexity: "O(N) where N is the number of items deferred or dead-lettered on the way",
    args: &[
        Arg::tenant("org"),
        Arg::new("timeout", ArgKind::Double),
        Arg::new(
            "quiet-hours",
            ArgKind::OneOf(&[
                Arg::new(
                    "window",
                    ArgKind::Block(&[
                        Arg::new("hours", ArgKind::String).token("QUIET"),
                        Arg::new("minutes", ArgKind::Integer).token("OFFSET").optional(),
                    ]),
                ),
                Arg::keyword("NOQUIET"),
            ]),
        )
        .optional(),
        Arg::new("secs", ArgKind::Double).token("LEASE").optional(),
    ],
};

pub(crate) struct DrainRequest<'a> {
    org: &'a str,
    timeout_ms: i64,
    policy: DrainPolicy,
    /// Lease length in seconds, if the item is leased.
    lease: Option<f64>,
}

/// The parse step.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<DrainRequest<'a>, CommandError> {
    let mut args = Args::new(argv);
    let org = organization(&mut args)?;
    let timeout_ms = args.timeout_ms()?;
    let mut window: Option<QuietHours> = None;
    let mut offset: Option<i16> = None;
    let mut no_quiet = false;
    let mut lease = None;
    while let Some(option) = args.option() {
        match option.as_str() {
            "QUIET" if window.is_none() => {
                let text = args.text("quiet window")?;
                let parsed: QuietHours = text.parse().map_err(|e| {
                    CommandError::err(format_args!("invalid quiet window '{text}': {e}"))
                })?;
                window = Some(parsed);
            }
            "OFFSET" if offset.is_none() => {
                let minutes = args.signed("UTC offset (minutes)", i64::MIN, i64::MAX)?;
                offset = Some(check_utc_offset(minutes).map_err(CommandError::err)?);
            }
            "NOQUIET" => no_quiet = true,
            "LEASE" if lease.is_none() => lease = Some(lease_secs(&mut args)?),
            "QUIET" | "OFFSET" | "LEASE" => return Err(CommandError::err(format_args!("{option} given more than once"))),
            other => return Err(unknown_option(other)),
        }
    }
    if no_quiet && (window.is_some() || offset.is_some()) {
        return Err(CommandError::err("NOQUIET cannot be combined with QUIET or OFFSET"));
    }
    let quiet = match (no_quiet, window, offset) {
        (true, _, _) => QuietHours::none(),
        (false, Some(mut window), Some(offset)) => {
            window.utc_offset_minutes = offset;
            window
        }
        (false, window, offset) => {
            let configured = config::quiet_hours();
            let mut quiet = window.unwrap_or(configured);
            quiet.utc_offset_minutes = offset.unwrap_or(configured.utc_offset_minutes);
            quiet
        }
    };
    Ok(DrainRequest {
        org,
        timeout_ms,
        policy: DrainPolicy {
            quiet,
            backlog_min: config::quiet_backlog_min(),
            queue_max: config::queue_max(),
        },
        lease: lease.or_else(config::lease_secs),
    })
}

/// Drain once now: the payload that should run, if any, and whether the
/// drain wrote anything (promotions, quiet deferrals, dead letters).
fn drain_now(session: &Session, request: &DrainRequest<'_>) -> Result<(Option<Vec<u8>>, bool), CommandError> {
    let mut queue = RedisQueue::open(session, request.org, Access::Write, true)?;
    // Opened (ACL and type checked) before anything is written.
    let leases = match request.lease {
        Some(_) => Some(RedisLeases::open(session, request.org, Access::Write)?),
        None => None,
    };
    let drained = drain(&mut queue, request.org, session.now_secs(), &request.policy);
    stats::PROMOTED.add(drained.promoted);
    stats::QUIET_DEFERRED.add(drained.quiet_deferred);
    stats::DEAD_LETTERED.add(drained.dead_lettered);
    if let Some(payload) = &drained.ready {
        stats::DRAINED.bump();
        if let (Some(mut leases), Some(secs)) = (leases, request.lease) {
            let now_ms = session.now_ms();
            let until = deadline(now_ms, secs).unwrap_or(now_ms.saturating_add(1));
            grant(&mut leases, payload, until);
            expiry::note(session, request.org, until);
        }
    }
    let wrote = drained.ready.is_some() || drained.promoted + drained.quiet_deferred + drained.dead_lettered > 0;
    Ok((drained.ready, wrote))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let request = parse(argv)?;
    if let (Some(payload), _) = drain_now(session, &request)? {
        return Ok(Reply::Bulk(payload));
    }
    if !session.may_block() {
        return Ok(Reply::Nil);
    }
    let keys = QueueKeys::new(request.org);
    let due_ms = next_due_ms(session, &keys.deferred);
    let wait = WaitOn {
        watched: &[(keys.ready.as_bytes(), READY), (keys.deferred.as_bytes(), READY)],
        interest: READY,
        probe,
        serve,
        due_ms,
    };
    waiters::block(session, argv, request.timeout_ms, wait)
}

/// The one kind of work a drainer waits for.
const READY: u8 = 1;

/// When the earliest deferred item not yet due falls due (unix ms): the
/// module defers with the current time, so only items other clients wrote
/// with a later score get here.
fn next_due_ms(session: &Session, deferred: &str) -> Option<i64> {
    let key = session.open_unchecked(deferred.as_bytes(), Access::Read);
    if key.kind() != KeyKind::ZSet {
        return None;
    }
    let (_, score) = key.zrange_by_score(f64::NEG_INFINITY, f64::INFINITY, 1).into_iter().next()?;
    due_after(score, session.now_secs())
}

/// The first millisecond at which a deferral scored `score` is due, if that
/// is after `now_secs` (a drain promotes scores up to the current second).
pub(crate) fn due_after(score: f64, now_secs: i64) -> Option<i64> {
    if !score.is_finite() || score <= now_secs as f64 {
        return None;
    }
    let secs = score.floor().min(1e15) as i64;
    Some(secs.saturating_add(if score.fract() == 0.0 { 0 } else { 1 }).saturating_mul(1000))
}

/// Is there work for a drainer: anything in ready (garbage included: the
/// drain that looks at it dead-letters it), or a deferred item due now?
fn probe(session: &Session, watched: &[Vec<u8>]) -> Available {
    let (Some(ready), Some(deferred)) = (watched.first(), watched.get(1)) else {
        return Available::default();
    };
    let ready = session.open_unchecked(ready, Access::Read);
    // Another type: the drain replies WRONGTYPE to the waiter, as before.
    if ready.kind() != KeyKind::Empty && (ready.kind() != KeyKind::List || ready.len() > 0) {
        return Available { mask: READY, due_ms: None };
    }
    let deferred = session.open_unchecked(deferred, Access::Read);
    match deferred.kind() {
        KeyKind::Empty => Available::default(),
        KeyKind::ZSet => {
            let first = deferred.zrange_by_score(f64::NEG_INFINITY, f64::INFINITY, 1).into_iter().next();
            match first {
                Some((_, score)) => match due_after(score, session.now_secs()) {
                    None => Available { mask: READY, due_ms: None },
                    due => Available { mask: 0, due_ms: due },
                },
                None => Available::default(),
            }
        }
        _ => Available { mask: READY, due_ms: None },
    }
}

/// Work arrived while blocked: serve it, or keep waiting if there is
/// nothing that should run (only dead letters, say).
fn serve(session: &Session, argv: &[&[u8]]) -> Option<CommandResult> {
    let request = match parse(argv) {
        Ok(request) => request,
        Err(error) => return Some(Err(error)),
    };
    match drain_now(session, &request) {
        Ok((Some(payload), _)) => Some(Ok(Reply::Bulk(payload))),
        Ok((None, _)) => None,
        Err(error) => Some(Err(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::due_after;

    #[test]
    fn deferrals_fall_due_at_their_second() {
        assert_eq!(due_after(100.0, 100), None);
        assert_eq!(due_after(99.0, 100), None);
        assert_eq!(due_after(101.0, 100), Some(101_000));
        assert_eq!(due_after(101.5, 100), Some(102_000));
        assert_eq!(due_after(f64::INFINITY, 100), None);
        assert_eq!(due_after(f64::NAN, 100), None);
    }
}
