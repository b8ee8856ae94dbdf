//! A tenant's row in the tenant list, computed from its figures when the
//! directory reads them (so a page sorts rows already made): depth, in
//! flight, the oldest item's age, dead items, limits and paused state of
//! an organization; a town's sums over its first agents.

use std::fmt::Write;

use crate::directory::Family;
use crate::fields::Fields;

/// One row of the list.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Its family.
    pub family: Family,
    /// Its name.
    pub name: String,
    /// Waiting work: ready items (a town: its agents' inbox and urgent messages).
    pub depth: Option<i64>,
    /// Deferred items (a town: its backlog).
    pub deferred: Option<i64>,
    /// Handed out, not yet acknowledged (a town: its agents' pending messages).
    pub in_flight: Option<i64>,
    /// Age of the oldest waiting item, ms (a town: of the oldest next message).
    pub oldest_ms: Option<i64>,
    /// Dead items (Dreams only).
    pub dead: Option<i64>,
    /// Limits as text (`concurrency 2, rate 30/3600 s`), Dreams only.
    pub limits: Option<String>,
    /// Paused (Dreams only).
    pub paused: Option<bool>,
    /// Agents and tasks of a town, capped notes.
    pub note: String,
    /// Why it could not be read.
    pub error: Option<String>,
}

/// The row of an organization from its `DREAMS.STATS` and what the scan found.
pub fn org_row(
    name: &str,
    stats: Option<&Fields>,
    error: Option<&String>,
    regions: usize,
    regions_capped: bool,
) -> Row {
    let int = |field: &str| stats.and_then(|s| s.int(field));
    let limits = stats.and_then(|s| {
        if !s.has("limit_concurrency") && !s.has("limit_rate_count") {
            return None;
        }
        let mut parts = Vec::new();
        if let Some(cap) = s.int("limit_concurrency") {
            parts.push(format!("concurrency {cap}"));
        }
        if let (Some(count), Some(secs)) = (s.int("limit_rate_count"), s.int("limit_rate_seconds")) {
            parts.push(format!("rate {count}/{secs} s"));
        }
        Some(if parts.is_empty() { "none".to_owned() } else { parts.join(", ") })
    });
    let mut note = String::new();
    if regions > 0 {
        let _ = write!(note, "{regions}{} region(s)", if regions_capped { "+" } else { "" });
    }
    Row {
        family: Family::Dreams,
        name: name.to_owned(),
        depth: int("ready"),
        deferred: int("deferred"),
        in_flight: int("in_flight"),
        oldest_ms: int("oldest_ready_age_ms").or_else(|| int("oldest_deferred_age_ms")),
        dead: int("dead_letters"),
        limits,
        paused: stats.filter(|s| s.has("paused")).map(|s| s.int("paused").unwrap_or(0) != 0),
        note,
        error: error.cloned(),
    }
}

/// The row of a town from its `TOWN.STATS`, its first agents' and whether there are more.
pub fn town_row(
    name: &str,
    stats: Option<&Fields>,
    agents: &[(String, Fields)],
    agents_capped: bool,
    error: Option<&String>,
) -> Row {
    let sum = |field: &str| -> Option<i64> {
        stats?;
        Some(agents.iter().filter_map(|(_, f)| f.int(field)).sum())
    };
    let depth = match (sum("inbox"), sum("urgent")) {
        (Some(inbox), Some(urgent)) => Some(inbox + urgent),
        _ => None,
    };
    let oldest = agents.iter().filter_map(|(_, f)| f.int("next_message_age_ms")).max();
    let mailboxes = stats.and_then(|s| s.int("mailboxes"));
    let tasks = stats.and_then(|s| s.int("tasks"));
    let mut note = String::new();
    if let Some(mailboxes) = mailboxes {
        let _ = write!(note, "{mailboxes} agent(s)");
        if agents_capped {
            let _ = write!(note, " (sums over the first {})", agents.len());
        }
    }
    if let Some(tasks) = tasks {
        let _ = write!(note, ", {tasks} task(s)");
    }
    Row {
        family: Family::Town,
        name: name.to_owned(),
        depth,
        deferred: stats.and_then(|s| s.int("backlog")),
        in_flight: sum("pending"),
        oldest_ms: oldest,
        dead: None,
        limits: None,
        paused: None,
        note,
        error: error.cloned(),
    }
}
