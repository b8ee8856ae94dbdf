//! Waiter queues: the clients blocked in `DREAMS.DRAIN` and `TOWN.RECV ...
//! BLOCK`, kept in a FIFO per organization (per agent for Town), and the
//! one-waiter-per-item hand-off that serves them.
//!
//! Why not block every waiter on the watched list itself: Redis then runs
//! the reply callback of *every* client blocked on that key for every push
//! (blocked.c `serveClientsBlockedOnKeyByModule`), so one item costs O(K)
//! with K idle waiters. Instead:
//!
//! * Each waiter is blocked with `RedisModule_BlockClientOnKeys` on a key
//!   of its own, `dreamtown:waiter:{<tenant>}:<n>`, that is never created
//!   (nothing is written to the keyspace, nothing is replicated). Being
//!   blocked on a key of the tenant's slot keeps the cluster's MOVED
//!   redirection of blocked clients; Redis handles the timeout.
//! * The module keeps the waiters of each queue in arrival order.
//! * When work arrives ([`work_arrived`]; a keyspace-event subscription
//!   calls it for every push onto a watched list or sorted set, whoever
//!   made it, native commands included), the queue is marked and one
//!   zero-delay timer runs a pass after the current command (MULTI, script)
//!   is over. The pass looks (cheaply, by length) whether there is work for
//!   the first waiter; if so it runs that waiter's command (as that
//!   waiter's ACL user) in the timer's context, and hands the reply over
//!   with `RedisModule_UnblockClient`, which for a client blocked on keys
//!   calls our timeout callback synchronously (module.c
//!   `RM_UnblockClient` → `moduleBlockedClientTimedOut`): the item moves
//!   and the reply is made in the same step, nothing runs in between. It
//!   repeats while work and waiters remain. Only the served waiter runs.
//! * Redis 7.0 serves module clients blocked on keys only when the key
//!   exists (blocked.c `handleClientsBlockedOnKeys`), so signalling a
//!   never-created per-waiter key would not work there; the unblock above
//!   works on 7.0 and every later version.
//! * A waiter that times out, disconnects, is unblocked by `CLIENT
//!   UNBLOCK`, redirected, or dropped when the server becomes a replica
//!   leaves its queue at once (timeout and disconnect callbacks; the
//!   private-data free is the last resort), so nothing leaks; work it was
//!   not given stays for the next waiter, because a pass always looks at
//!   whoever is first when it runs.
//! * Dreams deferred items scored in the future (written by other clients)
//!   arm a timer for when they fall due, while a drainer waits.
//!
//! State is in memory only, on the server that has the blocked clients
//! (a master: both commands are write commands, refused by replicas).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::migration_guard;
use crate::glue::blocked::{self, Blocked, BlockedClient};
use crate::glue::context_flags::ContextFlags;
use crate::glue::ctx::{log_warning, milliseconds, selected_db, Ctx, RawString};
use crate::glue::db_scope::DbScope;
use crate::glue::latency;
use crate::glue::module_state::PerLoad;
use crate::glue::reply::{self, CommandError, CommandResult, Reply};
use crate::glue::session::{current_user_name, Session};
use crate::glue::string::{bytes_of, OwnedString};
use crate::glue::timer::{self, TimerWith};
use crate::metrics::totals::Total;

/// Run a blocked command's work for a woken waiter: `Some` is its reply
/// (it is then served), `None` means it found nothing and keeps waiting.
pub type Serve = fn(&Session, &[&[u8]]) -> Option<CommandResult>;

/// Look, without writing and without ACL checks, at what work the watched
/// keys (in the order given to [`block`]) hold.
pub type Probe = fn(&Session, &[Vec<u8>]) -> Available;

/// What a [`Probe`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Available {
    /// The kinds of work present (the masks of [`WaitOn::watched`]).
    pub mask: u8,
    /// Work that falls due later: unix milliseconds.
    pub due_ms: Option<i64>,
}

/// How a blocking command waits.
pub struct WaitOn<'a> {
    /// The keys whose new work serves this waiter, each with the kind of
    /// work it holds (a bit). The first names the queue: every waiter
    /// with the same first key (in the same database) shares one FIFO.
    pub watched: &'a [(&'a [u8], u8)],
    /// The kinds of work this waiter takes (waiters with different
    /// interests are kept apart, and served in arrival order across).
    pub interest: u8,
    /// See [`Probe`].
    pub probe: Probe,
    /// See [`Serve`].
    pub serve: Serve,
    /// Work already known to fall due later (unix ms), to wake for it.
    pub due_ms: Option<i64>,
    /// The reply of the part of the call that already ran before it
    /// blocked (the acknowledgement of a one-trip `DRAIN ... ACK` or `RECV
    /// ... ACK`): the waiter is then answered `[before, <served reply or
    /// nil>]`; an error is sent alone. `None`: the reply as it is.
    pub before: Option<Reply>,
    /// The nil a timeout answers, of the native analogue's type (every
    /// list-blocking command times out with [`Reply::NilArray`], `*-1` in
    /// RESP2: `BLPOP`, `BLMOVE`, `BLMPOP`; so does `XREADGROUP`).
    pub timeout: Reply,
}

/// What this mechanism counts, for `INFO dreamtown`.
#[derive(Default)]
struct Counts {
    /// Waiters handed an item (or an error).
    served: Total,
    /// Waiters whose command ran on a wake-up and found nothing.
    empty_wakeups: Total,
    /// Waiters that timed out.
    timed_out: Total,
    /// Waiters that went away (disconnect, CLIENT UNBLOCK ERROR, redirect).
    gone: Total,
    /// Served waiters freed before their reply could be sent.
    undelivered: Total,
}

/// The names of a queue: its database and first watched key.
type QueueId = (c_int, Vec<u8>);

struct Waiter {
    client: BlockedClient<Ticket>,
    user: Option<Vec<u8>>,
    /// The command's name as the client sent it: with `args`, the call
    /// the ACL checks again when it is served.
    command: Vec<u8>,
    args: Vec<Vec<u8>>,
    serve: Serve,
}

/// The private data of one blocked client: where its entry is, and the
/// reply handed to it by a pass.
struct Ticket {
    queue: QueueId,
    interest: u8,
    seq: u64,
    delivery: Option<CommandResult>,
    /// [`WaitOn::before`].
    before: Option<Reply>,
    /// [`WaitOn::timeout`].
    timeout: Reply,
}

struct Queue {
    /// One FIFO per interest, keyed by arrival number.
    fifos: Vec<(u8, BTreeMap<u64, Waiter>)>,
    watched: Vec<(Vec<u8>, u8)>,
    probe: Probe,
    pending_mask: u8,
    serving: bool,
    due_timer: Option<(TimerWith<QueueId>, i64)>,
}

impl Queue {
    fn len(&self) -> usize {
        self.fifos.iter().map(|(_, fifo)| fifo.len()).sum()
    }
}

/// One database's watched keys: each → its queue's first key and work kind.
type WatchedKeys = HashMap<Vec<u8>, (Vec<u8>, u8)>;

#[derive(Default)]
struct Registry {
    next_seq: u64,
    waiters: u64,
    queues: HashMap<QueueId, Queue>,
    /// Watched key (per database) → its queue's first key and work kind.
    watched: HashMap<c_int, WatchedKeys>,
    pending: Vec<QueueId>,
    timer_armed: bool,
}

impl Registry {
    /// Take `seq` out of its queue; drop the queue when it empties.
    fn remove(&mut self, ctx: Ctx, id: &QueueId, interest: u8, seq: u64) -> Option<Waiter> {
        let queue = self.queues.get_mut(id)?;
        let waiter = queue.fifos.iter_mut().find(|(i, _)| *i == interest).and_then(|(_, fifo)| fifo.remove(&seq))?;
        self.waiters = self.waiters.saturating_sub(1);
        self.drop_if_idle(ctx, id);
        Some(waiter)
    }

    fn drop_if_idle(&mut self, ctx: Ctx, id: &QueueId) {
        let idle = self.queues.get(id).is_some_and(|q| q.len() == 0 && !q.serving);
        if !idle {
            return;
        }
        let Some(queue) = self.queues.remove(id) else { return };
        if let Some(names) = self.watched.get_mut(&id.0) {
            for (name, _) in &queue.watched {
                names.remove(name);
            }
            if names.is_empty() {
                self.watched.remove(&id.0);
            }
        }
        self.pending.retain(|pending| pending != id);
        if let Some((timer, _)) = queue.due_timer {
            stop_due_timer(ctx, timer);
        }
    }
}

/// This mechanism's part of the module state.
#[derive(Default)]
struct State {
    registry: RefCell<Registry>,
    counts: Counts,
}

static STATE: PerLoad<State> = PerLoad::new();

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    STATE.with(|state| f(&mut state.registry.borrow_mut()))
}

fn count(counter: fn(&Counts) -> &Total) {
    STATE.with(|state| counter(&state.counts).bump());
}

/// The `INFO dreamtown` fields of this mechanism.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    let (waiters, queues) = with_registry(|r| (r.waiters, r.queues.len() as u64));
    STATE.with(|state| {
        let counts = &state.counts;
        vec![
            (c"waiters", waiters),
            (c"waiter_queues", queues),
            (c"waiters_served", counts.served.get()),
            (c"waiters_timed_out", counts.timed_out.get()),
            (c"waiters_gone", counts.gone.get()),
            (c"empty_wakeups", counts.empty_wakeups.get()),
            (c"waiters_undelivered", counts.undelivered.get()),
        ]
    })
}

/// Events that add elements to (or create) a key; the rest cannot bring work.
fn adds_work(event: &[u8]) -> bool {
    matches!(
        event,
        b"lpush"
            | b"rpush"
            | b"linsert"
            | b"lset"
            | b"zadd"
            | b"zincr"
            | b"restore"
            | b"rename_to"
            | b"copy_to"
            | b"move_to"
            | b"sortstore"
    ) || event.ends_with(b"store")
}

/// A keyspace event (`keyspace_events`): work may have arrived in `key`.
pub(super) fn on_keyspace_event(ctx: Ctx, event: &[u8], key: RawString) {
    if with_registry(|r| r.watched.is_empty()) || !adds_work(event) {
        return;
    }
    work_arrived_in(ctx, selected_db(ctx), bytes_of(key));
}

/// THE wake-up: call after putting work into a watched key (a Dreams
/// organization's ready list or deferred set, a Town agent's inbox or
/// urgent inbox) from anywhere, with the context in use and the key's
/// name; the first waiter that takes that kind of work is served after the
/// current command. Writes through the module's keys fire keyspace events
/// that already call this, as do native pushes; calling it again is cheap
/// and harmless (one pass per queue, whatever the number of calls).
pub fn work_arrived(ctx: Ctx, key: &[u8]) {
    work_arrived_in(ctx, selected_db(ctx), key);
}

fn work_arrived_in(ctx: Ctx, db: c_int, key: &[u8]) {
    let arm = with_registry(|r| {
        let Some((first, mask)) = r.watched.get(&db).and_then(|names| names.get(key)).cloned() else {
            return false;
        };
        let id = (db, first);
        let Some(queue) = r.queues.get_mut(&id) else { return false };
        if queue.serving {
            // A pass over this queue is running: it looks again after each serve.
            return false;
        }
        if queue.pending_mask == 0 {
            r.pending.push(id);
        }
        queue.pending_mask |= mask;
        if r.timer_armed {
            return false;
        }
        r.timer_armed = true;
        true
    });
    if arm {
        timer::after(ctx, 0, on_pending_timer);
    }
}

/// `SWAPDB` exchanged databases `a` and `b` (`server_events`): the work
/// under every watched key of both changed at once, with no keyspace event
/// per key. Every queue of either database is marked as a push would mark
/// it (all its kinds of work), and one pass serves whoever finds work now,
/// after the command, as Redis serves a `BLPOP` blocked on a swapped
/// database. O(queues).
pub fn databases_swapped(ctx: Ctx, a: c_int, b: c_int) {
    let arm = with_registry(|r| {
        let mut marked = false;
        for (id, queue) in r.queues.iter_mut() {
            if (id.0 != a && id.0 != b) || queue.serving {
                continue;
            }
            if queue.pending_mask == 0 {
                r.pending.push(id.clone());
            }
            queue.pending_mask |= queue.watched.iter().fold(0, |all, (_, mask)| all | mask);
            marked = true;
        }
        if !marked || r.timer_armed {
            return false;
        }
        r.timer_armed = true;
        true
    });
    if arm {
        timer::after(ctx, 0, on_pending_timer);
    }
}

/// Is any client blocked waiting for any queue? (Cheap: lets a caller
/// skip making the key name [`has_waiters`] looks up.)
pub fn anyone_waits() -> bool {
    with_registry(|r| !r.queues.is_empty())
}

/// Are clients blocked waiting for the queue whose first watched key is
/// `first` (in the session's database)?
pub fn has_waiters(session: &Session, first: &[u8]) -> bool {
    with_registry(|r| {
        if r.queues.is_empty() {
            return false;
        }
        let db = selected_db(session.ctx());
        r.queues.get(&(db, first.to_vec())).is_some_and(|queue| queue.len() > 0)
    })
}

/// Block the client of `session` as a waiter of `wait`, for `timeout_ms`
/// (0: forever); `argv` (the arguments after the command name) are given
/// back to `wait.serve` when work arrives; nil on timeout.
pub fn block(session: &Session, argv: &[&[u8]], timeout_ms: i64, wait: WaitOn<'_>) -> CommandResult {
    let ctx = session.ctx();
    let Some(&(first, _)) = wait.watched.first() else {
        return Err(CommandError::err("nothing to wait for"));
    };
    let db = selected_db(ctx);
    let seq = with_registry(|r| {
        r.next_seq += 1;
        r.next_seq
    });
    let private = OwnedString::new(&private_key(first, seq));
    let ticket = Ticket {
        queue: (db, first.to_vec()),
        interest: wait.interest,
        seq,
        delivery: None,
        before: wait.before,
        timeout: wait.timeout,
    };
    let Some(client) = blocked::block_on_key(ctx, &private, timeout_ms, ticket) else {
        return Err(CommandError::err("could not block the client"));
    };
    let user = current_user_name(ctx);
    let command = session.command_name().unwrap_or_default();
    let waiter = Waiter { client, user, command, args: argv.iter().map(|a| a.to_vec()).collect(), serve: wait.serve };
    let arm_due = with_registry(|r| {
        let id = (db, first.to_vec());
        if !r.queues.contains_key(&id) {
            let names = r.watched.entry(db).or_default();
            for (name, mask) in wait.watched {
                names.insert(name.to_vec(), (first.to_vec(), *mask));
            }
            r.queues.insert(
                id.clone(),
                Queue {
                    fifos: Vec::new(),
                    watched: wait.watched.iter().map(|(n, m)| (n.to_vec(), *m)).collect(),
                    probe: wait.probe,
                    pending_mask: 0,
                    serving: false,
                    due_timer: None,
                },
            );
        }
        let queue = r.queues.get_mut(&id)?;
        match queue.fifos.iter_mut().find(|(i, _)| *i == wait.interest) {
            Some((_, fifo)) => {
                fifo.insert(seq, waiter);
            }
            None => queue.fifos.push((wait.interest, BTreeMap::from([(seq, waiter)]))),
        }
        r.waiters += 1;
        wait.due_ms.map(|due| (id, due))
    });
    if let Some((id, due)) = arm_due {
        arm_due_timer(ctx, &id, due);
    }
    Ok(Reply::Blocked)
}

/// `dreamtown:waiter:{<tag>}:<seq>`: the hash tag of `first` keeps the slot.
fn private_key(first: &[u8], seq: u64) -> Vec<u8> {
    let tag = crate::cluster_slot::hash_tag(first);
    let mut name = b"dreamtown:waiter:{".to_vec();
    name.extend_from_slice(tag);
    name.extend_from_slice(b"}:");
    name.extend_from_slice(seq.to_string().as_bytes());
    name
}

impl Blocked for Ticket {
    /// A pass handing over a reply (synchronously, from
    /// `RedisModule_UnblockClient`), or a real timeout (also `CLIENT UNBLOCK`).
    fn on_timeout(ctx: Ctx, ticket: &mut Ticket) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let delivery = ticket.delivery.take();
            let before = ticket.before.take();
            match delivery {
                Some(result) => reply::send(ctx, &after(before, result)),
                None => {
                    let (id, interest, seq) = (ticket.queue.clone(), ticket.interest, ticket.seq);
                    if with_registry(|r| r.remove(ctx, &id, interest, seq)).is_some() {
                        count(|counts| &counts.timed_out);
                    }
                    let nil = ticket.timeout.clone();
                    reply::send(ctx, &after(before, Ok(nil)));
                }
            }
        }));
        if outcome.is_err() {
            reply::send_error(ctx, "internal error in a blocked call; please report this as a dreamtown bug");
        }
    }

    /// The client went away while waiting: leave the queue now.
    fn on_disconnect(ctx: Ctx, ticket: &mut Ticket) {
        let (id, interest, seq) = (ticket.queue.clone(), ticket.interest, ticket.seq);
        if with_registry(|r| r.remove(ctx, &id, interest, seq)).is_some() {
            count(|counts| &counts.gone);
        }
    }

    /// The blocked client is freed: make sure its entry is gone.
    fn on_free(ctx: Ctx, ticket: &mut Ticket) {
        if with_registry(|r| r.remove(ctx, &ticket.queue, ticket.interest, ticket.seq)).is_some() {
            count(|counts| &counts.gone);
        }
        if ticket.delivery.is_some() {
            // The client was freed between the pass and its reply (7.4
            // replies just before the event loop sleeps): a Dreams item
            // stays in flight (DREAMS.RECOVER), as for a worker that died.
            count(|counts| &counts.undelivered);
            log_warning(ctx, c"dreamtown: a served waiter went away before its reply was sent");
        }
    }
}

/// A waiter's answer: `result`, after the reply of what ran before it
/// blocked, if anything did (the protocol's `acked_then` shape, of
/// `DREAMS.DRAIN ... ACK` and `TOWN.RECV ... ACK`; an error goes alone:
/// what ran before stands).
fn after(before: Option<Reply>, result: CommandResult) -> CommandResult {
    match (before, result) {
        (Some(before), Ok(reply)) => Ok(Reply::acked_then(before, reply)),
        (_, result) => result,
    }
}

fn on_pending_timer(ctx: Ctx) {
    // Writes paused (write_gate): every pending queue keeps its mark
    // and its place, and the timer (still armed) looks again soon; O(1)
    // however many queues wait.
    if super::write_gate::check(ctx) == super::write_gate::Gate::Wait {
        super::write_gate::held_waiter_pass();
        timer::after(ctx, super::write_gate::POLL_MS, on_pending_timer);
        return;
    }
    let started = std::time::Instant::now();
    let pending = with_registry(|r| {
        r.timer_armed = false;
        std::mem::take(&mut r.pending)
    });
    for id in pending {
        serve_queue(ctx, &id);
    }
    latency::report(latency::WAITER_PASS, started);
}

fn on_due_timer(ctx: Ctx, id: QueueId) {
    let present = with_registry(|r| match r.queues.get_mut(&id) {
        Some(queue) => {
            queue.due_timer = None;
            // Due work is whatever the first watched key's kind is.
            queue.pending_mask |= queue.watched.iter().fold(0, |all, (_, m)| all | m);
            r.pending.retain(|p| *p != id);
            true
        }
        None => false,
    });
    if present {
        let started = std::time::Instant::now();
        serve_queue(ctx, &id);
        latency::report(latency::WAITER_PASS, started);
    }
}

fn arm_due_timer(ctx: Ctx, id: &QueueId, due_ms: i64) {
    let now = milliseconds();
    let earlier = with_registry(|r| {
        let queue = r.queues.get_mut(id)?;
        match queue.due_timer {
            Some((_, at)) if at <= due_ms => None,
            Some((timer, _)) => {
                queue.due_timer = None;
                Some(Some(timer))
            }
            None => Some(None),
        }
    });
    let Some(replaced) = earlier else { return };
    if let Some(timer) = replaced {
        stop_due_timer(ctx, timer);
    }
    let delay = due_ms.saturating_sub(now).max(0);
    let timer = timer::after_with(ctx, delay, id.clone(), on_due_timer);
    with_registry(|r| {
        if let Some(queue) = r.queues.get_mut(id) {
            queue.due_timer = Some((timer, due_ms));
        }
    });
}

fn stop_due_timer(ctx: Ctx, timer: TimerWith<QueueId>) {
    drop(timer::stop_with(ctx, timer));
}

/// The first waiter (lowest arrival number) among the FIFOs whose interest
/// meets `mask` and that are not `exhausted`, taken out.
fn take_first(id: &QueueId, mask: u8, exhausted: u8) -> Option<(u8, u64, Waiter)> {
    with_registry(|r| {
        let queue = r.queues.get_mut(id)?;
        let (interest, seq) = queue
            .fifos
            .iter()
            .filter(|(interest, fifo)| interest & mask != 0 && interest & !exhausted != 0 && !fifo.is_empty())
            .filter_map(|(interest, fifo)| fifo.keys().next().map(|seq| (*interest, *seq)))
            .min_by_key(|(_, seq)| *seq)?;
        let waiter = queue.fifos.iter_mut().find(|(i, _)| *i == interest)?.1.remove(&seq)?;
        Some((interest, seq, waiter))
    })
}

fn put_back(id: &QueueId, interest: u8, seq: u64, waiter: Waiter) {
    with_registry(|r| {
        if let Some((_, fifo)) = r.queues.get_mut(id).and_then(|q| q.fifos.iter_mut().find(|(i, _)| *i == interest)) {
            fifo.insert(seq, waiter);
        }
    });
}

/// Serve the waiters of one queue, first come first served, while there is
/// work for them.
fn serve_queue(ctx: Ctx, id: &QueueId) {
    // Serving writes (the item moves): not while writes are paused
    // (write_gate). The pending timer asks before it comes here; a due
    // timer's pass is held here.
    if super::write_gate::check(ctx) == super::write_gate::Gate::Wait {
        hold(ctx, id);
        return;
    }
    let Some((mask, probe, names)) = with_registry(|r| {
        let queue = r.queues.get_mut(id)?;
        let mask = std::mem::take(&mut queue.pending_mask);
        queue.serving = true;
        Some((mask, queue.probe, queue.watched.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()))
    }) else {
        return;
    };
    let in_db = DbScope::new(ctx);
    in_db.select(id.0);
    // A replica never serves (it has no waiters; a demoted master dropped
    // them): only a master writes.
    let master = !ContextFlags::of(ctx).is_replica();
    let server = Session::acting_as(ctx, None, &[]).ok();
    let mut exhausted = 0u8;
    let mut due: Option<i64> = None;
    while let (true, Some(server)) = (master, server.as_ref()) {
        let Some((interest, seq, waiter)) = take_first(id, mask, exhausted) else { break };
        let available = catch_unwind(AssertUnwindSafe(|| probe(server, &names))).unwrap_or_default();
        if let Some(at) = available.due_ms {
            due = Some(due.map_or(at, |d| d.min(at)));
        }
        if available.mask & interest == 0 {
            put_back(id, interest, seq, waiter);
            exhausted |= interest;
            continue;
        }
        // In a cluster, a waiter whose tenant's slot is moving (or no longer
        // served here) is answered -TRYAGAIN instead of served: nothing of a
        // tenant runs on a node that may hold only part of its keys
        // (migration_guard); its client retries where the tenant now is.
        let tenant = waiter.args.first().map(Vec::as_slice).unwrap_or_default();
        if !migration_guard::may_touch(ctx, tenant) {
            let refusal = migration_guard::moving(tenant);
            deliver(waiter, Err(refusal));
            continue;
        }
        let args: Vec<&[u8]> = waiter.args.iter().map(Vec::as_slice).collect();
        let call: Vec<&[u8]> = std::iter::once(waiter.command.as_slice()).chain(args.iter().copied()).collect();
        let result = match Session::acting_as(ctx, waiter.user.as_deref(), &call) {
            Ok(session) => catch_unwind(AssertUnwindSafe(|| (waiter.serve)(&session, &args))).unwrap_or_else(|_| {
                Some(Err(CommandError::err(
                    "internal error: the blocked call failed; please report this as a dreamtown bug",
                )))
            }),
            Err(error) => Some(Err(error)),
        };
        match result {
            Some(result) => deliver(waiter, result),
            None => {
                count(|counts| &counts.empty_wakeups);
                put_back(id, interest, seq, waiter);
                exhausted |= interest;
            }
        }
    }
    with_registry(|r| {
        if let Some(queue) = r.queues.get_mut(id) {
            queue.serving = false;
        }
    });
    if let Some(at) = due {
        arm_due_timer(ctx, id, at);
    }
    with_registry(|r| r.drop_if_idle(ctx, id));
}

/// Writes are paused: keep the queue's pass for later. Its pending mark
/// stays (a due timer's pass set it for every kind), it goes back on the
/// pending list (O(pending), as the due timer's own removal from it), and
/// the pending timer looks again `write_gate::POLL_MS` later; the waiters
/// keep their places and their timeouts.
fn hold(ctx: Ctx, id: &QueueId) {
    let arm = with_registry(|r| {
        let Some(queue) = r.queues.get_mut(id) else { return false };
        if queue.pending_mask == 0 {
            queue.pending_mask = queue.watched.iter().fold(0, |all, (_, m)| all | m);
        }
        if !r.pending.contains(id) {
            r.pending.push(id.clone());
        }
        !std::mem::replace(&mut r.timer_armed, true)
    });
    super::write_gate::held_waiter_pass();
    if arm {
        timer::after(ctx, super::write_gate::POLL_MS, on_pending_timer);
    }
}

/// Hand `result` to `waiter` (already out of its queue) and unblock it.
/// Redis 7.0 (and Valkey) runs our timeout callback, which sends the
/// reply, inside `RedisModule_UnblockClient`; Redis 7.4 runs it in the
/// blocked-client handling before the event loop sleeps, with no command
/// in between. Either way the work moved in this pass.
fn deliver(waiter: Waiter, result: CommandResult) {
    with_registry(|r| r.waiters = r.waiters.saturating_sub(1));
    count(|counts| &counts.served);
    waiter.client.unblock_with(|ticket| ticket.delivery = Some(result));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_key_keeps_the_hash_tag() {
        assert_eq!(private_key(b"exocortex:dreams:{acme}:queue", 7), b"dreamtown:waiter:{acme}:7".to_vec());
        assert_eq!(private_key(b"tt:{town}:inbox:a", 12), b"dreamtown:waiter:{town}:12".to_vec());
        assert_eq!(private_key(b"plain", 1), b"dreamtown:waiter:{plain}:1".to_vec());
    }

    #[test]
    fn only_adding_events_bring_work() {
        for event in
            ["lpush", "rpush", "linsert", "zadd", "restore", "rename_to", "copy_to", "sortstore", "zunionstore"]
        {
            assert!(adds_work(event.as_bytes()), "{event}");
        }
        for event in ["lpop", "rpop", "lrem", "ltrim", "del", "zrem", "expired", "rename_from"] {
            assert!(!adds_work(event.as_bytes()), "{event}");
        }
    }
}
