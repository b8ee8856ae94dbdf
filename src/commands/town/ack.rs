//! `TOWN.ACK <town> <agent> <message-id> [<message-id> ...]`: acknowledge
//! messages received with `RELIABLE`, removing for each id the first
//! pending message whose `id` it is; when that message's lease ran out, it
//! is removed from the inbox it went back to. Several ids (as `XACK` takes
//! them) are acknowledged in order, exactly as one `TOWN.ACK` per id would,
//! in one command: an agent that received a batch acknowledges it in one
//! round trip. Reply: how many messages were removed (0 or 1 per id).
//! Several ids cost one pass over the pending list (and over the inbox
//! only for ids whose lease ran out), not one per id.

use super::{AGENT_ARG, TOWN_ARG};
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::access::ReadWrite;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::{Checked, Session};
use crate::metrics::count;
use crate::stores::leases::RedisLeases;
use crate::stores::town::leases::{check_leases, MailChecked, RedisMail};
use crate::town::keys::TownKeys;
use crate::town::lease::{acknowledge, acknowledge_many, AgentMail};
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::ACK,
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: -4,
    summary: "Acknowledge reliably received messages by their ids, removing them from the agent's pending list",
    complexity: "O(N+M) where N is the number of pending messages and M the number of ids",
    args: &[TOWN_ARG, AGENT_ARG, Arg::new("message-id", ArgKind::String).multiple()],
};

/// The parse step ([`request::Ack`]): the town, the agent and the ids
/// (at least one).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str, &'a [&'a [u8]]), CommandError> {
    let request = request::Ack::parse(argv)?;
    Ok((TownKeys::new(request.town), request.agent, request.ids))
}

/// The most ids acknowledged one after another (see `run`).
const SMALL_BATCH: usize = 32;

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, ids) = parse(argv)?;
    let mut ack = AckKeys::check(session, &keys, agent)?.open(session)?;
    // One id, or a small batch over a pending list no longer than it (one
    // consumer acknowledging what it received: each id is found at or
    // near the head), costs least one id after another: at most
    // SMALL_BATCH x SMALL_BATCH messages read. Anything else takes one
    // pass over the pending list.
    let removed = match ids {
        [id] => u64::from(ack.acknowledge(id)),
        _ if ids.len() <= SMALL_BATCH && ack.mail.pending.len() <= ids.len() as u64 => {
            ids.iter().map(|id| u64::from(ack.acknowledge(id))).sum()
        }
        _ => ack.acknowledge_many(ids),
    };
    count::town(&keys, Some(agent), &[(Town::Acked, removed)]);
    Ok(Reply::of(reply::Count(removed)))
}

/// The keys an acknowledgement may write: what `TOWN.ACK` and the `ACK`
/// clause of `TOWN.RECV` both open, the same way.
pub struct AckKeys {
    /// The pending list and the inbox.
    pub mail: RedisMail,
    /// The lease set.
    pub leases: RedisLeases,
}

/// The keys of an acknowledgement, checked and not yet opened.
pub struct AckChecked {
    mail: MailChecked,
    leases: Checked<ReadWrite>,
}

impl AckKeys {
    /// Check `agent`'s pending list, inbox and lease set.
    pub fn check(session: &Session, keys: &TownKeys, agent: &str) -> Result<AckChecked, CommandError> {
        Ok(AckChecked { mail: RedisMail::check(session, keys, agent)?, leases: check_leases(session, keys, agent)? })
    }
}

impl AckChecked {
    /// Open them (each type-checked, in that order) before anything is written.
    pub fn open(self, session: &Session) -> Result<AckKeys, CommandError> {
        let mail = self.mail.open(session)?;
        let leases = RedisLeases::open(session, self.leases)?;
        Ok(AckKeys { mail, leases })
    }
}

impl AckKeys {
    /// Acknowledge message `wanted` ([`acknowledge`]); whether a message
    /// was removed. The caller counts what was removed ([`Town::Acked`]),
    /// with whatever else it counts.
    pub fn acknowledge(&mut self, wanted: &[u8]) -> bool {
        acknowledge(&mut self.mail, &mut self.leases, wanted)
    }

    /// Acknowledge `ids` in order, exactly as [`AckKeys::acknowledge`] of
    /// each would, in one pass over the pending list
    /// ([`acknowledge_many`]); how many messages were removed.
    pub fn acknowledge_many(&mut self, ids: &[&[u8]]) -> u64 {
        let mut scanned = Scanned { mail: &mut self.mail, read: 0 };
        let removed = acknowledge_many(&mut scanned, &mut self.leases, ids).iter().filter(|&&gone| gone).count() as u64;
        count::town_server(Town::AckScanned, scanned.read);
        removed
    }
}

/// Mail that counts the messages a scan reads (`INFO`: `ack_messages_scanned`).
struct Scanned<'a> {
    mail: &'a mut RedisMail,
    read: u64,
}

impl AgentMail for Scanned<'_> {
    fn pending(&self) -> Vec<Vec<u8>> {
        self.mail.pending()
    }
    fn remove_pending(&mut self, message: &[u8]) -> bool {
        self.mail.remove_pending(message)
    }
    fn remove_first_pending(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        self.mail.remove_first_pending(matches)
    }
    fn remove_first_inbox(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        self.mail.remove_first_inbox(matches)
    }
    fn push_inbox_head(&mut self, messages: &[Vec<u8>]) {
        self.mail.push_inbox_head(messages);
    }
    fn scan_pending(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        let read = &mut self.read;
        self.mail.scan_pending(&mut |index, message| {
            *read += 1;
            visit(index, message)
        });
    }
    fn scan_inbox(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        let read = &mut self.read;
        self.mail.scan_inbox(&mut |index, message| {
            *read += 1;
            visit(index, message)
        });
    }
    fn remove_pending_at(&mut self, index: u64, message: &[u8]) {
        self.mail.remove_pending_at(index, message);
    }
    fn remove_inbox_at(&mut self, index: u64, message: &[u8]) {
        self.mail.remove_inbox_at(index, message);
    }
}
