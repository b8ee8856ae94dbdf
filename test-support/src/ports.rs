//! Free loopback ports for servers, cluster nodes, sentinels and the
//! exporter: the kernel picks one (bind to port 0), the listener closes, and
//! the caller binds it. Another process may take it in between, so
//! whatever starts on it retries on a new one ([`crate::Server`] does).

use std::net::TcpListener;

/// How far a cluster node's bus port is from its port.
const BUS_OFFSET: u16 = 10_000;

fn is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// `count` (at least 1) consecutive free loopback ports, the first
/// returned; with `with_bus`, their cluster bus ports (+10000) free too.
pub fn free_ports(count: u16, with_bus: bool) -> u16 {
    let count = count.max(1);
    loop {
        let base = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free loopback port");
        let Some(last) = base.checked_add(count - 1) else { continue };
        if with_bus && last.checked_add(BUS_OFFSET).is_none() {
            continue;
        }
        let bus_free = |port: u16| !with_bus || is_free(port + BUS_OFFSET);
        if (base..=last).all(|port| is_free(port) && bus_free(port)) {
            return base;
        }
    }
}

/// A free loopback port.
pub fn free_port() -> u16 {
    free_ports(1, false)
}

/// `count` consecutive free loopback ports whose bus ports (+10000) are free
/// too (`scripts/cluster.sh` takes a base port and counts up).
pub fn free_port_run(count: u16) -> u16 {
    free_ports(count, true)
}
