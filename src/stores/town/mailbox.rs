//! An agent's message lists over the key API: the inbox and the urgent
//! inbox (always opened together, so a delivery always has its list), and
//! single lists such as the pending list; each opened with ACL and type
//! checks up front so every later write is certain to succeed.

use super::names;
use crate::glue::key::{End, Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Access, Session};
use crate::town::keys::{AgentKey, TownKeys};
use crate::town::priority::Destination;

/// Check ACL for the list `name`, open it and refuse a non-list.
pub fn open_list(session: &Session, name: &str, access: Access) -> Result<Key, CommandError> {
    let list = session.open(name.as_bytes(), access)?;
    list.require(KeyKind::List)?;
    Ok(list)
}

/// [`open_list`] of one of `agent`'s lists (the name built on the stack,
/// no `String` in between).
pub fn open_agent_list(
    session: &Session,
    keys: &TownKeys,
    key: AgentKey,
    agent: &str,
    access: Access,
) -> Result<Key, CommandError> {
    let [name] = session.check_strings([names::agent_name(keys, key, agent)], access)?;
    let list = session.open_checked(name, access);
    list.require(KeyKind::List)?;
    Ok(list)
}

/// One agent's two inboxes.
pub struct Inboxes {
    /// The normal inbox.
    pub inbox: Key,
    /// The urgent inbox.
    pub urgent: Key,
}

impl Inboxes {
    /// Open `agent`'s inboxes: both ACL checks first, then both type checks.
    pub fn open(session: &Session, keys: &TownKeys, agent: &str, access: Access) -> Result<Self, CommandError> {
        let names = [AgentKey::Inbox, AgentKey::Urgent].map(|key| names::agent_name(keys, key, agent));
        let [inbox, urgent] = session.check_strings(names, access)?;
        let inboxes = Self { inbox: session.open_checked(inbox, access), urgent: session.open_checked(urgent, access) };
        inboxes.inbox.require(KeyKind::List)?;
        inboxes.urgent.require(KeyKind::List)?;
        Ok(inboxes)
    }

    /// Put `message` where `destination` says; the new length of that list.
    pub fn deliver(&self, destination: Destination, message: &[u8]) -> u64 {
        let (list, end) = match destination {
            Destination::Urgent => (&self.urgent, End::Head),
            Destination::InboxHead => (&self.inbox, End::Head),
            Destination::InboxTail => (&self.inbox, End::Tail),
        };
        list.push(end, &[message]);
        list.len()
    }
}
