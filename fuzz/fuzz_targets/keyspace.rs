//! Key names (`dreamtown_protocol::keyspace`): any bytes either parse as a
//! Dreams or Town key or do not, never panicking; a name that parses
//! formats back to the same bytes; a name formatted from a valid tenant
//! and any id parses back to what made it. Input: a selector byte, then
//! the tenant and the id (project, agent, task) as UTF-8, split at the
//! first NUL.
#![no_main]

use dreamtown_protocol::keyspace::dreams::{DreamsKey, QueueKey, RegionName};
use dreamtown_protocol::keyspace::town::{AgentKey, IndexKey, TownKey, TownKeys};
use dreamtown_protocol::keyspace::valid_tenant;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((org, key)) = DreamsKey::parse(data) {
        assert_eq!(key.name(org).as_bytes(), data);
    }
    if let Some((town, key)) = TownKey::parse(data) {
        assert_eq!(key.name(&TownKeys::new(town)).as_bytes(), data);
    }
    let Some((&which, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let (tenant, id) = text.split_once('\0').unwrap_or((text, "id"));
    if !valid_tenant(tenant) {
        return;
    }
    let pick = usize::from(which / 4);
    let region = RegionName { memory_type: u32::from(which).wrapping_mul(16_777_619), project: id };
    let dreams = match which % 3 {
        0 => DreamsKey::Queue(QueueKey::ALL[pick % QueueKey::ALL.len()]),
        1 => DreamsKey::Counters(region),
        _ => DreamsKey::Events(region),
    };
    let name = dreams.name(tenant);
    assert_eq!(DreamsKey::parse(name.as_bytes()), Some((tenant, dreams)), "{name}");
    if id.is_empty() {
        return;
    }
    let town = match which % 4 {
        0 => TownKey::Agent(AgentKey::ALL[pick % AgentKey::ALL.len()], id),
        1 => TownKey::Task(id),
        2 => TownKey::Index(IndexKey::ALL[pick % IndexKey::ALL.len()]),
        _ => [TownKey::Backlog, TownKey::DocketTasks, TownKey::DocketEvents, TownKey::Events, TownKey::Broadcast]
            [pick % 5],
    };
    let name = town.name(&TownKeys::new(tenant));
    assert_eq!(TownKey::parse(name.as_bytes()), Some((tenant, town)), "{name}");
});
