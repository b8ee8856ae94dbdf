//! The Redis strings naming the most recent agent's keys and its town's
//! index keys, kept from one command to the next (as
//! `stores::dreams::queue_names` keeps an organization's queue keys).
//!
//! An agent's loop names the same keys call after call: a reliable
//! receive that acknowledges (`TOWN.RECV ... RELIABLE ACK`) opens its
//! inbox, urgent inbox, pending list and lease set, a send the recipient's
//! two inboxes; making and freeing each string costs about 700
//! instructions. So the names of the last agent are kept, each made when
//! first asked for (a workload spread over many agents makes no name it
//! did not make before, and pays one comparison of the agent id more),
//! and shared as [`KeyName::Shared`], whose `Rc` keeps a string alive
//! while any key holds it, also after the cache has moved on. Redis takes
//! its own reference or copy wherever it keeps a key name, so a shared
//! string is never changed under anyone.

use std::cell::RefCell;
use std::rc::Rc;

use crate::glue::module_state::PerLoad;
use crate::glue::string::{KeyName, OwnedString};
use crate::town::keys::{AgentKey, IndexKey, TownKeys};

const AGENT_KEYS: usize = 7;
const INDEX_KEYS: usize = 3;

/// The names made so far for one town and one agent of it.
struct Names {
    /// The town's key prefix (`tt:{town}`).
    town: String,
    /// The agent whose names `agent_keys` holds.
    agent: String,
    agent_keys: [Option<Rc<OwnedString>>; AGENT_KEYS],
    index_keys: [Option<Rc<OwnedString>>; INDEX_KEYS],
}

/// The last agent's names: a part of the module state (freed with it at
/// unload).
static LAST: PerLoad<RefCell<Option<Names>>> = PerLoad::new();

/// The name of `agent`'s `key` in `keys`' town, shared with the cache.
pub fn agent_name(keys: &TownKeys, key: AgentKey, agent: &str) -> KeyName {
    let make = || OwnedString::concat(&keys.agent_key_parts(key, agent));
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        let names = of_town(&mut last, keys);
        if names.agent != agent {
            names.agent.clear();
            names.agent.push_str(agent);
            names.agent_keys = Default::default();
        }
        KeyName::Shared(Rc::clone(names.agent_keys[agent_index(key)].get_or_insert_with(|| Rc::new(make()))))
    })
}

/// The name of `keys`' town's `index`, shared with the cache.
pub fn index_name(keys: &TownKeys, index: IndexKey) -> KeyName {
    let make = || OwnedString::concat(&keys.index_parts(index));
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        let names = of_town(&mut last, keys);
        KeyName::Shared(Rc::clone(names.index_keys[index_index(index)].get_or_insert_with(|| Rc::new(make()))))
    })
}

/// The cache's names, emptied first unless they are `keys`' town's.
fn of_town<'a>(slot: &'a mut Option<Names>, keys: &TownKeys) -> &'a mut Names {
    if slot.as_ref().is_some_and(|names| names.town != keys.prefix()) {
        *slot = None;
    }
    slot.get_or_insert_with(|| Names {
        town: keys.prefix().to_owned(),
        agent: String::new(),
        agent_keys: Default::default(),
        index_keys: Default::default(),
    })
}

fn agent_index(key: AgentKey) -> usize {
    match key {
        AgentKey::Record => 0,
        AgentKey::Inbox => 1,
        AgentKey::Urgent => 2,
        AgentKey::Pending => 3,
        AgentKey::Activity => 4,
        AgentKey::Stop => 5,
        AgentKey::Leases => 6,
    }
}

fn index_index(index: IndexKey) -> usize {
    match index {
        IndexKey::Agents => 0,
        IndexKey::Tasks => 1,
        IndexKey::Mailboxes => 2,
    }
}
