//! Town: the key layouts of tinytown 0.10 (`tt:<town>:...`, the town
//! written plainly) and of dreamtown (`tt:{<town>}:...`, the town as a hash
//! tag, plus the module's indexes), how to find a town's keys in each, and
//! what each becomes in the other.
//!
//! Moved: `agent:<id>` (hash; indexed by name and as a mailbox on the way
//! in), `inbox:<id>` and `urgent:<id>` (lists, order kept), `activity:<id>`
//! (list, newest first, TTL kept), `stop:<id>` (string, TTL kept),
//! `task:<id>` (hash; indexed), `backlog` (list), and the streams
//! `docket:tasks`, `docket:events`, `events`, `events:agent:<id>` (ids,
//! groups and pending entries kept). On the way back dreamtown's
//! `pending:<id>` (received reliably, not acknowledged) goes back to the
//! head of the inbox as `TOWN.REQUEUE` would put it, and `leases:<id>` and
//! the `index:*` keys are dropped. Anything else under the town (tinytown's
//! `mission:*`, `events:mission:*`) is reported and left where it is.
//!
//! tinytown allows `:` in town names, so its layout does not say where a
//! town's name ends: `tt:a:b:agent:<id>` is under town `a`'s prefix and is
//! town `a:b`'s record, and `tt:a:docket:events` is both town `a`'s docket
//! events and town `a:docket`'s event stream. Its agent and task ids are
//! UUIDs (no `:`), which settles most names (`tinytown_role`); when towns
//! whose names extend one another both hold keys, no reading is safe and
//! such a town is refused, nothing moved ([`other_town`], [`is_own`]).

use dreamtown::town::keys::TownKeys;

use super::Direction;
use super::apply::Op;
#[cfg(feature = "net")]
use super::conn::{Endpoint, glob_escape};
#[cfg(feature = "net")]
use super::plan::Discovered;
use super::plan::Plan;
use super::snapshot::{Snapshot, Value};
#[cfg(feature = "net")]
use super::{Error, Result};

/// A key of one town, by role (with the agent or task id it names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// An agent record (hash).
    Agent(String),
    /// An agent's inbox (list).
    Inbox(String),
    /// An agent's urgent inbox (list).
    Urgent(String),
    /// An agent's activity log (list).
    Activity(String),
    /// An agent's stop flag (string).
    Stop(String),
    /// A task record (hash).
    Task(String),
    /// The backlog of task ids (list).
    Backlog,
    /// One of the streams (`docket:tasks`, `docket:events`, `events`, `events:agent:<id>`).
    Stream,
    /// dreamtown only: reliably received, not acknowledged.
    Pending(String),
    /// dreamtown only: lease deadlines.
    Leases(String),
    /// dreamtown only: the module's indexes.
    Index,
}

impl Role {
    /// The role of a key from what follows the town's prefix: tinytown's
    /// layout, or with `module` dreamtown's (which adds pending lists,
    /// leases and indexes).
    pub fn parse(rest: &str, module: bool) -> Option<Self> {
        match rest {
            "backlog" => return Some(Self::Backlog),
            "docket:tasks" | "docket:events" | "events" => return Some(Self::Stream),
            "index:agents" | "index:tasks" | "index:mailboxes" if module => return Some(Self::Index),
            _ => {}
        }
        if let Some(agent) = rest.strip_prefix("events:agent:") {
            return (!agent.is_empty()).then_some(Self::Stream);
        }
        let (kind, id) = rest.split_once(':')?;
        if id.is_empty() {
            return None;
        }
        let id = id.to_owned();
        Some(match kind {
            "agent" => Self::Agent(id),
            "inbox" => Self::Inbox(id),
            "urgent" => Self::Urgent(id),
            "activity" => Self::Activity(id),
            "stop" => Self::Stop(id),
            "task" => Self::Task(id),
            "pending" if module => Self::Pending(id),
            "leases" if module => Self::Leases(id),
            _ => return None,
        })
    }

    /// The Redis type the role's key has.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Agent(_) | Self::Task(_) => "hash",
            Self::Inbox(_) | Self::Urgent(_) | Self::Activity(_) | Self::Backlog | Self::Pending(_) => "list",
            Self::Stop(_) => "string",
            Self::Stream => "stream",
            Self::Leases(_) => "zset",
            Self::Index => "hash|zset",
        }
    }
}

/// The role of a remainder of tinytown's layout, if every id in it is one
/// tinytown writes: its agent and task ids are UUIDs, never with a `:`
/// (`task:agent:<id>` is no task of this town; it may be an agent of town
/// `<this>:task`).
fn tinytown_role(rest: &str) -> Option<Role> {
    let role = Role::parse(rest, false)?;
    let id = match &role {
        Role::Agent(id) | Role::Inbox(id) | Role::Urgent(id) | Role::Activity(id) | Role::Stop(id) | Role::Task(id) => {
            Some(id.as_str())
        }
        _ => rest.strip_prefix("events:agent:"),
    };
    (!id.is_some_and(|id| id.contains(':'))).then_some(role)
}

/// Whether a remainder of tinytown's layout is, by name and Redis type
/// (`kind`), a key tinytown writes.
fn tinytown_key(rest: &str, kind: &str) -> bool {
    tinytown_role(rest).is_some_and(|role| role.kind() == kind)
}

/// Whether `key` (of Redis type `kind`) is, in tinytown's layout, one of
/// `town`'s own keys by its name and type.
pub fn is_own(town: &str, key: &[u8], kind: &str) -> bool {
    std::str::from_utf8(key)
        .ok()
        .and_then(|key| key.strip_prefix(&seed_base(town)))
        .is_some_and(|rest| tinytown_key(rest, kind))
}

/// A key under `town`'s prefix in tinytown's layout that is not one of
/// `town`'s own keys but, by its name and Redis type (`kind`), a key of a
/// town named `<town>:<more>`: that town's name (the shortest reading).
/// `town`'s mission keys (`mission:*`, `events:mission:*`, left where they
/// are) never count: their names are tinytown's to choose.
pub fn other_town(town: &str, key: &[u8], kind: &str) -> Option<String> {
    let rest = std::str::from_utf8(key).ok()?.strip_prefix(&seed_base(town))?;
    if rest.starts_with("mission:") || rest.starts_with("events:mission:") || tinytown_key(rest, kind) {
        return None;
    }
    rest.match_indices(':').find_map(|(at, _)| {
        let (more, tail) = (rest.get(..at)?, rest.get(at + 1..)?);
        tinytown_key(tail, kind).then(|| format!("{town}:{more}"))
    })
}

/// The seed's prefix of `town`'s keys, `tt:<town>:` (tinytown names a
/// key by appending `<kind>:<id>` or `<kind>` to it).
pub fn seed_base(town: &str) -> String {
    format!("tt:{town}:")
}

/// dreamtown's prefix of `town`'s keys.
fn module_base(town: &str) -> String {
    format!("tt:{{{town}}}:")
}

/// The town of a key of the source's layout (`direction`'s), and its
/// role, if it is one. tinytown's town names may contain `:`: from a key
/// alone the town is the shortest name whose remainder is a key tinytown
/// writes (ids without `:`: `tt:a:b:agent:<id>` is town `a:b`'s), else the
/// first segment.
pub fn tenant_of(direction: Direction, key: &[u8]) -> Option<(String, Role)> {
    // Names that are not UTF-8 are not tinytown's nor dreamtown's (read
    // lossily they would move under another name).
    let key = std::str::from_utf8(key).ok()?;
    let rest = key.strip_prefix("tt:")?;
    let (town, rest, module) = match direction {
        Direction::Forward if !rest.starts_with('{') => rest
            .match_indices(':')
            .find_map(|(at, _)| {
                let (town, tail) = (rest.get(..at)?, rest.get(at + 1..)?);
                tinytown_role(tail).map(|_| (town, tail, false))
            })
            .or_else(|| rest.split_once(':').map(|(town, rest)| (town, rest, false)))?,
        Direction::Reverse => {
            rest.strip_prefix('{').and_then(|rest| rest.split_once("}:")).map(|(town, rest)| (town, rest, true))?
        }
        Direction::Forward => return None,
    };
    Role::parse(rest, module).map(|role| (town.to_owned(), role))
}

/// The role of `key` among `town`'s keys of the source's layout
/// (`direction`'s), with the remainder after the town's prefix (the same
/// in both layouts); `None` if it is not a key of that town's layout.
pub fn role_of(direction: Direction, town: &str, key: &[u8]) -> Option<(String, Role)> {
    let module = direction == Direction::Reverse;
    let base = if module { module_base(town) } else { seed_base(town) };
    let key = std::str::from_utf8(key).ok()?;
    let rest = key.strip_prefix(&base)?;
    Role::parse(rest, module).map(|role| (rest.to_owned(), role))
}

/// Every town with keys on the source.
#[cfg(feature = "net")]
pub async fn tenants(source: &mut Endpoint, direction: Direction) -> Result<Vec<String>> {
    let mut towns = Vec::new();
    for key in source.scan("tt:*").await? {
        towns.extend(tenant_of(direction, &key).map(|(town, _)| town));
    }
    towns.sort();
    towns.dedup();
    Ok(towns)
}

/// The source keys of `town` to move, and those left in place (with why).
#[cfg(feature = "net")]
pub async fn discover(source: &mut Endpoint, direction: Direction, town: &str) -> Result<Discovered> {
    let forward = direction == Direction::Forward;
    let base = if forward { seed_base(town) } else { module_base(town) };
    let mut found = Discovered::default();
    // Keys of towns whose names extend this one's or that it extends (tinytown's layout only).
    let mut others: Vec<(String, String)> = Vec::new();
    for key in source.scan(&format!("{}*", glob_escape(&base))).await? {
        let name = String::from_utf8_lossy(&key).into_owned();
        let role = role_of(direction, town, &key);
        if role.is_none() && !forward {
            found.left.push((name, "not a key dreamtown's Town owns".into()));
            continue;
        }
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(source).await?;
        if kind == "none" {
            continue;
        }
        if let Some(other) = forward.then(|| other_town(town, &key, &kind)).flatten() {
            others.push((name, other));
            continue;
        }
        let Some((_, role)) = role else {
            found.left.push((name, "not a key dreamtown's Town owns".into()));
            continue;
        };
        found.take(key, name, &kind, role.kind());
    }
    if forward {
        // A town named by a part of this one's name (`a` for `a:b`): its
        // keys share this town's prefix where its remainder starts with
        // the rest of the name (`tt:a:docket:events` for `a:docket`).
        let own = base.as_bytes();
        for (at, _) in town.match_indices(':') {
            let Some(shorter) = town.get(..at) else { continue };
            for key in source.scan(&format!("{}*", glob_escape(&seed_base(shorter)))).await? {
                if key.starts_with(own) || tenant_of(direction, &key).is_none_or(|(owner, _)| owner != shorter) {
                    continue;
                }
                let kind: String = redis::cmd("TYPE").arg(&key).query_async(source).await?;
                if is_own(shorter, &key, &kind) {
                    others.push((String::from_utf8_lossy(&key).into_owned(), shorter.to_owned()));
                    break;
                }
            }
        }
    }
    if let Some((key, first)) = others.first() {
        let mut towns: Vec<String> = others.iter().map(|(_, other)| format!("'{other}'")).collect();
        towns.sort();
        towns.dedup();
        return Err(Error::Other(format!(
            "town '{town}' and {} both have keys here (e.g. {key}, of '{first}'), and tinytown's key layout \
             cannot keep them apart: it allows ':' in town names, so one town's key names can read as another's. \
             Nothing moved; rename one of them first, or move it by hand (docs/migrating.md, \"Town names with ':'\")",
            towns.join(", ")
        )));
    }
    Ok(found)
}

/// The target name of a seed key's remainder, and of dreamtown's.
fn target(direction: Direction, town: &str, rest: &str) -> String {
    match direction {
        Direction::Forward => format!("{}{rest}", module_base(town)),
        Direction::Reverse => format!("{}{rest}", seed_base(town)),
    }
}

/// What the staged keys of `town` become on the target.
pub fn plan(direction: Direction, town: &str, keys: &[(Vec<u8>, Snapshot)]) -> Plan {
    let indexes = TownKeys::new(town);
    let mut plan = Plan::default();
    let mut mailboxes = Vec::new();
    for (name, snapshot) in keys {
        let Some((rest, role)) = role_of(direction, town, name) else {
            plan.fail(&String::from_utf8_lossy(name), "staged key is not a Town key of this town");
            continue;
        };
        let key = target(direction, town, &rest);
        let forward = direction == Direction::Forward;
        match (&role, &snapshot.value) {
            (Role::Agent(id), Value::Hash(fields)) => {
                plan.count("agent records", 1);
                if forward {
                    let name = fields.iter().find(|(field, _)| field == b"name").map(|(_, value)| value.clone());
                    let entry = vec![(id.clone().into_bytes(), name.clone().unwrap_or_default())];
                    plan.ops.push(match name {
                        Some(_) => Op::HSet { key: indexes.agent_index(), fields: entry },
                        None => Op::HSetNx { key: indexes.agent_index(), fields: entry },
                    });
                    mailboxes.push(id.clone());
                }
                plan.ops.push(record(key, fields));
            }
            (Role::Task(id), Value::Hash(fields)) => {
                plan.count("tasks", 1);
                if forward {
                    plan.ops.push(Op::ZAddNx {
                        key: indexes.task_index(),
                        members: vec![(id.clone().into_bytes(), "0".into())],
                    });
                }
                plan.ops.push(record(key, fields));
            }
            (Role::Inbox(id) | Role::Urgent(id), Value::List(items)) => {
                plan.count(
                    if matches!(role, Role::Inbox(_)) { "inbox messages" } else { "urgent messages" },
                    items.len(),
                );
                plan.ops.push(Op::Append { key, items: items.clone() });
                mailboxes.push(id.clone());
            }
            (Role::Backlog, Value::List(items)) => {
                plan.count("backlog task ids", items.len());
                plan.ops.push(Op::Append { key, items: items.clone() });
            }
            (Role::Activity(id), Value::List(items)) => {
                plan.count("activity entries", items.len());
                plan.ops.push(Op::Activity { key, items: items.clone(), pttl: snapshot.pttl });
                mailboxes.push(id.clone());
            }
            (Role::Stop(id), Value::Str(value)) => {
                plan.count("stop flags", 1);
                plan.ops.push(Op::Flag { key, value: value.clone(), pttl: snapshot.pttl });
                mailboxes.push(id.clone());
            }
            (Role::Stream, Value::Stream { dump, entries, groups }) => {
                plan.count("stream entries", entries.len());
                plan.count("consumer groups", groups.len());
                plan.ops.push(Op::Stream {
                    key,
                    dump: dump.clone(),
                    pttl: snapshot.pttl,
                    entries: entries.clone(),
                    groups: groups.clone(),
                });
            }
            (Role::Pending(id), Value::List(items)) => {
                plan.count("unacknowledged messages back to the inbox head", items.len());
                plan.ops
                    .push(Op::Prepend { key: target(direction, town, &format!("inbox:{id}")), items: items.clone() });
            }
            (Role::Leases(_), Value::ZSet(members)) => plan.drop("leases", members.len()),
            (Role::Index, value) => plan.drop("index entries", value.len()),
            (_, value) => plan.fail(&String::from_utf8_lossy(name), &format!("unexpected contents ({})", value.kind())),
        }
    }
    if direction == Direction::Forward && !mailboxes.is_empty() {
        mailboxes.sort();
        mailboxes.dedup();
        plan.ops.push(Op::ZAddNx {
            key: indexes.mailbox_index(),
            members: mailboxes.into_iter().map(|id| (id.into_bytes(), "0".into())).collect(),
        });
    }
    plan
}

/// A record's write: the whole record when the source wrote one (tinytown
/// always writes `id` with a whole record), else a partial update.
fn record(key: String, fields: &[(Vec<u8>, Vec<u8>)]) -> Op {
    let replace = fields.iter().any(|(field, _)| field == b"id");
    Op::Record { key, fields: fields.to_vec(), replace }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_plan_requeues_pending_and_drops_indexes_and_leases() {
        let keys = vec![
            (b"tt:{t}:pending:a".to_vec(), Snapshot { value: Value::List(vec![b"m1".to_vec()]), pttl: None }),
            (
                b"tt:{t}:leases:a".to_vec(),
                Snapshot { value: Value::ZSet(vec![(b"m1".to_vec(), "9".into())]), pttl: None },
            ),
            (
                b"tt:{t}:index:agents".to_vec(),
                Snapshot { value: Value::Hash(vec![(b"a".to_vec(), b"n".to_vec())]), pttl: None },
            ),
        ];
        let plan = plan(Direction::Reverse, "t", &keys);
        assert_eq!(plan.ops, vec![Op::Prepend { key: "tt:t:inbox:a".into(), items: vec![b"m1".to_vec()] }]);
        assert_eq!(plan.dropped.get("leases"), Some(&1));
        assert_eq!(plan.dropped.get("index entries"), Some(&1));
    }

    #[test]
    fn forward_plan_indexes_agents_tasks_and_mailboxes() {
        let record = vec![(b"id".to_vec(), b"a".to_vec()), (b"name".to_vec(), b"backend".to_vec())];
        let keys = vec![
            (b"tt:t:agent:a".to_vec(), Snapshot { value: Value::Hash(record.clone()), pttl: None }),
            (
                b"tt:t:task:k".to_vec(),
                Snapshot { value: Value::Hash(vec![(b"id".to_vec(), b"k".to_vec())]), pttl: None },
            ),
            (b"tt:t:stop:b".to_vec(), Snapshot { value: Value::Str(b"1".to_vec()), pttl: Some(5000) }),
        ];
        let plan = plan(Direction::Forward, "t", &keys);
        assert!(plan.ops.contains(&Op::HSet {
            key: "tt:{t}:index:agents".into(),
            fields: vec![(b"a".to_vec(), b"backend".to_vec())]
        }));
        assert!(plan.ops.contains(&Op::Record { key: "tt:{t}:agent:a".into(), fields: record, replace: true }));
        assert!(
            plan.ops
                .contains(&Op::ZAddNx { key: "tt:{t}:index:tasks".into(), members: vec![(b"k".to_vec(), "0".into())] })
        );
        assert!(plan.ops.contains(&Op::Flag { key: "tt:{t}:stop:b".into(), value: b"1".to_vec(), pttl: Some(5000) }));
        assert!(plan.ops.contains(&Op::ZAddNx {
            key: "tt:{t}:index:mailboxes".into(),
            members: vec![(b"a".to_vec(), "0".into()), (b"b".to_vec(), "0".into())]
        }));
    }

    /// Found by the migrate_readers fuzz target: a name that is not UTF-8
    /// was read lossily and its contents written under another name.
    #[test]
    fn names_that_are_not_utf8_are_no_layouts() {
        let key = b"tt:t:stop:a\xffb";
        assert_eq!(role_of(Direction::Forward, "t", key), None);
        assert_eq!(tenant_of(Direction::Forward, key), None);
        assert_eq!(tenant_of(Direction::Reverse, b"tt:{t}:inbox:\xff"), None);
        let keys = vec![(key.to_vec(), Snapshot { value: Value::Str(b"1".to_vec()), pttl: None })];
        let plan = plan(Direction::Forward, "t", &keys);
        assert!(plan.ops.is_empty());
        assert_eq!(plan.failures.len(), 1);
        assert_eq!(role_of(Direction::Forward, "t", b"tt:t:stop:a"), Some(("stop:a".into(), Role::Stop("a".into()))));
    }

    /// tinytown allows ':' in town names: `--all` names a town by the
    /// shortest reading whose ids are tinytown's (UUIDs, no ':'), and keys
    /// of a town `a:<more>` under town `a`'s prefix are told apart from
    /// `a`'s own by name and type, except where no reading can be.
    #[test]
    fn town_names_with_colons() {
        let id = "11111111-1111-1111-1111-111111111111";
        let tenant = |key: &str| tenant_of(Direction::Forward, key.as_bytes()).map(|(town, _)| town);
        assert_eq!(tenant(&format!("tt:a:agent:{id}")).as_deref(), Some("a"));
        assert_eq!(tenant(&format!("tt:a:b:agent:{id}")).as_deref(), Some("a:b"));
        assert_eq!(tenant(&format!("tt:a:task:agent:{id}")).as_deref(), Some("a:task"), "no task id has a ':'");
        assert_eq!(tenant(&format!("tt:team:x:events:agent:{id}")).as_deref(), Some("team:x"));
        assert_eq!(tenant("tt:a:docket:events").as_deref(), Some("a"), "the shortest reading");
        assert_eq!(tenant("tt:a:agent:x:y").as_deref(), Some("a"), "no reading with tinytown's ids: the first segment");
        assert_eq!(tenant("tt:{a:b}:agent:x"), None);
        assert_eq!(tenant_of(Direction::Reverse, b"tt:{a:b}:agent:x").map(|(town, _)| town).as_deref(), Some("a:b"));

        let other = |key: &str, kind: &str| other_town("a", key.as_bytes(), kind);
        assert_eq!(other(&format!("tt:a:b:agent:{id}"), "hash").as_deref(), Some("a:b"));
        assert_eq!(other(&format!("tt:a:task:agent:{id}"), "hash").as_deref(), Some("a:task"));
        assert_eq!(other(&format!("tt:a:x:y:inbox:{id}"), "list").as_deref(), Some("a:x:y"));
        assert_eq!(other("tt:a:agent:backlog", "list").as_deref(), Some("a:agent"), "no agent record is a list");
        assert_eq!(
            other(&format!("tt:a:events:agent:{id}"), "hash").as_deref(),
            Some("a:events"),
            "a's would be a stream"
        );
        // a's own keys, and names no town's reading claims.
        assert_eq!(other(&format!("tt:a:events:agent:{id}"), "stream"), None);
        assert_eq!(other(&format!("tt:a:agent:{id}"), "hash"), None);
        assert_eq!(
            other("tt:a:docket:events", "stream"),
            None,
            "a's own, though town a:docket's events would be named so too"
        );
        assert_eq!(other("tt:a:mission:r1:events", "stream"), None, "a's missions are tinytown's to name");
        assert_eq!(other("tt:a:b:c", "string"), None);
        assert_eq!(other("tt:ab:backlog", "list"), None);

        assert!(is_own("a", format!("tt:a:agent:{id}").as_bytes(), "hash"));
        assert!(is_own("a", b"tt:a:docket:events", "stream"));
        assert!(!is_own("a", format!("tt:a:agent:{id}").as_bytes(), "list"));
        assert!(!is_own("a", format!("tt:a:b:agent:{id}").as_bytes(), "hash"));
    }

    #[test]
    fn roles_parse() {
        assert_eq!(Role::parse("agent:a-1", false), Some(Role::Agent("a-1".into())));
        assert_eq!(Role::parse("events:agent:a-1", false), Some(Role::Stream));
        assert_eq!(Role::parse("docket:tasks", false), Some(Role::Stream));
        assert_eq!(Role::parse("mission:r1:work", false), None);
        assert_eq!(Role::parse("events:mission:r1", false), None);
        assert_eq!(Role::parse("pending:a", false), None);
        assert_eq!(Role::parse("pending:a", true), Some(Role::Pending("a".into())));
        assert_eq!(Role::parse("index:agents", true), Some(Role::Index));
        assert_eq!(Role::parse("inbox:", false), None);
    }
}
