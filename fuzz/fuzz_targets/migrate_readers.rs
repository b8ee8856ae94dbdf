//! `dreamtown-migrate`'s readers of seed keys (`dreamtown_migrate`,
//! built without its `net` feature: no redis crate, no tokio): the key
//! name readers of both layouts of both seeds, and the plans that read
//! what the keys hold (fire payloads, counters, event sets, agent and task
//! records, mailboxes, flags, streams) and say what the target gets.
//!
//! Input: the first byte picks the family (Dreams / Town) and which
//! layout the keys start in (the seed's, moved forward, or dreamtown's,
//! moved back). The rest is records separated by 0x1e: the first is the
//! tenant; each other is a key, its fields separated by 0x1f: the name
//! (0x01 then a template byte builds a name of the tenant's layout: see
//! `name`), a type tag (`l` list, `z` zset as member/score pairs, `h` hash
//! as field/value pairs, `s` set, `S` string, `x` stream as dump then
//! id/field/value triples; anything after the tag byte is a TTL), then
//! the items.
//!
//! Asserted, beyond "no panic":
//! * counters (`dreams::seed_counter`): what is accepted is a canonical
//!   decimal dreamtown reads, within the field's limit, and reads again
//!   unchanged; decimals are kept, clamped or refused exactly by their
//!   value (no overflow: a u128 model); the seed's Lua-printed exponent
//!   form reads as that double's integer;
//! * names: a name a reader accepts is byte for byte what the layout's
//!   writer makes of what was read (no second spelling, no lossy text),
//!   and the other layout's name for it reads back to the same role;
//! * the first move: no two source keys write one target key; every fire
//!   item lands once (its queue, or dead letters when it is not a fire of
//!   the organization, exactly as `serde_json` reads it), the counts are
//!   what moved; the regions a batch's fires need are named, in the
//!   layout's spelling;
//! * Town's first move writes each key's contents under the same
//!   remainder, a pending list at the head of its inbox (checked key by
//!   key against what docs/migrating.md says);
//! * round trip: the first move applied to an empty target (a model of the
//!   apply script), moved back the other way and then again the first
//!   way, gives what the first move wrote, less what the other layout has
//!   no place for (dead letters; fires of another organization). Counter
//!   arithmetic is modelled in u128 and never overflows (an agent
//!   record's two counters add exactly; a sum past i64 refuses the batch,
//!   as the script does); the counters a move forward writes are numbers
//!   dreamtown reads (`RegionCounters`).
#![no_main]

use std::collections::{BTreeMap, HashSet};

use dreamtown::dreams::message::FireMessage;
use dreamtown::dreams::region::{QueueKeys, RegionKey, RegionKeys};
use dreamtown::dreams::store::{parse_integer, RegionCounters};
use dreamtown_migrate::apply::{Op, COUNTER_MAX, RECORD_COUNTER_MAX};
use dreamtown_migrate::snapshot::{Snapshot, Value};
use dreamtown_migrate::{dreams, town, valid_tenant, Direction};
use libfuzzer_sys::fuzz_target;

type Keys = Vec<(Vec<u8>, Snapshot)>;
type Model = BTreeMap<Vec<u8>, Snapshot>;

#[derive(Clone, Copy, PartialEq)]
enum Family {
    Dreams,
    Town,
}

fn other(direction: Direction) -> Direction {
    match direction {
        Direction::Forward => Direction::Reverse,
        Direction::Reverse => Direction::Forward,
    }
}

/// A name from a template: `0x01 k rest` with `k` one of `q` (the seed's
/// queue + rest), `c`/`e` (the seed's counters / events of project rest,
/// memory type its first byte), `m` (dreamtown's prefix + rest), `t`
/// (tinytown's prefix + rest), `T` (dreamtown's Town prefix + rest).
fn name(tenant: &str, raw: &[u8]) -> Vec<u8> {
    let Some(rest) = raw.strip_prefix(&[1]) else { return raw.to_vec() };
    let Some((&kind, rest)) = rest.split_first() else { return raw.to_vec() };
    let text = String::from_utf8_lossy(rest);
    let region = || {
        let (memory_type, project) = rest.split_first().map_or((0, &[][..]), |(m, p)| (u32::from(*m), p));
        RegionKey::new(tenant, String::from_utf8_lossy(project), memory_type)
    };
    let mut out = match kind {
        b'q' => format!("{}{text}", dreams::seed_queue(tenant)),
        b'c' => dreams::seed_counters(&region()),
        b'e' => dreams::seed_events(&region()),
        b'm' => format!("exocortex:dreams:{{{tenant}}}:"),
        b't' => format!("tt:{tenant}:"),
        b'T' => format!("tt:{{{tenant}}}:"),
        _ => return raw.to_vec(),
    }
    .into_bytes();
    if matches!(kind, b'm' | b't' | b'T') {
        out.extend_from_slice(rest);
    }
    out
}

fn pairs(items: &[&[u8]]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut seen = HashSet::new();
    items
        .chunks_exact(2)
        .filter(|pair| seen.insert(pair[0].to_vec()))
        .map(|pair| (pair[0].to_vec(), pair[1].to_vec()))
        .collect()
}

fn snapshot(fields: &[&[u8]]) -> Option<Snapshot> {
    let (tag, items) = fields.split_first()?;
    let (&kind, ttl) = tag.split_first()?;
    let pttl = (!ttl.is_empty()).then(|| 1 + ttl.iter().fold(0i64, |n, &b| (n * 256 + i64::from(b)) % 1_000_000_000));
    let value = match kind {
        b'l' => Value::List(items.iter().map(|item| item.to_vec()).collect()),
        b'z' => Value::ZSet(
            pairs(items).into_iter().map(|(member, score)| (member, String::from_utf8_lossy(&score).into_owned())).collect(),
        ),
        b'h' => Value::Hash(pairs(items)),
        b's' => {
            let mut members: Vec<Vec<u8>> = items.iter().map(|item| item.to_vec()).collect();
            members.sort();
            members.dedup();
            Value::Set(members)
        }
        b'S' => Value::Str(items.first().copied().unwrap_or_default().to_vec()),
        b'x' => {
            let (dump, entries): (&[u8], &[&[u8]]) = match items.split_first() {
                Some((dump, entries)) => (dump, entries),
                None => (&[], &[]),
            };
            Value::Stream {
                dump: dump.to_vec(),
                entries: entries
                    .chunks_exact(3)
                    .map(|e| (String::from_utf8_lossy(e[0]).into_owned(), vec![(e[1].to_vec(), e[2].to_vec())]))
                    .collect(),
                groups: Vec::new(),
            }
        }
        _ => Value::Other(String::from_utf8_lossy(&[kind]).into_owned()),
    };
    // Redis has no empty list, set, hash or sorted set.
    let empty = matches!(&value, Value::List(_) | Value::ZSet(_) | Value::Hash(_) | Value::Set(_)) && value.is_empty();
    (!empty).then_some(Snapshot { value, pttl })
}

// ---------------------------------------------------------------- names

/// dreamtown's name of a Dreams role of `org`.
fn module_name(org: &str, role: &dreams::Role) -> String {
    let queue = QueueKeys::new(org);
    match role {
        dreams::Role::Ready => queue.ready,
        dreams::Role::Deferred => queue.deferred,
        dreams::Role::Processing => queue.processing,
        dreams::Role::Dead => queue.dead,
        dreams::Role::Leases => format!("exocortex:dreams:{{{org}}}:leases"),
        dreams::Role::Counters(region) => RegionKeys::new(region).counters,
        dreams::Role::Events(region) => RegionKeys::new(region).events,
    }
}

/// The seed's name of a Dreams role of `org` (none for dreamtown's own).
fn seed_name(org: &str, role: &dreams::Role) -> Option<String> {
    let ready = dreams::seed_queue(org);
    Some(match role {
        dreams::Role::Ready => ready,
        dreams::Role::Deferred => format!("{ready}:deferred"),
        dreams::Role::Processing => format!("{ready}:processing"),
        dreams::Role::Dead | dreams::Role::Leases => return None,
        dreams::Role::Counters(region) => dreams::seed_counters(region),
        dreams::Role::Events(region) => dreams::seed_events(region),
    })
}

fn dreams_names(org: &str, key: &[u8]) {
    if let Some((owner, role)) = dreams::parse_seed(key) {
        let written = seed_name(&owner, &role).expect("the seed's layout has the role");
        assert_eq!(written.as_bytes(), key, "parse_seed accepted a name the seed does not write");
        let moved = module_name(&owner, &role);
        if valid_tenant(&owner) {
            assert_eq!(dreams::parse_module(&owner, moved.as_bytes()), Some(role.clone()), "{moved}");
            assert_eq!(dreams::module_tenant(moved.as_bytes()), Some(owner.clone()), "{moved}");
        }
    }
    if let Some(role) = dreams::parse_module(org, key) {
        let written = module_name(org, &role);
        assert_eq!(written.as_bytes(), key, "parse_module accepted a name dreamtown does not write");
        if valid_tenant(org) {
            assert_eq!(dreams::module_tenant(key).as_deref(), Some(org));
        }
        if let Some(back) = seed_name(org, &role) {
            assert_eq!(dreams::parse_seed(back.as_bytes()), Some((org.to_owned(), role)), "{back}");
        }
    }
    if let Some(owner) = dreams::module_tenant(key) {
        assert!(dreams::parse_module(&owner, key).is_some());
    }
}

fn town_base(direction: Direction, town: &str) -> String {
    match direction {
        Direction::Forward => format!("tt:{town}:"),
        Direction::Reverse => format!("tt:{{{town}}}:"),
    }
}

fn town_names(tenant: &str, key: &[u8]) {
    for direction in [Direction::Forward, Direction::Reverse] {
        if let Some((rest, role)) = town::role_of(direction, tenant, key) {
            let written = format!("{}{rest}", town_base(direction, tenant));
            assert_eq!(written.as_bytes(), key, "role_of accepted a name the layout does not write");
            let module_only = matches!(role, town::Role::Pending(_) | town::Role::Leases(_) | town::Role::Index);
            if !module_only && valid_tenant(tenant) {
                let moved = format!("{}{rest}", town_base(other(direction), tenant));
                assert_eq!(town::role_of(other(direction), tenant, moved.as_bytes()), Some((rest.clone(), role.clone())));
            }
        }
        if let Some((owner, role)) = town::tenant_of(direction, key) {
            assert_eq!(town::role_of(direction, &owner, key).map(|(_, r)| r), Some(role), "tenant_of and role_of differ");
        }
    }
}

// ---------------------------------------------------------------- counters

/// `seed_counter`: what it accepts is a canonical decimal dreamtown reads,
/// within the field's limit, read again unchanged; a canonical decimal in
/// range is kept as it is; a decimal is refused only above i64 (clamped
/// for the two counts); the exponent form Redis prints a Lua number in is
/// read as exactly that double's integer.
fn counter(field: &[u8], value: &[u8]) {
    let read = dreams::seed_counter(field, value);
    let numeric = matches!(field, b"memories" | b"edges" | b"last_success" | b"settled_generation");
    let clamp = matches!(field, b"memories" | b"edges");
    let limit = if clamp { u128::from(COUNTER_MAX) } else { i64::MAX as u128 };
    if !numeric {
        assert_eq!(read.as_deref(), Ok(value), "a field that is not a counter is kept");
        return;
    }
    let decimal = !value.is_empty() && value.iter().all(u8::is_ascii_digit);
    if let Ok(out) = &read {
        let n = parse_integer(out).expect("an accepted counter is a decimal dreamtown reads");
        assert!(n >= 0 && (n as u128) <= limit && n.to_string().as_bytes() == out.as_slice(), "{out:?}");
        assert_eq!(dreams::seed_counter(field, out).as_ref(), Ok(out), "read twice");
        if decimal && number(value) <= limit && (value == b"0" || value[0] != b'0') {
            assert_eq!(out.as_slice(), value, "a canonical decimal in range is kept");
        }
        if !decimal {
            let x: f64 = std::str::from_utf8(value).expect("utf-8").parse().expect("a number");
            let want = if clamp && x >= limit as f64 { limit } else { x as u128 };
            assert_eq!(n as u128, want, "{:?} read as {n}", String::from_utf8_lossy(value));
        }
    }
    if decimal {
        assert_eq!(read.is_ok(), clamp || number(value) <= limit, "{:?}", String::from_utf8_lossy(value));
        // The same number as the seed's Lua prints it once it is a double.
        let double = number(value).min(u128::from(u64::MAX)) as f64;
        let printed = format!("{double:e}").replacen("e", "e+", 1);
        let want = if clamp { (double as u128).min(limit) } else { double as u128 };
        match dreams::seed_counter(field, printed.as_bytes()) {
            Ok(out) => assert_eq!(number(&out), want, "{printed}"),
            Err(_) => assert!(!clamp && want > limit, "{printed} refused"),
        }
    }
}

// ---------------------------------------------------------------- the apply script, modelled

fn digits(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(u8::is_ascii_digit)
}

/// A `^%d+$` value as a number, saturating (the script adds such values
/// exactly, and takes min(COUNTER_MAX, ...) or refuses past
/// RECORD_COUNTER_MAX: both far below a saturated u128).
fn number(v: &[u8]) -> u128 {
    v.iter().fold(0u128, |n, &b| n.saturating_mul(10).saturating_add(u128::from(b - b'0')))
}

fn larger(a: &[u8], b: &[u8]) -> Vec<u8> {
    if a.len() != b.len() {
        return if a.len() > b.len() { a.to_vec() } else { b.to_vec() };
    }
    if a > b { a.to_vec() } else { b.to_vec() }
}

fn hash_set(fields: &mut Vec<(Vec<u8>, Vec<u8>)>, field: &[u8], value: Vec<u8>) {
    match fields.iter_mut().find(|(f, _)| f == field) {
        Some((_, v)) => *v = value,
        None => fields.push((field.to_vec(), value)),
    }
}

fn hash_get<'a>(fields: &'a [(Vec<u8>, Vec<u8>)], field: &[u8]) -> Option<&'a [u8]> {
    fields.iter().find(|(f, _)| f == field).map(|(_, v)| v.as_slice())
}

/// Apply `ops` (empty ones skipped, as the tool does) to `model` as the
/// apply script would; `None` where the script refuses the batch.
fn apply(model: &mut Model, ops: &[Op]) -> Option<()> {
    let numeric = [&b"memories"[..], b"edges", b"last_success", b"settled_generation"];
    for op in ops.iter().filter(|op| !op.is_empty()) {
        // A partial record's counters add; a sum past what dreamtown counts
        // to refuses the batch before anything is written.
        if let Op::Record { key, fields, replace: false } = op {
            if let Some(Snapshot { value: Value::Hash(current), .. }) = model.get(key.as_bytes()) {
                for (field, value) in fields {
                    if let Some(current) = hash_get(current, field).filter(|current| {
                        matches!(field.as_slice(), b"rounds_completed" | b"tasks_completed") && digits(current) && digits(value)
                    }) {
                        if number(current).saturating_add(number(value)) > u128::from(RECORD_COUNTER_MAX) {
                            return None;
                        }
                    }
                }
            }
        }
        if let Op::Counters { key, fields } = op {
            let current = match model.get(key.as_bytes()) {
                Some(Snapshot { value: Value::Hash(f), .. }) => f.clone(),
                _ => Vec::new(),
            };
            for (field, value) in fields {
                if numeric.contains(&field.as_slice())
                    && !(digits(value) && hash_get(&current, field).is_none_or(digits))
                {
                    return None;
                }
            }
        }
    }
    for op in ops.iter().filter(|op| !op.is_empty()) {
        match op {
            Op::Append { key, items } | Op::Prepend { key, items } => {
                let entry = model.entry(key.clone().into_bytes()).or_insert(Snapshot { value: Value::List(vec![]), pttl: None });
                let Value::List(list) = &mut entry.value else { panic!("{key}: a list op on a {}", entry.value.kind()) };
                if matches!(op, Op::Append { .. }) {
                    list.extend(items.iter().cloned());
                } else {
                    list.splice(0..0, items.iter().cloned());
                }
            }
            Op::ZAddNx { key, members } => {
                let entry = model.entry(key.clone().into_bytes()).or_insert(Snapshot { value: Value::ZSet(vec![]), pttl: None });
                let Value::ZSet(zset) = &mut entry.value else { panic!("{key}: a zset op on a {}", entry.value.kind()) };
                for (member, score) in members {
                    if !zset.iter().any(|(m, _)| m == member) {
                        zset.push((member.clone(), score.clone()));
                    }
                }
            }
            Op::SAdd { key, members } => {
                let entry = model.entry(key.clone().into_bytes()).or_insert(Snapshot { value: Value::Set(vec![]), pttl: None });
                let Value::Set(set) = &mut entry.value else { panic!("{key}: a set op on a {}", entry.value.kind()) };
                set.extend(members.iter().cloned());
                set.sort();
                set.dedup();
            }
            Op::HSet { key, fields } | Op::HSetNx { key, fields } | Op::Record { key, fields, .. } | Op::Counters { key, fields } => {
                let entry = model.entry(key.clone().into_bytes()).or_insert(Snapshot { value: Value::Hash(vec![]), pttl: None });
                let Value::Hash(hash) = &mut entry.value else { panic!("{key}: a hash op on a {}", entry.value.kind()) };
                if let Op::Record { replace: true, .. } = op {
                    hash.clear();
                }
                for (field, value) in fields {
                    let current = hash_get(hash, field).map(<[u8]>::to_vec);
                    let new = match op {
                        Op::HSetNx { .. } if current.is_some() => continue,
                        Op::Record { replace: false, .. }
                            if matches!(field.as_slice(), b"rounds_completed" | b"tasks_completed")
                                && current.as_deref().is_some_and(digits)
                                && digits(value) =>
                        {
                            let sum = number(current.as_deref().unwrap_or_default()).saturating_add(number(value));
                            sum.to_string().into_bytes()
                        }
                        Op::Counters { .. } => match field.as_slice() {
                            b"memories" | b"edges" => {
                                let sum = number(current.as_deref().unwrap_or(b"0")).saturating_add(number(value));
                                sum.min(u128::from(COUNTER_MAX)).to_string().into_bytes()
                            }
                            b"last_success" | b"settled_generation" => match current {
                                Some(current) => larger(&current, value),
                                None => value.clone(),
                            },
                            _ if current.is_some() => continue,
                            _ => value.clone(),
                        },
                        _ => value.clone(),
                    };
                    hash_set(hash, field, new);
                }
            }
            Op::Activity { key, items, pttl } => {
                let entry = model.entry(key.clone().into_bytes()).or_insert(Snapshot { value: Value::List(vec![]), pttl: None });
                let Value::List(list) = &mut entry.value else { panic!("{key}: a list op on a {}", entry.value.kind()) };
                list.splice(0..0, items.iter().cloned());
                list.truncate(10);
                if let Some(ttl) = pttl.filter(|ttl| *ttl > 0) {
                    if entry.pttl.is_none_or(|current| current < ttl) {
                        entry.pttl = Some(ttl);
                    }
                }
            }
            Op::Flag { key, value, pttl } => {
                assert!(!model.contains_key(key.as_bytes()), "{key}: two flags in one batch");
                let snapshot = Snapshot { value: Value::Str(value.clone()), pttl: pttl.filter(|ttl| *ttl > 0) };
                model.insert(key.clone().into_bytes(), snapshot);
            }
            Op::Stream { key, dump, pttl, entries, groups } => {
                assert!(!model.contains_key(key.as_bytes()), "{key}: two streams in one batch");
                let value = Value::Stream { dump: dump.clone(), entries: entries.clone(), groups: groups.clone() };
                model.insert(key.clone().into_bytes(), Snapshot { value, pttl: pttl.filter(|ttl| *ttl > 0) });
            }
        }
    }
    Some(())
}

// ---------------------------------------------------------------- plans

/// A fire of `org`, as serde_json reads it.
fn is_fire(org: &str, payload: &[u8]) -> bool {
    serde_json::from_slice::<FireMessage>(payload).is_ok_and(|message| message.region.org == org)
}

fn plan(family: Family, direction: Direction, tenant: &str, keys: &[(Vec<u8>, Snapshot)]) -> dreamtown_migrate::plan::Plan {
    let plan = match family {
        Family::Dreams => dreams::plan(direction, tenant, keys),
        Family::Town => town::plan(direction, tenant, keys),
    };
    // No two source keys write one target key (shared by design: dreams'
    // dead letters, Town's indexes, a pending list prepended to its inbox).
    let mut written = HashSet::new();
    for op in &plan.ops {
        let key = op.key();
        let shared = key.ends_with("}:dead")
            || key.contains("}:index:")
            || matches!(op, Op::Prepend { .. });
        assert!(shared || written.insert(key.to_owned()), "two source keys write {key}");
    }
    plan
}

/// What the first move of Dreams does with fire items: conserved, sorted
/// into queue and dead letters by serde_json's reading, counted.
fn dreams_items(direction: Direction, org: &str, keys: &[(Vec<u8>, Snapshot)], plan: &dreamtown_migrate::plan::Plan) {
    let mut queued = Vec::new();
    for (key, snapshot) in keys {
        let role = match direction {
            Direction::Forward => dreams::parse_seed(key).filter(|(owner, _)| owner == org).map(|(_, role)| role),
            Direction::Reverse => dreams::parse_module(org, key),
        };
        match (role, &snapshot.value) {
            (Some(dreams::Role::Ready | dreams::Role::Processing), Value::List(items)) => queued.extend(items.iter().cloned()),
            (Some(dreams::Role::Deferred), Value::ZSet(members)) => queued.extend(members.iter().map(|(m, _)| m.clone())),
            _ => {}
        }
    }
    let (mut good, mut dead) = (Vec::new(), Vec::new());
    for op in &plan.ops {
        let items: Vec<Vec<u8>> = match op {
            Op::Append { items, .. } => items.clone(),
            Op::ZAddNx { members, .. } => members.iter().map(|(m, _)| m.clone()).collect(),
            _ => continue,
        };
        if op.key().ends_with("}:dead") {
            dead.extend(items);
        } else {
            good.extend(items);
        }
    }
    for item in &good {
        assert!(direction == Direction::Reverse || is_fire(org, item), "a non-fire was queued: {:?}", String::from_utf8_lossy(item));
    }
    for item in &dead {
        assert!(!is_fire(org, item), "a fire was dead-lettered: {:?}", String::from_utf8_lossy(item));
    }
    assert_eq!(plan.dead_lettered, dead.len() as u64);
    let moved: u64 = ["ready", "in flight", "deferred"].iter().filter_map(|kind| plan.moved.get(*kind)).sum();
    assert_eq!(moved, good.len() as u64);
    if plan.failures.is_empty() {
        let mut all: Vec<_> = good.into_iter().chain(dead).collect();
        all.sort();
        queued.sort();
        assert_eq!(all, queued, "fire items lost or doubled");
    }
}

/// The regions the batch's fires need: named in the layout's spelling,
/// those absent only, and every one absent.
fn dreams_missing(direction: Direction, org: &str, keys: &[(Vec<u8>, Snapshot)]) {
    let missing = dreams::missing_regions(direction, org, keys);
    let mut seen = HashSet::new();
    for name in &missing {
        assert!(seen.insert(name.clone()), "named twice: {}", String::from_utf8_lossy(name));
        let role = match direction {
            Direction::Forward => dreams::parse_seed(name).map(|(_, role)| role),
            Direction::Reverse => dreams::parse_module(org, name),
        };
        assert!(matches!(role, Some(dreams::Role::Counters(_) | dreams::Role::Events(_))), "{}", String::from_utf8_lossy(name));
        if matches!(role, Some(dreams::Role::Counters(_))) {
            assert!(!keys.iter().any(|(key, _)| key == name), "already in the batch: {}", String::from_utf8_lossy(name));
        }
    }
}

/// What the first move of Town writes, key by key, as docs/migrating.md
/// says: every key under the same remainder with its contents (an
/// activity log cut to 10; TTLs kept for activity logs, flags and
/// streams); on the way back a pending list at the head of its inbox,
/// leases and indexes dropped; on the way in the indexes added.
fn town_first_move(direction: Direction, town: &str, keys: &[(Vec<u8>, Snapshot)], written: &Model) {
    let mut expected = Model::new();
    let mut pending = Vec::new();
    for (key, snapshot) in keys {
        let Some((rest, role)) = town::role_of(direction, town, key) else { continue };
        let target = format!("{}{rest}", town_base(other(direction), town)).into_bytes();
        let keeps_ttl = matches!(role, town::Role::Activity(_) | town::Role::Stop(_) | town::Role::Stream);
        let mut snapshot = Snapshot { value: snapshot.value.clone(), pttl: snapshot.pttl.filter(|ttl| keeps_ttl && *ttl > 0) };
        match (&role, &mut snapshot.value) {
            (town::Role::Leases(_) | town::Role::Index, _) => continue,
            (town::Role::Pending(id), Value::List(items)) => {
                pending.push((format!("{}inbox:{id}", town_base(other(direction), town)).into_bytes(), items.clone()));
                continue;
            }
            (town::Role::Activity(_), Value::List(items)) => items.truncate(10),
            _ => {}
        }
        expected.insert(target, snapshot);
    }
    for (inbox, items) in pending {
        let entry = expected.entry(inbox).or_insert(Snapshot { value: Value::List(vec![]), pttl: None });
        if let Value::List(list) = &mut entry.value {
            list.splice(0..0, items);
        }
    }
    let got: Keys = written.iter().filter(|(key, _)| expected.contains_key(*key)).map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(unordered(got), unordered(expected.into_iter().collect()), "the first move wrote other contents");
}

/// The keys of `model` that the next move's listing would take (Dreams'
/// dead letters stay where they are).
fn listed(family: Family, model: &Model) -> Keys {
    model
        .iter()
        .filter(|(key, _)| !(family == Family::Dreams && key.ends_with(b"}:dead")))
        .map(|(key, snapshot)| (key.clone(), snapshot.clone()))
        .collect()
}

/// What of the first move's result survives a round trip: less dead
/// letters (Dreams, moved forward); less items that are not fires of the
/// organization (Dreams, moved back: the way forward dead-letters them).
fn survives(family: Family, direction: Direction, tenant: &str, model: &Model) -> Model {
    let mut kept = Model::new();
    for (key, snapshot) in listed(family, model) {
        let mut snapshot = snapshot;
        if family == Family::Dreams && direction == Direction::Reverse {
            match &mut snapshot.value {
                Value::List(items) => items.retain(|item| is_fire(tenant, item)),
                Value::ZSet(members) => members.retain(|(item, _)| is_fire(tenant, item)),
                _ => {}
            }
            if snapshot.value.is_empty() {
                continue;
            }
        }
        kept.insert(key, snapshot);
    }
    kept
}

/// Hash fields and sorted-set members compared as sets (their order is
/// the server's).
fn unordered(mut keys: Keys) -> Keys {
    for (_, snapshot) in &mut keys {
        match &mut snapshot.value {
            Value::Hash(fields) => fields.sort(),
            Value::ZSet(members) => members.sort(),
            _ => {}
        }
    }
    keys
}

fn round_trip(family: Family, direction: Direction, tenant: &str, keys: &Keys) {
    let first = plan(family, direction, tenant, keys);
    if family == Family::Dreams {
        dreams_items(direction, tenant, keys, &first);
        dreams_missing(direction, tenant, keys);
    }
    if !first.failures.is_empty() {
        return; // the tool gives such a batch back
    }
    let mut written = Model::new();
    if apply(&mut written, &first.ops).is_none() {
        return; // the script refuses it, writing nothing
    }
    if family == Family::Town {
        town_first_move(direction, tenant, keys, &written);
    }
    for (key, snapshot) in &written {
        match family {
            Family::Dreams => dreams_names(tenant, key),
            Family::Town => town_names(tenant, key),
        }
        // What a move forward writes into a region's counters, dreamtown
        // reads (else every RECORD of the region would be refused).
        if let (Family::Dreams, Direction::Forward, Some(dreams::Role::Counters(_)), Value::Hash(fields)) =
            (family, direction, dreams::parse_module(tenant, key), &snapshot.value)
        {
            let read = RegionCounters::parse(|name| hash_get(fields, name.as_bytes()).map(<[u8]>::to_vec));
            assert!(read.is_ok(), "dreamtown cannot read the counters written to {}: {fields:?}", String::from_utf8_lossy(key));
        }
    }
    let back = plan(family, other(direction), tenant, &listed(family, &written));
    assert!(back.failures.is_empty(), "what the move wrote cannot be moved back: {:?}", back.failures);
    let mut returned = Model::new();
    apply(&mut returned, &back.ops).expect("the script takes what the move wrote");
    let again = plan(family, direction, tenant, &listed(family, &returned));
    assert!(again.failures.is_empty(), "{:?}", again.failures);
    let mut rewritten = Model::new();
    apply(&mut rewritten, &again.ops).expect("the script takes what the move wrote");
    assert_eq!(
        unordered(listed(family, &rewritten)),
        unordered(listed(family, &survives(family, direction, tenant, &written))),
        "moved there and back, the keys differ"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let family = if mode & 1 == 0 { Family::Dreams } else { Family::Town };
    let direction = if mode & 2 == 0 { Direction::Forward } else { Direction::Reverse };
    let mut records = rest.split(|&b| b == 0x1e);
    let tenant = String::from_utf8_lossy(records.next().unwrap_or_default()).into_owned();
    let mut keys: Keys = Vec::new();
    let mut names = HashSet::new();
    for record in records {
        let fields: Vec<&[u8]> = record.split(|&b| b == 0x1f).collect();
        let Some((raw, rest)) = fields.split_first() else { continue };
        let key = name(&tenant, raw);
        match family {
            Family::Dreams => dreams_names(&tenant, &key),
            Family::Town => town_names(&tenant, &key),
        }
        if let Some(snapshot) = snapshot(rest) {
            if let (Family::Dreams, Value::Hash(fields)) = (family, &snapshot.value) {
                for (field, value) in fields {
                    counter(field, value);
                }
            }
            if names.insert(key.clone()) {
                keys.push((key, snapshot));
            }
        }
    }
    if valid_tenant(&tenant) {
        round_trip(family, direction, &tenant, &keys);
    }
});
