//! Dreams: the key layouts of exocortex-dreams 0.4.0 and of dreamtown for
//! one organization, how to find an organization's keys in each, and what
//! each key becomes in the other.
//!
//! | seed (0.4.0) | dreamtown |
//! |---|---|
//! | `exocortex:dreams:queue:org:<org JSON>` | `exocortex:dreams:{<org>}:queue` |
//! | `...:deferred`, `...:processing` | `exocortex:dreams:{<org>}:deferred`, `...:processing` |
//! | `exocortex:dreams:counters:<RegionKey JSON>` | `exocortex:dreams:{<org>}:counters:<memory-type>:<project>` |
//! | `exocortex:dreams:counters:<RegionKey JSON>:processed-events` | `exocortex:dreams:{<org>}:events:<memory-type>:<project>` |
//! | — | `...:dead` (dead letters; left in place on the way back) |
//! | — | `...:leases` (dropped on the way back: the seed has no leases) |

use dreamtown::dreams::message::FireMessage;
use dreamtown::dreams::region::{QueueKeys, RegionKey, RegionKeys};
use dreamtown_protocol::keyspace::dreams::{DreamsKey, QueueKey};

use super::Direction;
#[cfg(feature = "net")]
use super::Result;
use super::apply::{COUNTER_MAX, Op};
#[cfg(feature = "net")]
use super::conn::{Endpoint, glob_escape};
#[cfg(feature = "net")]
use super::plan::Discovered;
use super::plan::Plan;
use super::snapshot::{Snapshot, Value};

const SEED_QUEUE: &str = "exocortex:dreams:queue:org:";
const SEED_COUNTERS: &str = "exocortex:dreams:counters:";
const EVENTS_SUFFIX: &str = ":processed-events";

/// The seed's ready list of `org`.
pub fn seed_queue(org: &str) -> String {
    format!("{SEED_QUEUE}{}", serde_json::Value::String(org.to_owned()))
}

/// The seed's queue keys of `org`: its ready list and, named after it,
/// the deferred set and in-flight list (`dead` empty: the seed has none).
pub fn seed_queue_keys(org: &str) -> QueueKeys {
    let ready = seed_queue(org);
    QueueKeys {
        deferred: format!("{ready}:deferred"),
        processing: format!("{ready}:processing"),
        dead: String::new(),
        ready,
    }
}

/// The seed's counters hash of `region`.
pub fn seed_counters(region: &RegionKey) -> String {
    format!("{SEED_COUNTERS}{}", serde_json::to_string(region).unwrap_or_default())
}

/// The seed's processed-event set of `region`.
pub fn seed_events(region: &RegionKey) -> String {
    format!("{}{EVENTS_SUFFIX}", seed_counters(region))
}

/// A key of one organization, by role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// The ready list.
    Ready,
    /// The deferred sorted set.
    Deferred,
    /// The in-flight list.
    Processing,
    /// dreamtown only: dead letters.
    Dead,
    /// dreamtown only: lease deadlines.
    Leases,
    /// A region's counters hash.
    Counters(RegionKey),
    /// A region's processed-event set.
    Events(RegionKey),
}

impl Role {
    /// The Redis type of the role's key.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Ready | Self::Processing | Self::Dead => "list",
            Self::Deferred | Self::Leases => "zset",
            Self::Counters(_) => "hash",
            Self::Events(_) => "set",
        }
    }
}

/// What a seed key name is: (organization, role); `None` if it is not
/// exactly a name the seed writes.
pub fn parse_seed(key: &[u8]) -> Option<(String, Role)> {
    // Both layouts' names are UTF-8 text: bytes that are not were never
    // written by either (read lossily they would move under another name).
    let key = std::str::from_utf8(key).ok()?;
    if let Some(rest) = key.strip_prefix(SEED_QUEUE) {
        let (json, role) = if let Some(json) = rest.strip_suffix(":deferred") {
            (json, Role::Deferred)
        } else if let Some(json) = rest.strip_suffix(":processing") {
            (json, Role::Processing)
        } else {
            (rest, Role::Ready)
        };
        let org: String = serde_json::from_str(json).ok()?;
        // Only the exact name the seed writes is the seed's.
        return (serde_json::to_string(&org).ok()? == json).then_some((org, role));
    }
    let rest = key.strip_prefix(SEED_COUNTERS)?;
    let (json, events) = match rest.strip_suffix(EVENTS_SUFFIX) {
        Some(json) => (json, true),
        None => (rest, false),
    };
    let region: RegionKey = serde_json::from_str(json).ok()?;
    if serde_json::to_string(&region).ok()? != json {
        return None;
    }
    let org = region.org.clone();
    Some((org, if events { Role::Events(region) } else { Role::Counters(region) }))
}

/// What a dreamtown key name of `org` is; `None` if it is not one of
/// dreamtown's Dreams keys of `org` that the seed has a place for (read by
/// the protocol's one parser of the module's key names, so the tool and
/// the module agree on every name; an organization's limits, which the
/// seed has no place for, stay where they are).
pub fn parse_module(org: &str, key: &[u8]) -> Option<Role> {
    match module_key(key)? {
        (owner, role) if owner == org => Some(role),
        _ => None,
    }
}

/// The organization of a dreamtown Dreams key, if it is one.
pub fn module_tenant(key: &[u8]) -> Option<String> {
    module_key(key).map(|(org, _)| org.to_owned())
}

/// The organization and role of a dreamtown Dreams key the seed has a place for.
fn module_key(key: &[u8]) -> Option<(&str, Role)> {
    let (org, key) = DreamsKey::parse(key)?;
    let role = match key {
        DreamsKey::Queue(QueueKey::Ready) => Role::Ready,
        DreamsKey::Queue(QueueKey::Deferred) => Role::Deferred,
        DreamsKey::Queue(QueueKey::Processing) => Role::Processing,
        DreamsKey::Queue(QueueKey::Dead) => Role::Dead,
        DreamsKey::Queue(QueueKey::Leases) => Role::Leases,
        DreamsKey::Queue(QueueKey::Limits) => return None,
        DreamsKey::Counters(region) => Role::Counters(RegionKey::new(org, region.project, region.memory_type)),
        DreamsKey::Events(region) => Role::Events(RegionKey::new(org, region.project, region.memory_type)),
    };
    Some((org, role))
}

/// Every organization with keys on the source.
#[cfg(feature = "net")]
pub async fn tenants(source: &mut Endpoint, direction: Direction) -> Result<Vec<String>> {
    let mut orgs = Vec::new();
    match direction {
        Direction::Forward => {
            for pattern in [format!("{SEED_QUEUE}*"), format!("{SEED_COUNTERS}*")] {
                for key in source.scan(&pattern).await? {
                    if let Some((org, _)) = parse_seed(&key) {
                        orgs.push(org);
                    }
                }
            }
        }
        Direction::Reverse => {
            for key in source.scan("exocortex:dreams:{*").await? {
                orgs.extend(module_tenant(&key));
            }
        }
    }
    orgs.sort();
    orgs.dedup();
    Ok(orgs)
}

/// The source keys of `org` to move, and those left in place (with why).
#[cfg(feature = "net")]
pub async fn discover(source: &mut Endpoint, direction: Direction, org: &str) -> Result<Discovered> {
    let mut found = Discovered::default();
    match direction {
        Direction::Forward => {
            let queue = seed_queue_keys(org);
            let mut names = vec![queue.ready, queue.deferred, queue.processing];
            let pattern = format!(
                "{SEED_COUNTERS}{{\"org\":{},*",
                glob_escape(&serde_json::Value::String(org.to_owned()).to_string())
            );
            for key in source.scan(&pattern).await? {
                let name = String::from_utf8_lossy(&key).into_owned();
                if matches!(parse_seed(&key), Some((ref owner, _)) if owner == org) {
                    names.push(name);
                }
            }
            for name in names {
                let kind: String = redis::cmd("TYPE").arg(&name).query_async(source).await?;
                if kind != "none"
                    && let Some((_, role)) = parse_seed(name.as_bytes())
                {
                    found.take(name.clone().into_bytes(), name, &kind, role.kind());
                }
            }
        }
        Direction::Reverse => {
            for key in source.scan(&format!("exocortex:dreams:{{{}}}:*", glob_escape(org))).await? {
                let name = String::from_utf8_lossy(&key).into_owned();
                match parse_module(org, &key) {
                    Some(Role::Dead) => {
                        found.left.push((name, "dead letters: the seed's layout has no place for them".into()))
                    }
                    Some(role) => {
                        let kind: String = redis::cmd("TYPE").arg(&key).query_async(source).await?;
                        if kind != "none" {
                            found.take(key, name, &kind, role.kind());
                        }
                    }
                    None => found.left.push((name, "not a key of dreamtown's Dreams layout".into())),
                }
            }
        }
    }
    Ok(found)
}

/// A field of a seed region's counters hash, as dreamtown is to read it:
/// `memories` and `edges` a decimal up to [`COUNTER_MAX`] (the ceiling both
/// the seed and the apply script keep: more is that), `last_success` and
/// `settled_generation` a decimal that dreamtown's `i64` holds (more is
/// refused: dreamtown would refuse every write of the region); any other
/// field as it is. The seed writes its counters as Lua numbers, which
/// Redis prints with 17 significant digits: a generation of 10^17 or more
/// is stored as `1.2345678901234568e+17`, read here as the integer it is
/// (the apply script takes decimals only). The error says why a value is
/// none of these (the batch is then not applied).
pub fn seed_counter(field: &[u8], value: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (limit, clamp) = match field {
        b"memories" | b"edges" => (COUNTER_MAX, true),
        b"last_success" | b"settled_generation" => (i64::MAX as u64, false),
        _ => return Ok(value.to_vec()),
    };
    let field = String::from_utf8_lossy(field);
    let decimal = !value.is_empty() && value.iter().all(u8::is_ascii_digit);
    let number = if decimal {
        // Saturating: any excess is over `limit` anyway.
        Some(value.iter().fold(0u128, |n, &digit| n.saturating_mul(10).saturating_add(u128::from(digit - b'0'))))
    } else {
        // A float cast to an integer saturates; only whole numbers pass.
        lua_number(value).filter(|x| x.is_finite() && *x >= 0.0 && x.fract() == 0.0).map(|x| x as u128)
    };
    let Some(number) = number else {
        return Err(format!("counter {field} is {:?}, not a whole number", String::from_utf8_lossy(value)));
    };
    if number <= u128::from(limit) {
        Ok(number.to_string().into_bytes())
    } else if clamp {
        Ok(limit.to_string().into_bytes())
    } else {
        Err(format!("counter {field} is {}, above what dreamtown holds ({limit})", String::from_utf8_lossy(value)))
    }
}

/// A number in the exponent form Redis prints a Lua number in
/// (`1.2345678901234568e+17`: digits, optionally `.` and digits, `e`, a
/// sign, digits).
fn lua_number(value: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(value).ok()?;
    let (mantissa, exponent) = text.split_once('e')?;
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let exponent = exponent.strip_prefix(['+', '-'])?;
    if !(digits(whole) && digits(fraction) && digits(exponent)) {
        return None;
    }
    text.parse().ok()
}

/// The counters and event-set names of regions whose pending fire may be
/// among `keys` (a fire with a snapshot) but whose counters are not: a
/// region written for the first time after the keys were listed. They join
/// the batch before it is applied, so a fire never arrives without the
/// counters that name it pending (its ACK there would be stale, and the
/// counters arriving later would hold a pending fire that no longer exists).
pub fn missing_regions(direction: Direction, org: &str, keys: &[(Vec<u8>, Snapshot)]) -> Vec<Vec<u8>> {
    let mut have = std::collections::HashSet::new();
    let mut fires = Vec::new();
    for (key, snapshot) in keys {
        let role = match direction {
            Direction::Forward => parse_seed(key).map(|(_, role)| role),
            Direction::Reverse => parse_module(org, key),
        };
        match (role, &snapshot.value) {
            (Some(Role::Counters(region)), _) => {
                have.insert(region);
            }
            (Some(Role::Ready | Role::Processing), Value::List(items)) => fires.extend(items.iter().cloned()),
            (Some(Role::Deferred), Value::ZSet(members)) => fires.extend(members.iter().map(|(item, _)| item.clone())),
            _ => {}
        }
    }
    let mut missing = Vec::new();
    for payload in fires {
        let Some(message) = FireMessage::parse(&payload) else { continue };
        if message.region.org != org || message.fired_at.is_none() || have.contains(&message.region) {
            continue;
        }
        let (counters, events) = match direction {
            Direction::Forward => (seed_counters(&message.region), seed_events(&message.region)),
            Direction::Reverse => {
                let keys = RegionKeys::new(&message.region);
                (keys.counters, keys.events)
            }
        };
        missing.push(counters.into_bytes());
        missing.push(events.into_bytes());
        have.insert(message.region);
    }
    missing
}

/// What the staged keys of `org` become on the target.
pub fn plan(direction: Direction, org: &str, keys: &[(Vec<u8>, Snapshot)]) -> Plan {
    let mut plan = Plan::default();
    let target = match direction {
        Direction::Forward => QueueKeys::new(org),
        Direction::Reverse => seed_queue_keys(org),
    };
    let mut dead = Vec::new();
    let is_fire = |payload: &[u8]| FireMessage::parse(payload).is_some_and(|message| message.region.org == org);
    for (key, snapshot) in keys {
        let name = String::from_utf8_lossy(key).into_owned();
        let role = match direction {
            Direction::Forward => parse_seed(key).filter(|(owner, _)| owner == org).map(|(_, role)| role),
            Direction::Reverse => parse_module(org, key),
        };
        let Some(role) = role else {
            plan.fail(&name, "staged key is not a Dreams key of this organization");
            continue;
        };
        match (role, &snapshot.value) {
            (role @ (Role::Ready | Role::Processing), Value::List(items)) => {
                let (key, kind) = match role {
                    Role::Ready => (&target.ready, "ready"),
                    _ => (&target.processing, "in flight"),
                };
                let (good, bad): (Vec<_>, Vec<_>) =
                    items.iter().cloned().partition(|item| direction == Direction::Reverse || is_fire(item));
                plan.count(kind, good.len());
                plan.ops.push(Op::Append { key: key.clone(), items: good });
                dead.extend(bad);
            }
            (Role::Deferred, Value::ZSet(members)) => {
                let (good, bad): (Vec<_>, Vec<_>) =
                    members.iter().cloned().partition(|(item, _)| direction == Direction::Reverse || is_fire(item));
                plan.count("deferred", good.len());
                plan.ops.push(Op::ZAddNx { key: target.deferred.clone(), members: good });
                dead.extend(bad.into_iter().map(|(item, _)| item));
            }
            (Role::Leases, Value::ZSet(members)) => plan.drop("leases", members.len()),
            (Role::Counters(region), Value::Hash(fields)) => {
                let (key, fields) = match direction {
                    Direction::Forward => {
                        let read: std::result::Result<Vec<_>, String> = fields
                            .iter()
                            .map(|(field, value)| seed_counter(field, value).map(|value| (field.clone(), value)))
                            .collect();
                        match read {
                            Ok(fields) => (RegionKeys::new(&region).counters, fields),
                            Err(why) => {
                                plan.fail(&name, &why);
                                continue;
                            }
                        }
                    }
                    Direction::Reverse => (seed_counters(&region), fields.clone()),
                };
                plan.count("counter regions", 1);
                plan.ops.push(Op::Counters { key, fields });
            }
            (Role::Events(region), Value::Set(members)) => {
                let key = match direction {
                    Direction::Forward => RegionKeys::new(&region).events,
                    Direction::Reverse => seed_events(&region),
                };
                plan.count("counted event ids", members.len());
                plan.ops.push(Op::SAdd { key, members: members.clone() });
            }
            (_, value) => plan.fail(&name, &format!("unexpected contents ({})", value.kind())),
        }
    }
    if !dead.is_empty() {
        plan.dead_lettered += dead.len() as u64;
        plan.ops.push(Op::Append { key: target.dead, items: dead });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_names_parse() {
        let region = RegionKey::new("acme", "web", 3);
        assert_eq!(
            seed_counters(&region),
            r#"exocortex:dreams:counters:{"org":"acme","project":"web","memory_type":3}"#
        );
        assert_eq!(
            parse_seed(seed_counters(&region).as_bytes()),
            Some(("acme".into(), Role::Counters(region.clone())))
        );
        assert_eq!(parse_seed(seed_events(&region).as_bytes()), Some(("acme".into(), Role::Events(region))));
        assert_eq!(seed_queue("acme"), r#"exocortex:dreams:queue:org:"acme""#);
        assert_eq!(
            parse_seed(r#"exocortex:dreams:queue:org:"acme":deferred"#.as_bytes()),
            Some(("acme".into(), Role::Deferred))
        );
        assert_eq!(
            parse_seed(r#"exocortex:dreams:queue:org:"a:b":processing"#.as_bytes()),
            Some(("a:b".into(), Role::Processing))
        );
        assert_eq!(parse_seed(r#"exocortex:dreams:queue:org:acme"#.as_bytes()), None);
        assert_eq!(
            parse_seed(r#"exocortex:dreams:counters:{"project":"web","org":"acme","memory_type":3}"#.as_bytes()),
            None
        );
    }

    fn snapshot(value: Value) -> Snapshot {
        Snapshot { value, pttl: None }
    }

    #[test]
    fn forward_plan_sends_what_is_not_a_fire_of_the_org_to_dead_letters() {
        let fire = |org: &str| {
            FireMessage {
                region: RegionKey::new(org, "web", 3),
                fired_by: "n".into(),
                fired_at: None,
                fire_id: Some("f".into()),
                queued_payload: None,
                quiet_deferred: false,
            }
            .to_payload()
            .into_bytes()
        };
        let ready = seed_queue("acme").into_bytes();
        let keys = vec![(ready, snapshot(Value::List(vec![fire("acme"), b"junk".to_vec(), fire("other")])))];
        let plan = plan(Direction::Forward, "acme", &keys);
        assert_eq!(plan.moved.get("ready"), Some(&1));
        assert_eq!(plan.dead_lettered, 2);
        assert_eq!(
            plan.ops,
            vec![
                Op::Append { key: "exocortex:dreams:{acme}:queue".into(), items: vec![fire("acme")] },
                Op::Append { key: "exocortex:dreams:{acme}:dead".into(), items: vec![b"junk".to_vec(), fire("other")] },
            ]
        );
    }

    #[test]
    fn reverse_plan_drops_leases_and_names_the_seed_keys() {
        let region = RegionKey::new("acme", "web", 3);
        let keys = vec![
            (b"exocortex:dreams:{acme}:leases".to_vec(), snapshot(Value::ZSet(vec![(b"p".to_vec(), "1".into())]))),
            (
                b"exocortex:dreams:{acme}:counters:3:web".to_vec(),
                snapshot(Value::Hash(vec![(b"memories".to_vec(), b"4".to_vec())])),
            ),
        ];
        let plan = plan(Direction::Reverse, "acme", &keys);
        assert_eq!(plan.dropped.get("leases"), Some(&1));
        assert_eq!(
            plan.ops,
            vec![Op::Counters { key: seed_counters(&region), fields: vec![(b"memories".to_vec(), b"4".to_vec())] }]
        );
    }

    /// Found by the migrate_readers fuzz target: names that are not UTF-8
    /// were read lossily, so their contents moved under another name (a
    /// project's bytes replaced by U+FFFD). Neither layout writes them:
    /// they are not read as its keys, and a staged one is not placed.
    #[test]
    fn names_that_are_not_utf8_are_no_layouts() {
        let seed = b"exocortex:dreams:counters:{\"org\":\"acme\",\"project\":\"w\xffb\",\"memory_type\":3}";
        assert_eq!(parse_seed(seed), None);
        assert_eq!(parse_seed(b"exocortex:dreams:queue:org:\"ac\xffme\""), None);
        let module = b"exocortex:dreams:{acme}:counters:3:w\xffb";
        assert_eq!(parse_module("acme", module), None);
        assert_eq!(module_tenant(module), None);
        let hash = snapshot(Value::Hash(vec![(b"memories".to_vec(), b"4".to_vec())]));
        let plan = plan(Direction::Reverse, "acme", &[(module.to_vec(), hash)]);
        assert!(plan.ops.is_empty());
        assert_eq!(plan.failures.len(), 1);
    }

    /// The seed's counters as dreamtown reads them. Found with the
    /// migrate_readers fuzz target's property that dreamtown reads the
    /// counters a move writes: a `last_success` above i64 was carried over
    /// (the apply script takes any digits) and the region's every RECORD
    /// refused afterwards; and the seed's own spelling of a generation of
    /// 10^17 or more (a Lua number printed by Redis) made the batch refused.
    #[test]
    fn seed_counters_read_as_dreamtown_holds_them() {
        let read = |field: &str, value: &str| {
            seed_counter(field.as_bytes(), value.as_bytes()).map(|value| String::from_utf8(value).unwrap())
        };
        assert_eq!(read("memories", "12").as_deref(), Ok("12"));
        assert_eq!(read("edges", "0042").as_deref(), Ok("42"));
        assert_eq!(read("memories", "99999999999999999999999999999999999999999").as_deref(), Ok("4294967295"));
        assert_eq!(read("memories", "1e+300").as_deref(), Ok("4294967295"));
        assert_eq!(read("settled_generation", "1.2345678901234568e+17").as_deref(), Ok("123456789012345680"));
        assert_eq!(read("settled_generation", "9223372036854775807").as_deref(), Ok("9223372036854775807"));
        assert!(read("settled_generation", "9223372036854775808").is_err());
        assert!(read("last_success", "99999999999999999999").is_err());
        assert!(read("last_success", "1e+19").is_err());
        assert!(read("last_success", "1.5").is_err());
        assert!(read("memories", "1.5e+0").is_err());
        assert!(read("memories", "-1").is_err());
        assert!(read("edges", "").is_err());
        assert!(read("memories", "inf").is_err());
        assert_eq!(read("pending", "f-1").as_deref(), Ok("f-1"));
        let region = RegionKey::new("acme", "web", 3);
        let hash = |value: &str| {
            snapshot(Value::Hash(vec![
                (b"last_success".to_vec(), value.as_bytes().to_vec()),
                (b"pending".to_vec(), b"f".to_vec()),
            ]))
        };
        let moved = plan(Direction::Forward, "acme", &[(seed_counters(&region).into_bytes(), hash("1.7e+17"))]);
        assert_eq!(
            moved.ops,
            vec![Op::Counters {
                key: RegionKeys::new(&region).counters,
                fields: vec![
                    (b"last_success".to_vec(), b"170000000000000000".to_vec()),
                    (b"pending".to_vec(), b"f".to_vec())
                ]
            }]
        );
        let refused =
            plan(Direction::Forward, "acme", &[(seed_counters(&region).into_bytes(), hash("99999999999999999999"))]);
        assert!(refused.ops.is_empty());
        assert_eq!(refused.failures.len(), 1, "{:?}", refused.failures);
    }

    #[test]
    fn module_names_parse() {
        assert_eq!(parse_module("acme", "exocortex:dreams:{acme}:queue".as_bytes()), Some(Role::Ready));
        assert_eq!(
            parse_module("acme", "exocortex:dreams:{acme}:counters:3:a:b".as_bytes()),
            Some(Role::Counters(RegionKey::new("acme", "a:b", 3)))
        );
        assert_eq!(parse_module("acme", "exocortex:dreams:{acme}:counters:x:web".as_bytes()), None);
        // Found by the migrate_readers fuzz target: a second spelling of a
        // memory type was read as the region's (two keys, one seed key).
        assert_eq!(parse_module("acme", b"exocortex:dreams:{acme}:counters:03:web"), None);
        assert_eq!(parse_module("acme", b"exocortex:dreams:{acme}:events:+3:web"), None);
        assert_eq!(
            parse_module("acme", b"exocortex:dreams:{acme}:counters:0:web"),
            Some(Role::Counters(RegionKey::new("acme", "web", 0)))
        );
        assert_eq!(parse_module("acme", "exocortex:dreams:{acme}:other".as_bytes()), None);
    }
}
