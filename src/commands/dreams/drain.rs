//! `DREAMS.DRAIN <org> <timeout-secs> [QUIET <HH-HH> [OFFSET <minutes>] | NOQUIET]`:
//! promote due deferrals, move the head of ready in flight under the
//! quiet-hours rule, and return the first item that should run; block up to
//! the timeout (decimal seconds, 0 = forever) until work is ready; nil on
//! timeout. Inside MULTI or a script it never blocks.
//!
//! `LEASE <secs>` (or the `dreamtown.lease` config when absent and above 0)
//! leases the returned item: unless acknowledged or extended in time, it
//! goes back to the head of ready by itself (see `crate::dreams::lease`).
//!
//! A call passes over (dead-letters, or defers for quiet hours) at most
//! [`SKIP_MAX`] (256) items: one that found only those replies as if
//! nothing were ready (nil), or, blocking, waits and goes on on the next
//! turn of the event loop, so a ready list of garbage is cleared a few
//! hundred items per step, never in one step that grows with it.
//!
//! `COUNT <n>`: up to n items in one call, each drained (and leased) as one
//! drain would; the reply is then an array of payloads.
//!
//! The nil of a timeout is the null array (`*-1` in RESP2), as `BLMOVE`'s
//! and `BLMPOP`'s; inside MULTI or a script, where nothing blocks, a drain
//! that finds nothing answers `$-1` as `BLMOVE` there does, and with
//! `COUNT` `*-1` as `BLMPOP` there does (RESP3: `_` for all).
//!
//! `ACK <payload> SUCCESS|FAILURE [NODE <id>] [TRIGGER ...]` (last): the
//! one-trip worker loop. The payload is acknowledged exactly as
//! `DREAMS.ACK` would (the same code: [`super::ack`]) before the drain, and
//! the reply is `[<the ACK's reply>, <the drain's reply>]`. Every key of
//! both halves is checked (ACL, type) before the acknowledgement writes, so
//! an error means nothing changed; once applied (and replicated, with the
//! command) the acknowledgement stands whatever the drain then does: a
//! timeout answers `[<ack>, nil]`, a disconnect loses nothing. A call that
//! finds other drainers already blocked waits behind them (first come,
//! first served), even for the item its own acknowledgement requeued.
//!
//! Limits (`DREAMS.LIMIT`, `DREAMS.PAUSE`: `crate::dreams::limits`): a
//! drain of a limited organization hands out no more than its concurrency
//! cap allows in flight and its rate has tokens, and nothing while it is
//! paused; what it cannot hand out stays ready. A call that can block
//! then waits (behind any drainer already waiting for the organization)
//! and is served, first come first served, when capacity returns: an ACK
//! or a lease expiry frees a place in flight, `DREAMS.RESUME` or
//! `DREAMS.LIMIT` lifts the limit (each wakes the first waiter), or the
//! rate's next token is due (a timer of the waiter queue, armed for that
//! millisecond). One that cannot block answers as if nothing were ready.

use super::ack::{self, AckRequest, Acknowledged};
use super::{NODE_ARG, TRIGGER_ARG};
use crate::commands::dreams::settings;
use crate::commands::options::{COUNT_ARG, LEASE_ARG};
use crate::dreams::drain::{drain_bounded, DrainPolicy, SKIP_MAX};
use crate::dreams::limits::{Allowance, Throttle};
use crate::dreams::quiet::QuietHours;
use crate::dreams::region::{QueueKey, QueueKeys};
use crate::dreams::store::QueueAppend;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::access::{Meta, Read};
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::ctx::{selected_db, Ctx};
use crate::glue::db_scope::DbScope;
use crate::glue::key::KeyKind;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::glue::timer;
use crate::lease::{deadline, grant};
use crate::metrics::count;
use crate::metrics::tenant_stats::TenantId;
use crate::services::limits_index;
use crate::services::waiters::{self, Available, WaitOn};
use crate::stores::dreams::leases;
use crate::stores::dreams::limits::{self, DrainLimits};
use crate::stores::dreams::queue_names::queue_names;
use crate::stores::dreams::store::RedisQueue;
use crate::stores::leases::RedisLeases;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams::{self as request, Quiet};
use dreamtown_protocol::request::Request;
use std::os::raw::c_int;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::DRAIN,
    entry: entry_point!(run),
    flags: "write deny-oom blocking",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "Move the next fire that should run in flight and return it, blocking until one is ready",
    complexity: "O(N) where N is the number of items deferred or dead-lettered on the way, at most 256 per call",
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
        LEASE_ARG,
        COUNT_ARG,
        Arg::new(
            "ack",
            ArgKind::Block(&[
                Arg::new("payload", ArgKind::String).token("ACK"),
                Arg::new("result", ArgKind::OneOf(&[Arg::keyword("SUCCESS"), Arg::keyword("FAILURE")])),
                NODE_ARG,
                TRIGGER_ARG,
            ]),
        )
        .optional(),
    ],
};

pub(crate) struct DrainRequest<'a> {
    org: &'a str,
    timeout_ms: i64,
    policy: DrainPolicy,
    /// Lease length in seconds, if the item is leased.
    lease: Option<f64>,
    /// `COUNT`: a batch, replied as an array.
    count: Option<u64>,
    /// The `ACK` clause, and where it starts in the arguments (what is
    /// before it is the drain alone: a blocked call waits with that).
    ack: Option<(AckRequest<'a>, usize)>,
}

/// The parse step ([`request::Drain`]), the module's settings filling in
/// what the call leaves out (quiet hours, lease).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<DrainRequest<'a>, CommandError> {
    let request = request::Drain::parse(argv)?;
    let quiet = match request.quiet {
        Quiet::Off => QuietHours::none(),
        Quiet::Given { window: Some(window), offset: Some(offset) } => {
            QuietHours { utc_offset_minutes: offset, ..QuietHours::from(window) }
        }
        Quiet::Given { window, offset } => {
            let configured = settings::quiet_hours();
            let mut quiet = window.map_or(configured, QuietHours::from);
            quiet.utc_offset_minutes = offset.unwrap_or(configured.utc_offset_minutes);
            quiet
        }
    };
    let at = request.ack_at(argv.len());
    Ok(DrainRequest {
        org: request.org,
        timeout_ms: request.timeout.ms,
        policy: DrainPolicy { quiet, backlog_min: settings::quiet_backlog_min(), queue_max: settings::queue_max() },
        lease: request.lease.or_else(settings::lease_secs),
        count: request.count,
        ack: request.ack.map(|clause| (AckRequest::new(request.org, clause), at)),
    })
}

/// How a drain comes by its keys.
// Made and consumed once per call, by value: boxing the queue would add an
// allocation to the one-trip ACK+DRAIN path to save a stack copy.
#[allow(clippy::large_enum_variant)]
enum Opened {
    /// It checks and opens them (ACL, then type) before anything is written.
    Here,
    /// The one-trip call's acknowledgement handed its keys on: every key a
    /// drain uses was checked, and its type inspected, before that
    /// acknowledgement wrote anything (`ack::acknowledge_keeping_queue`).
    /// Nothing in between can give a key another type or change the
    /// caller's permissions, so none is checked again.
    AfterAck(Acknowledged),
}

/// Open every key a drain may write, ACL- and type-checked before anything
/// is written unless `opened` says this call already did.
fn open_keys(
    session: &Session,
    request: &DrainRequest<'_>,
    opened: Opened,
) -> Result<(RedisQueue, Option<RedisLeases>), CommandError> {
    if let Opened::AfterAck(acked) = opened {
        let queue = acked.queue.with_deferred_absent(acked.deferred_absent);
        let leases = request.lease.and(acked.leases);
        return Ok((queue, leases));
    }
    let queue = RedisQueue::check(session, request.org, true)?;
    let leases = request.lease.map(|_| RedisLeases::check(session, request.org)).transpose()?;
    let queue = queue.open(session)?;
    let leases = leases.map(|leases| RedisLeases::open(session, leases)).transpose()?;
    Ok((queue, leases))
}

/// What one drain did: the payloads that should run (each moved in flight
/// and leased as one drain would), whether it stopped at [`SKIP_MAX`] items
/// passed over with ready not yet looked at (the caller arranges for a
/// drain to go on), and, when the organization's rate alone held it back,
/// when its next token is due.
struct DrainedNow {
    payloads: Payloads,
    stopped: bool,
    /// Held back by the rate alone: when its next token is due (unix ms).
    next_token_ms: Option<i64>,
}

/// Drain now, up to `COUNT` items (one without it), within `limits` (the
/// organization's, checked and read before any key opened: see
/// [`DrainLimits::check`]).
fn drain_now(
    session: &Session,
    request: &DrainRequest<'_>,
    opened: Opened,
    limits: &mut Option<Box<DrainLimits>>,
) -> Result<DrainedNow, CommandError> {
    let (mut queue, mut leases) = open_keys(session, request, opened)?;
    if let Some(limits) = limits.as_mut() {
        limits.open_for_writes(session)?;
    }
    let now = session.now_secs();
    let asked = request.count.unwrap_or(1);
    let mut payloads = match request.count {
        Some(_) => Payloads::Batch(Vec::new()),
        None => Payloads::One(None),
    };
    let org = queue.tenant();
    let (wanted, allowance) = match limits.as_ref() {
        None => (asked, None),
        Some(limits) => allowance_now(session, limits, &queue, asked),
    };
    let mut skip_left = SKIP_MAX;
    let mut stopped = false;
    while payloads.len() < wanted {
        let drained = drain_bounded(&mut queue, request.org, now, &request.policy, &mut skip_left);
        stopped = drained.stopped;
        count::dreams(org, Dreams::Promoted, drained.promoted);
        count::dreams(org, Dreams::QuietDeferred, drained.quiet_deferred);
        count::dreams(org, Dreams::DeadLettered, drained.dead_lettered);
        let Some(payload) = drained.ready else { break };
        count::dreams(org, Dreams::Drained, 1);
        payloads.push(payload);
    }
    if let (Some(leases), Some(secs), false) = (leases.as_mut(), request.lease, payloads.is_empty()) {
        let now_ms = session.now_ms();
        let until = deadline(now_ms, secs).unwrap_or(now_ms.saturating_add(1));
        for payload in payloads.as_slice() {
            grant(leases, payload, until);
        }
        leases::note(session, request.org, until);
    }
    let next_token_ms = match (limits.as_mut(), allowance) {
        (Some(limits), Some(allowance)) => settle_limits(session, limits, allowance, &payloads, &queue, org),
        _ => None,
    };
    Ok(DrainedNow { payloads, stopped, next_token_ms })
}

/// How many of `asked` items a limited organization's drain may hand out
/// now (out of the hot path: most drains have no limits).
#[inline(never)]
fn allowance_now(session: &Session, limits: &DrainLimits, queue: &RedisQueue, asked: u64) -> (u64, Option<Allowance>) {
    let allowance = limits.limits().allowance(asked, queue.processing_len(), session.now_ms());
    (allowance.items, Some(allowance))
}

/// After a limited drain: take the rate's tokens for what it handed out
/// (written back, replicated as the key's `SET`), and count a drain the
/// limits held back while work waited. When it handed out nothing because
/// of the rate alone: when the next token is due.
#[inline(never)]
fn settle_limits(
    session: &Session,
    limits: &mut DrainLimits,
    allowance: Allowance,
    payloads: &Payloads,
    queue: &RedisQueue,
    org: TenantId,
) -> Option<i64> {
    let now_ms = session.now_ms();
    let settled = limits.limits_mut().settle_clock(now_ms);
    let consumed = limits.limits_mut().consume(payloads.len(), now_ms);
    if settled || consumed {
        limits.store();
    }
    let by = allowance.by?;
    if payloads.len() >= allowance.items && (queue.ready_len() > 0 || queue.deferred_len() > 0) {
        let event = match by {
            Throttle::Concurrency => Dreams::ThrottledConcurrency,
            Throttle::Rate => Dreams::ThrottledRate,
            Throttle::Paused => Dreams::ThrottledPaused,
        };
        count::dreams(org, event, 1);
    }
    allowance.next_token_ms
}

/// A drain stopped at [`SKIP_MAX`] items passed over and found nothing to
/// hand out, while a drainer waits: on the next turn of the event loop
/// (a zero-delay timer), tell the waiters that `org`'s ready list has
/// work, so the first waiter's drain goes on where this one stopped. The
/// server answers other clients in between.
fn go_on_later(session: &Session, org: &str) {
    let ctx = session.ctx();
    let db = selected_db(ctx);
    timer::after_with(ctx, 0, (db, QueueKeys::new(org).ready), on_go_on);
}

fn on_go_on(ctx: Ctx, (db, ready): (c_int, String)) {
    if let Some(_in_db) = DbScope::select_in(ctx, db) {
        waiters::work_arrived(ctx, ready.as_bytes());
    }
}

/// What one call drained: without `COUNT` at most one payload, held
/// without a `Vec` around it (an allocation per call saved); with it, the
/// batch.
enum Payloads {
    One(Option<Vec<u8>>),
    Batch(Vec<Vec<u8>>),
}

impl Payloads {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    fn push(&mut self, payload: Vec<u8>) {
        match self {
            Self::One(slot) => *slot = Some(payload),
            Self::Batch(batch) => batch.push(payload),
        }
    }

    fn as_slice(&self) -> &[Vec<u8>] {
        match self {
            Self::One(slot) => slot.as_slice(),
            Self::Batch(batch) => batch,
        }
    }
}

/// The drain's own reply when it does not wait: the payload (nil if none,
/// `$-1` in RESP2 as `BLMOVE`'s inside MULTI), or with `COUNT` the array
/// of payloads (nil if none, the null array `*-1` as `BLMPOP`'s).
fn drained_reply(payloads: Payloads) -> Reply {
    match payloads {
        Payloads::One(Some(payload)) => Reply::of(reply::Drain::Fire(payload)),
        Payloads::One(None) => Reply::of(reply::Drain::<Vec<u8>>::Nothing),
        Payloads::Batch(payloads) => Reply::of(reply::DrainBatch { payloads }),
    }
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let request = parse(argv)?;
    // The organization's limits, if it has any (nearly always known
    // without a look at the keyspace): checked and read first, before any
    // key opens. Assigned only on the path that reads them: a drain
    // without limits moves no `DrainLimits` around.
    let mut limits = None;
    if limits_index::may_be_limited(session, request.org) {
        limits = DrainLimits::check_limited(session, request.org)?;
    }
    match &request.ack {
        None => drain_or_wait(session, &request, argv, None, Opened::Here, limits),
        Some((ack, at)) => {
            // Every key of both halves is checked before the
            // acknowledgement writes (it checks the drain's too).
            let mut acked = ack::acknowledge_keeping_queue(session, ack, true)?;
            // Signalled where a separate acknowledgement would close them.
            acked.queue.signal_modified_now();
            let before = std::mem::replace(&mut acked.reply, Reply::Nil);
            let drain_argv = argv.get(..*at).unwrap_or(argv);
            drain_or_wait(session, &request, drain_argv, Some(before), Opened::AfterAck(acked), limits)
        }
    }
}

/// Drain now, or block the caller (`drain_argv`: the arguments it waits
/// with) until there is work it may take; `before`: the reply of the
/// acknowledgement that ran first (`... ACK`). Inlined into both paths of
/// [`run`], so that a drain without `ACK` moves no queue around.
#[inline(always)]
fn drain_or_wait(
    session: &Session,
    request: &DrainRequest<'_>,
    drain_argv: &[&[u8]],
    before: Option<Reply>,
    opened: Opened,
    mut limits: Option<Box<DrainLimits>>,
) -> CommandResult {
    // First come, first served: with drainers already waiting, this call
    // waits behind them rather than take what arrived for them (the item
    // its own acknowledgement requeued, say, or the place in flight an
    // acknowledgement freed for a limited organization's first waiter).
    // The key names as Rust strings are made only when someone waits or
    // this call blocks.
    let queued_behind = (before.is_some() || limits.is_some())
        && session.may_block()
        && waiters::anyone_waits()
        && waiters::has_waiters(session, QueueKeys::new(request.org).ready.as_bytes());
    let mut next_token_ms = None;
    if queued_behind {
        // Closed before this call blocks and others are served.
        drop(opened);
        drop(limits);
    } else {
        let drained = drain_now(session, request, opened, &mut limits)?;
        let DrainedNow { payloads, stopped, next_token_ms: next } = drained;
        if stopped && payloads.is_empty() && session.may_block() {
            go_on_later(session, request.org);
        }
        if !payloads.is_empty() || !session.may_block() {
            let reply = drained_reply(payloads);
            return Ok(match before {
                Some(acked) => Reply::acked_then(acked, reply),
                None => reply,
            });
        }
        next_token_ms = next;
    }
    let keys = QueueKeys::new(request.org);
    let due_ms = earliest(next_due_ms(session, &keys.deferred), next_token_ms);
    let wait = WaitOn {
        watched: &[(keys.ready.as_bytes(), READY), (keys.deferred.as_bytes(), READY)],
        interest: READY,
        probe,
        serve,
        due_ms,
        before,
        // `BLMOVE` and `BLMPOP` alike time out with the null array.
        timeout: Reply::of(reply::Drain::<Vec<u8>>::TimedOut),
    };
    let blocked = waiters::block(session, drain_argv, request.timeout_ms, wait);
    if queued_behind {
        // Make sure a pass looks at whatever is there, in arrival order.
        waiters::work_arrived(session.ctx(), keys.ready.as_bytes());
    }
    blocked
}

/// The earlier of two optional instants.
fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The one kind of work a drainer waits for.
const READY: u8 = 1;

/// When the earliest deferred item not yet due falls due (unix ms): the
/// module defers with the current time, so only items other clients wrote
/// with a later score get here.
fn next_due_ms(session: &Session, deferred: &str) -> Option<i64> {
    let key = Session::internal(session.ctx()).check::<Read>(deferred.as_bytes()).ok()?.peek_values(session);
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
/// drain that looks at it dead-letters it), or a deferred item due now,
/// that the organization's limits let a drain hand out now? Held back by
/// the rate alone, it is due when the next token is.
fn probe(session: &Session, watched: &[Vec<u8>]) -> Available {
    let (Some(ready), Some(deferred)) = (watched.first(), watched.get(1)) else {
        return Available::default();
    };
    let work = work_waiting(session, ready, deferred);
    if work.mask == 0 {
        return work;
    }
    let Some(org) = QueueKey::Ready.org_of(ready) else { return work };
    match limits::peek(session, org) {
        // No limits, or limits that do not parse: the waiter's drain
        // answers (an item, or the error).
        Ok(None) | Err(_) => work,
        Ok(Some(limits)) => {
            let [processing] = queue_names(org, [QueueKey::Processing]);
            let in_flight = match session.check::<Meta>(processing) {
                Ok(processing) => processing.peek(session).len(),
                Err(_) => return work,
            };
            let allowance = limits.allowance(1, in_flight, session.now_ms());
            match allowance.items {
                0 => Available { mask: 0, due_ms: earliest(work.due_ms, allowance.next_token_ms) },
                _ => work,
            }
        }
    }
}

/// The work in a drainer's ready list and deferred set, limits aside.
fn work_waiting(session: &Session, ready: &[u8], deferred: &[u8]) -> Available {
    let Ok(ready) = session.check::<Meta>(ready).and_then(|ready| ready.open(session)) else {
        return Available::default();
    };
    // Another type: the drain replies WRONGTYPE to the waiter, as before.
    if ready.kind() != KeyKind::Empty && (ready.kind() != KeyKind::List || !ready.is_empty()) {
        return Available { mask: READY, due_ms: None };
    }
    let Ok(deferred) = session.check::<Read>(deferred).and_then(|deferred| deferred.open(session)) else {
        return Available::default();
    };
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
/// nothing that should run (only dead letters, say, or nothing the
/// organization's limits let go now).
fn serve(session: &Session, argv: &[&[u8]]) -> Option<CommandResult> {
    let request = match parse(argv) {
        Ok(request) => request,
        Err(error) => return Some(Err(error)),
    };
    let mut limits = match DrainLimits::check(session, request.org) {
        Ok(limits) => limits,
        Err(error) => return Some(Err(error)),
    };
    match drain_now(session, &request, Opened::Here, &mut limits) {
        Ok(drained) if drained.payloads.is_empty() => {
            if drained.stopped {
                go_on_later(session, request.org);
            }
            None
        }
        Ok(drained) => Some(Ok(drained_reply(drained.payloads))),
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
