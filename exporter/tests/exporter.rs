//! `dreamtown-exporter` against real servers: `/metrics` carries the
//! `INFO dreamtown` totals per node and the `DREAMS.STATS`/`TOWN.STATS`
//! gauges and `_total` counters per tenant (fired, drained, acknowledged;
//! sent, received, acked per town and agent; the ages of the oldest ready
//! and in-flight fire), found by a `SCAN` spread over scrapes; beyond
//! `--max-tenants` it says so; a dead node reads `dreamtown_up 0`; a
//! cluster is exported from one address (a replica), follows a failover
//! and outlives its seed; every name passes `promtool check metrics`; and
//! Debian's `prometheus` scrapes it and answers PromQL with the values the
//! test produced.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Server, free_port, scratch_dir, tenant, wait_until};

/// A child process killed (by its own handle) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` on 127.0.0.1:`port`: the body, or None if nothing answers.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// Start the exporter on a free port and wait until it serves.
fn exporter(args: &[&str]) -> (Process, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_dreamtown-exporter"))
        .args(args)
        .args(["--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dreamtown-exporter");
    let process = Process(child);
    wait_until("the exporter to listen", || TcpStream::connect(("127.0.0.1", port)).is_ok());
    (process, port)
}

/// The value of the sample `name` carrying all of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let (labelset, value) = match rest.strip_prefix('{') {
            Some(rest) => rest.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        labels
            .iter()
            .all(|(k, v)| labelset.split(',').any(|pair| pair == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}

fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query(con).unwrap_or_else(|error| panic!("{args:?}: {error}"))
}

fn node_of(server: &Server) -> String {
    format!("127.0.0.1:{}", server.port)
}

#[test]
fn metrics_carry_node_totals_and_tenant_gauges() {
    let server = Server::start();
    let mut con = server.connect();
    let (a, b, town) = (tenant("exp-a"), tenant("exp-b"), tenant("exp-t"));
    for _ in 0..7 {
        run(&mut con, &["DREAMS.FIRE", &a, "web", "3"]);
    }
    for _ in 0..2 {
        run(&mut con, &["DREAMS.FIRE", &b, "web", "3"]);
    }
    // Unrelated keys the discovery scan must walk past.
    for i in 0..200 {
        run(&mut con, &["SET", &format!("other:{i}"), "x"]);
    }
    run(&mut con, &["TOWN.SEND", &town, r#"{"id":"1","to":"w1","created_at":"2025-01-01T00:00:00Z"}"#]);
    let url = server.url();
    // Two SCAN calls of COUNT 10 per scrape: a pass over ~210 keys takes
    // several scrapes, so discovery is spread over them.
    let (_exporter, port) = exporter(&["--redis", &url, "--scan-calls", "2", "--scan-count", "10"]);
    let node = node_of(&server);
    let first = http_get(port, "/metrics").expect("/metrics");
    assert_eq!(
        sample(&first, "dreamtown_exporter_tenant_scan_complete", &[("family", "dreams")]),
        Some(0.0),
        "{first}"
    );
    assert_eq!(sample(&first, "dreamtown_exporter_scan_calls_total", &[("family", "dreams")]), Some(2.0), "{first}");
    assert_eq!(sample(&first, "dreamtown_node_dreams_fired_total", &[("node", &node)]), Some(9.0), "{first}");
    let mut text = first;
    wait_until("a full discovery pass", || {
        text = http_get(port, "/metrics").unwrap_or_default();
        sample(&text, "dreamtown_exporter_tenant_scan_complete", &[("family", "dreams")]) == Some(1.0)
            && sample(&text, "dreamtown_exporter_tenant_scan_complete", &[("family", "town")]) == Some(1.0)
    });
    assert_eq!(sample(&text, "dreamtown_up", &[("node", &node)]), Some(1.0));
    assert_eq!(sample(&text, "dreamtown_exporter_tenants", &[("family", "dreams")]), Some(2.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_ready", &[("org", &a)]), Some(7.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_ready", &[("org", &b)]), Some(2.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_town_inbox", &[("town", &town), ("agent", "w1")]), Some(1.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_town_mailboxes", &[("town", &town)]), Some(1.0), "{text}");
    let age =
        sample(&text, "dreamtown_town_next_message_age_seconds", &[("town", &town), ("agent", "w1")]).expect("age");
    assert!(age > 365.0 * 86_400.0 * 0.9, "{age}");
    assert!(sample(&text, "dreamtown_exporter_scrape_duration_seconds", &[]).is_some_and(|s| s > 0.0));
    assert!(text.contains("# TYPE dreamtown_node_dreams_acks_acknowledged_total counter"));
    assert!(text.contains("# TYPE dreamtown_dreams_ready gauge"));
    // Per-tenant totals, as counters with tenant labels.
    assert!(text.contains("# TYPE dreamtown_dreams_fired_total counter"), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_fired_total", &[("org", &a)]), Some(7.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_fired_fire_total", &[("org", &b)]), Some(2.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_drained_total", &[("org", &a)]), Some(0.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_town_messages_sent_total", &[("town", &town)]), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "dreamtown_town_agent_messages_sent_total", &[("town", &town), ("agent", "w1")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(sample(&text, "dreamtown_town_broadcasts_total", &[("town", &town)]), Some(0.0), "{text}");
    assert!(!text.contains("dreamtown_town_agent_broadcasts_total"), "{text}");
    // The age of the next ready fire, timed as it entered; nothing in flight yet.
    assert!(
        sample(&text, "dreamtown_dreams_oldest_ready_age_seconds", &[("org", &a)])
            .is_some_and(|age| (0.0..600.0).contains(&age)),
        "{text}"
    );
    assert_eq!(sample(&text, "dreamtown_dreams_oldest_ready_age_exact", &[("org", &a)]), Some(1.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_oldest_inflight_age_seconds", &[("org", &a)]), None, "{text}");

    // Three drained under a lease, then acknowledged.
    let mut payloads = Vec::new();
    for _ in 0..3 {
        let redis::Value::BulkString(payload) = run(&mut con, &["DREAMS.DRAIN", &a, "0", "NOQUIET", "LEASE", "600"])
        else {
            panic!()
        };
        payloads.push(payload);
    }
    let text = http_get(port, "/metrics").expect("/metrics");
    assert_eq!(sample(&text, "dreamtown_dreams_in_flight", &[("org", &a)]), Some(3.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_leased", &[("org", &a)]), Some(3.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_ready", &[("org", &a)]), Some(4.0), "{text}");
    let deadline =
        sample(&text, "dreamtown_dreams_next_lease_deadline_timestamp_seconds", &[("org", &a)]).expect("deadline");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(deadline > now + 500.0 && deadline < now + 700.0, "{deadline} vs {now}");
    assert!(
        sample(&text, "dreamtown_dreams_oldest_inflight_age_seconds", &[("org", &a)])
            .is_some_and(|age| (0.0..600.0).contains(&age)),
        "{text}"
    );
    assert_eq!(sample(&text, "dreamtown_dreams_oldest_inflight_age_exact", &[("org", &a)]), Some(1.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_drained_total", &[("org", &a)]), Some(3.0), "{text}");
    for payload in &payloads {
        redis::cmd("DREAMS.ACK").arg(&a).arg(payload).arg("SUCCESS").query::<redis::Value>(&mut con).unwrap();
    }
    let text = http_get(port, "/metrics").expect("/metrics");
    assert_eq!(sample(&text, "dreamtown_node_dreams_acks_acknowledged_total", &[("node", &node)]), Some(3.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_in_flight", &[("org", &a)]), Some(0.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_acks_acknowledged_total", &[("org", &a)]), Some(3.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_acks_success_total", &[("org", &a)]), Some(3.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_acks_acknowledged_total", &[("org", &b)]), Some(0.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_oldest_inflight_age_seconds", &[("org", &a)]), None, "{text}");
    // The tables' sizes are levels, not totals.
    assert!(text.contains("# TYPE dreamtown_node_tenant_stats_orgs_tracked gauge"), "{text}");
    assert!(text.contains("# TYPE dreamtown_node_write_gate_writes_paused gauge"), "{text}");
    assert!(text.contains("# TYPE dreamtown_node_write_gate_held_lease_ticks_total counter"), "{text}");
    assert!(http_get(port, "/nothing").is_none());
}

#[test]
fn beyond_the_tenant_limit_it_says_so_and_a_dead_node_reads_down() {
    let server = Server::start();
    let mut con = server.connect();
    let orgs: Vec<String> = (0..3).map(|i| tenant(&format!("lim{i}"))).collect();
    for org in &orgs {
        run(&mut con, &["DREAMS.FIRE", org, "web", "3"]);
    }
    let dead = format!("redis://127.0.0.1:{}/", free_port());
    let (_exporter, port) =
        exporter(&["--redis", &server.url(), "--redis", &dead, "--max-tenants", "2", "--timeout-secs", "2"]);
    let text = http_get(port, "/metrics").expect("/metrics");
    assert_eq!(sample(&text, "dreamtown_exporter_tenants", &[("family", "dreams")]), Some(3.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_exporter_tenants_over_limit", &[("family", "dreams")]), Some(1.0), "{text}");
    assert!(
        text.contains("3 dreams tenants found, only the first 2 (by name) are exported; raise --max-tenants"),
        "{text}"
    );
    let exported = text.lines().filter(|line| line.starts_with("dreamtown_dreams_ready{")).count();
    assert_eq!(exported, 2, "{text}");
    assert_eq!(sample(&text, "dreamtown_up", &[("node", &node_of(&server))]), Some(1.0), "{text}");
    let dead_node = dead.trim_start_matches("redis://").trim_end_matches('/');
    assert_eq!(sample(&text, "dreamtown_up", &[("node", dead_node)]), Some(0.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_exporter_errors_total", &[("node", dead_node)]), Some(1.0), "{text}");
}

/// Debian's `prometheus` binary, if installed (`apt-get install -y
/// prometheus`); `DREAMTOWN_PROMETHEUS` names another.
fn prometheus_bin() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("DREAMTOWN_PROMETHEUS") {
        return Some(PathBuf::from(path));
    }
    let path = PathBuf::from("/usr/bin/prometheus");
    path.exists().then_some(path)
}

/// Percent-encode a PromQL query for a URL.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The instant-query result of `query`: each series' value as a number.
fn promql(port: u16, query: &str) -> Vec<f64> {
    let Some(body) = http_get(port, &format!("/api/v1/query?query={}", encode(query))) else { return Vec::new() };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&body) else { return Vec::new() };
    json["data"]["result"]
        .as_array()
        .map(|series| series.iter().filter_map(|s| s["value"][1].as_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

#[test]
fn prometheus_scrapes_the_exporter_and_promql_returns_the_values() {
    let Some(prometheus) = prometheus_bin() else {
        if std::env::var_os("DREAMTOWN_NO_PROMETHEUS").is_some() {
            eprintln!("skipped: no prometheus and DREAMTOWN_NO_PROMETHEUS is set");
            return;
        }
        panic!(
            "this test needs Debian's prometheus: apt-get install -y prometheus (or set DREAMTOWN_PROMETHEUS, or DREAMTOWN_NO_PROMETHEUS=1 to skip)"
        );
    };
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("prom");
    let node = node_of(&server);
    let (_exporter, exporter_port) = exporter(&["--redis", &server.url()]);

    let prom_port = free_port();
    let dir = scratch_dir("prometheus", prom_port);
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: dreamtown\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Process(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus"),
    );

    // Queue depth after N fires.
    const N: usize = 6;
    for _ in 0..N {
        run(&mut con, &["DREAMS.FIRE", &org, "web", "3"]);
    }
    let depth = format!("dreamtown_dreams_ready{{org=\"{org}\"}}");
    wait_until("PromQL to see the depth", || promql(prom_port, &depth) == vec![N as f64]);
    let fired = format!("dreamtown_dreams_fired_total{{org=\"{org}\"}}");
    wait_until("PromQL to see the tenant's fires", || promql(prom_port, &fired) == vec![N as f64]);
    // The oldest ready fire ages while nothing drains.
    let age = format!("dreamtown_dreams_oldest_ready_age_seconds{{org=\"{org}\"}}");
    wait_until("PromQL to see the oldest ready fire age", || {
        promql(prom_port, &age).first().is_some_and(|age| *age >= 1.0)
    });

    // Drain and acknowledge all of them: the acknowledged counter reaches N
    // and its rate is positive; the depth falls to 0.
    for _ in 0..N {
        let redis::Value::BulkString(payload) = run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]) else {
            panic!()
        };
        redis::cmd("DREAMS.ACK").arg(&org).arg(payload).arg("SUCCESS").query::<redis::Value>(&mut con).unwrap();
    }
    let acked = format!("dreamtown_node_dreams_acks_acknowledged_total{{node=\"{node}\"}}");
    wait_until("PromQL to see the acknowledgements", || promql(prom_port, &acked) == vec![N as f64]);
    wait_until("PromQL to see the queue empty", || promql(prom_port, &depth) == vec![0.0]);
    let rate = format!("rate({acked}[1m])");
    let rates = promql(prom_port, &rate);
    assert!(rates.len() == 1 && rates[0] > 0.0, "{rate}: {rates:?}");
    let tenant_acked = format!("dreamtown_dreams_acks_acknowledged_total{{org=\"{org}\"}}");
    wait_until("PromQL to see the tenant's acknowledgements", || promql(prom_port, &tenant_acked) == vec![N as f64]);
    let tenant_rate = format!("sum by (org) (rate({tenant_acked}[1m]))");
    let rates = promql(prom_port, &tenant_rate);
    assert!(rates.len() == 1 && rates[0] > 0.0, "{tenant_rate}: {rates:?}");
    let peak = format!("max_over_time({depth}[5m])");
    assert_eq!(promql(prom_port, &peak), vec![N as f64]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every `dreamtown_*` name in `text`.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("dreamtown_") {
        let tail = &rest[at..];
        let end =
            tail.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')).unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// A server with every kind of value present, so every name is exported.
fn server_with_every_value() -> Server {
    let server = Server::start();
    let mut con = server.connect();
    run(&mut con, &["DREAMS.FIRE", "dash", "web", "3"]);
    run(&mut con, &["DREAMS.FIRE", "dash", "web", "3"]);
    run(&mut con, &["DREAMS.DRAIN", "dash", "0", "NOQUIET", "LEASE", "600"]);
    // After the drain, which would promote it (due since 1970).
    run(&mut con, &["ZADD", "exocortex:dreams:{dash}:deferred", "1", "{\"old\":1}"]);
    run(&mut con, &["TOWN.SEND", "dash", r#"{"id":"1","to":"w","created_at":"2025-01-01T00:00:00Z"}"#]);
    run(&mut con, &["TOWN.SEND", "dash", r#"{"id":"2","to":"w","created_at":"2025-01-01T00:00:00Z"}"#]);
    run(&mut con, &["TOWN.RECV", "dash", "w", "RELIABLE", "LEASE", "600"]);
    drop(con);
    server
}

/// Debian's `promtool` (beside `prometheus`), or a panic saying how to
/// get it; `None` only when `DREAMTOWN_NO_PROMETHEUS` says to skip.
fn promtool() -> Option<PathBuf> {
    let found = prometheus_bin().map(|p| p.with_file_name("promtool")).filter(|p| p.exists());
    if found.is_none() && std::env::var_os("DREAMTOWN_NO_PROMETHEUS").is_none() {
        panic!("this test needs promtool (Debian's prometheus: apt-get install -y prometheus)");
    }
    found
}

#[test]
fn every_metric_name_passes_promtool_check_metrics() {
    let Some(promtool) = promtool() else {
        eprintln!("promtool check skipped");
        return;
    };
    let server = server_with_every_value();
    let (_exporter, port) = exporter(&["--redis", &server.url()]);
    let text = http_get(port, "/metrics").expect("/metrics");
    // Every INFO field, every STATS gauge and total, the exporter's own.
    assert!(text.contains("dreamtown_node_leases_lease_max_tick_seconds{"), "{text}");
    assert!(text.contains("dreamtown_dreams_oldest_deferred_age_seconds{"), "{text}");
    assert!(text.contains("dreamtown_town_agent_messages_received_total{"), "{text}");
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write to promtool");
    let output = check.wait_with_output().expect("promtool");
    assert!(
        output.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_dashboard_and_the_alerts_use_only_exported_metrics() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../monitoring");
    let dashboard = std::fs::read_to_string(root.join("grafana-dashboard.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let exprs: Vec<String> = json["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|panel| panel["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|target| target["expr"].as_str().map(str::to_owned))
        .collect();
    assert!(exprs.len() >= 15, "{exprs:?}");
    let alerts = std::fs::read_to_string(root.join("alerts.yml")).unwrap();

    let server = server_with_every_value();
    let (_exporter, port) = exporter(&["--redis", &server.url()]);
    let exported = metric_names(&http_get(port, "/metrics").expect("/metrics"));
    for name in metric_names(&exprs.join("\n")).into_iter().chain(metric_names(&alerts)) {
        assert!(
            exported.contains(&name),
            "{name} is used by the dashboard or the alerts but not exported: {exported:?}"
        );
    }

    // The rules are valid Prometheus rules.
    match promtool() {
        Some(promtool) => {
            let status = Command::new(&promtool)
                .arg("check")
                .arg("rules")
                .arg(root.join("alerts.yml"))
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "promtool check rules monitoring/alerts.yml failed");
            // The oldest-fire alerts fire after their `for`, not before.
            let output =
                Command::new(&promtool).arg("test").arg("rules").arg(root.join("alerts.test.yml")).output().unwrap();
            assert!(
                output.status.success(),
                "promtool test rules monitoring/alerts.test.yml: {}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        None => eprintln!("promtool check skipped"),
    }
}

#[test]
fn a_cluster_is_exported_node_by_node() {
    let cluster = common::Cluster::start(3);
    let mut nodes_seen = std::collections::BTreeSet::new();
    let mut expected = Vec::new();
    let mut any = cluster.nodes[0].connect();
    for i in 0..9 {
        let org = tenant(&format!("cl{i}"));
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("exocortex:dreams:{{{org}}}:queue"))
            .query(&mut any)
            .unwrap();
        let owner = &cluster.nodes[cluster.owner_of_slot(slot)];
        let mut con = owner.connect();
        for _ in 0..=i {
            run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]);
        }
        nodes_seen.insert(owner.port);
        expected.push((org, node_of(owner), (i + 1) as f64));
    }
    assert!(nodes_seen.len() >= 2, "the tenants fell on one node: pick other names");
    let urls = cluster.urls();
    let mut args = Vec::new();
    for url in &urls {
        args.extend(["--redis", url.as_str()]);
    }
    let (_exporter, port) = exporter(&args);
    let text = http_get(port, "/metrics").expect("/metrics");
    for (org, node, fired) in &expected {
        assert_eq!(
            sample(&text, "dreamtown_dreams_ready", &[("org", org), ("node", node)]),
            Some(*fired),
            "{org} on {node}: {text}"
        );
        // Asked only of the node that owns it.
        let series = text
            .lines()
            .filter(|l| l.starts_with("dreamtown_dreams_ready{") && l.contains(&format!("org=\"{org}\"")))
            .count();
        assert_eq!(series, 1, "{org}: {text}");
    }
    let fired_total: f64 = cluster
        .nodes
        .iter()
        .filter_map(|n| sample(&text, "dreamtown_node_dreams_fired_total", &[("node", &node_of(n))]))
        .sum();
    assert_eq!(fired_total, 45.0, "{text}");
    for node in &cluster.nodes {
        assert_eq!(sample(&text, "dreamtown_up", &[("node", &node_of(node))]), Some(1.0), "{text}");
    }
}

/// The port of the master `replica` follows (`INFO replication`).
fn master_port_of(replica: &Server) -> u16 {
    let info: String = redis::cmd("INFO").arg("replication").query(&mut replica.connect()).unwrap();
    info.lines().find_map(|l| l.trim().strip_prefix("master_port:")).and_then(|p| p.parse().ok()).expect("a replica")
}

#[test]
fn one_address_of_a_cluster_exports_every_master_and_follows_a_failover() {
    let mut cluster = common::Cluster::start_with_replicas(3, 1);
    let mut any = cluster.nodes[0].connect();
    // One organization per master, each with its own ready count.
    let mut orgs: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while orgs.len() < 3 {
        let org = tenant(&format!("one{i}"));
        i += 1;
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("exocortex:dreams:{{{org}}}:queue"))
            .query(&mut any)
            .unwrap();
        let owner = cluster.owner_of_slot(slot);
        if orgs.iter().all(|(_, o)| *o != owner) {
            let mut con = cluster.nodes[owner].connect();
            for _ in 0..=orgs.len() {
                run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]);
            }
            orgs.push((org, owner));
        }
    }
    // The seed is a replica: any node will do.
    let (failed, _) = orgs[0].clone();
    let failed_master = orgs[0].1;
    let promoted =
        (3..6).find(|&r| master_port_of(&cluster.nodes[r]) == cluster.nodes[failed_master].port).expect("its replica");
    let seed = (3..6).find(|&r| r != promoted).expect("another replica");
    let seed_url = cluster.nodes[seed].url();
    let seed_label = node_of(&cluster.nodes[seed]);
    let (_exporter, port) = exporter(&["--redis", &seed_url]);

    let text = http_get(port, "/metrics").expect("/metrics");
    for (n, (org, owner)) in orgs.iter().enumerate() {
        let node = node_of(&cluster.nodes[*owner]);
        assert_eq!(
            sample(&text, "dreamtown_dreams_ready", &[("org", org), ("node", &node)]),
            Some((n + 1) as f64),
            "{org} on {node}: {text}"
        );
        assert_eq!(sample(&text, "dreamtown_up", &[("node", &node)]), Some(1.0), "{text}");
    }
    for replica in &cluster.nodes[3..] {
        assert_eq!(
            sample(&text, "dreamtown_up", &[("node", &node_of(replica))]),
            None,
            "replicas are not scraped: {text}"
        );
    }
    assert_eq!(sample(&text, "dreamtown_exporter_cluster_masters", &[("seed", &seed_label)]), Some(3.0), "{text}");

    // A failover: the next scrapes find the promoted replica and the
    // organization on it; the old master is no longer scraped.
    // The old master must know its replica before it hands over (a
    // manual failover it has not heard of times out): wait for that, and
    // ask again if one attempt timed out.
    let replica_id = cluster.nodes[promoted].node_id();
    wait_until("the master to list its replica", || {
        let nodes: String =
            redis::cmd("CLUSTER").arg("NODES").query(&mut cluster.nodes[failed_master].connect()).unwrap_or_default();
        nodes.lines().any(|l| l.starts_with(&replica_id) && l.contains("slave") && !l.contains("fail"))
    });
    let is_master = |node: &Server| {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut node.connect()).unwrap_or_default();
        info.lines().any(|l| l.trim() == "role:master")
    };
    let asked = std::time::Instant::now();
    while !is_master(&cluster.nodes[promoted]) {
        redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .query::<()>(&mut cluster.nodes[promoted].connect())
            .expect("CLUSTER FAILOVER");
        let attempt = std::time::Instant::now();
        while !is_master(&cluster.nodes[promoted]) && attempt.elapsed() < Duration::from_secs(12) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(asked.elapsed() < common::DEADLINE, "the replica never took over");
    }
    let (new_label, old_label) = (node_of(&cluster.nodes[promoted]), node_of(&cluster.nodes[failed_master]));
    let mut text;
    let started = std::time::Instant::now();
    loop {
        text = http_get(port, "/metrics").unwrap_or_default();
        if sample(&text, "dreamtown_dreams_ready", &[("org", &failed), ("node", &new_label)]) == Some(1.0)
            && sample(&text, "dreamtown_up", &[("node", &old_label)]).is_none()
        {
            break;
        }
        if started.elapsed() > common::DEADLINE {
            let role: redis::Value = redis::cmd("ROLE").query(&mut cluster.nodes[promoted].connect()).unwrap();
            let slots: redis::Value =
                redis::cmd("CLUSTER").arg("SLOTS").query(&mut cluster.nodes[seed].connect()).unwrap();
            panic!("the exporter did not follow the failover to {new_label} from {old_label}: {role:?} {slots:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(sample(&text, "dreamtown_exporter_topology_changes_total", &[]).unwrap_or(0.0) >= 2.0, "{text}");

    // The seed goes away: the masters it listed are asked instead (once
    // every node agrees on the slot map, so that no view is behind).
    cluster.wait_stable();
    text = http_get(port, "/metrics").expect("/metrics");
    let before = sample(&text, "dreamtown_exporter_topology_changes_total", &[]);
    drop(cluster.nodes.remove(seed));
    for _ in 0..2 {
        text = http_get(port, "/metrics").expect("/metrics");
    }
    for (n, (org, _)) in orgs.iter().enumerate() {
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("dreamtown_dreams_ready{") && l.contains(&format!("org=\"{org}\"")))
                .count(),
            1,
            "{text}"
        );
        let value =
            text.lines().find(|l| l.starts_with("dreamtown_dreams_ready{") && l.contains(&format!("org=\"{org}\"")));
        assert!(value.is_some_and(|l| l.ends_with(&format!(" {}", n + 1))), "{org}: {text}");
    }
    assert_eq!(sample(&text, "dreamtown_exporter_topology_changes_total", &[]), before, "the same masters: {text}");
    assert!(text.lines().filter(|l| l.starts_with("dreamtown_up{")).all(|l| l.ends_with(" 1")), "{text}");
}

/// Fair shares (issue 45) per organization: the limits and tokens as
/// gauges, the throttled drains and the time paused as counters (seconds),
/// and the node's limits index; `promtool check metrics` accepts the text.
#[test]
fn fair_share_figures_are_exported_per_organization() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("exp-limits");
    for project in ["a", "b", "c"] {
        run(&mut con, &["DREAMS.FIRE", &org, project, "3"]);
    }
    run(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1", "RATE", "10", "60"]);
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]);
    // Held back by the cap: a throttled drain.
    assert_eq!(run(&mut con, &["DREAMS.DRAIN", &org, "0.05", "NOQUIET"]), redis::Value::Nil);
    run(&mut con, &["DREAMS.PAUSE", &org]);
    let server_ms = |con: &mut redis::Connection| {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
        secs * 1000 + micros / 1000
    };
    let paused_at = server_ms(&mut con);
    wait_until("some time paused on the server clock", || server_ms(&mut con) >= paused_at + 5);
    run(&mut con, &["DREAMS.RESUME", &org]);
    run(&mut con, &["DREAMS.PAUSE", &org]);
    let (_exporter, port) = exporter(&["--redis", &server.url()]);
    let node = node_of(&server);
    let mut text = String::new();
    wait_until("the organization is exported", || {
        text = http_get(port, "/metrics").unwrap_or_default();
        sample(&text, "dreamtown_dreams_limit_concurrency", &[("org", &org)]).is_some()
    });
    let labels = [("org", org.as_str())];
    assert_eq!(sample(&text, "dreamtown_dreams_limit_concurrency", &labels), Some(1.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_limit_rate_fires", &labels), Some(10.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_limit_rate_period_seconds", &labels), Some(60.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_rate_tokens_left", &labels), Some(9.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_paused", &labels), Some(1.0), "{text}");
    assert!(sample(&text, "dreamtown_dreams_paused_for_seconds", &labels).is_some(), "{text}");
    assert!(sample(&text, "dreamtown_dreams_paused_seconds_total", &labels).is_some_and(|s| s > 0.0), "{text}");
    assert!(text.contains("# TYPE dreamtown_dreams_paused_seconds_total counter"), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_drains_throttled_concurrency_total", &labels), Some(1.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_dreams_drains_throttled_total", &labels), Some(1.0), "{text}");
    assert!(sample(&text, "dreamtown_node_dreams_paused_seconds_total", &[("node", &node)]).is_some(), "{text}");
    assert_eq!(sample(&text, "dreamtown_node_limits_limits_indexed_orgs", &[("node", &node)]), Some(1.0), "{text}");
    assert_eq!(sample(&text, "dreamtown_node_limits_limits_index_trusted", &[("node", &node)]), Some(1.0), "{text}");
    let promtool = prometheus_bin().map(|p| p.with_file_name("promtool")).filter(|p| p.exists());
    match promtool {
        Some(promtool) => {
            let mut check = Command::new(&promtool)
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("promtool");
            check.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write");
            let output = check.wait_with_output().expect("promtool");
            let said =
                format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            let about_limits: Vec<&str> = said
                .lines()
                .filter(|line| line.contains("limit") || line.contains("paused") || line.contains("throttled"))
                .collect();
            assert!(about_limits.is_empty(), "promtool check metrics: {said}");
        }
        None if std::env::var_os("DREAMTOWN_NO_PROMETHEUS").is_some() => eprintln!("promtool check skipped"),
        None => panic!("this test needs promtool (Debian's prometheus: apt-get install -y prometheus)"),
    }
}
