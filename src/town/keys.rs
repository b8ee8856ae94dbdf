//! Key and channel names of a town: `tt:{<town>}:<kind>:<id>`, with the
//! town as a literal hash tag so a whole town lives in one cluster slot,
//! and the module-kept indexes that let listing and reset find a town's
//! keys without scanning the keyspace.

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
    pub fn new(town: &str) -> Self {
        Self { base: ["tt:{", town, "}"].concat() }
    }

    /// `tt:{town}:<kind>:<id>` as the parts to concatenate (so the glue
    /// can build a name without a `String` in between).
    fn parts<'a>(&'a self, kind: &'a str, id: &'a str) -> [&'a str; 5] {
        [&self.base, ":", kind, ":", id]
    }

    fn of(&self, kind: &str, id: &str) -> String {
        self.parts(kind, id).concat()
    }

    /// The name of `agent`'s `key`, as the parts to concatenate.
    pub fn agent_key_parts<'a>(&'a self, key: AgentKey, agent: &'a str) -> [&'a str; 5] {
        self.parts(key.kind(), agent)
    }

    /// The name of an index, as the parts to concatenate.
    pub fn index_parts(&self, index: IndexKey) -> [&str; 5] {
        let name = match index {
            IndexKey::Agents => "agents",
            IndexKey::Tasks => "tasks",
            IndexKey::Mailboxes => "mailboxes",
        };
        self.parts("index", name)
    }

    /// `tt:{town}`: what every key of the town starts with (names the
    /// town in the module's per-tenant tables).
    pub fn prefix(&self) -> &str {
        &self.base
    }

    /// `tt:{town}:inbox:<agent>`.
    pub fn inbox(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Inbox, agent).concat()
    }

    /// `tt:{town}:urgent:<agent>`.
    pub fn urgent(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Urgent, agent).concat()
    }

    /// `tt:{town}:leases:<agent>`.
    pub fn leases(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Leases, agent).concat()
    }

    /// `tt:{town}:pending:<agent>`.
    pub fn pending(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Pending, agent).concat()
    }

    /// `tt:{town}:agent:<agent>`.
    pub fn agent(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Record, agent).concat()
    }

    /// `tt:{town}:activity:<agent>`.
    pub fn activity(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Activity, agent).concat()
    }

    /// `tt:{town}:stop:<agent>`.
    pub fn stop(&self, agent: &str) -> String {
        self.agent_key_parts(AgentKey::Stop, agent).concat()
    }

    /// Every key of `agent`.
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
    pub fn task(&self, task: &str) -> String {
        self.of("task", task)
    }

    /// `tt:{town}:backlog`: task ids waiting for an agent (list).
    pub fn backlog(&self) -> String {
        [&self.base, ":backlog"].concat()
    }

    /// `tt:{town}:docket:tasks` (stream, plain commands).
    pub fn docket_tasks(&self) -> String {
        self.of("docket", "tasks")
    }

    /// `tt:{town}:docket:events` (stream, plain commands).
    pub fn docket_events(&self) -> String {
        self.of("docket", "events")
    }

    /// `tt:{town}:events` (stream, plain commands).
    pub fn events(&self) -> String {
        [&self.base, ":events"].concat()
    }

    /// The pub/sub channel `tt:{town}:broadcast`.
    pub fn broadcast(&self) -> String {
        [&self.base, ":broadcast"].concat()
    }

    /// `tt:{town}:index:agents`: hash of agent id to name.
    pub fn agent_index(&self) -> String {
        self.index_parts(IndexKey::Agents).concat()
    }

    /// `tt:{town}:index:tasks`: sorted set of task ids (score 0).
    pub fn task_index(&self) -> String {
        self.index_parts(IndexKey::Tasks).concat()
    }

    /// `tt:{town}:index:mailboxes`: sorted set of agent ids that have any
    /// per-agent key the module created.
    pub fn mailbox_index(&self) -> String {
        self.index_parts(IndexKey::Mailboxes).concat()
    }
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
}
