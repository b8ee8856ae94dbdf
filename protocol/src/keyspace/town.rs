//! Key and channel names of a town: `tt:{<town>}:<kind>:<id>`, with the
//! town as a literal hash tag so a whole town lives in one cluster slot,
//! and the module-kept indexes that let listing and reset find a town's
//! keys without scanning the keyspace; formatted ([`TownKeys`]) and parsed
//! ([`TownKey::parse`]).

use super::split_tag;

/// `tt:{` — every Town key starts with it, then the town and `}`.
pub const PREFIX: &str = "tt:{";

/// The names of one town's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TownKeys {
    base: String,
}

/// The keys that belong to one agent (everything `TOWN.AGENT DEL` removes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentKeys {
    /// The agent's record (hash).
    pub record: String,
    /// Normal inbox (list).
    pub inbox: String,
    /// Urgent inbox (list).
    pub urgent: String,
    /// Received but not yet acknowledged messages (list).
    pub pending: String,
    /// Recent activity, newest first (list).
    pub activity: String,
    /// Stop request flag (string with a TTL).
    pub stop: String,
    /// Lease deadlines of pending messages (sorted set).
    pub leases: String,
}

impl AgentKeys {
    /// Every key of the agent.
    #[inline]
    pub fn all(&self) -> [&str; 7] {
        [&self.record, &self.inbox, &self.urgent, &self.pending, &self.activity, &self.stop, &self.leases]
    }
}

/// One of an agent's own keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKey {
    /// `agent:<id>`, the record.
    Record,
    /// `inbox:<id>`.
    Inbox,
    /// `urgent:<id>`.
    Urgent,
    /// `pending:<id>`.
    Pending,
    /// `activity:<id>`.
    Activity,
    /// `stop:<id>`.
    Stop,
    /// `leases:<id>`: reliably received message ids by lease deadline.
    Leases,
}

impl AgentKey {
    #[inline]
    fn kind(self) -> &'static str {
        match self {
            Self::Record => "agent",
            Self::Inbox => "inbox",
            Self::Urgent => "urgent",
            Self::Pending => "pending",
            Self::Activity => "activity",
            Self::Stop => "stop",
            Self::Leases => "leases",
        }
    }
}

/// One of a town's module-kept indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKey {
    /// `index:agents`.
    Agents,
    /// `index:tasks`.
    Tasks,
    /// `index:mailboxes`.
    Mailboxes,
}

impl TownKeys {
    /// The keys of `town` (already validated: non-empty, no braces).
    #[inline]
    pub fn new(town: &str) -> Self {
        Self { base: [PREFIX, town, "}"].concat() }
    }

    /// `tt:{town}:<kind>:<id>` as the parts to concatenate (so the glue
    /// can build a name without a `String` in between).
    #[inline]
    fn parts<'a>(&'a self, kind: &'a str, id: &'a str) -> [&'a str; 5] {
        [&self.base, ":", kind, ":", id]
    }

    #[inline]
    fn of(&self, kind: &str, id: &str) -> String {
        self.parts(kind, id).concat()
    }

    /// The name of `agent`'s `key`, as the parts to concatenate.
    #[inline]
    pub fn agent_key_parts<'a>(&'a self, key: AgentKey, agent: &'a str) -> [&'a str; 5] {
        self.parts(key.kind(), agent)
    }

    /// The name of an index, as the parts to concatenate.
    #[inline]
    pub fn index_parts(&self, index: IndexKey) -> [&str; 5] {
        self.parts("index", index.name())
    }

    /// `tt:{town}`: what every key of the town starts with (names the
    /// town in the module's per-tenant tables).
    #[inline]
    pub fn prefix(&self) -> &str {
        &self.base
    }

    /// `tt:{town}:inbox:<agent>`.
    #[inline]
    pub fn inbox(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Inbox, agent).concat()
    }

    /// `tt:{town}:urgent:<agent>`.
    #[inline]
    pub fn urgent(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Urgent, agent).concat()
    }

    /// `tt:{town}:leases:<agent>`.
    #[inline]
    pub fn leases(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Leases, agent).concat()
    }

    /// `tt:{town}:pending:<agent>`.
    #[inline]
    pub fn pending(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Pending, agent).concat()
    }

    /// `tt:{town}:agent:<agent>`.
    #[inline]
    pub fn agent(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Record, agent).concat()
    }

    /// `tt:{town}:activity:<agent>`.
    #[inline]
    pub fn activity(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Activity, agent).concat()
    }

    /// `tt:{town}:stop:<agent>`.
    #[inline]
    pub fn stop(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Stop, agent).concat()
    }

    /// Every key of `agent`.
    #[inline]
    pub fn agent_keys(&self, agent: &str) -> AgentKeys {
        AgentKeys {
            record: self.agent(agent),
            inbox: self.inbox(agent),
            urgent: self.urgent(agent),
            pending: self.pending(agent),
            activity: self.activity(agent),
            stop: self.stop(agent),
            leases: self.leases(agent),
        }
    }

    /// `tt:{town}:task:<task>`.
    #[inline]
    pub fn task(&self, task: &str) -> String {
        self.of("task", task)
    }

    /// `tt:{town}:backlog`: task ids waiting for an agent (list).
    #[inline]
    pub fn backlog(&self) -> String {
        [&self.base, ":backlog"].concat()
    }

    /// `tt:{town}:docket:tasks` (stream, plain commands).
    #[inline]
    pub fn docket_tasks(&self) -> String {
        self.of("docket", "tasks")
    }

    /// `tt:{town}:docket:events` (stream, plain commands).
    #[inline]
    pub fn docket_events(&self) -> String {
        self.of("docket", "events")
    }

    /// `tt:{town}:events` (stream, plain commands).
    #[inline]
    pub fn events(&self) -> String {
        [&self.base, ":events"].concat()
    }

    /// The pub/sub channel `tt:{town}:broadcast`.
    #[inline]
    pub fn broadcast(&self) -> String {
        [&self.base, ":broadcast"].concat()
    }

    /// `tt:{town}:index:agents`: hash of agent id to name.
    #[inline]
    pub fn agent_index(&self) -> String {
        self.index_parts(IndexKey::Agents).concat()
    }

    /// `tt:{town}:index:tasks`: sorted set of task ids (score 0).
    #[inline]
    pub fn task_index(&self) -> String {
        self.index_parts(IndexKey::Tasks).concat()
    }

    /// `tt:{town}:index:mailboxes`: sorted set of agent ids that have any
    /// per-agent key the module created.
    #[inline]
    pub fn mailbox_index(&self) -> String {
        self.index_parts(IndexKey::Mailboxes).concat()
    }
}

impl AgentKey {
    /// Every key of an agent, in [`AgentKeys::all`]'s order.
    pub const ALL: [AgentKey; 7] =
        [Self::Record, Self::Inbox, Self::Urgent, Self::Pending, Self::Activity, Self::Stop, Self::Leases];
}

impl IndexKey {
    /// Every index of a town.
    pub const ALL: [IndexKey; 3] = [Self::Agents, Self::Tasks, Self::Mailboxes];

    #[inline]
    fn name(self) -> &'static str {
        match self {
            Self::Agents => "agents",
            Self::Tasks => "tasks",
            Self::Mailboxes => "mailboxes",
        }
    }
}

/// The `SCAN ... MATCH` glob of every town's module indexes.
pub const INDEX_GLOB: &str = "tt:{*}:index:*";

/// The `SCAN ... MATCH` glob of every town's mailbox index (one key per
/// town that has agents).
pub const MAILBOX_INDEX_GLOB: &str = "tt:{*}:index:mailboxes";

/// What a Town key (or channel) name names, after its town.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TownKey<'a> {
    /// One of an agent's keys, and the agent.
    Agent(AgentKey, &'a str),
    /// One of the town's indexes.
    Index(IndexKey),
    /// A task's record, and the task.
    Task(&'a str),
    /// The backlog list.
    Backlog,
    /// The docket's task stream.
    DocketTasks,
    /// The docket's event stream.
    DocketEvents,
    /// The town's event stream.
    Events,
    /// The broadcast channel.
    Broadcast,
}

impl<'a> TownKey<'a> {
    /// The town and the key `name` names, if it is a Town key: a town of
    /// no brace, an id (agent, task) non-empty and UTF-8 (it may hold `:`).
    pub fn parse(name: &'a [u8]) -> Option<(&'a str, TownKey<'a>)> {
        let (town, after) = split_tag(PREFIX, name)?;
        if town.contains('{') {
            return None;
        }
        let after = std::str::from_utf8(after).ok()?.strip_prefix(':')?;
        let key = match after {
            "backlog" => Self::Backlog,
            "events" => Self::Events,
            "broadcast" => Self::Broadcast,
            "docket:tasks" => Self::DocketTasks,
            "docket:events" => Self::DocketEvents,
            _ => {
                let (kind, id) = after.split_once(':')?;
                if id.is_empty() {
                    return None;
                }
                if kind == "index" {
                    Self::Index(IndexKey::ALL.into_iter().find(|index| index.name() == id)?)
                } else if kind == "task" {
                    Self::Task(id)
                } else {
                    Self::Agent(AgentKey::ALL.into_iter().find(|key| key.kind() == kind)?, id)
                }
            }
        };
        Some((town, key))
    }

    /// The name of this key in the town of `keys`.
    pub fn name(self, keys: &TownKeys) -> String {
        match self {
            Self::Agent(key, agent) => keys.agent_key_parts(key, agent).concat(),
            Self::Index(index) => keys.index_parts(index).concat(),
            Self::Task(task) => keys.task(task),
            Self::Backlog => keys.backlog(),
            Self::DocketTasks => keys.docket_tasks(),
            Self::DocketEvents => keys.docket_events(),
            Self::Events => keys.events(),
            Self::Broadcast => keys.broadcast(),
        }
    }
}

/// The town any key of the Town prefix names (up to the first `}`,
/// non-empty; braces not checked) and what follows its `}`: what a scan
/// of the keyspace finds.
pub fn tenant_of(key: &[u8]) -> Option<(&str, &[u8])> {
    split_tag(PREFIX, key)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_town_as_hash_tag() {
        let keys = TownKeys::new("acme");
        assert_eq!(keys.inbox("a1"), "tt:{acme}:inbox:a1");
        assert_eq!(keys.urgent("a1"), "tt:{acme}:urgent:a1");
        assert_eq!(keys.pending("a1"), "tt:{acme}:pending:a1");
        assert_eq!(keys.agent("a1"), "tt:{acme}:agent:a1");
        assert_eq!(keys.activity("a1"), "tt:{acme}:activity:a1");
        assert_eq!(keys.stop("a1"), "tt:{acme}:stop:a1");
        assert_eq!(keys.task("t1"), "tt:{acme}:task:t1");
        assert_eq!(keys.backlog(), "tt:{acme}:backlog");
        assert_eq!(keys.docket_tasks(), "tt:{acme}:docket:tasks");
        assert_eq!(keys.docket_events(), "tt:{acme}:docket:events");
        assert_eq!(keys.events(), "tt:{acme}:events");
        assert_eq!(keys.broadcast(), "tt:{acme}:broadcast");
        assert_eq!(keys.agent_index(), "tt:{acme}:index:agents");
        assert_eq!(keys.task_index(), "tt:{acme}:index:tasks");
        assert_eq!(keys.mailbox_index(), "tt:{acme}:index:mailboxes");
    }

    #[test]
    fn an_agent_owns_six_keys() {
        let keys = TownKeys::new("acme").agent_keys("a1");
        assert_eq!(
            keys.all(),
            [
                "tt:{acme}:agent:a1",
                "tt:{acme}:inbox:a1",
                "tt:{acme}:urgent:a1",
                "tt:{acme}:pending:a1",
                "tt:{acme}:activity:a1",
                "tt:{acme}:stop:a1",
                "tt:{acme}:leases:a1",
            ]
        );
    }

    #[test]
    fn names_parse_back() {
        let keys = TownKeys::new("acme");
        let mut all = vec![
            TownKey::Task("t:1"),
            TownKey::Backlog,
            TownKey::DocketTasks,
            TownKey::DocketEvents,
            TownKey::Events,
            TownKey::Broadcast,
        ];
        all.extend(AgentKey::ALL.map(|key| TownKey::Agent(key, "a:b")));
        all.extend(IndexKey::ALL.map(TownKey::Index));
        for key in all {
            let name = key.name(&keys);
            assert_eq!(TownKey::parse(name.as_bytes()), Some(("acme", key)), "{name}");
        }
        for bad in [
            &b"tt:{}:leases:a"[..],
            b"tt:{t}:pending:",
            b"tt:{t}:leases:",
            b"tt:{a{b}:leases:a",
            b"tt:{t}:other:a",
            b"tt:{t}:index:other",
            b"tt:{t}",
            b"tt:{t}:inbox:\xff",
            b"exocortex:dreams:{acme}:queue",
        ] {
            assert_eq!(TownKey::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(TownKey::parse(b"tt:{t}:leases:a:b"), Some(("t", TownKey::Agent(AgentKey::Leases, "a:b"))));
    }
}
