//! The console pointed at a cluster (one node given) and at a Sentinel
//! set, over HTTP: the tenant list finds the tenants of every master, a
//! tenant's page and an operator's action reach the node serving the
//! tenant (routed by its slot, subcommands included), and after a
//! Sentinel failover the console follows the new master.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dreamtown_console::Config;
use dreamtown_console::auth::AuthConfig;
use dreamtown_console::backend::Target;
use dreamtown_test_support::{Cluster, Server, free_port, scratch_dir, server_bin, wait_until};

const TOKEN: &str = "topology-test-token-0123456789";
const DEADLINE: Duration = Duration::from_secs(30);

/// `(status, headers, body)` of one request on loopback.
fn http(port: u16, method: &str, path: &str, cookie: Option<&str>, body: &str) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    if let Some(cookie) = cookie {
        request.push_str(&format!("Cookie: {cookie}\r\n"));
    }
    if method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// The value of `data-value` in the element with `id`.
fn value_of(body: &str, id: &str) -> Option<String> {
    let at = body.find(&format!("id=\"{id}\""))?;
    let rest = &body[at..];
    let start = rest.find("data-value=\"")? + "data-value=\"".len();
    Some(rest[start..].split('"').next()?.to_owned())
}

async fn console(target: Target) -> u16 {
    let mut config = Config {
        target,
        auth: AuthConfig { token: Some(TOKEN.into()), acl_login: false, ttl: Duration::from_secs(600) },
        ..Config::default()
    };
    config.directory.refresh = Duration::from_secs(1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(dreamtown_console::serve(config, listener));
    port
}

/// Sign in with the token: the session cookie and a CSRF token.
fn sign_in(port: u16) -> (String, String) {
    let (status, head, _) = http(port, "POST", "/login", None, &format!("token={TOKEN}"));
    assert_eq!(status, 303, "{head}");
    let cookie = head
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: ").or_else(|| line.strip_prefix("Set-Cookie: ")))
        .and_then(|value| value.split(';').next())
        .expect("a session cookie")
        .to_owned();
    let (_, _, page) = http(port, "GET", "/", Some(&cookie), "");
    let csrf = page.split("name=\"csrf\" value=\"").nth(1).and_then(|s| s.split('"').next()).expect("a CSRF token");
    (cookie, csrf.to_owned())
}

async fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_from_one_node() {
    let cluster = Cluster::start(3);
    let mut conn = cluster.connection().await;
    let orgs: Vec<String> = (0..30).map(|i| format!("corp-{i}")).collect();
    for org in &orgs {
        let _: String = redis::cmd("DREAMS.FIRE").arg(org).arg("p").arg(1).query_async(&mut conn).await.unwrap();
    }
    let towns: Vec<String> = (0..6).map(|i| format!("city-{i}")).collect();
    for town in &towns {
        let message = r#"{"id":"m1","from":"lead","to":"w1","type":"task","created_at":"2025-01-01T00:00:00Z"}"#;
        let _: i64 = redis::cmd("TOWN.SEND").arg(town).arg(message).query_async(&mut conn).await.unwrap();
    }
    // The organizations live on every master.
    let owners: std::collections::BTreeSet<usize> =
        orgs.iter().map(|org| cluster.owner_of_slot(dreamtown::cluster_slot::key_slot(org.as_bytes()))).collect();
    assert_eq!(owners.len(), 3, "spread over the masters");

    let port = console(Target::Servers(vec![cluster.nodes[0].url()])).await;
    wait_for("every tenant listed", || {
        let (_, _, body) = http(port, "GET", "/?part=live&size=500", None, "");
        value_of(&body, "count-orgs").as_deref() == Some("30") && value_of(&body, "count-towns").as_deref() == Some("6")
    })
    .await;
    for org in &orgs {
        let (status, _, body) = http(port, "GET", &format!("/org?name={org}&part=live"), None, "");
        assert_eq!(status, 200);
        assert!(body.contains("data-field=\"ready\" data-value=\"1\""), "{org}: {body}");
        assert!(!body.contains("class=\"error\""), "{org}: {body}");
    }
    // A subcommand (TOWN.STOP REQUEST <town> ...) and a command reach the tenant's node.
    let (cookie, csrf) = sign_in(port);
    for town in &towns {
        let body = format!("op=stop&name={town}&agent=w1&csrf={csrf}");
        assert_eq!(http(port, "POST", "/act", Some(&cookie), &body).0, 303);
        let stop: i64 = redis::cmd("TOWN.STOP").arg("CHECK").arg(town).arg("w1").query_async(&mut conn).await.unwrap();
        assert_eq!(stop, 1, "{town}");
        let (_, _, page) = http(port, "GET", &format!("/town?name={town}&part=live"), Some(&cookie), "");
        assert!(page.contains("data-field=\"stop\">requested"), "{town}");
    }
    for org in orgs.iter().take(6) {
        let _: Option<String> =
            redis::cmd("DREAMS.DRAIN").arg(org).arg(1).arg("NOQUIET").query_async(&mut conn).await.unwrap();
        let body = format!("op=recover&name={org}&confirm=1&csrf={csrf}");
        assert_eq!(http(port, "POST", "/act", Some(&cookie), &body).0, 303);
        let lengths: Vec<i64> = redis::cmd("DREAMS.LEN").arg(org).query_async(&mut conn).await.unwrap();
        assert_eq!(lengths, vec![1, 0, 0], "{org}: recovered");
    }
}

/// `redis-sentinel` (or the server under test in Sentinel mode) for one master.
struct Sentinel {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Sentinel {
    fn start(master_port: u16) -> Option<Sentinel> {
        let port = free_port();
        let dir = scratch_dir("console-sentinel", port);
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor main 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds main 2000\nsentinel failover-timeout main 10000\n",
                dir.display()
            ),
        )
        .unwrap();
        let server = server_bin();
        let mut command = if server == "redis-server" { Command::new("redis-sentinel") } else { Command::new(server) };
        command.arg(&conf);
        if server_bin() != "redis-server" {
            command.arg("--sentinel");
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()?;
        let sentinel = Sentinel { child, port, dir };
        wait_until("the Sentinel answers", || sentinel.query(&["PING"]).is_some());
        Some(sentinel)
    }

    fn query(&self, args: &[&str]) -> Option<redis::Value> {
        let url = format!("redis://127.0.0.1:{}/", self.port);
        let mut con = redis::Client::open(url).ok()?.get_connection_with_timeout(Duration::from_secs(2)).ok()?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut con).ok()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_of_a_sentinel_set_through_a_failover() {
    let master = Server::start();
    let replica = master.start_replica();
    let Some(sentinel) = Sentinel::start(master.port) else {
        assert!(std::env::var_os("CI").is_none(), "redis-sentinel is missing (make deps installs it)");
        eprintln!("skipped: no redis-sentinel");
        return;
    };
    wait_until(
        "the Sentinel knows the replica",
        || matches!(sentinel.query(&["SENTINEL", "REPLICAS", "main"]), Some(redis::Value::Array(r)) if !r.is_empty()),
    );
    let mut con = master.connect();
    let _: String = redis::cmd("DREAMS.FIRE").arg("watched").arg("p").arg(1).query(&mut con).unwrap();
    let port = console(Target::Sentinel {
        sentinels: vec![format!("redis://127.0.0.1:{}/", sentinel.port)],
        master: "main".into(),
    })
    .await;
    wait_for("the organization listed", || {
        http(port, "GET", "/?part=live", None, "").2.contains("data-tenant=\"watched\"")
    })
    .await;
    let (cookie, csrf) = sign_in(port);
    assert_eq!(http(port, "POST", "/act", Some(&cookie), &format!("op=pause&name=watched&csrf={csrf}")).0, 303);
    let paused: redis::Value = redis::cmd("DREAMS.LIMIT").arg("GET").arg("watched").query(&mut con).unwrap();
    assert!(format!("{paused:?}").contains("paused"), "{paused:?}");

    // The replica becomes the master; the console's next commands go there.
    wait_until("the replica has the pause", || {
        let Ok(mut con) = replica.try_connect() else { return false };
        let value: Option<String> = redis::cmd("GET").arg("exocortex:dreams:{watched}:limits").query(&mut con).ok();
        value.is_some_and(|v| v.contains("paused"))
    });
    assert!(sentinel.query(&["SENTINEL", "FAILOVER", "main"]).is_some(), "failover accepted");
    wait_until("the replica is the master", || {
        let Ok(mut con) = replica.try_connect() else { return false };
        let info: String = redis::cmd("INFO").arg("replication").query(&mut con).unwrap_or_default();
        info.contains("role:master")
    });
    wait_for("the console resumes on the new master", || {
        http(port, "POST", "/act", Some(&cookie), &format!("op=resume&name=watched&csrf={csrf}"));
        // RESUME of an organization without limits deletes the key.
        let Ok(mut con) = replica.try_connect() else { return false };
        let Ok(value) = redis::cmd("GET").arg("exocortex:dreams:{watched}:limits").query::<Option<String>>(&mut con)
        else {
            return false;
        };
        value.is_none_or(|v| !v.contains("paused"))
    })
    .await;
    let (_, _, page) = http(port, "GET", "/org?name=watched&part=live", None, "");
    assert!(page.contains("data-field=\"paused\" data-value=\"0\""), "{page}");
}
