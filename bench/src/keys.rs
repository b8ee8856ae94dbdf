//! Every key name the loops touch: the module's from the module crate's
//! pure core, the seeds' (exocortex-dreams' queue and counters, tinytown's
//! `tt:<town>:...`) from the migration tool's readers (`dreamtown-migrate`), which own
//! those layouts; only the bench's own plain lists (the native floors) are
//! named here.

use dreamtown::dreams::region::{QueueKeys, RegionKey};
use dreamtown::town::keys::TownKeys;
use dreamtown_migrate::{dreams as seed_dreams, town as seed_town};

/// The town every Town mode uses.
pub const TOWN: &str = "bench";
/// The memory type of every region the Dreams modes fill.
pub const MEMORY_TYPE_ID: u32 = 1;
/// [`MEMORY_TYPE_ID`] as the commands spell it.
pub const MEMORY_TYPE: &str = "1";

/// The seed's queue keys of `org` (`RedisFireQueue::new`).
pub fn seed_queue(org: &str) -> QueueKeys {
    seed_dreams::seed_queue_keys(org)
}

/// The seed's counters hash of region (`org`, `project`, [`MEMORY_TYPE_ID`])
/// (`counter_key`).
pub fn seed_counters(org: &str, project: &str) -> String {
    seed_dreams::seed_counters(&RegionKey::new(org, project, MEMORY_TYPE_ID))
}

/// The seed's processed-event set of the same region.
pub fn seed_events(org: &str, project: &str) -> String {
    seed_dreams::seed_events(&RegionKey::new(org, project, MEMORY_TYPE_ID))
}

/// tinytown's name of [`TOWN`]'s `<kind>:<id>` key.
pub fn seed_town_key(kind: &str, id: &str) -> String {
    format!("{}{kind}:{id}", seed_town::seed_base(TOWN))
}

/// The module's keys of [`TOWN`].
pub fn module_town() -> TownKeys {
    TownKeys::new(TOWN)
}

/// `dreams-native`'s lists (plain names: no module key is involved).
pub const NATIVE_READY: &str = "bench:native:ready";
/// `dreams-native`'s in-flight list.
pub const NATIVE_PROCESSING: &str = "bench:native:processing";
/// `agent-native`'s inbox.
pub const AGENT_NATIVE_INBOX: &str = "bench:agent:inbox";
/// `agent-native`'s pending list.
pub const AGENT_NATIVE_PENDING: &str = "bench:agent:pending";

/// `handoff-native`'s ready list of `org`.
pub fn handoff_native_ready(org: &str) -> String {
    format!("bench:handoff:{org}:ready")
}

/// `handoff-native`'s in-flight list of `org`.
pub fn handoff_native_processing(org: &str) -> String {
    format!("{}:processing", handoff_native_ready(org))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the bench has always used (bench/loadgen.rs before it was
    /// a crate spelled them out): a change here changes what is measured.
    #[test]
    fn names_are_the_ones_the_bench_measured() {
        let queue = seed_queue("bench");
        assert_eq!(queue.ready, r#"exocortex:dreams:queue:org:"bench""#);
        assert_eq!(queue.deferred, r#"exocortex:dreams:queue:org:"bench":deferred"#);
        assert_eq!(queue.processing, r#"exocortex:dreams:queue:org:"bench":processing"#);
        assert_eq!(
            seed_counters("bench", "p-7"),
            r#"exocortex:dreams:counters:{"org":"bench","project":"p-7","memory_type":1}"#
        );
        assert_eq!(
            seed_events("bench", "p-7"),
            r#"exocortex:dreams:counters:{"org":"bench","project":"p-7","memory_type":1}:processed-events"#
        );
        assert_eq!(MEMORY_TYPE, MEMORY_TYPE_ID.to_string());
        assert_eq!(seed_town_key("inbox", "a"), "tt:bench:inbox:a");
        assert_eq!(seed_town_key("agent", "*"), "tt:bench:agent:*");
        assert_eq!(seed_town_key("docket", "tasks"), "tt:bench:docket:tasks");
        assert_eq!(module_town().inbox("a"), "tt:{bench}:inbox:a");
        assert_eq!(handoff_native_processing("bench"), "bench:handoff:bench:ready:processing");
    }
}
