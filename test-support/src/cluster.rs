//! A local cluster of test servers, the module on every node, joined with
//! `redis-cli --cluster create` ([`crate::cli_bin`]), and its slot map as
//! the nodes see it.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use crate::{Server, wait_until};

/// A local cluster: masters, and replicas if asked.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// One master's view of the slot map: which port owns which slot ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotOwner {
    pub port: u16,
    pub ranges: Vec<(u16, u16)>,
}

impl Cluster {
    /// Start `masters` nodes and join them with `redis-cli --cluster create`.
    pub fn start(masters: usize) -> Cluster {
        Self::start_with_replicas(masters, 0)
    }

    /// Start `masters` masters with `replicas` replicas each (`nodes`:
    /// the masters first, as `redis-cli --cluster create` assigns them).
    pub fn start_with_replicas(masters: usize, replicas: usize) -> Cluster {
        let count = masters * (1 + replicas);
        let nodes: Vec<Server> = (0..count).map(|_| Server::start_cluster_node()).collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let output = Command::new(crate::cli_bin())
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli on PATH");
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = Cluster { nodes };
        cluster.wait_stable();
        if replicas > 0 {
            cluster.wait_masters_know_their_replicas(replicas);
            cluster.wait_replicas_acknowledge(replicas);
        }
        cluster
    }

    /// Every master's replicas acknowledge its writes (`WAIT`). For a
    /// moment after a diskless sync with no delay a replica whose link is
    /// up, and which its master lists online, does not answer `WAIT` (seen
    /// with a plain redis-server 7.0.15, module or not), and a manual
    /// failover asked then times out: the replica cannot reach the paused
    /// master's offset. A probe key in a slot of each master, written and
    /// deleted, shows the stream flowing.
    fn wait_replicas_acknowledge(&self, replicas: usize) {
        let owners = self.slot_owners();
        for owner in &owners {
            let Some(node) = self.nodes.iter().find(|node| node.port == owner.port) else { continue };
            let mut con = node.connect();
            // A key in one of the master's slots (names tried in order; the
            // server says which slot each hashes to).
            let probe = (0u32..10_000)
                .map(|i| format!("dreamtown-test-probe-{i}"))
                .find(|name| {
                    redis::cmd("CLUSTER")
                        .arg("KEYSLOT")
                        .arg(name)
                        .query::<u16>(&mut con)
                        .is_ok_and(|slot| owner.ranges.iter().any(|(first, last)| (*first..=*last).contains(&slot)))
                })
                .expect("a key in the master's slots");
            wait_until("every master's replicas acknowledge its writes", || {
                let _: redis::RedisResult<()> = redis::cmd("SET").arg(&probe).arg("1").query(&mut con);
                redis::cmd("WAIT").arg(replicas).arg(100).query::<usize>(&mut con).is_ok_and(|acked| acked >= replicas)
            });
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&probe).query(&mut con);
        }
    }

    /// Every master's own view (`CLUSTER NODES` asked of it) lists
    /// `replicas` replicas of its own. A replica's link comes up within
    /// milliseconds (diskless sync, no delay), before the bus has told its
    /// master who it is, and a master ignores a manual failover request
    /// (`CLUSTER FAILOVER`) from a node it does not know as its replica.
    fn wait_masters_know_their_replicas(&self, replicas: usize) {
        wait_until("every master lists its replicas", || {
            self.nodes.iter().all(|node| {
                let Ok(mut con) = node.try_connect() else { return false };
                let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con).unwrap_or_default();
                let Some(me) = nodes.lines().find(|line| line.contains("myself")) else { return false };
                if !me.contains("master") {
                    return true;
                }
                let id = me.split(' ').next().unwrap_or_default();
                nodes.lines().filter(|line| line.split(' ').nth(3) == Some(id)).count() == replicas
            })
        });
    }

    /// Wait until every node says `cluster_state:ok` and sees the same full
    /// slot map (after the start, or a move).
    pub fn wait_stable(&self) {
        wait_until("cluster_state:ok and one slot map on every node", || {
            let mut maps = Vec::new();
            for node in &self.nodes {
                let Ok(mut con) = node.try_connect() else { return false };
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap_or_default();
                if !info.contains("cluster_state:ok") {
                    return false;
                }
                maps.push(slot_owners(&mut con));
            }
            let covered: u32 = maps
                .first()
                .map(|map| map.iter().flat_map(|o| &o.ranges).map(|(a, b)| u32::from(b - a) + 1).sum())
                .unwrap_or(0);
            covered == 16_384 && maps.windows(2).all(|pair| pair[0] == pair[1])
        });
    }

    /// A coordinated failover (`CLUSTER FAILOVER` asked of `replica`),
    /// asked again until the replica is a master that owns its old master's
    /// slots. A manual failover the master cannot finish within its own
    /// timeout (5 s: the replica must reach the paused master's offset) is
    /// abandoned silently, which happens on a loaded machine; Redis's own
    /// tests ask again for the same reason.
    pub fn fail_over_to(&self, replica: usize, slot: u16) {
        let node = &self.nodes[replica];
        let is_master = || {
            let Ok(mut con) = node.try_connect() else { return false };
            let role: String = redis::cmd("INFO").arg("replication").query(&mut con).unwrap_or_default();
            role.lines().any(|line| line.trim() == "role:master")
        };
        let took_over = || is_master() && self.owner_of_slot(slot) == replica;
        let asked = std::time::Instant::now();
        while !took_over() {
            assert!(asked.elapsed() < crate::DEADLINE * 2, "the replica never took over slot {slot}");
            // Asked again only of a node still a replica: a new master whose
            // promotion the first node has not heard of yet is waited for.
            if !is_master() {
                let reply: String =
                    redis::cmd("CLUSTER").arg("FAILOVER").query(&mut node.connect()).expect("CLUSTER FAILOVER");
                assert_eq!(reply, "OK");
            }
            let attempt = std::time::Instant::now();
            while !took_over() && attempt.elapsed() < std::time::Duration::from_secs(12) {
                std::thread::sleep(crate::POLL);
            }
        }
        self.wait_stable();
    }

    /// `redis://` URLs of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }

    /// An async cluster connection (no response timeout by default).
    #[cfg(feature = "async")]
    pub async fn connection(&self) -> redis::cluster_async::ClusterConnection {
        redis::cluster::ClusterClient::new(self.urls())
            .expect("cluster client")
            .get_async_connection()
            .await
            .expect("cluster connection")
    }

    /// The slot map as the first node sees it.
    pub fn slot_owners(&self) -> Vec<SlotOwner> {
        let first = self.nodes.first().expect("a cluster has nodes");
        slot_owners(&mut first.connect())
    }

    /// The node (by index) that owns `slot`.
    pub fn owner_of_slot(&self, slot: u16) -> usize {
        let owners = self.slot_owners();
        let port = owners
            .iter()
            .find(|o| o.ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .map(|o| o.port)
            .expect("every slot has an owner");
        self.nodes.iter().position(|n| n.port == port).expect("owner is one of ours")
    }
}

/// `CLUSTER SLOTS` as owner port → ranges, sorted.
fn slot_owners(con: &mut redis::Connection) -> Vec<SlotOwner> {
    let slots: Vec<(u16, u16, u16)> = match redis::cmd("CLUSTER").arg("SLOTS").query::<redis::Value>(con) {
        Ok(redis::Value::Array(entries)) => entries
            .into_iter()
            .filter_map(|entry| {
                let redis::Value::Array(parts) = entry else { return None };
                let start: u16 = redis::from_redis_value(parts.first()?.clone()).ok()?;
                let end: u16 = redis::from_redis_value(parts.get(1)?.clone()).ok()?;
                let redis::Value::Array(master) = parts.get(2)?.clone() else { return None };
                let _host: String = redis::from_redis_value(master.first()?.clone()).ok()?;
                let port: u16 = redis::from_redis_value(master.get(1)?.clone()).ok()?;
                Some((start, end, port))
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut by_port: BTreeMap<u16, Vec<(u16, u16)>> = BTreeMap::new();
    for (start, end, port) in slots {
        by_port.entry(port).or_default().push((start, end));
    }
    by_port
        .into_iter()
        .map(|(port, mut ranges)| {
            ranges.sort();
            SlotOwner { port, ranges }
        })
        .collect()
}
