//! The module-kept indexes of a town, so that listing, lookup by name and
//! reset never scan the keyspace: the agent index (hash of agent id to
//! name), the task index (sorted set of task ids, score 0, so ids come
//! back in byte order) and the mailbox index (sorted set of every agent id
//! the module created a per-agent key for). Each write is skipped when the
//! index already says the same, so steady-state traffic replicates nothing
//! extra.

use super::names;
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Access, Session};
use crate::town::keys::{IndexKey, TownKeys};

fn open(
    session: &Session,
    keys: &TownKeys,
    index: IndexKey,
    kind: KeyKind,
    access: Access,
) -> Result<Key, CommandError> {
    let [name] = session.check_strings([names::index_name(keys, index)], access)?;
    let key = session.open_checked(name, access);
    key.require(kind)?;
    Ok(key)
}

/// A sorted set of ids (the task index or the mailbox index).
pub struct IdIndex(Key);

impl IdIndex {
    /// The mailbox index of `keys`' town.
    pub fn mailboxes(session: &Session, keys: &TownKeys, access: Access) -> Result<Self, CommandError> {
        open(session, keys, IndexKey::Mailboxes, KeyKind::ZSet, access).map(Self)
    }

    /// The task index of `keys`' town.
    pub fn tasks(session: &Session, keys: &TownKeys, access: Access) -> Result<Self, CommandError> {
        open(session, keys, IndexKey::Tasks, KeyKind::ZSet, access).map(Self)
    }

    /// Make sure `id` is in the index.
    pub fn add(&self, id: &str) {
        if !self.0.zcontains(id.as_bytes()) {
            self.0.zadd(0.0, id.as_bytes());
        }
    }

    /// Take `id` out of the index.
    pub fn remove(&self, id: &str) {
        self.0.zrem(&[id.as_bytes()]);
    }

    /// Every id, in byte order. Ids are UTF-8 when the module wrote them;
    /// anything else was written by hand and names no key of ours.
    pub fn ids(&self) -> Vec<String> {
        self.0.zmembers().into_iter().filter_map(|id| String::from_utf8(id).ok()).collect()
    }
}

/// The agent index: agent id to name.
pub struct AgentIndex(Key);

impl AgentIndex {
    /// Open the agent index of `keys`' town.
    pub fn open(session: &Session, keys: &TownKeys, access: Access) -> Result<Self, CommandError> {
        open(session, keys, IndexKey::Agents, KeyKind::Hash, access).map(Self)
    }

    /// Record `agent`'s `name`.
    pub fn set(&self, agent: &str, name: &[u8]) {
        if self.0.hget(agent.as_bytes()).as_deref() != Some(name) {
            self.0.hset(&[(agent.as_bytes(), name)]);
        }
    }

    /// Forget `agent`.
    pub fn remove(&self, agent: &str) {
        self.0.hdel(&[agent.as_bytes()]);
    }

    /// Every `(agent id, name)`, by agent id.
    pub fn entries(&self) -> Vec<(String, Vec<u8>)> {
        let mut entries: Vec<(String, Vec<u8>)> = self
            .0
            .hgetall()
            .into_iter()
            .filter_map(|(id, name)| String::from_utf8(id).ok().map(|id| (id, name)))
            .collect();
        entries.sort();
        entries
    }
}
