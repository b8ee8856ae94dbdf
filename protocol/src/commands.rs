//! Every command and subcommand name the module registers: one table
//! ([`ALL`]) that the module's registry (each command's `SPEC` names
//! itself with a constant here; a test holds the registry to the table),
//! its fuzz entry points and the client (which commands take a subcommand
//! first) all read.

/// A command and its subcommands (empty for a plain command; a container
/// also answers `HELP`, which the module adds to each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// The name, as registered (upper case).
    pub name: &'static str,
    /// The subcommands, as registered (upper case), `HELP` left out.
    pub subcommands: &'static [&'static str],
}

impl Command {
    /// Whether the first argument is a subcommand (so the tenant is the
    /// second: `TOWN.AGENT GET <town> ...`).
    pub fn is_container(&self) -> bool {
        !self.subcommands.is_empty()
    }
}

/// The Dreams commands.
pub mod dreams {
    /// `DREAMS.FIRE`.
    pub const FIRE: &str = "DREAMS.FIRE";
    /// `DREAMS.RECORD`.
    pub const RECORD: &str = "DREAMS.RECORD";
    /// `DREAMS.SETTLE`.
    pub const SETTLE: &str = "DREAMS.SETTLE";
    /// `DREAMS.DRAIN`.
    pub const DRAIN: &str = "DREAMS.DRAIN";
    /// `DREAMS.ACK`.
    pub const ACK: &str = "DREAMS.ACK";
    /// `DREAMS.RECOVER`.
    pub const RECOVER: &str = "DREAMS.RECOVER";
    /// `DREAMS.REDRIVE`.
    pub const REDRIVE: &str = "DREAMS.REDRIVE";
    /// `DREAMS.LEN`.
    pub const LEN: &str = "DREAMS.LEN";
    /// `DREAMS.COUNTERS`.
    pub const COUNTERS: &str = "DREAMS.COUNTERS";
    /// `DREAMS.EXTEND`.
    pub const EXTEND: &str = "DREAMS.EXTEND";
    /// `DREAMS.INFLIGHT`.
    pub const INFLIGHT: &str = "DREAMS.INFLIGHT";
    /// `DREAMS.STATS`.
    pub const STATS: &str = "DREAMS.STATS";
    /// `DREAMS.PAUSE`.
    pub const PAUSE: &str = "DREAMS.PAUSE";
    /// `DREAMS.RESUME`.
    pub const RESUME: &str = "DREAMS.RESUME";
    /// `DREAMS.LIMIT` (subcommands [`LIMIT_SUBCOMMANDS`]).
    pub const LIMIT: &str = "DREAMS.LIMIT";
    /// `DREAMS.LIMIT SET|GET|CLEAR`.
    pub const LIMIT_SUBCOMMANDS: &[&str] = &["SET", "GET", "CLEAR"];
}

/// The Town commands.
pub mod town {
    /// `TOWN.SEND`.
    pub const SEND: &str = "TOWN.SEND";
    /// `TOWN.RECV`.
    pub const RECV: &str = "TOWN.RECV";
    /// `TOWN.ACK`.
    pub const ACK: &str = "TOWN.ACK";
    /// `TOWN.REQUEUE`.
    pub const REQUEUE: &str = "TOWN.REQUEUE";
    /// `TOWN.EXTEND`.
    pub const EXTEND: &str = "TOWN.EXTEND";
    /// `TOWN.LEN`.
    pub const LEN: &str = "TOWN.LEN";
    /// `TOWN.PEEK`.
    pub const PEEK: &str = "TOWN.PEEK";
    /// `TOWN.RECLAIM`.
    pub const RECLAIM: &str = "TOWN.RECLAIM";
    /// `TOWN.BROADCAST`.
    pub const BROADCAST: &str = "TOWN.BROADCAST";
    /// `TOWN.RESET`.
    pub const RESET: &str = "TOWN.RESET";
    /// `TOWN.STATS`.
    pub const STATS: &str = "TOWN.STATS";
    /// `TOWN.AGENT` (subcommands [`AGENT_SUBCOMMANDS`]).
    pub const AGENT: &str = "TOWN.AGENT";
    /// `TOWN.AGENT SET|GET|DEL|LIST|BYNAME|INCR|HEARTBEAT`.
    pub const AGENT_SUBCOMMANDS: &[&str] = &["SET", "GET", "DEL", "LIST", "BYNAME", "INCR", "HEARTBEAT"];
    /// `TOWN.TASK` (subcommands [`TASK_SUBCOMMANDS`]).
    pub const TASK: &str = "TOWN.TASK";
    /// `TOWN.TASK SET|GET|DEL|LIST`.
    pub const TASK_SUBCOMMANDS: &[&str] = &["SET", "GET", "DEL", "LIST"];
    /// `TOWN.ACTIVITY` (subcommands [`ACTIVITY_SUBCOMMANDS`]).
    pub const ACTIVITY: &str = "TOWN.ACTIVITY";
    /// `TOWN.ACTIVITY LOG|GET`.
    pub const ACTIVITY_SUBCOMMANDS: &[&str] = &["LOG", "GET"];
    /// `TOWN.BACKLOG` (subcommands [`BACKLOG_SUBCOMMANDS`]).
    pub const BACKLOG: &str = "TOWN.BACKLOG";
    /// `TOWN.BACKLOG PUSH|POP|LIST|LEN|REMOVE`.
    pub const BACKLOG_SUBCOMMANDS: &[&str] = &["PUSH", "POP", "LIST", "LEN", "REMOVE"];
    /// `TOWN.STOP` (subcommands [`STOP_SUBCOMMANDS`]).
    pub const STOP: &str = "TOWN.STOP";
    /// `TOWN.STOP REQUEST|CHECK|CLEAR`.
    pub const STOP_SUBCOMMANDS: &[&str] = &["REQUEST", "CHECK", "CLEAR"];
}

/// `DREAMTOWN.DRYRUN`: a call's ACL and parse check as another user.
pub const DRYRUN: &str = "DREAMTOWN.DRYRUN";

const fn plain(name: &'static str) -> Command {
    Command { name, subcommands: &[] }
}

/// Every command the module registers, plain ones first, in registration
/// order.
pub const ALL: &[Command] = &[
    plain(dreams::FIRE),
    plain(dreams::RECORD),
    plain(dreams::SETTLE),
    plain(dreams::DRAIN),
    plain(dreams::ACK),
    plain(dreams::RECOVER),
    plain(dreams::REDRIVE),
    plain(dreams::LEN),
    plain(dreams::COUNTERS),
    plain(dreams::EXTEND),
    plain(dreams::INFLIGHT),
    plain(dreams::STATS),
    plain(dreams::PAUSE),
    plain(dreams::RESUME),
    plain(town::SEND),
    plain(town::RECV),
    plain(town::ACK),
    plain(town::REQUEUE),
    plain(town::EXTEND),
    plain(town::LEN),
    plain(town::PEEK),
    plain(town::RECLAIM),
    plain(town::BROADCAST),
    plain(town::RESET),
    plain(town::STATS),
    plain(DRYRUN),
    Command { name: dreams::LIMIT, subcommands: dreams::LIMIT_SUBCOMMANDS },
    Command { name: town::AGENT, subcommands: town::AGENT_SUBCOMMANDS },
    Command { name: town::TASK, subcommands: town::TASK_SUBCOMMANDS },
    Command { name: town::ACTIVITY, subcommands: town::ACTIVITY_SUBCOMMANDS },
    Command { name: town::BACKLOG, subcommands: town::BACKLOG_SUBCOMMANDS },
    Command { name: town::STOP, subcommands: town::STOP_SUBCOMMANDS },
];

/// The command named `name` (any case), if the module registers it.
pub fn find(name: &[u8]) -> Option<&'static Command> {
    ALL.iter().find(|command| command.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Whether `name` (any case) is a command whose first argument is a
/// subcommand.
pub fn is_container(name: &[u8]) -> bool {
    find(name).is_some_and(Command::is_container)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_in_any_case() {
        for (index, command) in ALL.iter().enumerate() {
            assert!(ALL.iter().skip(index + 1).all(|other| other.name != command.name), "{}", command.name);
            assert_eq!(find(command.name.to_ascii_lowercase().as_bytes()), Some(command));
        }
        assert!(is_container(b"town.agent"));
        assert!(!is_container(b"TOWN.SEND"));
        assert!(find(b"GET").is_none());
    }
}
