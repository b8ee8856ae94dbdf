//! The console's one door to the servers, and its only use of the client
//! crate (so that a reshaped client crate moves this file, not the
//! views): connection options (TLS, ACL users, Sentinel) come from
//! [`dreamtown_client::connect::Options`], as for the other tools; a
//! Sentinel set is followed through [`dreamtown_client::sentinel`].
//!
//! A [`Backend`] is pointed at one server, at any node(s) of a cluster
//! (found out by `INFO cluster`; its masters by `CLUSTER SLOTS`, asked
//! again when a reply says `MOVED` or every 30 s), or at the master a
//! Sentinel set names. It sends raw commands: a tenant's commands go to
//! the node serving the tenant's slot (subcommands such as `TOWN.STOP
//! REQUEST <town> ..` included: the console routes by the tenant it
//! names, not by the first argument), pipelined; key scans go to one
//! named node.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dreamtown::cluster_slot::key_slot;
use dreamtown_client::connect::{Options, redacted};
use dreamtown_client::sentinel::SentinelConnection;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Cmd, Pipeline, Value};
use tokio::sync::Mutex;

/// What the console is pointed at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One server, or any nodes of one cluster (`redis[s]://` URLs).
    Servers(Vec<String>),
    /// The master `master` of the Sentinels at these URLs.
    Sentinel {
        /// Sentinel URLs.
        sentinels: Vec<String>,
        /// The master's name.
        master: String,
    },
}

impl Target {
    /// For the page header: the URLs without passwords.
    pub fn label(&self) -> String {
        match self {
            Target::Servers(urls) => urls.iter().map(|url| redacted(url)).collect::<Vec<_>>().join(", "),
            Target::Sentinel { sentinels, master } => format!(
                "master {master} of Sentinel {}",
                sentinels.iter().map(|url| redacted(url)).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// A failure to reach a server or a malformed answer (a server's error
/// reply to one command is a [`Value::ServerError`] in its place instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError(pub String);

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<redis::RedisError> for BackendError {
    fn from(error: redis::RedisError) -> Self {
        BackendError(error.to_string())
    }
}

/// Results of the backend.
pub type Result<T> = std::result::Result<T, BackendError>;

/// One master, by its index in the current topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

#[derive(Clone)]
enum Conn {
    Plain(MultiplexedConnection),
    Sentinel(SentinelConnection),
}

impl Conn {
    async fn send(&mut self, pipe: &Pipeline, count: usize) -> redis::RedisResult<Vec<Value>> {
        match self {
            Conn::Plain(conn) => conn.req_packed_commands(pipe, 0, count).await,
            Conn::Sentinel(conn) => conn.req_packed_commands(pipe, 0, count).await,
        }
    }
}

struct Node {
    /// `host:port` (for a Sentinel target: the master's name).
    label: String,
    url: String,
    conn: Option<Conn>,
}

#[derive(Default)]
struct Topology {
    nodes: Vec<Node>,
    /// Slot ranges (inclusive) → node index; empty: not a cluster.
    slots: Vec<(u16, u16, usize)>,
    /// When the node list was last settled (None: never).
    settled: Option<Instant>,
}

/// Connections to the target's masters (see the module doc). Clones share them.
#[derive(Clone)]
pub struct Backend {
    inner: Arc<Inner>,
}

struct Inner {
    options: Options,
    target: Target,
    timeout: Duration,
    topology: Mutex<Topology>,
}

/// How often the cluster topology is asked for again without a `MOVED`.
const TOPOLOGY_TTL: Duration = Duration::from_secs(30);

impl Backend {
    /// A backend for `target` with these connection options; connects lazily.
    pub fn new(target: Target, options: Options, timeout: Duration) -> Self {
        Backend { inner: Arc::new(Inner { options, target, timeout, topology: Mutex::new(Topology::default()) }) }
    }

    /// The same target, as another user (an operator's own ACL identity):
    /// new connections, the same TLS material.
    pub fn as_user(&self, user: &str, password: &str) -> Backend {
        let mut options = self.inner.options.clone();
        options.user = Some(user.to_owned());
        options.password = Some(password.to_owned());
        let target = match &self.inner.target {
            // The URLs' own credentials would win over the user's.
            Target::Servers(urls) => Target::Servers(urls.iter().map(|url| without_credentials(url)).collect()),
            sentinel => sentinel.clone(),
        };
        Backend::new(target, options, self.inner.timeout)
    }

    /// What it is pointed at, for the page header.
    pub fn label(&self) -> String {
        self.inner.target.label()
    }

    /// Check the options can make clients (files readable, TLS only with
    /// rediss://) before serving.
    pub fn validate(&self) -> Result<()> {
        match &self.inner.target {
            Target::Servers(urls) => {
                for url in urls {
                    self.inner.options.client(url).map_err(|e| BackendError(format!("{}: {e}", redacted(url))))?;
                }
            }
            Target::Sentinel { sentinels, master } => {
                self.inner.options.sentinel_client(sentinels, master)?;
            }
        }
        Ok(())
    }

    fn config(&self) -> AsyncConnectionConfig {
        AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.inner.timeout))
            .set_response_timeout(Some(self.inner.timeout))
    }

    async fn connect(&self, url: &str) -> Result<Conn> {
        match &self.inner.target {
            Target::Sentinel { sentinels, master } => {
                let client = self.inner.options.sentinel_client(sentinels, master)?;
                let conn = SentinelConnection::connect_with_config(client, self.config())
                    .await?
                    .with_reconnect_deadline(self.inner.timeout);
                Ok(Conn::Sentinel(conn))
            }
            Target::Servers(_) => {
                let client = self.inner.options.client(url)?;
                let conn = client.get_multiplexed_async_connection_with_config(&self.config()).await?;
                Ok(Conn::Plain(conn))
            }
        }
    }

    /// Settle the node list: a Sentinel's master, one server, or a
    /// cluster's masters (from the first seed that answers).
    async fn settle(&self, topology: &mut Topology) -> Result<()> {
        let seeds = match &self.inner.target {
            Target::Sentinel { master, .. } => {
                if topology.nodes.is_empty() {
                    topology.nodes = vec![Node { label: master.clone(), url: String::new(), conn: None }];
                }
                topology.settled = Some(Instant::now());
                return Ok(());
            }
            Target::Servers(urls) => urls.clone(),
        };
        let mut last_error = BackendError("no server given".into());
        // The known masters first (they may have moved on from the seeds).
        let mut candidates: Vec<String> = topology.nodes.iter().map(|node| node.url.clone()).collect();
        candidates.extend(seeds.iter().cloned());
        for url in candidates {
            let mut conn = match self.connect(&url).await {
                Ok(conn) => conn,
                Err(error) => {
                    last_error = error;
                    continue;
                }
            };
            let mut pipe = redis::pipe();
            pipe.cmd("INFO").arg("cluster");
            let info = match conn.send(&pipe, 1).await {
                Ok(mut values) => values.pop().unwrap_or(Value::Nil),
                Err(error) => {
                    last_error = error.into();
                    continue;
                }
            };
            let cluster = text(&info).is_some_and(|info| info.contains("cluster_enabled:1"));
            if !cluster {
                topology.nodes = vec![Node { label: host_port(&url), url, conn: Some(conn) }];
                topology.slots.clear();
                topology.settled = Some(Instant::now());
                return Ok(());
            }
            let mut pipe = redis::pipe();
            pipe.cmd("CLUSTER").arg("SLOTS");
            let slots = match conn.send(&pipe, 1).await {
                Ok(mut values) => values.pop().unwrap_or(Value::Nil),
                Err(error) => {
                    last_error = error.into();
                    continue;
                }
            };
            let Some(ranges) = cluster_slots(&slots) else {
                last_error = BackendError(format!("{}: CLUSTER SLOTS: unexpected reply", redacted(&url)));
                continue;
            };
            let mut nodes: Vec<Node> = Vec::new();
            let mut slots = Vec::new();
            for (start, end, host, port) in ranges {
                let label = format!("{host}:{port}");
                let index = match nodes.iter().position(|node| node.label == label) {
                    Some(index) => index,
                    None => {
                        // Keep a connection we already have to that node.
                        let conn = topology
                            .nodes
                            .iter_mut()
                            .find(|node| node.label == label)
                            .and_then(|node| node.conn.take());
                        nodes.push(Node { url: with_host_port(&url, &host, port), label, conn });
                        nodes.len() - 1
                    }
                };
                slots.push((start, end, index));
            }
            slots.sort();
            topology.nodes = nodes;
            topology.slots = slots;
            topology.settled = Some(Instant::now());
            return Ok(());
        }
        Err(last_error)
    }

    async fn topology(&self, force: bool) -> Result<tokio::sync::MutexGuard<'_, Topology>> {
        let mut topology = self.inner.topology.lock().await;
        let stale = match topology.settled {
            None => true,
            Some(at) => force || (!topology.slots.is_empty() && at.elapsed() > TOPOLOGY_TTL),
        };
        if stale {
            self.settle(&mut topology).await?;
        }
        Ok(topology)
    }

    /// The masters, each with its label (`host:port`).
    pub async fn nodes(&self) -> Result<Vec<(NodeId, String)>> {
        let topology = self.topology(false).await?;
        Ok(topology.nodes.iter().enumerate().map(|(i, node)| (NodeId(i), node.label.clone())).collect())
    }

    /// Is the target a cluster?
    pub async fn is_cluster(&self) -> Result<bool> {
        Ok(!self.topology(false).await?.slots.is_empty())
    }

    /// A clone of `node`'s connection, connecting if needed.
    async fn conn(&self, node: NodeId) -> Result<(Conn, String)> {
        let mut topology = self.topology(false).await?;
        let Some(entry) = topology.nodes.get_mut(node.0) else {
            return Err(BackendError("the cluster's nodes changed; reload".into()));
        };
        if let Some(conn) = &entry.conn {
            return Ok((conn.clone(), entry.label.clone()));
        }
        let url = entry.url.clone();
        let label = entry.label.clone();
        drop(topology);
        let conn = self.connect(&url).await.map_err(|e| BackendError(format!("{label}: {e}")))?;
        let mut topology = self.topology(false).await?;
        if let Some(entry) = topology.nodes.get_mut(node.0).filter(|entry| entry.label == label) {
            entry.conn = Some(conn.clone());
        }
        Ok((conn, label))
    }

    /// Forget `node`'s connection after it failed (the next call reconnects).
    async fn forget(&self, node: NodeId) {
        let mut topology = self.inner.topology.lock().await;
        if let Some(entry) = topology.nodes.get_mut(node.0) {
            entry.conn = None;
        }
    }

    /// Send `cmds` pipelined to `node`; one reply per command (a server
    /// error in its place).
    pub async fn on_node(&self, node: NodeId, cmds: &[Cmd]) -> Result<Vec<Value>> {
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        let (mut conn, label) = self.conn(node).await?;
        let mut pipe = redis::pipe();
        for cmd in cmds {
            pipe.add_command(cmd.clone());
        }
        match conn.send(&pipe, cmds.len()).await {
            Ok(values) => Ok(values),
            Err(error) => {
                if error.is_io_error() || error.is_connection_dropped() || error.is_timeout() {
                    self.forget(node).await;
                }
                Err(BackendError(format!("{label}: {error}")))
            }
        }
    }

    /// The node serving `tenant` (the master of its slot).
    pub async fn node_of(&self, tenant: &str) -> Result<NodeId> {
        let topology = self.topology(false).await?;
        Ok(route(&topology, tenant))
    }

    /// Send `cmds` (all about `tenant`) pipelined to the node serving the
    /// tenant; on a `MOVED` reply the topology is asked for again and the
    /// commands sent again, once. Writes are sent one at a time by the
    /// actions, so a resend repeats nothing that ran: a `MOVED` means the
    /// command did not run.
    pub async fn for_tenant(&self, tenant: &str, cmds: &[Cmd]) -> Result<Vec<Value>> {
        let node = self.node_of(tenant).await?;
        let values = self.on_node(node, cmds).await?;
        if !values.iter().any(moved) {
            return Ok(values);
        }
        let topology = self.topology(true).await?;
        let node = route(&topology, tenant);
        drop(topology);
        self.on_node(node, cmds).await
    }

    /// One `SCAN` call on `node`.
    pub async fn scan(&self, node: NodeId, cursor: u64, pattern: &str, count: u32) -> Result<(u64, Vec<Vec<u8>>)> {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(count);
        let reply = self.on_node(node, &[cmd]).await?.pop().unwrap_or(Value::Nil);
        match reply {
            Value::Array(mut parts) if parts.len() == 2 => {
                let keys = parts.pop().unwrap_or(Value::Nil);
                let next = parts.pop().unwrap_or(Value::Nil);
                let next = match next {
                    Value::BulkString(bytes) => std::str::from_utf8(&bytes).ok().and_then(|s| s.parse().ok()),
                    Value::Int(n) => u64::try_from(n).ok(),
                    _ => None,
                };
                let keys = match keys {
                    Value::Array(keys) => keys
                        .into_iter()
                        .filter_map(|key| match key {
                            Value::BulkString(bytes) => Some(bytes),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                next.map(|next| (next, keys)).ok_or_else(|| BackendError("SCAN: unexpected reply".into()))
            }
            Value::ServerError(error) => Err(BackendError(format!("SCAN: {error:?}"))),
            other => Err(BackendError(format!("SCAN: unexpected reply {other:?}"))),
        }
    }

    /// Check that every master can be reached and has the module loaded
    /// (`COMMAND INFO DREAMS.STATS` answers the command's entry), for a
    /// warning at start.
    pub async fn probe(&self) -> Result<()> {
        let nodes = self.nodes().await?;
        for (node, label) in nodes {
            let mut cmd = redis::cmd("COMMAND");
            cmd.arg("INFO").arg("DREAMS.STATS");
            let reply = self.on_node(node, &[cmd]).await?.pop().unwrap_or(Value::Nil);
            match reply {
                Value::Array(items) if items.first().is_some_and(|item| !matches!(item, Value::Nil)) => {}
                Value::ServerError(error) => return Err(BackendError(format!("{label}: {error:?}"))),
                _ => return Err(BackendError(format!("{label}: the dreamtown module is not loaded"))),
            }
        }
        Ok(())
    }
}

fn route(topology: &Topology, tenant: &str) -> NodeId {
    if topology.slots.is_empty() {
        return NodeId(0);
    }
    let slot = key_slot(tenant.as_bytes());
    let found = topology.slots.iter().find(|(start, end, _)| (*start..=*end).contains(&slot));
    NodeId(found.map_or(0, |(_, _, index)| *index))
}

fn moved(value: &Value) -> bool {
    matches!(value, Value::ServerError(error) if error.code() == "MOVED")
}

/// A status or bulk reply as text.
pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// `(start, end, host, port)` of each master's slot range in a `CLUSTER SLOTS` reply.
fn cluster_slots(value: &Value) -> Option<Vec<(u16, u16, String, u16)>> {
    let Value::Array(ranges) = value else { return None };
    let mut out = Vec::new();
    for range in ranges {
        let Value::Array(parts) = range else { return None };
        let number = |value: Option<&Value>| match value {
            Some(Value::Int(n)) => u16::try_from(*n).ok(),
            _ => None,
        };
        let start = number(parts.first())?;
        let end = number(parts.get(1))?;
        let Some(Value::Array(master)) = parts.get(2) else { return None };
        let host = text(master.first()?)?;
        let port = number(master.get(1))?;
        out.push((start, end, host, port));
    }
    Some(out)
}

fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// `url` with its host and port replaced (scheme, credentials and
/// database kept): how a discovered master is reached.
fn with_host_port(url: &str, host: &str, port: u16) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (userinfo, hostpart) = match rest.rsplit_once('@') {
        Some((userinfo, hostpart)) => (Some(userinfo), hostpart),
        None => (None, rest),
    };
    let path = hostpart.find('/').map_or("", |at| &hostpart[at..]);
    let host = if host.contains(':') { format!("[{host}]") } else { host.to_owned() };
    match userinfo {
        Some(userinfo) => format!("{scheme}://{userinfo}@{host}:{port}{path}"),
        None => format!("{scheme}://{host}:{port}{path}"),
    }
}

fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://{host}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovered_masters_keep_the_seeds_scheme_credentials_and_database() {
        assert_eq!(with_host_port("rediss://u:p@seed:1/2", "10.0.0.5", 7001), "rediss://u:p@10.0.0.5:7001/2");
        assert_eq!(with_host_port("redis://seed:1", "::1", 7001), "redis://[::1]:7001");
        assert_eq!(host_port("redis://u:p@h:6379/0"), "h:6379");
        assert_eq!(without_credentials("redis://u:p@h:6379/0"), "redis://h:6379/0");
    }

    #[test]
    fn cluster_slots_are_read() {
        let reply = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(5460),
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(7001),
                Value::BulkString(b"id".to_vec()),
            ]),
        ])]);
        assert_eq!(cluster_slots(&reply), Some(vec![(0, 5460, "127.0.0.1".to_owned(), 7001)]));
        assert_eq!(cluster_slots(&Value::Nil), None);
    }
}
