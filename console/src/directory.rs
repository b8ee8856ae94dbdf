//! Every tenant of both families and its figures, kept by a background
//! sweep so that the tenant list can be sorted, searched and paged over
//! thousands of tenants without a per-page walk of the keyspace.
//!
//! A pass, on each master: `SCAN` with `MATCH exocortex:dreams:{*}:*`
//! (organizations, and their regions from the `counters:` keys) and
//! `MATCH tt:{*}:index:*` (towns: the module's agent, mailbox and task
//! indexes), `COUNT` keys per call; then the figures, pipelined in
//! batches: `DREAMS.STATS <org>` per organization, `TOWN.STATS <town>` and
//! the first agents of its mailbox index per town, `TOWN.STATS <town>
//! <agent>` per agent. Never `KEYS`, no step that grows with the keyspace:
//! each call costs the server O(`COUNT`) or O(log n). After each batch the
//! sweep pauses as long as the batch took, so it holds a connection at
//! most half the time. A pass starts `refresh` after the last one started
//! (or four times the last pass's duration, if longer: at 10,000
//! organizations and 10,000 towns a pass takes about 7 s and 0.5 s of the
//! server's CPU, so about 2% of it while someone watches), and only while
//! someone has looked at a page in the last `idle`; a
//! tenant a pass no longer finds leaves the list at the end of that pass.
//! An action refreshes its tenant's figures at once ([`Directory::refresh`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use dreamtown_protocol::keyspace::dreams::{self, RegionName};
use dreamtown_protocol::keyspace::split_tag;
use dreamtown_protocol::keyspace::town::{self, TownKeys};
use dreamtown_protocol::request::command_line;
use redis::Value;

use crate::backend::{Backend, NodeId};
use crate::fields::{Fields, error_text, strings};
use crate::summary::{Row, org_row, town_row};

/// How the sweep reads the servers.
#[derive(Clone, Debug)]
pub struct DirectoryConfig {
    /// `COUNT` of each `SCAN` call.
    pub scan_count: u32,
    /// Commands per pipelined batch.
    pub batch: usize,
    /// A pass starts this long after the previous one started.
    pub refresh: Duration,
    /// Agents read per town (the first by id).
    pub max_agents: usize,
    /// Regions remembered per organization.
    pub max_regions: usize,
    /// No pass while no page was viewed for this long.
    pub idle: Duration,
}

impl Default for DirectoryConfig {
    fn default() -> Self {
        Self {
            scan_count: 1000,
            batch: 100,
            refresh: Duration::from_secs(5),
            max_agents: 100,
            max_regions: 1000,
            idle: Duration::from_secs(300),
        }
    }
}

/// The two tenant families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Dreams organizations.
    Dreams,
    /// Town towns.
    Town,
}

impl Family {
    /// `dreams` or `town`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Dreams => "dreams",
            Family::Town => "town",
        }
    }
}

/// An organization as the last read found it.
#[derive(Clone, Debug, Default)]
pub struct OrgEntry {
    /// The master holding it.
    pub node: Option<NodeId>,
    /// `DREAMS.STATS`, once read.
    pub stats: Option<Fields>,
    /// Why it could not be read (NOPERM, ...).
    pub error: Option<String>,
    /// Regions `(memory type, project)` with counters.
    pub regions: BTreeSet<(u32, String)>,
    /// More regions than were kept.
    pub regions_capped: bool,
    /// Its row in the tenant list, as of the last read.
    pub row: Option<Row>,
}

impl OrgEntry {
    fn summarize(&mut self, name: &str) {
        self.row =
            Some(org_row(name, self.stats.as_ref(), self.error.as_ref(), self.regions.len(), self.regions_capped));
    }
}

/// A town as the last read found it.
#[derive(Clone, Debug, Default)]
pub struct TownEntry {
    /// The master holding it.
    pub node: Option<NodeId>,
    /// `TOWN.STATS <town>`, once read.
    pub stats: Option<Fields>,
    /// `TOWN.STATS <town> <agent>` of its first agents.
    pub agents: Vec<(String, Fields)>,
    /// More agents than were read.
    pub agents_capped: bool,
    /// Why it could not be read.
    pub error: Option<String>,
    /// Its row in the tenant list, as of the last read.
    pub row: Option<Row>,
}

impl TownEntry {
    fn summarize(&mut self, name: &str) {
        self.row = Some(town_row(name, self.stats.as_ref(), &self.agents, self.agents_capped, self.error.as_ref()));
    }
}

/// The last complete pass.
#[derive(Clone, Debug)]
pub struct PassReport {
    /// When it ended.
    pub finished: SystemTime,
    /// How long it took.
    pub took: Duration,
    /// `SCAN` calls made.
    pub scan_calls: u64,
    /// Keys the scans returned.
    pub keys: u64,
    /// Figure commands sent.
    pub commands: u64,
}

/// What the directory knows now.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Organizations by name.
    pub orgs: BTreeMap<String, OrgEntry>,
    /// Towns by name.
    pub towns: BTreeMap<String, TownEntry>,
    /// Complete passes.
    pub passes: u64,
    /// The pass under way started then.
    pub pass_started: Option<Instant>,
    /// The last complete pass.
    pub last_pass: Option<PassReport>,
    /// Errors of the last pass (a node that could not be read).
    pub errors: Vec<String>,
}

/// An organization a pass found: its node, its regions, more regions than kept.
type SeenOrg = (NodeId, BTreeSet<(u32, String)>, bool);

/// The tenant directory (clones share it).
#[derive(Clone)]
pub struct Directory {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    config: DirectoryConfig,
    snapshot: RwLock<Snapshot>,
    last_view: Mutex<Instant>,
    wake: tokio::sync::Notify,
}

/// The glob of every key of an organization, and where its name starts.
pub const DREAMS_GLOB: &str = dreams::GLOB;
const DREAMS_PREFIX: &str = dreams::PREFIX;
/// The glob of a town's module indexes.
pub const TOWN_GLOB: &str = town::INDEX_GLOB;
const TOWN_PREFIX: &str = town::PREFIX;

/// The tenant named by a key of the family's prefix, and the rest after `}:`.
fn tenant_of<'a>(prefix: &str, key: &'a [u8]) -> Option<(String, &'a [u8])> {
    let (name, after) = split_tag(prefix, key)?;
    Some((name.to_owned(), after.strip_prefix(b":")?))
}

/// A region of a `counters:<memory-type>:<project>` key suffix.
fn region_of(after: &[u8]) -> Option<(u32, String)> {
    let region = RegionName::parse(after.strip_prefix(b"counters:")?)?;
    Some((region.memory_type, region.project.to_owned()))
}

impl Directory {
    /// A directory over `backend`; call [`Directory::spawn`] to start sweeping.
    pub fn new(backend: Backend, config: DirectoryConfig) -> Self {
        Directory {
            inner: Arc::new(Inner {
                backend,
                config,
                snapshot: RwLock::new(Snapshot::default()),
                last_view: Mutex::new(Instant::now()),
                wake: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Start the background sweep on the current runtime.
    pub fn spawn(&self) {
        let directory = self.clone();
        tokio::spawn(async move { directory.run().await });
    }

    /// Someone looked at a page: keep (or start) sweeping.
    pub fn touch(&self) {
        let was_idle = {
            let mut last = self.inner.last_view.lock().unwrap_or_else(|e| e.into_inner());
            let idle = last.elapsed() > self.inner.config.idle;
            *last = Instant::now();
            idle
        };
        if was_idle {
            self.inner.wake.notify_one();
        }
    }

    /// A copy of what is known now.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Run `f` over what is known now, without copying it.
    pub fn with_snapshot<R>(&self, f: impl FnOnce(&Snapshot) -> R) -> R {
        f(&self.inner.snapshot.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The config it sweeps with.
    pub fn config(&self) -> &DirectoryConfig {
        &self.inner.config
    }

    async fn run(self) {
        loop {
            let idle = self.inner.last_view.lock().map(|last| last.elapsed()).unwrap_or_default();
            if idle > self.inner.config.idle {
                self.inner.wake.notified().await;
                continue;
            }
            let started = Instant::now();
            self.pass().await;
            // At scale a pass takes long: the next waits four times as
            // long, so the sweep never keeps the servers busy.
            let took = started.elapsed();
            let next = self.inner.config.refresh.max(took * 4).saturating_sub(took);
            tokio::select! {
                _ = tokio::time::sleep(next.max(Duration::from_millis(50))) => {}
                _ = self.inner.wake.notified() => {}
            }
        }
    }

    /// Ask for a pass now (after an action, or by a test).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    fn update(&self, f: impl FnOnce(&mut Snapshot)) {
        let mut snapshot = self.inner.snapshot.write().unwrap_or_else(|e| e.into_inner());
        f(&mut snapshot);
    }

    /// Pause after a batch as long as it took (at most half a connection).
    async fn breathe(took: Duration) {
        tokio::time::sleep(took.min(Duration::from_millis(200))).await;
    }

    /// One pass over every master.
    pub async fn pass(&self) {
        let started = Instant::now();
        self.update(|s| s.pass_started = Some(started));
        let mut report =
            PassReport { finished: SystemTime::now(), took: Duration::ZERO, scan_calls: 0, keys: 0, commands: 0 };
        let mut errors = Vec::new();
        let nodes = match self.inner.backend.nodes().await {
            Ok(nodes) => nodes,
            Err(error) => {
                self.update(|s| {
                    s.errors = vec![error.to_string()];
                    s.pass_started = None;
                });
                return;
            }
        };
        let mut seen_orgs: BTreeMap<String, SeenOrg> = BTreeMap::new();
        let mut seen_towns: BTreeMap<String, NodeId> = BTreeMap::new();
        for (node, label) in &nodes {
            let node = *node;
            let mut node_orgs = Vec::new();
            let mut node_towns = Vec::new();
            // Organizations and their regions.
            let scanned = self
                .scan_all(node, DREAMS_GLOB, &mut report, |key| {
                    if let Some((org, after)) = tenant_of(DREAMS_PREFIX, key) {
                        let entry = seen_orgs.entry(org.clone()).or_insert_with(|| {
                            node_orgs.push(org);
                            (node, BTreeSet::new(), false)
                        });
                        if let Some(region) = region_of(after) {
                            if entry.1.len() < self.inner.config.max_regions {
                                entry.1.insert(region);
                            } else if !entry.1.contains(&region) {
                                entry.2 = true;
                            }
                        }
                    }
                })
                .await;
            if let Err(error) = scanned {
                errors.push(format!("{label}: {error}"));
                continue;
            }
            let scanned = self
                .scan_all(node, TOWN_GLOB, &mut report, |key| {
                    if let Some((town, _)) = tenant_of(TOWN_PREFIX, key)
                        && !seen_towns.contains_key(&town)
                    {
                        seen_towns.insert(town.clone(), node);
                        node_towns.push(town);
                    }
                })
                .await;
            if let Err(error) = scanned {
                errors.push(format!("{label}: {error}"));
                continue;
            }
            // Regions are known now; the figures follow.
            self.update(|s| {
                for org in &node_orgs {
                    if let Some((_, regions, capped)) = seen_orgs.get(org) {
                        let entry = s.orgs.entry(org.clone()).or_default();
                        entry.node = Some(node);
                        entry.regions = regions.clone();
                        entry.regions_capped = *capped;
                        entry.summarize(org);
                    }
                }
                for town in &node_towns {
                    s.towns.entry(town.clone()).or_default().node = Some(node);
                }
            });
            if let Err(error) = self.read_orgs(node, &node_orgs, &mut report).await {
                errors.push(format!("{label}: {error}"));
            }
            if let Err(error) = self.read_towns(node, &node_towns, &mut report).await {
                errors.push(format!("{label}: {error}"));
            }
        }
        report.took = started.elapsed();
        report.finished = SystemTime::now();
        let complete = errors.is_empty();
        self.update(|s| {
            if complete {
                s.orgs.retain(|org, _| seen_orgs.contains_key(org));
                s.towns.retain(|town, _| seen_towns.contains_key(town));
            }
            s.passes += 1;
            s.pass_started = None;
            s.last_pass = Some(report);
            s.errors = errors;
        });
    }

    async fn scan_all(
        &self,
        node: NodeId,
        glob: &str,
        report: &mut PassReport,
        mut visit: impl FnMut(&[u8]),
    ) -> crate::backend::Result<()> {
        let mut cursor = 0;
        loop {
            let started = Instant::now();
            let (next, keys) = self.inner.backend.scan(node, cursor, glob, self.inner.config.scan_count).await?;
            report.scan_calls += 1;
            report.keys += keys.len() as u64;
            for key in &keys {
                visit(key);
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
            Self::breathe(started.elapsed()).await;
        }
    }

    async fn read_orgs(&self, node: NodeId, orgs: &[String], report: &mut PassReport) -> crate::backend::Result<()> {
        for chunk in orgs.chunks(self.inner.config.batch.max(1)) {
            let started = Instant::now();
            let cmds: Vec<_> = chunk.iter().map(|org| stats_cmd(org)).collect();
            let values = self.inner.backend.on_node(node, &cmds).await?;
            report.commands += cmds.len() as u64;
            self.update(|s| {
                for (org, value) in chunk.iter().zip(values.iter()) {
                    let entry = s.orgs.entry(org.clone()).or_default();
                    set_figures(&mut entry.stats, &mut entry.error, value);
                    entry.summarize(org);
                }
            });
            Self::breathe(started.elapsed()).await;
        }
        Ok(())
    }

    async fn read_towns(&self, node: NodeId, towns: &[String], report: &mut PassReport) -> crate::backend::Result<()> {
        let max_agents = self.inner.config.max_agents;
        // Two commands per town, then one per agent: batches of about `batch`.
        for chunk in towns.chunks((self.inner.config.batch / 2).max(1)) {
            let started = Instant::now();
            let mut cmds = Vec::new();
            for town in chunk {
                cmds.push(town_stats_cmd(town, None));
                cmds.push(agents_cmd(town, 0, max_agents + 1));
            }
            let values = self.inner.backend.on_node(node, &cmds).await?;
            report.commands += cmds.len() as u64;
            let mut agents_of = Vec::new();
            for (town, pair) in chunk.iter().zip(values.chunks(2)) {
                let mut agents: Vec<String> = pair
                    .get(1)
                    .map(strings)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|id| String::from_utf8_lossy(&id).into_owned())
                    .collect();
                let capped = agents.len() > max_agents;
                agents.truncate(max_agents);
                agents_of.push((town.clone(), agents, capped, pair.first().cloned().unwrap_or(Value::Nil)));
            }
            let agent_cmds: Vec<_> = agents_of
                .iter()
                .flat_map(|(town, agents, _, _)| agents.iter().map(move |agent| town_stats_cmd(town, Some(agent))))
                .collect();
            let mut agent_values = Vec::new();
            for cmds in agent_cmds.chunks(self.inner.config.batch.max(1)) {
                agent_values.extend(self.inner.backend.on_node(node, cmds).await?);
                report.commands += cmds.len() as u64;
            }
            let mut agent_values = agent_values.into_iter();
            self.update(|s| {
                for (town, agents, capped, stats) in agents_of {
                    let entry = s.towns.entry(town.clone()).or_default();
                    set_figures(&mut entry.stats, &mut entry.error, &stats);
                    entry.agents_capped = capped;
                    entry.agents = agents
                        .into_iter()
                        .filter_map(|agent| {
                            let value = agent_values.next()?;
                            Some((agent, Fields::from_value(&value)?))
                        })
                        .collect();
                    entry.summarize(&town);
                }
            });
            Self::breathe(started.elapsed()).await;
        }
        Ok(())
    }

    /// Read one tenant's figures now (after an action), adding it if new.
    pub async fn refresh(&self, family: Family, name: &str) {
        let backend = &self.inner.backend;
        let Ok(node) = backend.node_of(name).await else { return };
        let mut report =
            PassReport { finished: SystemTime::now(), took: Duration::ZERO, scan_calls: 0, keys: 0, commands: 0 };
        let names = [name.to_owned()];
        let _ = match family {
            Family::Dreams => {
                self.update(|s| s.orgs.entry(name.to_owned()).or_default().node = Some(node));
                self.read_orgs(node, &names, &mut report).await
            }
            Family::Town => {
                self.update(|s| s.towns.entry(name.to_owned()).or_default().node = Some(node));
                self.read_towns(node, &names, &mut report).await
            }
        };
    }
}

fn set_figures(stats: &mut Option<Fields>, error: &mut Option<String>, value: &Value) {
    match Fields::from_value(value) {
        Some(fields) => {
            *stats = Some(fields);
            *error = None;
        }
        None => *error = Some(error_text(value).unwrap_or_else(|| format!("unexpected reply {value:?}"))),
    }
}

/// `DREAMS.STATS <org>`.
pub fn stats_cmd(org: &str) -> redis::Cmd {
    crate::org::command(&dreamtown_protocol::request::dreams::Stats { org })
}

/// `TOWN.STATS <town> [<agent>]`.
pub fn town_stats_cmd(town: &str, agent: Option<&str>) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in command_line(&dreamtown_protocol::request::town::Stats { town, agent }) {
        cmd.arg(arg);
    }
    cmd
}

/// Agent ids of a town's mailbox index, `count` from `offset`, by id.
pub fn agents_cmd(town: &str, offset: usize, count: usize) -> redis::Cmd {
    let mut cmd = redis::cmd("ZRANGE");
    cmd.arg(TownKeys::new(town).mailbox_index()).arg(offset).arg(offset + count.max(1) - 1);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_and_regions_come_from_key_names() {
        let (org, after) = tenant_of(DREAMS_PREFIX, b"exocortex:dreams:{acme}:counters:3:web:v2").unwrap();
        assert_eq!(org, "acme");
        assert_eq!(region_of(after), Some((3, "web:v2".to_owned())));
        let (_, after) = tenant_of(DREAMS_PREFIX, b"exocortex:dreams:{acme}:queue").unwrap();
        assert_eq!(region_of(after), None);
        assert_eq!(tenant_of(TOWN_PREFIX, b"tt:{t1}:index:mailboxes").unwrap().0, "t1");
        assert!(tenant_of(DREAMS_PREFIX, b"exocortex:dreams:{}:queue").is_none());
        assert!(tenant_of(DREAMS_PREFIX, b"exocortex:dreams:{open").is_none());
        assert!(tenant_of(TOWN_PREFIX, b"tt:{x}").is_none());
    }
}
