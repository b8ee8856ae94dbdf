//! The schemas of the per-tenant statistics replies, `DREAMS.STATS <org>`
//! and `TOWN.STATS <town> [<agent>]`: each level field (a length, an age,
//! a limit: not a counted total, which `dreamtown::events` declares) with
//! the exporter's metric and help. The module names its reply fields from
//! these constants; the exporter iterates the lists of each family's
//! module here (`FIELDS` in `dreams`, `TOWN_FIELDS` and `AGENT_FIELDS` in
//! `town`).

/// A field of a STATS reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The field's name in the reply.
    pub name: &'static str,
    /// The exporter's gauge for it (`_ms` values become seconds), if it
    /// exports one.
    pub metric: Option<&'static str>,
    /// What it measures, for a person reading a dashboard.
    pub help: &'static str,
}

const fn stat(name: &'static str, metric: &'static str, help: &'static str) -> Stat {
    Stat { name, metric: Some(metric), help }
}

/// `now_ms`: the server's clock when it answered (ages are from it).
pub const NOW_MS: Stat = Stat { name: "now_ms", metric: None, help: "The server's clock when it answered (unix ms)" };

/// `totals_tracked`: whether this node counts the tenant's totals.
pub const TOTALS_TRACKED: Stat = Stat {
    name: "totals_tracked",
    metric: None,
    help: "1 when this node counts the tenant's totals, 0 beyond its table's caps",
};

/// `totals_since_ms`: when this node started counting the tenant's totals.
pub const TOTALS_SINCE_MS: Stat = Stat {
    name: "totals_since_ms",
    metric: None,
    help: "When the node started counting the tenant's totals (unix ms)",
};

/// `DREAMS.STATS <org>`.
pub mod dreams {
    use super::{stat, Stat, TOTALS_SINCE_MS};

    /// Fires in the ready list.
    pub const READY: Stat = stat("ready", "dreamtown_dreams_ready", "Fires in the ready list");
    /// Fires deferred by quiet hours.
    pub const DEFERRED: Stat = stat("deferred", "dreamtown_dreams_deferred", "Fires deferred by quiet hours");
    /// Fires in flight.
    pub const IN_FLIGHT: Stat =
        stat("in_flight", "dreamtown_dreams_in_flight", "Fires drained and not yet acknowledged");
    /// Dead letters.
    pub const DEAD_LETTERS: Stat =
        stat("dead_letters", "dreamtown_dreams_dead_letters", "Items in the dead-letter list");
    /// Leased in-flight fires.
    pub const LEASED: Stat = stat("leased", "dreamtown_dreams_leased", "In-flight fires with a running lease");
    /// Expired leases whose late ACK is still honoured.
    pub const EXPIRED_LEASES_WAITING: Stat = stat(
        "expired_leases_waiting",
        "dreamtown_dreams_expired_leases_waiting",
        "Fires whose lease ran out, back in ready, a late ACK still honoured",
    );
    /// The earliest lease deadline.
    pub const NEXT_LEASE_DEADLINE_MS: Stat = stat(
        "next_lease_deadline_ms",
        "dreamtown_dreams_next_lease_deadline_timestamp_seconds",
        "The earliest lease deadline (unix time)",
    );
    /// Age of the oldest deferral.
    pub const OLDEST_DEFERRED_AGE_MS: Stat = stat(
        "oldest_deferred_age_ms",
        "dreamtown_dreams_oldest_deferred_age_seconds",
        "Age of the oldest quiet-hours deferral",
    );
    /// Age of the next fire a drain takes.
    pub const OLDEST_READY_AGE_MS: Stat = stat(
        "oldest_ready_age_ms",
        "dreamtown_dreams_oldest_ready_age_seconds",
        "Age of the fire the next drain takes, since it entered the ready list (a lower bound when the _exact gauge is 0)",
    );
    /// Whether that age is exact.
    pub const OLDEST_READY_AGE_EXACT: Stat = stat(
        "oldest_ready_age_exact",
        "dreamtown_dreams_oldest_ready_age_exact",
        "1 when the oldest ready age was timed as the fire entered, 0 when it is a lower bound",
    );
    /// Age of the oldest in-flight fire.
    pub const OLDEST_IN_FLIGHT_AGE_MS: Stat = stat(
        "oldest_in_flight_age_ms",
        "dreamtown_dreams_oldest_inflight_age_seconds",
        "Age of the oldest in-flight fire, since it was drained (a lower bound when the _exact gauge is 0)",
    );
    /// Whether that age is exact.
    pub const OLDEST_IN_FLIGHT_AGE_EXACT: Stat = stat(
        "oldest_in_flight_age_exact",
        "dreamtown_dreams_oldest_inflight_age_exact",
        "1 when the oldest in-flight age was timed as the fire was drained, 0 when it is a lower bound",
    );
    /// When the node started counting the organization's totals.
    pub const TOTALS_SINCE_MS_EXPORTED: Stat = stat(
        TOTALS_SINCE_MS.name,
        "dreamtown_dreams_totals_since_timestamp_seconds",
        "When the node started counting the organization's totals (unix time; they start at 0 after a restart or failover)",
    );
    /// The concurrency cap.
    pub const LIMIT_CONCURRENCY: Stat = stat(
        "limit_concurrency",
        "dreamtown_dreams_limit_concurrency",
        "The organization's cap on fires in flight (DREAMS.LIMIT; absent when none)",
    );
    /// The rate's count.
    pub const LIMIT_RATE_COUNT: Stat = stat(
        "limit_rate_count",
        "dreamtown_dreams_limit_rate_fires",
        "Fires the organization's rate lets go per period",
    );
    /// The rate's period.
    pub const LIMIT_RATE_SECONDS: Stat = stat(
        "limit_rate_seconds",
        "dreamtown_dreams_limit_rate_period_seconds",
        "The period of the organization's rate",
    );
    /// Tokens left in the rate.
    pub const TOKENS_LEFT: Stat =
        stat("tokens_left", "dreamtown_dreams_rate_tokens_left", "Fires the organization's rate lets go now");
    /// Whether the organization is paused.
    pub const PAUSED: Stat =
        stat("paused", "dreamtown_dreams_paused", "1 while the organization is paused (DREAMS.PAUSE), else 0");
    /// How long the current pause has lasted.
    pub const PAUSED_FOR_MS: Stat = stat(
        "paused_for_ms",
        "dreamtown_dreams_paused_for_seconds",
        "How long the organization's current pause has lasted",
    );

    /// The exported level fields of `DREAMS.STATS`.
    pub const FIELDS: [Stat; 19] = [
        READY,
        DEFERRED,
        IN_FLIGHT,
        DEAD_LETTERS,
        LEASED,
        EXPIRED_LEASES_WAITING,
        OLDEST_DEFERRED_AGE_MS,
        NEXT_LEASE_DEADLINE_MS,
        OLDEST_READY_AGE_MS,
        OLDEST_READY_AGE_EXACT,
        OLDEST_IN_FLIGHT_AGE_MS,
        OLDEST_IN_FLIGHT_AGE_EXACT,
        TOTALS_SINCE_MS_EXPORTED,
        LIMIT_CONCURRENCY,
        LIMIT_RATE_COUNT,
        LIMIT_RATE_SECONDS,
        TOKENS_LEFT,
        PAUSED,
        PAUSED_FOR_MS,
    ];
}

/// `TOWN.STATS <town>` and `TOWN.STATS <town> <agent>`.
pub mod town {
    use super::{stat, Stat};

    /// Agents in the town's agent index.
    pub const AGENTS: Stat = stat("agents", "dreamtown_town_agents", "Agents in the town's agent index");
    /// Agents with per-agent keys.
    pub const MAILBOXES: Stat = stat("mailboxes", "dreamtown_town_mailboxes", "Agents with per-agent keys");
    /// Tasks in the task index.
    pub const TASKS: Stat = stat("tasks", "dreamtown_town_tasks", "Tasks in the town's task index");
    /// Task ids in the backlog.
    pub const BACKLOG: Stat = stat("backlog", "dreamtown_town_backlog", "Task ids waiting in the backlog");

    /// An agent's inbox.
    pub const INBOX: Stat = stat("inbox", "dreamtown_town_inbox", "Messages in the agent's inbox");
    /// An agent's urgent inbox.
    pub const URGENT: Stat = stat("urgent", "dreamtown_town_urgent", "Messages in the agent's urgent inbox");
    /// An agent's pending list.
    pub const PENDING: Stat =
        stat("pending", "dreamtown_town_pending", "Messages received RELIABLE, not yet acknowledged");
    /// Leased pending messages.
    pub const LEASED: Stat = stat("leased", "dreamtown_town_leased", "Pending messages with a running lease");
    /// Expired leases.
    pub const EXPIRED_LEASES_WAITING: Stat = stat(
        "expired_leases_waiting",
        "dreamtown_town_expired_leases_waiting",
        "Messages whose lease ran out, back in the inbox",
    );
    /// Age of the message the next receive gets.
    pub const NEXT_MESSAGE_AGE_MS: Stat = stat(
        "next_message_age_ms",
        "dreamtown_town_next_message_age_seconds",
        "Age (from created_at) of the message the next TOWN.RECV gets",
    );
    /// Age of the longest-pending message.
    pub const OLDEST_PENDING_AGE_MS: Stat = stat(
        "oldest_pending_age_ms",
        "dreamtown_town_oldest_pending_age_seconds",
        "Age (from created_at) of the longest-pending message",
    );
    /// The earliest lease deadline.
    pub const NEXT_LEASE_DEADLINE_MS: Stat = stat(
        "next_lease_deadline_ms",
        "dreamtown_town_next_lease_deadline_timestamp_seconds",
        "The earliest lease deadline (unix time)",
    );

    /// The exported level fields of a town's `TOWN.STATS`.
    pub const TOWN_FIELDS: [Stat; 4] = [AGENTS, MAILBOXES, TASKS, BACKLOG];

    /// The exported level fields of an agent's `TOWN.STATS`.
    pub const AGENT_FIELDS: [Stat; 8] = [
        INBOX,
        URGENT,
        PENDING,
        LEASED,
        EXPIRED_LEASES_WAITING,
        NEXT_MESSAGE_AGE_MS,
        OLDEST_PENDING_AGE_MS,
        NEXT_LEASE_DEADLINE_MS,
    ];
}
