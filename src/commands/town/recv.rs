//! `TOWN.RECV <town> <agent> [BLOCK <secs>] [COUNT <n>] [URGENT] [RELIABLE]`:
//! take messages from the head of the urgent inbox, then of the inbox, up
//! to `COUNT` (default 1; with `URGENT` only the urgent inbox is read and
//! the default is all of it). Reply: the messages, head first.
//!
//! Without `BLOCK` it never blocks (empty array when there is nothing).
//! With `BLOCK` (decimal seconds, 0 = forever) it waits like `BLPOP` until
//! a message arrives, and replies nil on timeout (the null array, `*-1` in
//! RESP2, as `BLPOP`, `BLMPOP` and `XREADGROUP` do); inside MULTI or a
//! script it does not block (that nil at once, as `BLPOP` there). Nothing
//! is taken until the reply is made, so a client that disconnects while
//! blocked loses nothing.
//! `RELIABLE` also appends each message to the agent's pending list until
//! `TOWN.ACK`. `RELIABLE LEASE <secs>` (or the `dreamtown.town-lease`
//! config when absent and above 0) also leases each message by id: unless
//! acknowledged or extended in time, it goes back to the head of the inbox
//! by itself (see `crate::town::lease`).
//!
//! `ACK <message-id>` (with `RELIABLE`): the one-trip agent loop. The
//! message is acknowledged exactly as `TOWN.ACK` would (the same code:
//! [`super::ack`]) before the receive, and the reply is `[<the ACK's
//! count, 0 or 1>, <the receive's reply>]`. Every key of both halves is
//! checked (ACL, type) before the acknowledgement writes, so an error
//! means nothing changed; once applied (and replicated) it stands whatever
//! the receive then does: a timeout answers `[<count>, nil]` (that nil the
//! null array).

use super::ack::AckKeys;
use super::{AGENT_ARG, TOWN_ARG};
use crate::commands::options::{COUNT_ARG, LEASE_ARG};
use crate::commands::town::settings;
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::access::{Meta, ReadWrite, Write};
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::key::{End, Key, KeyKind};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::glue::string::OwnedString;
use crate::lease::{deadline, grant};
use crate::metrics::count;
use crate::services::waiters::{self, Available, WaitOn};
use crate::stores::leases::RedisLeases;
use crate::stores::town::index::IdIndex;
use crate::stores::town::leases::{self, check_leases};
use crate::stores::town::mailbox::{check_agent_list, open_list, Inboxes};
use crate::town::keys::{AgentKey, TownKeys};
use crate::town::message::message_id;
use crate::town::receive::ReceiveRequest;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request as _;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::RECV,
    entry: entry_point!(run),
    flags: "write blocking",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "Receive an agent's messages, urgent inbox first, optionally blocking and optionally keeping them pending until acknowledged",
    complexity: "O(N) where N is the number of messages returned",
    args: &[
        TOWN_ARG,
        AGENT_ARG,
        Arg::new("timeout", ArgKind::Double).token("BLOCK").optional(),
        COUNT_ARG,
        Arg::flag("URGENT"),
        Arg::flag("RELIABLE"),
        LEASE_ARG,
        Arg::new("message-id", ArgKind::String).token("ACK").optional(),
    ],
};

pub(crate) struct Request<'a> {
    keys: TownKeys,
    agent: &'a str,
    block_ms: Option<i64>,
    receive: ReceiveRequest,
    reliable: bool,
    /// Lease length in seconds (reliable receives only).
    lease: Option<f64>,
    /// `ACK <message-id>`.
    ack: Option<&'a [u8]>,
}

/// The parse step ([`request::Recv`]), with the `dreamtown.town-lease`
/// config as the lease of a reliable receive that names none.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<Request<'a>, CommandError> {
    let request = request::Recv::parse(argv)?;
    let lease = match request.reliable {
        true => request.lease.or_else(settings::town_lease_secs),
        false => None,
    };
    Ok(Request {
        keys: TownKeys::new(request.town),
        agent: request.agent,
        block_ms: request.block_ms,
        receive: ReceiveRequest { count: request.count, urgent_only: request.urgent },
        reliable: request.reliable,
        lease,
        ack: request.ack,
    })
}

/// The keys a receive may write, opened (ACL and type checked) before
/// anything is written.
struct ReceiveKeys {
    inboxes: Inboxes<ReadWrite>,
    pending: Option<(Key<ReadWrite>, IdIndex<Write>)>,
    leases: Option<RedisLeases>,
}

fn open_keys(session: &Session, request: &Request<'_>) -> Result<ReceiveKeys, CommandError> {
    let inboxes = Inboxes::<ReadWrite>::check(session, &request.keys, request.agent)?;
    let pending = match request.reliable {
        true => Some((
            check_agent_list::<ReadWrite>(session, &request.keys, AgentKey::Pending, request.agent)?,
            IdIndex::<Write>::mailboxes(session, &request.keys)?,
        )),
        false => None,
    };
    let leases = request.lease.map(|_| check_leases::<ReadWrite>(session, &request.keys, request.agent)).transpose()?;
    let inboxes = inboxes.open(session)?;
    let pending = match pending {
        Some((list, index)) => Some((open_list(session, list)?, IdIndex::open(session, index)?)),
        None => None,
    };
    let leases = leases.map(|leases| RedisLeases::open(session, leases)).transpose()?;
    Ok(ReceiveKeys { inboxes, pending, leases })
}

/// The keys of `ACK <id>` and of the receive after it, each checked and
/// opened once, all checked (ACL, then type) before the acknowledgement
/// writes: the urgent inbox and the mailbox index (the receive's own),
/// then the acknowledgement's (pending list, inbox, lease set) as
/// `TOWN.ACK` opens them. The receive reuses the acknowledgement's handles.
fn open_one_trip(
    session: &Session,
    request: &Request<'_>,
) -> Result<(AckKeys, Key<ReadWrite>, IdIndex<Write>), CommandError> {
    let urgent = check_agent_list::<ReadWrite>(session, &request.keys, AgentKey::Urgent, request.agent)?;
    let mailboxes = IdIndex::<Write>::mailboxes(session, &request.keys)?;
    let ack = AckKeys::check(session, &request.keys, request.agent)?;
    let urgent = open_list(session, urgent)?;
    let mailboxes = IdIndex::open(session, mailboxes)?;
    let ack = ack.open(session)?;
    Ok((ack, urgent, mailboxes))
}

/// Take what there is now (possibly nothing) through `keys`, and count it
/// for the town and agent with the `acked` messages of an `ACK` clause.
/// The messages stay in the Redis strings the pops returned: pushed onto
/// the pending list and replied as they are.
fn receive_now(session: &Session, request: &Request<'_>, keys: ReceiveKeys, acked: u64) -> Vec<OwnedString> {
    let ReceiveKeys { inboxes, pending, leases } = keys;
    let take = request.receive.take(inboxes.urgent.len(), inboxes.inbox.len());
    if take.is_empty() {
        count::town(&request.keys, Some(request.agent), &[(Town::Acked, acked)]);
        return Vec::new();
    }
    let mut messages = inboxes.urgent.pop_many_strings(End::Head, take.urgent);
    messages.extend(inboxes.inbox.pop_many_strings(End::Head, take.inbox));
    let count = messages.len() as u64;
    let mut reliable = 0;
    if let Some((pending, mailboxes)) = pending {
        pending.push_strings(End::Tail, &messages);
        mailboxes.add(request.agent);
        reliable = count;
    }
    let counts = [(Town::Acked, acked), (Town::Received, count), (Town::ReceivedReliable, reliable)];
    count::town(&request.keys, Some(request.agent), &counts);
    if let (Some(mut leases), Some(secs)) = (leases, request.lease) {
        let now_ms = session.now_ms();
        let until = deadline(now_ms, secs).unwrap_or(now_ms.saturating_add(1));
        let mut granted = false;
        for message in &messages {
            // A message without an id cannot be acknowledged, so not leased.
            if let Some(id) = message_id(message.as_bytes()) {
                grant(&mut leases, id.as_bytes(), until);
                granted = true;
            }
        }
        if granted {
            leases::note(session, &request.keys, request.agent, until);
        }
    }
    messages
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let request = parse(argv)?;
    let (keys, before) = match request.ack {
        Some(wanted) => {
            let (mut ack, urgent, mailboxes) = open_one_trip(session, &request)?;
            let removed = ack.acknowledge(wanted);
            let AckKeys { mail, leases } = ack;
            // The lease set stays open only for a receive that leases.
            let leases = request.lease.map(|_| leases);
            let keys = ReceiveKeys {
                inboxes: Inboxes { inbox: mail.inbox, urgent },
                pending: Some((mail.pending, mailboxes)),
                leases,
            };
            (keys, Some(removed))
        }
        None => (open_keys(session, &request)?, None),
    };
    let acked = before.map_or(0, u64::from);
    let before = before.map(|removed| Reply::of(reply::Flag(removed)));
    let answer = |received: reply::Recv<OwnedString>| {
        let received = Reply::of_strings(received);
        match &before {
            Some(acked) => Reply::acked_then(acked.clone(), received),
            None => received,
        }
    };
    let messages = receive_now(session, &request, keys, acked);
    if !messages.is_empty() {
        return Ok(answer(reply::Recv::Messages(messages)));
    }
    let Some(timeout_ms) = request.block_ms else {
        // Nothing, and no wait: the empty array.
        return Ok(answer(reply::Recv::Messages(Vec::new())));
    };
    if !session.may_block() {
        // Inside MULTI or a script: timed out at once, as `BLPOP` there.
        return Ok(answer(reply::Recv::TimedOut));
    }
    // A blocked call waits with its arguments less the ACK clause.
    let without_ack: Vec<&[u8]>;
    let wait_argv = match request.ack.and_then(|_| request::Recv::ack_clause_at(argv)) {
        Some(at) => {
            without_ack = argv.iter().enumerate().filter(|(i, _)| *i != at && *i != at + 1).map(|(_, a)| *a).collect();
            without_ack.as_slice()
        }
        None => argv,
    };
    let urgent = request.keys.urgent(request.agent);
    let inbox = request.keys.inbox(request.agent);
    let interest = if request.receive.urgent_only { URGENT } else { URGENT | INBOX };
    let wait = WaitOn {
        watched: &[(inbox.as_bytes(), INBOX), (urgent.as_bytes(), URGENT)],
        interest,
        probe,
        serve,
        due_ms: None,
        before,
        timeout: Reply::of_strings(reply::Recv::TimedOut),
    };
    waiters::block(session, wait_argv, timeout_ms, wait)
}

/// Work in the inbox.
const INBOX: u8 = 1;
/// Work in the urgent inbox.
const URGENT: u8 = 2;

/// Which of the agent's inboxes hold messages (another type counts: the
/// receive replies WRONGTYPE to the waiter, as before).
fn probe(session: &Session, watched: &[Vec<u8>]) -> Available {
    let mut mask = 0;
    for (name, kind) in watched.iter().zip([INBOX, URGENT]) {
        let Ok(key) = session.check::<Meta>(&name[..]).and_then(|key| key.open(session)) else { continue };
        if key.kind() != KeyKind::Empty && (key.kind() != KeyKind::List || !key.is_empty()) {
            mask |= kind;
        }
    }
    Available { mask, due_ms: None }
}

/// A watched inbox got messages: take what is there now, or keep waiting
/// if another receiver got them first.
fn serve(session: &Session, argv: &[&[u8]]) -> Option<CommandResult> {
    let request = match parse(argv) {
        Ok(request) => request,
        Err(error) => return Some(Err(error)),
    };
    let keys = match open_keys(session, &request) {
        Ok(keys) => keys,
        Err(error) => return Some(Err(error)),
    };
    match receive_now(session, &request, keys, 0) {
        messages if messages.is_empty() => None,
        messages => Some(Ok(Reply::of_strings(reply::Recv::Messages(messages)))),
    }
}
