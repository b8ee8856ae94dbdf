//! The Prometheus exporter behind `dreamtown-exporter`: `/metrics` in the
//! Prometheus text format with, per node, the `INFO dreamtown` totals
//! (`dreamtown_node_*`) and, per tenant found on that node, the gauges and
//! the per-tenant totals (`_total` counters) of `DREAMS.STATS`
//! (`dreamtown_dreams_*{org}`) and `TOWN.STATS` (`dreamtown_town_*{town}`,
//! and `{town,agent}` for the agent gauges and `dreamtown_town_agent_*`
//! counters), plus the exporter's own
//! health (`dreamtown_exporter_*`: scrape time, tenants found and over the
//! limit, discovery passes, errors).
//!
//! One server, or a cluster: every tenant lives on the node serving its
//! slot, so each master is asked about the tenants found in its own
//! keyspace. A cluster is found from any one of its nodes (a `--redis`
//! node that says `cluster_enabled:1` is asked for `CLUSTER SLOTS` on
//! every scrape, and its masters are scraped: a failover or a new master
//! is followed by the next scrape, as redis_exporter's `--is-cluster`
//! does); one `--redis` per master works too (the same masters are found
//! once). Tenants are found by [`discovery`]; see docs/monitoring.md for
//! every metric.
//!
//! Built on well-kept libraries: the async redis client (one multiplexed
//! connection per node, kept from scrape to scrape; pipelines for the
//! STATS calls), Prometheus's Rust client for the registry and the text
//! format ([`text`]) and axum for HTTP ([`http`]). Names follow
//! Prometheus's conventions (`promtool check metrics` passes): times in
//! seconds (an INFO field in ms or µs is exported as `_seconds`), totals
//! as `_total` counters.

pub mod discovery;
pub mod http;
pub mod text;

use std::time::{Duration, Instant};

use dreamtown::events;
use dreamtown_protocol::info;
use dreamtown_protocol::keyspace::town::TownKeys;
use dreamtown_protocol::reply::Stats;
use dreamtown_protocol::request::{command_line, town::Stats as TownStats};
use dreamtown_protocol::stats::{Stat, dreams as dreams_stats, town as town_stats};
use redis::Value;

use discovery::Scan;
use text::{Kind, Metrics};

/// What the exporter asks of the servers.
#[derive(Clone, Debug)]
pub struct Config {
    /// One URL per node (`redis://[user:pass@]host:port[/db]`).
    pub nodes: Vec<String>,
    /// At most this many organizations and this many towns per node.
    pub max_tenants: usize,
    /// At most this many agents per town (the first by id).
    pub max_agents: usize,
    /// `SCAN` calls per family per node per scrape.
    pub scan_calls: u32,
    /// `COUNT` of each `SCAN`.
    pub scan_count: u32,
    /// Connect and read timeout.
    pub timeout: Duration,
    /// A tenant no discovery pass has seen for this long is no longer exported.
    pub forget: Duration,
    /// TLS and credentials for every node (discovered ones too).
    pub connect: dreamtown_client::connect::Options,
    /// Ask a node in cluster mode for its masters on every scrape and
    /// scrape those (default); off: scrape exactly the nodes given.
    pub cluster_discovery: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            max_tenants: 1000,
            max_agents: 100,
            scan_calls: 100,
            scan_count: 1000,
            timeout: Duration::from_secs(5),
            forget: Duration::from_secs(3600),
            connect: dreamtown_client::connect::Options::default(),
            cluster_discovery: true,
        }
    }
}

/// A connection to one node: async, multiplexed, kept between scrapes.
type Connection = redis::aio::MultiplexedConnection;

struct Node {
    url: String,
    label: String,
    connection: Option<Connection>,
    dreams: Scan,
    town: Scan,
    errors: u64,
}

impl Node {
    fn new(config: &Config, url: String, label: String) -> Self {
        Node {
            url,
            label,
            connection: None,
            dreams: Scan::new(discovery::DREAMS, config.forget),
            town: Scan::new(discovery::TOWN, config.forget),
            errors: 0,
        }
    }
}

/// One `--redis` address and what it said the last time it was asked.
struct Seed {
    url: String,
    label: String,
    connection: Option<Connection>,
    /// `host:port` of the masters it listed last (empty: not a cluster).
    masters: Vec<String>,
}

/// The exporter's state: a connection and a tenant scan per node.
pub struct Exporter {
    config: Config,
    seeds: Vec<Seed>,
    nodes: Vec<Node>,
    topology_changes: u64,
    warned: std::collections::BTreeSet<String>,
}

/// Field/value pairs of a STATS reply (`dreamtown_protocol::reply::Stats`:
/// a flat array in RESP2, a map in RESP3), each value a number or none
/// (nil); nothing if the reply is not one.
fn pairs(value: &Value) -> Vec<(String, Option<f64>)> {
    let stats = dreamtown_client::decode_reply::<Stats>(value).unwrap_or_default();
    stats.fields.into_iter().map(|(name, value)| (name.into_owned(), value.map(|n| n as f64))).collect()
}

/// The node label of a URL: its `host:port`.
fn node_label(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// `DREAMS.STATS` totals, exported as `dreamtown_dreams_<field>_total`
/// counters (kept in memory by the node that runs the commands: they
/// restart at 0 after a restart or failover, which rate() handles). The
/// names and help come from the module's one table of counted events.
fn dreams_totals() -> Vec<(&'static str, &'static str)> {
    events::DREAMS_FIELDS.iter().filter(|field| field.per_tenant()).map(|field| (field.name, field.help)).collect()
}

/// `TOWN.STATS` totals, as `dreamtown_town_<field>_total{town}` and
/// `dreamtown_town_agent_<field>_total{town,agent}` (`broadcasts`: town only).
fn town_totals() -> Vec<(&'static str, &'static str)> {
    events::TOWN_FIELDS.iter().filter(|field| field.per_tenant()).map(|field| (field.name, field.help)).collect()
}

fn scaled(field: &str, value: f64) -> f64 {
    if field.ends_with("_ms") { value / 1000.0 } else { value }
}

impl Exporter {
    /// An exporter for `config.nodes` (connections are made on first scrape).
    pub fn new(config: Config) -> Self {
        let nodes = config.nodes.iter().map(|url| Node::new(&config, url.clone(), node_label(url))).collect();
        let seeds = config
            .nodes
            .iter()
            .map(|url| Seed { url: url.clone(), label: node_label(url), connection: None, masters: Vec::new() })
            .collect();
        Self { config, seeds, nodes, topology_changes: 0, warned: Default::default() }
    }

    /// The nodes scraped now: each seed itself, or the masters of the
    /// cluster it belongs to, asked again on every scrape (a seed that does
    /// not answer: its masters are asked instead, then the last list is
    /// kept, reading `dreamtown_up 0` where nobody answers).
    async fn rediscover(&mut self, metrics: &mut Metrics, warnings: &mut Vec<String>) {
        let mut wanted: Vec<(String, String)> = Vec::new();
        for seed in &mut self.seeds {
            let mut asked = topology(&self.config, &seed.url, &mut seed.connection).await;
            if let Err(error) = asked {
                // The seed is down (or was a master that failed): any master it listed may answer.
                asked = Err(error);
                for master in &seed.masters {
                    let url = dreamtown_client::connect::with_host_port(&seed.url, master);
                    if let Ok(masters) = topology(&self.config, &url, &mut None).await
                        && !masters.is_empty()
                    {
                        asked = Ok(masters);
                        break;
                    }
                }
            }
            match asked {
                Ok(masters) => seed.masters = masters,
                Err(error) => warnings.push(format!("cluster discovery through {}: {error}", seed.label)),
            }
            let labels = [("seed", seed.label.as_str())];
            metrics.add(
                "dreamtown_exporter_cluster_masters",
                Kind::Gauge,
                "Masters the seed's cluster listed at the last discovery (0: not a cluster)",
                &labels,
                seed.masters.len() as f64,
            );
            if seed.masters.is_empty() {
                wanted.push((seed.label.clone(), seed.url.clone()));
            }
            for master in &seed.masters {
                wanted.push((master.clone(), dreamtown_client::connect::with_host_port(&seed.url, master)));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        wanted.retain(|(label, _)| seen.insert(label.clone()));
        let unchanged = wanted.len() == self.nodes.len()
            && wanted.iter().zip(&self.nodes).all(|((label, _), node)| *label == node.label);
        if unchanged {
            return;
        }
        self.topology_changes += 1;
        let mut old = std::mem::take(&mut self.nodes);
        for (label, url) in wanted {
            let node = match old.iter().position(|node| node.label == label) {
                Some(at) => old.swap_remove(at),
                None => Node::new(&self.config, url, label),
            };
            self.nodes.push(node);
        }
    }

    /// One scrape: the exposition text.
    pub async fn scrape(&mut self) -> String {
        let started = Instant::now();
        let mut metrics = Metrics::default();
        let config = self.config.clone();
        let mut warnings = Vec::new();
        if config.cluster_discovery {
            self.rediscover(&mut metrics, &mut warnings).await;
            metrics.add(
                "dreamtown_exporter_topology_changes_total",
                Kind::Counter,
                "Times the set of scraped nodes changed (cluster discovery)",
                &[],
                self.topology_changes as f64,
            );
        }
        for node in &mut self.nodes {
            let up = match scrape_node(&config, node, &mut metrics, &mut warnings).await {
                Ok(()) => 1.0,
                Err(error) => {
                    node.errors += 1;
                    node.connection = None;
                    warnings.push(format!("node {}: {error}", node.label));
                    0.0
                }
            };
            let labels = [("node", node.label.as_str())];
            metrics.add("dreamtown_up", Kind::Gauge, "1 when the node answered this scrape", &labels, up);
            metrics.add(
                "dreamtown_exporter_errors_total",
                Kind::Counter,
                "Scrapes of the node that failed",
                &labels,
                node.errors as f64,
            );
        }
        for warning in warnings {
            metrics.comment(&format!("dreamtown-exporter: {warning}"));
            // Said once on stderr per distinct message, on every scrape in
            // /metrics; the memory of what was said stays bounded.
            if self.warned.len() >= 1000 {
                self.warned.clear();
            }
            if self.warned.insert(warning.clone()) {
                eprintln!("dreamtown-exporter: {warning}");
            }
        }
        metrics.add(
            "dreamtown_exporter_scrape_duration_seconds",
            Kind::Gauge,
            "Time this scrape took, all nodes",
            &[],
            started.elapsed().as_secs_f64(),
        );
        metrics.render()
    }
}

/// A connection to `url` with the configured TLS, credentials and
/// timeouts (connecting, and each reply); a TLS failure says whose
/// certificate it was (`connect::explain`).
async fn open(config: &Config, url: &str) -> redis::RedisResult<Connection> {
    let timeouts = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(config.timeout))
        .set_response_timeout(Some(config.timeout));
    config
        .connect
        .client(url)?
        .get_multiplexed_async_connection_with_config(&timeouts)
        .await
        .map_err(dreamtown_client::connect::explain)
}

/// The masters (`host:port`, sorted) of the cluster `url` belongs to, by
/// `CLUSTER SLOTS`; empty when the node is not in cluster mode. The
/// connection is kept in `slot` (dropped on an error).
async fn topology(config: &Config, url: &str, slot: &mut Option<Connection>) -> redis::RedisResult<Vec<String>> {
    if slot.is_none() {
        *slot = Some(open(config, url).await?);
    }
    let Some(con) = slot.as_mut() else { return Ok(Vec::new()) };
    let asked = async {
        let info: String = redis::cmd("INFO").arg("cluster").query_async(con).await?;
        if !info.lines().any(|line| line.trim() == "cluster_enabled:1") {
            return Ok(Vec::new());
        }
        let slots: Value = redis::cmd("CLUSTER").arg("SLOTS").query_async(con).await?;
        Ok(slot_masters(&slots, &node_label(url)))
    }
    .await;
    if asked.is_err() {
        *slot = None;
    }
    asked
}

/// The masters of a `CLUSTER SLOTS` reply: the first node of every range.
/// A node that announces no address ("" or "?") is at the seed's host.
fn slot_masters(slots: &Value, seed: &str) -> Vec<String> {
    let seed_host = seed.rsplit_once(':').map_or(seed, |(host, _)| host);
    let Value::Array(ranges) = slots else { return Vec::new() };
    let mut masters: Vec<String> = ranges
        .iter()
        .filter_map(|range| {
            let Value::Array(parts) = range else { return None };
            let Value::Array(master) = parts.get(2)? else { return None };
            let host = match master.first()? {
                Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                Value::SimpleString(text) => text.clone(),
                _ => return None,
            };
            let Value::Int(port) = master.get(1)? else { return None };
            let host = if host.is_empty() || host == "?" { seed_host.to_owned() } else { host };
            // An IPv6 address needs brackets in a URL.
            let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host };
            Some(format!("{host}:{port}"))
        })
        .collect();
    masters.sort();
    masters.dedup();
    masters
}

async fn scrape_node(
    config: &Config,
    node: &mut Node,
    metrics: &mut Metrics,
    warnings: &mut Vec<String>,
) -> redis::RedisResult<()> {
    if node.connection.is_none() {
        node.connection = Some(open(config, &node.url).await?);
    }
    let Some(con) = node.connection.as_mut() else { return Ok(()) };
    let label = node.label.clone();
    let info: String = redis::cmd("INFO").arg("dreamtown").query_async(con).await?;
    info_metrics(&info, &label, metrics);
    node.dreams.step(con, config.scan_calls, config.scan_count).await?;
    node.town.step(con, config.scan_calls, config.scan_count).await?;

    for (family, scan) in [("dreams", &node.dreams), ("town", &node.town)] {
        let labels = [("node", label.as_str()), ("family", family)];
        let found = scan.tenants().len();
        let over = found.saturating_sub(config.max_tenants);
        metrics.add("dreamtown_exporter_tenants", Kind::Gauge, "Tenants found on the node", &labels, found as f64);
        metrics.add(
            "dreamtown_exporter_tenants_over_limit",
            Kind::Gauge,
            "Tenants found beyond --max-tenants, not exported",
            &labels,
            over as f64,
        );
        metrics.add(
            "dreamtown_exporter_tenant_scan_complete",
            Kind::Gauge,
            "1 once a full SCAN pass has ended (the tenant list is complete)",
            &labels,
            f64::from(u8::from(scan.complete())),
        );
        metrics.add(
            "dreamtown_exporter_discovery_passes_total",
            Kind::Counter,
            "Full SCAN passes over the node's keyspace",
            &labels,
            scan.passes as f64,
        );
        metrics.add(
            "dreamtown_exporter_scan_calls_total",
            Kind::Counter,
            "SCAN calls made to find tenants",
            &labels,
            scan.calls as f64,
        );
        if over > 0 {
            warnings.push(format!(
                "node {label}: {found} {family} tenants found, only the first {} (by name) are exported; raise --max-tenants to see them all",
                config.max_tenants
            ));
        }
    }

    let orgs: Vec<String> = node.dreams.tenants().into_iter().take(config.max_tenants).cloned().collect();
    for chunk in orgs.chunks(100) {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for org in chunk {
            let mut cmd = redis::Cmd::new();
            for arg in command_line(&dreamtown_protocol::request::dreams::Stats { org }) {
                cmd.arg(arg);
            }
            pipe.add_command(cmd);
        }
        let replies: Vec<Value> = pipe.query_async(con).await?;
        for (org, reply) in chunk.iter().zip(&replies) {
            let labels = [("node", label.as_str()), ("org", org.as_str())];
            if let Value::ServerError(error) = reply {
                warnings.push(format!("DREAMS.STATS {org}: {error:?}"));
                continue;
            }
            let fields = pairs(reply);
            tenant_metrics(&fields, &dreams_stats::FIELDS, &labels, metrics);
            tenant_totals(&fields, "dreamtown_dreams", &dreams_totals(), &labels, metrics);
        }
    }

    let towns: Vec<String> = node.town.tenants().into_iter().take(config.max_tenants).cloned().collect();
    for town in &towns {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        pipe.add_command(town_stats_cmd(town, None));
        pipe.cmd("ZRANGE").arg(TownKeys::new(town).mailbox_index()).arg(0).arg(config.max_agents as i64);
        let replies: Vec<Value> = pipe.query_async(con).await?;
        let [town_reply, agents_reply] = replies.as_slice() else { continue };
        let labels = [("node", label.as_str()), ("town", town.as_str())];
        if let Value::ServerError(error) = town_reply {
            warnings.push(format!("TOWN.STATS {town}: {error:?}"));
            continue;
        }
        let fields = pairs(town_reply);
        tenant_metrics(&fields, &town_stats::TOWN_FIELDS, &labels, metrics);
        tenant_totals(&fields, "dreamtown_town", &town_totals(), &labels, metrics);
        let Value::Array(agents) = agents_reply else { continue };
        let mut agents: Vec<String> = agents
            .iter()
            .filter_map(|agent| match agent {
                Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
                _ => None,
            })
            .collect();
        if agents.len() > config.max_agents {
            agents.truncate(config.max_agents);
            warnings.push(format!(
                "town {town}: more than {} agents, only the first {} (by id) are exported; raise --max-agents",
                config.max_agents, config.max_agents
            ));
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for agent in &agents {
            pipe.add_command(town_stats_cmd(town, Some(agent)));
        }
        let replies: Vec<Value> = pipe.query_async(con).await?;
        for (agent, reply) in agents.iter().zip(&replies) {
            let labels = [("node", label.as_str()), ("town", town.as_str()), ("agent", agent.as_str())];
            if let Value::ServerError(error) = reply {
                warnings.push(format!("TOWN.STATS {town} {agent}: {error:?}"));
                continue;
            }
            let fields = pairs(reply);
            tenant_metrics(&fields, &town_stats::AGENT_FIELDS, &labels, metrics);
            tenant_totals(&fields, "dreamtown_town_agent", &town_totals(), &labels, metrics);
        }
    }
    Ok(())
}

/// Each known field of a STATS reply as a gauge; a nil field (no such item)
/// is left out rather than made a number.
fn tenant_metrics(fields: &[(String, Option<f64>)], known: &[Stat], labels: &[(&str, &str)], metrics: &mut Metrics) {
    for stat in known {
        let Some(metric) = stat.metric else { continue };
        if let Some((_, Some(value))) = fields.iter().find(|(name, _)| name == stat.name) {
            metrics.add(metric, Kind::Gauge, stat.help, labels, scaled(stat.name, *value));
        }
    }
}

/// Each total a STATS reply has as `<prefix>_<field>_total`, a counter (a
/// field the reply lacks, as `broadcasts` for an agent or an older module,
/// is left out).
fn tenant_totals(
    fields: &[(String, Option<f64>)],
    prefix: &str,
    known: &[(&str, &str)],
    labels: &[(&str, &str)],
    metrics: &mut Metrics,
) {
    for (field, help) in known {
        if let Some((_, Some(value))) = fields.iter().find(|(name, _)| name == field) {
            // A total of milliseconds (`paused_ms`) is a counter of seconds.
            let name = match field.strip_suffix("_ms") {
                Some(stem) => format!("{prefix}_{stem}_seconds_total"),
                None => format!("{prefix}_{field}_total"),
            };
            metrics.add(&name, Kind::Counter, help, labels, scaled(field, *value));
        }
    }
}

/// `INFO dreamtown` as `dreamtown_node_<section>_<field>[_total]{node}`.
fn info_metrics(info: &str, node: &str, metrics: &mut Metrics) {
    let mut section = String::new();
    for line in info.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("# ") {
            section = name.trim().strip_prefix("dreamtown_").unwrap_or(name.trim()).to_owned();
            continue;
        }
        let Some((field, value)) = line.split_once(':') else { continue };
        let Ok(value) = value.trim().parse::<f64>() else { continue };
        let field = field.strip_prefix("dreamtown_").unwrap_or(field);
        let valid = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid(field) || !valid(&section) {
            continue;
        }
        // Times in seconds, Prometheus's base unit: a field in ms or µs
        // is exported as `_seconds`, its value scaled.
        let (base, scale) = match (field.strip_suffix("_ms"), field.strip_suffix("_us")) {
            (Some(stem), _) => (format!("{stem}_seconds"), 1e-3),
            (_, Some(stem)) => (format!("{stem}_seconds"), 1e-6),
            _ => (field.to_owned(), 1.0),
        };
        let (name, kind) = match info::is_gauge(field) {
            true => (format!("dreamtown_node_{section}_{base}"), Kind::Gauge),
            // A field already named `..._total` keeps its one suffix.
            false if base.ends_with("_total") => (format!("dreamtown_node_{section}_{base}"), Kind::Counter),
            false => (format!("dreamtown_node_{section}_{base}_total"), Kind::Counter),
        };
        let help = match scale {
            1.0 => format!("INFO dreamtown, section dreamtown_{section}, field {field}"),
            _ => format!("INFO dreamtown, section dreamtown_{section}, field {field}, in seconds"),
        };
        metrics.add(&name, kind, &help, &[("node", node)], value * scale);
    }
}

/// `TOWN.STATS <town> [<agent>]`, as the protocol writes it.
fn town_stats_cmd(town: &str, agent: Option<&str>) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in command_line(&TownStats { town, agent }) {
        cmd.arg(arg);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_becomes_counters_and_gauges() {
        let mut metrics = Metrics::default();
        info_metrics(
            "# dreamtown_dreams\r\ndreamtown_fired:3\r\n# dreamtown_waiters\r\ndreamtown_waiters:2\r\n",
            "h:1",
            &mut metrics,
        );
        let text = metrics.render();
        assert!(
            text.contains(
                "# TYPE dreamtown_node_dreams_fired_total counter\ndreamtown_node_dreams_fired_total{node=\"h:1\"} 3\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "# TYPE dreamtown_node_waiters_waiters gauge\ndreamtown_node_waiters_waiters{node=\"h:1\"} 2\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn times_in_ms_and_us_are_exported_in_seconds() {
        let mut metrics = Metrics::default();
        let info =
            "# dreamtown_leases\r\ndreamtown_lease_max_tick_us:2500\r\ndreamtown_catch_up_last_duration_ms:1500\r\n";
        info_metrics(info, "h:1", &mut metrics);
        let text = metrics.render();
        assert!(text.contains("dreamtown_node_leases_lease_max_tick_seconds{node=\"h:1\"} 0.0025\n"), "{text}");
        assert!(text.contains("dreamtown_node_leases_catch_up_last_duration_seconds{node=\"h:1\"} 1.5\n"), "{text}");
        let samples = text.lines().filter(|line| !line.starts_with('#'));
        assert!(samples.clone().all(|line| !line.contains("_ms") && !line.contains("_us")), "{text}");
    }

    #[test]
    fn lease_levels_are_gauges_and_their_totals_counters() {
        let mut metrics = Metrics::default();
        let info = "# dreamtown_leases\r\ndreamtown_lease_tenants_indexed:5\r\ndreamtown_catching_up:1\r\ndreamtown_catch_up_max_turn_cpu_us:900\r\ndreamtown_catch_up_turns_total:7\r\n";
        info_metrics(info, "h:1", &mut metrics);
        let text = metrics.render();
        for gauge in ["leases_lease_tenants_indexed", "leases_catching_up", "leases_catch_up_max_turn_cpu_seconds"] {
            assert!(text.contains(&format!("# TYPE dreamtown_node_{gauge} gauge\n")), "{gauge}: {text}");
        }
        assert!(text.contains("# TYPE dreamtown_node_leases_catch_up_turns_total counter\n"), "{text}");
    }

    #[test]
    fn cluster_slots_give_each_master_once_at_the_seeds_host_when_unannounced() {
        let node =
            |host: &str, port: i64| Value::Array(vec![Value::BulkString(host.as_bytes().to_vec()), Value::Int(port)]);
        let range = |a: i64, b: i64, master: Value, replica: Value| {
            Value::Array(vec![Value::Int(a), Value::Int(b), master, replica])
        };
        let slots = Value::Array(vec![
            range(0, 10, node("127.0.0.1", 7001), node("127.0.0.1", 7004)),
            range(11, 20, node("?", 7002), node("127.0.0.1", 7005)),
            range(21, 30, node("127.0.0.1", 7001), node("127.0.0.1", 7004)),
        ]);
        assert_eq!(slot_masters(&slots, "10.0.0.9:7000"), ["10.0.0.9:7002", "127.0.0.1:7001"]);
        assert!(slot_masters(&Value::Nil, "h:1").is_empty());
    }

    #[test]
    fn node_labels_drop_scheme_credentials_and_db() {
        assert_eq!(node_label("redis://user:pw@127.0.0.1:6390/2"), "127.0.0.1:6390");
        assert_eq!(node_label("127.0.0.1:6390"), "127.0.0.1:6390");
    }
}
