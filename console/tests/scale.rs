//! The console's pages at scale: a measurement (`make bench-console`), not
//! a test of speed (it asserts only that each page answers and shows what
//! was seeded). One server with the module holds `CONSOLE_BENCH_ORGS`
//! organizations (10,000), `CONSOLE_BENCH_TOWNS` towns (10,000, two agents
//! each) and one organization with `CONSOLE_BENCH_IN_FLIGHT` fires in
//! flight (100,000, leased); the console serves them. Printed: the
//! directory's first pass (time, SCAN calls, commands, the server's CPU
//! for it, the slowest PING beside it) and, per page, the median and
//! slowest of 20 requests over HTTP; with chromedriver, each page's load
//! in headless Chromium too.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use dreamtown_console::Config;
use dreamtown_console::backend::Target;
use dreamtown_test_support::Server;
use redis::Connection;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn get(port: u16, path: &str) -> (u16, usize) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response);
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response.len())
}

fn used_cpu(con: &mut Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(con).unwrap();
    info.lines()
        .filter(|line| line.starts_with("used_cpu_sys:") || line.starts_with("used_cpu_user:"))
        .filter_map(|line| line.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum()
}

fn pipeline(con: &mut Connection, cmds: impl Iterator<Item = redis::Cmd>) {
    let mut pipe = redis::pipe();
    let mut n = 0;
    for cmd in cmds {
        pipe.add_command(cmd).ignore();
        n += 1;
        if n == 1000 {
            pipe.query::<()>(con).unwrap();
            pipe = redis::pipe();
            n = 0;
        }
    }
    if n > 0 {
        pipe.query::<()>(con).unwrap();
    }
}

fn cmd(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: make bench-console"]
async fn pages_at_scale() {
    let orgs = knob("CONSOLE_BENCH_ORGS", 10_000);
    let towns = knob("CONSOLE_BENCH_TOWNS", 10_000);
    let in_flight = knob("CONSOLE_BENCH_IN_FLIGHT", 100_000);
    let server = Server::start_with_module_args(&[], &["queue-max", &(in_flight + 1000).to_string()]);
    let mut con = server.connect();
    let seeding = Instant::now();
    pipeline(&mut con, (0..orgs).map(|i| cmd(&["DREAMS.FIRE", &format!("org-{i:05}"), "web", &(i % 7).to_string()])));
    pipeline(
        &mut con,
        (0..orgs).step_by(10).map(|i| cmd(&["DREAMS.RECORD", &format!("org-{i:05}"), "api", "1", "3", "1"])),
    );
    let message = |to: &str| {
        format!(r#"{{"id":"m","from":"lead","to":"{to}","type":"task","created_at":"2025-01-01T00:00:00Z"}}"#)
    };
    pipeline(
        &mut con,
        (0..towns).flat_map(|i| {
            let town = format!("town-{i:05}");
            [cmd(&["TOWN.SEND", &town, &message("w1")]), cmd(&["TOWN.SEND", &town, &message("w2")])]
        }),
    );
    pipeline(&mut con, (0..in_flight).map(|i| cmd(&["DREAMS.FIRE", "big", &format!("p{i}"), "1"])));
    pipeline(
        &mut con,
        (0..in_flight.div_ceil(1000))
            .map(|_| cmd(&["DREAMS.DRAIN", "big", "1", "NOQUIET", "LEASE", "3600", "COUNT", "1000"])),
    );
    let keys: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    println!(
        "seeded {orgs} organizations, {towns} towns (2 agents each), {in_flight} fires in flight in one organization: {keys} keys, {:.1} s",
        seeding.elapsed().as_secs_f64()
    );

    let mut config = Config { target: Target::Servers(vec![server.url()]), ..Config::default() };
    config.directory.refresh = Duration::from_secs(3600);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let cpu_before = used_cpu(&mut con);
    let started = Instant::now();
    tokio::spawn(dreamtown_console::serve(config, listener));
    // The slowest PING while the first pass runs.
    let mut slowest_ping = Duration::ZERO;
    loop {
        let ping = Instant::now();
        let _: String = redis::cmd("PING").query(&mut con).unwrap();
        slowest_ping = slowest_ping.max(ping.elapsed());
        let body = {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(stream, "GET /?part=live&size=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut body = String::new();
            stream.read_to_string(&mut body).unwrap();
            body
        };
        if body.contains("Figures as of") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "no first pass");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pass_took = started.elapsed();
    let cpu = used_cpu(&mut con) - cpu_before;
    let live = {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(stream, "GET /?part=live&size=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut body = String::new();
        stream.read_to_string(&mut body).unwrap();
        body
    };
    let line = live.split("Figures as of ").nth(1).and_then(|s| s.split(')').next()).unwrap_or_default();
    println!(
        "directory's first pass: {:.2} s until served, server CPU {:.2} s, slowest PING beside it {:.1} ms ({line})",
        pass_took.as_secs_f64(),
        cpu,
        slowest_ping.as_secs_f64() * 1000.0,
    );
    assert!(live.contains(&format!("data-value=\"{}\">", orgs + 1)), "every organization listed");

    let deep = format!("/org?name=big&list=inflight&offset={}", in_flight.saturating_sub(50));
    let pages: Vec<(&str, String)> = vec![
        ("tenant list, first page (50 of 20,001 by name)", "/".into()),
        ("tenant list, its live part", "/?part=live".into()),
        ("tenant list sorted by in flight", "/?sort=in_flight".into()),
        ("tenant list sorted by oldest item", "/?sort=oldest".into()),
        ("tenant list, a search (name contains 'org-0999')", "/?q=org-0999".into()),
        ("tenant list, a page deep in (after town-05000)", "/?after=0:town:town-05000".into()),
        ("organization with 100,000 in flight, first page", "/org?name=big".into()),
        ("the same, its last page", deep),
        ("the same, its live part", "/org?name=big&part=live".into()),
        ("a small organization's regions", "/org?name=org-00010&list=regions".into()),
        ("a town's agents", "/town?name=town-00042".into()),
    ];
    println!("{:<52} {:>10} {:>10} {:>9}", "page (HTTP, 20 requests)", "median ms", "max ms", "bytes");
    for (label, path) in &pages {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..20 {
            let t = Instant::now();
            let (status, bytes) = get(port, path);
            times.push(t.elapsed());
            assert_eq!(status, 200, "{path}");
            size = bytes;
        }
        times.sort();
        println!(
            "{label:<52} {:>10.2} {:>10.2} {size:>9}",
            times[times.len() / 2].as_secs_f64() * 1000.0,
            times[times.len() - 1].as_secs_f64() * 1000.0
        );
    }

    // In the browser, when there is one.
    let driver = std::path::Path::new("/usr/bin/chromedriver");
    if driver.exists() {
        browser_times(driver, port, &pages).await;
    }
}

async fn browser_times(driver: &std::path::Path, port: u16, pages: &[(&str, String)]) {
    let driver_port = dreamtown_test_support::free_port();
    let mut child = std::process::Command::new(driver)
        .arg(format!("--port={driver_port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", driver_port)).is_err() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let profile = std::env::temp_dir().join(format!("dreamtown-console-scale-{}", std::process::id()));
    let args = [
        "--headless".to_owned(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--no-first-run".into(),
        "--disable-dev-shm-usage".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), serde_json::json!({ "args": args, "binary": "/usr/bin/chromium" }));
    let client = fantoccini::ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .unwrap();
    println!("{:<52} {:>10} {:>10}", "page (Chromium, 5 loads)", "median ms", "max ms");
    for (label, path) in pages.iter().filter(|(_, path)| !path.contains("part=live")) {
        let mut times = Vec::new();
        for _ in 0..5 {
            client.goto(&format!("http://127.0.0.1:{port}{path}")).await.unwrap();
            let duration = client
                .execute("return performance.getEntriesByType('navigation')[0].loadEventEnd;", vec![])
                .await
                .unwrap();
            times.push(duration.as_f64().unwrap_or(0.0));
        }
        times.sort_by(f64::total_cmp);
        println!("{label:<52} {:>10.1} {:>10.1}", times[times.len() / 2], times[times.len() - 1]);
    }
    client.close().await.unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&profile);
}
