//! The console in a real browser: Debian's headless Chromium driven over
//! WebDriver (chromedriver, through the `fantoccini` client), against a
//! real server with the module.
//!
//! * Each view (tenant list, organization, town) renders the figures of a
//!   seeded dataset, read back from the server the way the module's own
//!   commands report them; the list pages, searches and sorts.
//! * The live part refreshes without reloading the page.
//! * An unauthenticated write, a write with a forged CSRF token and one
//!   posted from another origin are refused, and change nothing.
//! * Each action, confirmed after its dry run, changes the server exactly
//!   as the equivalent command does: a twin server holding the same data
//!   runs the command itself, and the two tenants' keys end equal
//!   (`DEBUG DIGEST-VALUE` of every key).
//! * An operator signed in as an ACL user who may not act is refused by
//!   the server, and nothing changes.
//!
//! A screenshot of every view and dry run goes to `target/ci/console/`
//! (a CI artifact). Without chromedriver the test is skipped, unless `CI`
//! is set (then it fails): `make deps-console` installs Chromium.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dreamtown_console::Config;
use dreamtown_console::auth::AuthConfig;
use dreamtown_console::backend::Target;
use dreamtown_test_support::{Server, free_port};
use fantoccini::{Client, ClientBuilder, Locator};
use redis::{Connection, Value};
use serde_json::json;

const TOKEN: &str = "console-test-token-0123456789";
const DEADLINE: Duration = Duration::from_secs(30);

fn chromedriver() -> Option<PathBuf> {
    let path = std::env::var_os("DREAMTOWN_CHROMEDRIVER").map(PathBuf::from).unwrap_or("/usr/bin/chromedriver".into());
    path.exists().then_some(path)
}

fn chromium() -> String {
    std::env::var("DREAMTOWN_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

fn artifacts() -> PathBuf {
    let dir = std::env::var_os("DREAMTOWN_CONSOLE_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/ci/console"));
    std::fs::create_dir_all(&dir).expect("artifact dir");
    dir
}

/// chromedriver on a free port, killed by its pid on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start(path: &PathBuf) -> Driver {
        let port = free_port();
        let child = Command::new(path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let driver = Driver { child, port };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < DEADLINE, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        driver
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn browser(driver: &Driver, profile: &std::path::Path) -> Client {
    let args = [
        "--headless".to_owned(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--no-first-run".into(),
        "--disable-dev-shm-usage".into(),
        "--window-size=1400,1000".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({ "args": args, "binary": chromium() }));
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

/// Run a command, which must succeed.
fn ok(con: &mut Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(n) => *n,
        Value::BulkString(b) => String::from_utf8_lossy(b).parse().expect("a number"),
        other => panic!("not a number: {other:?}"),
    }
}

/// A field of a field/value reply.
fn field(reply: &Value, name: &str) -> Value {
    let Value::Array(items) = reply else { panic!("{reply:?}") };
    for pair in items.chunks(2) {
        if let [Value::BulkString(key), value] = pair
            && key == name.as_bytes()
        {
            return value.clone();
        }
    }
    panic!("no field {name} in {reply:?}")
}

fn fire(org: &str, project: &str) -> String {
    format!(
        r#"{{"region":{{"org":"{org}","project":"{project}","memory_type":3}},"fired_by":"node-a","fire_id":"00000000-0000-4000-8000-{:012}"}}"#,
        project.bytes().map(u64::from).sum::<u64>()
    )
}

/// Every key of `tenant` (`{tenant}` as its hash tag) with the digest of its value.
fn tenant_digest(con: &mut Connection, tenant: &str) -> BTreeMap<String, String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg(format!("*{{{tenant}}}*")).query(con).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let digest: Vec<String> = redis::cmd("DEBUG").arg("DIGEST-VALUE").arg(&key).query(con).unwrap();
            (key, digest.concat())
        })
        .collect()
}

/// The same data on both servers: an organization with work in flight
/// (leased and not), ready and dead items; a town whose agent holds
/// pending messages under a lease.
fn seed_twin(con: &mut Connection, org: &str, town: &str, deadline_ms: i64) {
    let q = |suffix: &str| format!("exocortex:dreams:{{{org}}}:{suffix}");
    for project in ["r1", "r2"] {
        ok(con, &["RPUSH", &q("queue"), &fire(org, project)]);
    }
    for project in ["f1", "f2", "f3"] {
        ok(con, &["RPUSH", &q("processing"), &fire(org, project)]);
    }
    ok(con, &["ZADD", &q("leases"), &deadline_ms.to_string(), &fire(org, "f1")]);
    ok(con, &["RPUSH", &q("dead"), "not a fire", &fire(org, "d1"), &fire("elsewhere", "d2")]);
    let t = |suffix: &str| format!("tt:{{{town}}}:{suffix}");
    let message = |id: &str| {
        format!(r#"{{"id":"{id}","from":"lead","to":"w1","type":"task","created_at":"2025-01-01T00:00:00Z"}}"#)
    };
    ok(con, &["TOWN.AGENT", "SET", town, "w1", "id", "w1", "name", "backend", "state", "working"]);
    ok(con, &["TOWN.AGENT", "SET", town, "w2", "id", "w2", "name", "frontend", "state", "idle"]);
    ok(con, &["RPUSH", &t("inbox:w1"), &message("m3")]);
    ok(con, &["RPUSH", &t("pending:w1"), &message("m1"), &message("m2")]);
    ok(con, &["ZADD", &t("leases:w1"), &deadline_ms.to_string(), "m1"]);
}

/// Minimal HTTP/1.1 POST on loopback, for what a browser will not send
/// (another origin's form); the status code.
fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut request = format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_whitespace().nth(1).and_then(|code| code.parse().ok()).expect("a status line")
}

struct Page<'a> {
    client: &'a Client,
    base: String,
}

impl Page<'_> {
    async fn goto(&self, path: &str) {
        self.client.goto(&format!("{}{path}", self.base)).await.expect("navigate");
    }

    async fn text(&self, css: &str) -> String {
        self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).text().await.unwrap()
    }

    async fn value(&self, css: &str) -> String {
        let element = self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        element.attr("data-value").await.unwrap().unwrap_or_default()
    }

    async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.unwrap().len()
    }

    async fn click(&self, css: &str) {
        self.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).click().await.unwrap();
    }

    /// Wait until `css` exists and `check` holds for its `data-value`.
    async fn wait_value(&self, css: &str, what: &str, check: impl Fn(&str) -> bool) {
        let started = Instant::now();
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(Some(value)) = element.attr("data-value").await
                && check(&value)
            {
                return;
            }
            assert!(started.elapsed() < DEADLINE, "timed out waiting for {what} ({css})");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_for(&self, css: &str) {
        let started = Instant::now();
        while self.client.find(Locator::Css(css)).await.is_err() {
            assert!(started.elapsed() < DEADLINE, "timed out waiting for {css}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::write(artifacts().join(format!("{name}.png")), png).expect("write the screenshot");
    }

    /// POST a form from the page's own script (same origin, the session's
    /// cookie); the status.
    async fn fetch_post(&self, fields: &[(&str, &str)]) -> i64 {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", urlencode(v))).collect();
        let script = "const done = arguments[arguments.length - 1];\
            fetch('/act', {method: 'POST', credentials: 'same-origin', \
              headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: arguments[0]})\
            .then(r => done(r.status)).catch(e => done(-1));";
        let status = self.client.execute_async(script, vec![json!(body.join("&"))]).await.expect("fetch");
        status.as_i64().expect("a status")
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser() {
    let Some(chromedriver) = chromedriver() else {
        assert!(std::env::var_os("CI").is_none(), "chromedriver is missing (make deps-console installs it)");
        eprintln!("skipped: no chromedriver (make deps-console installs Chromium and chromedriver)");
        return;
    };
    let started = Instant::now();
    let server = Server::start();
    let twin = Server::start();
    let mut con = server.connect();
    let mut twin_con = twin.connect();

    // ---- The seeded dataset of the views, written by the module's commands.
    let org = "acme";
    for project in ["web", "api", "docs", "mail", "search"] {
        ok(&mut con, &["DREAMS.FIRE", org, project, "3", "NODE", "node-a"]);
    }
    ok(&mut con, &["DREAMS.RECORD", org, "web", "1", "4", "2"]);
    ok(&mut con, &["DREAMS.RECORD", org, "api", "2", "7", "1"]);
    ok(&mut con, &["DREAMS.DRAIN", org, "1", "NOQUIET", "LEASE", "600"]);
    ok(&mut con, &["DREAMS.DRAIN", org, "1", "NOQUIET", "LEASE", "900"]);
    ok(&mut con, &["DREAMS.DRAIN", org, "1", "NOQUIET"]);
    ok(&mut con, &["RPUSH", "exocortex:dreams:{acme}:dead", "corrupt payload"]);
    ok(&mut con, &["ZADD", "exocortex:dreams:{acme}:deferred", "1700000000", &fire(org, "night")]);
    for i in 0..12 {
        ok(&mut con, &["DREAMS.FIRE", &format!("org-{i:02}"), "p", "1"]);
    }
    let town = "london";
    ok(
        &mut con,
        &[
            "TOWN.AGENT",
            "SET",
            town,
            "w1",
            "id",
            "w1",
            "name",
            "backend",
            "state",
            "working",
            "last_heartbeat",
            "2025-01-01T09:05:00.000+00:00",
        ],
    );
    ok(&mut con, &["TOWN.AGENT", "SET", town, "w2", "id", "w2", "name", "frontend", "state", "idle"]);
    for id in ["m1", "m2", "m3"] {
        let message =
            format!(r#"{{"id":"{id}","from":"lead","to":"w1","type":"task","created_at":"2025-01-01T00:00:00Z"}}"#);
        ok(&mut con, &["TOWN.SEND", town, &message]);
    }
    ok(&mut con, &["TOWN.RECV", town, "w1", "RELIABLE", "LEASE", "600"]);
    ok(
        &mut con,
        &["TOWN.TASK", "SET", town, "t-1", "id", "t-1", "description", "Write the parser", "state", "pending"],
    );
    ok(
        &mut con,
        &[
            "TOWN.TASK",
            "SET",
            town,
            "t-2",
            "id",
            "t-2",
            "description",
            "Review",
            "state",
            "assigned",
            "assigned_to",
            "w1",
        ],
    );
    ok(&mut con, &["TOWN.BACKLOG", "PUSH", town, "t-1"]);
    ok(&mut con, &["TOWN.ACTIVITY", "LOG", town, "w1", "round 1: read the spec"]);
    ok(&mut con, &["TOWN.ACTIVITY", "LOG", town, "w1", "round 2: wrote the parser"]);

    // ---- Twins: the same data on both servers, for the actions.
    let now_ms = int(&field(&ok(&mut con, &["DREAMS.STATS", org]), "now_ms"));
    let deadline = now_ms + 3_600_000;
    seed_twin(&mut con, "twin", "twintown", deadline);
    seed_twin(&mut twin_con, "twin", "twintown", deadline);
    assert_eq!(tenant_digest(&mut con, "twin"), tenant_digest(&mut twin_con, "twin"));

    // An ACL user who may read and nothing else.
    ok(
        &mut con,
        &[
            "ACL",
            "SETUSER",
            "viewer",
            "on",
            ">viewer-password",
            "~*",
            "+@read",
            "+ping",
            "+dreams.stats",
            "+dreams.inflight",
            "+town.stats",
        ],
    );

    // ---- The console, in process, sweeping every second.
    let dir = std::env::temp_dir().join(format!("dreamtown-console-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = Config {
        target: Target::Servers(vec![server.url()]),
        listen: "127.0.0.1:0".into(),
        auth: AuthConfig { token: Some(TOKEN.into()), acl_login: true, ttl: Duration::from_secs(3600) },
        ..Config::default()
    };
    config.directory.refresh = Duration::from_secs(1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(dreamtown_console::serve(config, listener));

    let driver = Driver::start(&chromedriver);
    let client = browser(&driver, &dir.join("profile")).await;
    let page = Page { client: &client, base: format!("http://127.0.0.1:{port}") };

    // ---- The tenant list.
    page.goto("/?family=dreams&q=acme").await;
    page.wait_value("tr[data-tenant='acme'] td[data-field='in_flight']", "acme's row", |v| v == "3").await;
    let stats = ok(&mut con, &["DREAMS.STATS", org]);
    for (cell, name) in
        [("depth", "ready"), ("in_flight", "in_flight"), ("dead", "dead_letters"), ("deferred", "deferred")]
    {
        let css = format!("tr[data-tenant='acme'] td[data-field='{cell}']");
        assert_eq!(page.value(&css).await, int(&field(&stats, name)).to_string(), "acme's {cell}");
    }
    assert_eq!(page.value("tr[data-tenant='acme'] td[data-field='depth']").await, "2");
    assert_eq!(page.value("tr[data-tenant='acme'] td[data-field='dead']").await, "1");
    assert_eq!(page.count("#tenants tbody tr").await, 1, "the search keeps acme alone");
    page.screenshot("tenants-search").await;
    page.goto("/?size=5").await;
    page.wait_value("#count-orgs", "every organization", |v| v == "14").await;
    assert_eq!(page.value("#count-towns").await, "2");
    assert_eq!(page.count("#tenants tbody tr").await, 5);
    // Paging: every tenant once, in name order, over the next links.
    let mut names = Vec::new();
    loop {
        for row in client.find_all(Locator::Css("#tenants tbody tr")).await.unwrap() {
            names.push(row.attr("data-tenant").await.unwrap().unwrap_or_default());
        }
        match client.find(Locator::Css("#next")).await {
            Ok(next) => next.click().await.unwrap(),
            Err(_) => break,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        page.wait_for("#tenants").await;
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "pages in order, no repeats");
    assert_eq!(names.len(), 16, "14 organizations and 2 towns: {names:?}");
    // Sorted by depth, descending: acme's 2 ready first among organizations.
    page.goto("/?family=dreams&sort=in_flight").await;
    page.wait_for("#tenants tbody tr").await;
    let first = client.find(Locator::Css("#tenants tbody tr")).await.unwrap();
    assert_eq!(first.attr("data-tenant").await.unwrap().as_deref(), Some("acme"));
    page.goto("/").await;
    page.wait_for("tr[data-tenant='london']").await;
    assert_eq!(page.value("tr[data-tenant='london'] td[data-field='depth']").await, "2", "inbox");
    assert_eq!(page.value("tr[data-tenant='london'] td[data-field='in_flight']").await, "1", "pending");
    assert_eq!(page.value("tr[data-tenant='london'] td[data-field='deferred']").await, "1", "backlog");
    page.screenshot("tenants").await;

    // ---- One organization.
    page.goto("/org?name=acme").await;
    for name in ["ready", "in_flight", "leased", "dead_letters", "deferred"] {
        let css = format!("#org-figures td[data-field='{name}']");
        assert_eq!(page.value(&css).await, int(&field(&stats, name)).to_string(), "{name}");
    }
    let inflight = ok(&mut con, &["DREAMS.INFLIGHT", org]);
    let Value::Array(inflight) = inflight else { panic!() };
    assert_eq!(page.count("#inflight tbody tr").await, 3);
    for (i, entry) in inflight.iter().enumerate() {
        let Value::Array(pair) = entry else { panic!() };
        let expected = match &pair[1] {
            Value::Int(deadline) => deadline.to_string(),
            _ => String::new(),
        };
        let css = format!("#inflight tr[data-index='{i}'] td[data-field='deadline']");
        assert_eq!(page.value(&css).await, expected, "lease deadline of item {i}");
        let payload: serde_json::Value = serde_json::from_slice(match &pair[0] {
            Value::BulkString(b) => b,
            _ => panic!(),
        })
        .unwrap();
        let fire_id = format!("#inflight tr[data-index='{i}'] td[data-field='fire_id']");
        assert_eq!(page.text(&fire_id).await, payload["fire_id"].as_str().unwrap());
    }
    page.screenshot("org-inflight").await;
    page.click("#tab-ready").await;
    page.wait_for("#ready").await;
    assert_eq!(page.count("#ready tbody tr").await, 2);
    page.click("#tab-dead").await;
    page.wait_for("#dead").await;
    assert_eq!(page.text("#dead tr[data-index='0'] td[data-field='fire_id']").await, "not a fire message");
    page.click("#tab-deferred").await;
    page.wait_for("#deferred").await;
    assert_eq!(page.count("#deferred tbody tr").await, 1);
    page.click("#tab-regions").await;
    page.wait_for("#regions").await;
    let counters = ok(&mut con, &["DREAMS.COUNTERS", org, "api", "2"]);
    assert_eq!(
        page.value("#regions tr[data-project='api'][data-memory-type='2'] td[data-field='memories']").await,
        int(&field(&counters, "memories")).to_string()
    );
    page.screenshot("org-regions").await;
    // A page of one: the next link walks the in-flight list.
    page.goto("/org?name=acme&list=inflight&size=1&offset=1").await;
    assert_eq!(page.count("#inflight tbody tr").await, 1);
    assert!(page.text("#inflight tbody tr").await.contains(&page.text("#inflight td[data-field='fire_id']").await));
    page.click("#next").await;
    page.wait_for("#inflight tr[data-index='2']").await;

    // ---- One town.
    page.goto("/town?name=london").await;
    page.wait_for("#agents tr[data-agent='w1']").await;
    let w1 = ok(&mut con, &["TOWN.STATS", town, "w1"]);
    for name in ["inbox", "pending", "leased"] {
        let css = format!("#agents tr[data-agent='w1'] td[data-field='{name}']");
        assert_eq!(page.value(&css).await, int(&field(&w1, name)).to_string(), "w1 {name}");
    }
    assert_eq!(page.text("#agents tr[data-agent='w1'] td[data-field='state']").await, "working");
    assert_eq!(page.text("#agents tr[data-agent='w2'] td[data-field='state']").await, "idle");
    assert!(
        page.text("#agents tr[data-agent='w1'] td[data-field='activity']")
            .await
            .starts_with("round 2: wrote the parser")
    );
    assert_eq!(page.value("#town-figures td[data-field='tasks']").await, "2");
    page.screenshot("town-agents").await;
    page.click("#tab-tasks").await;
    page.wait_for("#tasks").await;
    assert_eq!(page.text("#tasks tr[data-task='t-2'] td[data-field='assigned_to']").await, "w1");
    page.click("#tab-backlog").await;
    page.wait_for("#backlog").await;
    assert_eq!(page.text("#backlog td[data-field='task']").await, "t-1");
    page.screenshot("town-tasks-backlog").await;

    // ---- Live refresh, no reload: a marker set in the page survives.
    page.goto("/org?name=acme&list=ready").await;
    client.execute("window.__stayed = 'yes';", vec![]).await.unwrap();
    ok(&mut con, &["DREAMS.FIRE", org, "late", "3"]);
    page.wait_value("#org-figures td[data-field='ready']", "the new fire", |v| v == "3").await;
    assert_eq!(page.count("#ready tbody tr").await, 3);
    let stayed = client.execute("return window.__stayed || 'reloaded';", vec![]).await.unwrap();
    assert_eq!(stayed, json!("yes"), "refreshed in place");

    // ---- Writes refused without a session, with a forged token, from another site.
    let before = server.digest();
    assert_eq!(page.fetch_post(&[("op", "recover"), ("name", "twin"), ("confirm", "1"), ("csrf", "x")]).await, 401);
    assert!(page.count("#act-recover").await == 0, "no action forms while signed out");
    page.goto("/act").await; // a GET is no write either
    assert_eq!(server.digest(), before, "nothing changed");

    // Sign in with the operator token.
    page.goto("/login").await;
    client.find(Locator::Css("#token")).await.unwrap().send_keys(TOKEN).await.unwrap();
    page.click("#sign-in").await;
    page.wait_for("#whoami").await;
    assert_eq!(page.text("#whoami").await, "operator");
    assert_eq!(
        page.fetch_post(&[("op", "recover"), ("name", "twin"), ("confirm", "1"), ("csrf", "forged")]).await,
        403
    );
    let cookie = client.get_named_cookie("dreamtown_console").await.expect("the session cookie");
    page.goto("/org?name=twin").await;
    let csrf = client.find(Locator::Css("input[name='csrf']")).await.unwrap().attr("value").await.unwrap().unwrap();
    let session = format!("dreamtown_console={}", cookie.value());
    let body = format!("op=recover&name=twin&confirm=1&csrf={csrf}");
    assert_eq!(post(port, "/act", &[("Cookie", &session), ("Origin", "http://evil.example")], &body), 403);
    assert_eq!(server.digest(), before, "nothing changed");

    // ---- Actions: dry run, confirm, and the twin runs the command itself.
    #[allow(clippy::too_many_arguments)]
    async fn act_and_compare(
        page: &Page<'_>,
        con: &mut Connection,
        twin: &mut Connection,
        open: &str,
        button: &str,
        expected_dry_run: Option<(&str, &str)>,
        command: &[&str],
        shot: &str,
    ) {
        act_and_compare_filled(page, con, twin, open, &[], button, expected_dry_run, command, shot).await;
    }
    #[allow(clippy::too_many_arguments)]
    async fn act_and_compare_filled(
        page: &Page<'_>,
        con: &mut Connection,
        twin: &mut Connection,
        open: &str,
        fill: &[(&str, &str)],
        button: &str,
        expected_dry_run: Option<(&str, &str)>,
        command: &[&str],
        shot: &str,
    ) {
        page.goto(open).await;
        for (css, value) in fill {
            page.client.find(Locator::Css(css)).await.unwrap().send_keys(value).await.unwrap();
        }
        page.click(button).await;
        if let Some((command_line, moved)) = expected_dry_run {
            page.wait_for("#dryrun").await;
            assert_eq!(page.text("#dryrun-command").await, command_line);
            assert_eq!(page.value("#dryrun-summary").await, moved, "{command_line}: what the dry run says moves");
            page.screenshot(shot).await;
            page.click("#confirm").await;
        }
        page.wait_for("#flash").await;
        assert!(page.text("#flash").await.starts_with(&command.join(" ")), "{}", page.text("#flash").await);
        ok(twin, command);
        assert_eq!(tenant_digest(con, "twin"), tenant_digest(twin, "twin"), "{command:?} on the twin");
        assert_eq!(tenant_digest(con, "twintown"), tenant_digest(twin, "twintown"), "{command:?} on the twin");
    }
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/org?name=twin",
        "#act-recover",
        Some(("DREAMS.RECOVER twin", "3")),
        &["DREAMS.RECOVER", "twin"],
        "dryrun-recover",
    )
    .await;
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/org?name=twin",
        "#act-redrive",
        Some(("DREAMS.REDRIVE twin COUNT 100", "1")),
        &["DREAMS.REDRIVE", "twin", "COUNT", "100"],
        "dryrun-redrive",
    )
    .await;
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/town?name=twintown",
        "#agents tr[data-agent='w1'] button[data-op='requeue']",
        Some(("TOWN.REQUEUE twintown w1", "2")),
        &["TOWN.REQUEUE", "twintown", "w1"],
        "dryrun-requeue",
    )
    .await;
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/town?name=twintown",
        "#agents tr[data-agent='w2'] button[data-op='stop']",
        None,
        &["TOWN.STOP", "REQUEST", "twintown", "w2", "TTL", "3600"],
        "",
    )
    .await;
    let ttl = int(&ok(&mut con, &["TTL", "tt:{twintown}:stop:w2"]));
    assert!((3590..=3600).contains(&ttl), "the stop flag's TTL: {ttl}");
    page.goto("/town?name=twintown").await;
    assert_eq!(page.text("#agents tr[data-agent='w2'] td[data-field='stop']").await, "requested");
    page.screenshot("town-after-actions").await;
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/town?name=twintown",
        "#agents tr[data-agent='w2'] button[data-op='clear_stop']",
        None,
        &["TOWN.STOP", "CLEAR", "twintown", "w2"],
        "",
    )
    .await;

    // Fair shares (DREAMS.LIMIT, PAUSE, RESUME).
    act_and_compare_filled(
        &page,
        &mut con,
        &mut twin_con,
        "/org?name=twin",
        &[("#limit-concurrency", "2"), ("#limit-rate-count", "30"), ("#limit-rate-seconds", "3600")],
        "#act-limits",
        None,
        &["DREAMS.LIMIT", "SET", "twin", "CONCURRENCY", "2", "RATE", "30", "3600"],
        "",
    )
    .await;
    assert_eq!(page.value("#org-figures td[data-field='limit_concurrency']").await, "2");
    assert_eq!(page.value("#org-figures td[data-field='limit_rate']").await, "30/3600");
    // A pause notes when it began (the server's clock): the two agree on what LIMIT GET says.
    page.goto("/org?name=twin").await;
    page.click("#act-pause").await;
    page.wait_for("#flash").await;
    assert_eq!(page.text("#flash").await, "DREAMS.PAUSE twin → paused");
    ok(&mut twin_con, &["DREAMS.PAUSE", "twin"]);
    let limits = |con: &mut Connection| {
        let reply = ok(con, &["DREAMS.LIMIT", "GET", "twin"]);
        ["concurrency", "rate_count", "rate_seconds", "paused"].map(|name| field(&reply, name))
    };
    assert_eq!(limits(&mut con), limits(&mut twin_con));
    assert_eq!(limits(&mut con)[3], Value::Int(1));
    assert_eq!(page.value("#org-figures td[data-field='paused']").await, "1");
    page.goto("/?family=dreams&q=twin").await;
    assert_eq!(page.text("tr[data-tenant='twin'] td[data-field='paused']").await, "paused");
    assert_eq!(page.text("tr[data-tenant='twin'] td[data-field='limits']").await, "concurrency 2, rate 30/3600 s");
    page.screenshot("tenants-paused").await;
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/org?name=twin",
        "#act-resume",
        None,
        &["DREAMS.RESUME", "twin"],
        "",
    )
    .await;
    act_and_compare(
        &page,
        &mut con,
        &mut twin_con,
        "/org?name=twin",
        "#act-clear-limits",
        None,
        &["DREAMS.LIMIT", "CLEAR", "twin"],
        "",
    )
    .await;

    // ---- Signed in as an ACL user who may only read: the server refuses.
    page.click("#logout").await;
    page.wait_for("#login").await;
    page.goto("/login").await;
    client.find(Locator::Css("#user")).await.unwrap().send_keys("viewer").await.unwrap();
    client.find(Locator::Css("#password")).await.unwrap().send_keys("viewer-password").await.unwrap();
    page.click("#sign-in").await;
    page.wait_for("#whoami").await;
    assert_eq!(page.text("#whoami").await, "viewer");
    ok(&mut con, &["DREAMS.DRAIN", "twin", "1", "NOQUIET"]);
    let before = tenant_digest(&mut con, "twin");
    page.goto("/org?name=twin").await;
    page.click("#act-recover").await;
    page.wait_for("#confirm").await;
    page.click("#confirm").await;
    page.wait_for("#flash").await;
    let flash = page.text("#flash").await;
    assert!(flash.contains("refused: NOPERM"), "{flash}");
    assert_eq!(tenant_digest(&mut con, "twin"), before, "nothing changed");
    page.screenshot("refused-acl-user").await;

    client.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("the console in a browser: {:.1} s", started.elapsed().as_secs_f64());
}
