//! Where the tool reads and writes: one server, or a Redis Cluster reached
//! through any of its nodes (commands routed by their first key; `SCAN`
//! sent to every master, since a cluster connection cannot route it).

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::Result;

/// How long connecting to a server may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connection to one server or to a cluster.
#[derive(Clone)]
pub enum Endpoint {
    /// A plain server.
    Single(MultiplexedConnection),
    /// A cluster: the routed connection and one plain connection per master (for `SCAN`).
    Cluster(ClusterConnection, Vec<MultiplexedConnection>),
}

impl Endpoint {
    /// Connect to `url`; a node with `cluster_enabled:1` makes a cluster endpoint.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, &dreamtown_client::connect::Options::default()).await
    }

    /// [`Endpoint::connect`] with TLS and credentials (every node of a cluster gets the same).
    pub async fn connect_with(url: &str, options: &dreamtown_client::connect::Options) -> Result<Self> {
        let client = options.client(url)?;
        // No response timeout (an apply script may hold a large batch for
        // seconds); connecting may take longer than the crate's 1 s on a
        // loaded machine (the kill-and-rerun test saw "timed out").
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(CONNECT_TIMEOUT));
        let mut single = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(dreamtown_client::connect::explain)?;
        let info: String = redis::cmd("INFO").arg("cluster").query_async(&mut single).await?;
        if !info.contains("cluster_enabled:1") {
            return Ok(Self::Single(single));
        }
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(&mut single).await?;
        let mut masters = Vec::new();
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let (Some(addr), Some(flags)) = (fields.get(1), fields.get(2)) else { continue };
            if !flags.split(',').any(|flag| flag == "master") || flags.contains("fail") {
                continue;
            }
            let host_port = addr.split('@').next().unwrap_or_default();
            let node_url = dreamtown_client::connect::with_host_port(url, host_port);
            let node = options.client(&node_url)?;
            masters.push(node.get_multiplexed_async_connection_with_config(&config).await?);
        }
        let cluster = options
            .cluster_builder(&[url.to_owned()])?
            .connection_timeout(CONNECT_TIMEOUT)
            .build()?
            .get_async_connection()
            .await?;
        Ok(Self::Cluster(cluster, masters))
    }

    /// Every key matching `pattern` (a glob), by incremental `SCAN` on every master.
    pub async fn scan(&mut self, pattern: &str) -> Result<Vec<Vec<u8>>> {
        let mut nodes = match self {
            Self::Single(connection) => vec![connection.clone()],
            Self::Cluster(_, masters) => masters.clone(),
        };
        let mut keys = Vec::new();
        for node in &mut nodes {
            let mut cursor: u64 = 0;
            loop {
                let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(node)
                    .await?;
                keys.extend(batch);
                cursor = next;
                if cursor == 0 {
                    break;
                }
            }
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }
}

/// Escape the glob characters of `text` for a `SCAN MATCH` pattern.
pub fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

impl ConnectionLike for Endpoint {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
            Self::Cluster(connection, _) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection) => connection.req_packed_commands(cmd, offset, count),
            Self::Cluster(connection, _) => connection.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            Self::Cluster(connection, _) => connection.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
