//! TLS and ACL users, end to end: Debian's redis-server with only a TLS
//! port (`--port 0 --tls-port N`) and the module, a CA and certificates
//! made at test time with the openssl CLI. The client verifies the server
//! against the given CA and refuses an unknown one (and the system's
//! roots) unless insecure is asked; a server with `tls-auth-clients yes`
//! takes a client certificate; an ACL user limited to one tenant works it
//! over TLS and is refused another's; `dreamtown-exporter` and
//! `dreamtown-migrate` reach the TLS server with the user and password
//! from a flag, a file and the environment. docs/client.md's openssl
//! recipe, run as written, makes certificates both sides take; a v1
//! certificate (what `openssl x509 -req` makes without `-extfile`, which
//! rustls refuses) is named as the client's or the server's, by the client
//! and by both tools.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{DEADLINE, free_port, module_path, scratch_dir, tenant, wait_until};
use dreamtown_client::connect::{Options, Tls};
use dreamtown_client::dreams::{AcknowledgeOutcome, DrainResult, DreamsTrigger, QuietHours, RedisFireQueue, RegionKey};

/// The server with TLS built in: `DREAMTOWN_TLS_SERVER`, else Debian's
/// `redis-server` from `PATH` (whatever server `make test SERVER=...`
/// runs the rest with: not every build of the matrix has TLS).
fn tls_server_bin() -> String {
    std::env::var("DREAMTOWN_TLS_SERVER").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "redis-server".into())
}

/// A tool of the workspace (`dreamtown-migrate`, `dreamtown-exporter`: crates
/// of their own, whose binaries cargo builds beside this test's directory
/// when their tests are built too, as `make test-client` does).
fn tool(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let path = exe.parent().and_then(Path::parent).expect("target/<profile>/deps").join(name);
    assert!(path.is_file(), "{} is missing: cargo build -p {name} (make test-client builds it)", path.display());
    path
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl on PATH");
    assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate it
/// signed, and a second CA that signed nothing here.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(label: &str) -> Pki {
        let dir = scratch_dir(label, 0);
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        for ca in ["ca", "other-ca"] {
            let (key, crt, subj) = (format!("{ca}.key"), format!("{ca}.crt"), format!("/CN=dreamtown test {ca}"));
            let mut args = vec!["req", "-x509"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &crt, "-days", "2", "-subj", &subj]);
            openssl(&dir, &args);
        }
        std::fs::write(dir.join("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
        std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        for leaf in ["server", "client"] {
            let (key, csr, crt, ext) =
                (format!("{leaf}.key"), format!("{leaf}.csr"), format!("{leaf}.crt"), format!("{leaf}.ext"));
            let subj = format!("/CN=dreamtown test {leaf}");
            let mut args = vec!["req"];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
            openssl(&dir, &args);
            openssl(
                &dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &csr,
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &crt,
                    "-days",
                    "2",
                    "-extfile",
                    &ext,
                ],
            );
        }
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn file(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Options that trust our CA, with the client certificate if `client`.
    fn options(&self, client: bool) -> Options {
        let mut tls = Tls { ca_file: Some(self.path("ca.crt")), ..Tls::default() };
        if client {
            tls.cert_file = Some(self.path("client.crt"));
            tls.key_file = Some(self.path("client.key"));
        }
        Options { tls, ..Options::default() }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A redis-server with the module and only a TLS port.
struct TlsServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl TlsServer {
    fn start(pki: &Pki, auth_clients: bool) -> TlsServer {
        Self::start_with(pki, auth_clients, "server")
    }

    /// With `<cert>.crt` and `<cert>.key` as its certificate; it is ready
    /// when it answers a client that takes any server certificate.
    fn start_with(pki: &Pki, auth_clients: bool, cert: &str) -> TlsServer {
        let port = free_port();
        let dir = scratch_dir("tls-server", port);
        let child = Command::new(tls_server_bin())
            .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--tls-cert-file",
                &pki.file(&format!("{cert}.crt")),
                "--tls-key-file",
                &pki.file(&format!("{cert}.key")),
            ])
            .args(["--tls-ca-cert-file", &pki.file("ca.crt")])
            .args(["--tls-auth-clients", if auth_clients { "yes" } else { "no" }])
            .args(["--save", "", "--appendonly", "no", "--enable-debug-command", "yes"])
            .arg("--dir")
            .arg(&dir)
            .arg("--loadmodule")
            .arg(module_path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        let mut server = TlsServer { child, port, dir };
        let started = Instant::now();
        let mut options = pki.options(true);
        options.tls.insecure = true;
        loop {
            assert!(matches!(server.child.try_wait(), Ok(None)), "redis-server exited (built without TLS?)");
            if let Ok(mut con) = server.admin(&options)
                && redis::cmd("PING").query::<String>(&mut con).is_ok()
            {
                return server;
            }
            assert!(started.elapsed() < DEADLINE, "the TLS server did not answer");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.port)
    }

    fn admin(&self, options: &Options) -> redis::RedisResult<redis::Connection> {
        options.client(&self.url())?.get_connection_with_timeout(Duration::from_secs(5))
    }

    fn set_user(&self, pki: &Pki, user: &str, rules: &str) {
        let mut con = self.admin(&pki.options(true)).expect("admin over TLS");
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg(user)
            .arg(rules.split_whitespace().collect::<Vec<_>>())
            .query::<()>(&mut con)
            .unwrap();
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// docs/operations.md "ACL: one user per tenant", for `org`.
fn tenant_rules(org: &str) -> String {
    format!(
        "on >secret resetkeys ~exocortex:dreams:{{{org}}}:* ~tt:{{{org}}}:* resetchannels &tt:{{{org}}}:* \
         -@all +dreams.fire +dreams.record +dreams.settle +dreams.drain +dreams.ack +dreams.recover \
         +dreams.len +dreams.counters +town.send +town.recv +town.ack +town.len +ping"
    )
}

async fn multiplexed(options: &Options, url: &str) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(Duration::from_secs(5)));
    options.client(url)?.get_multiplexed_async_connection_with_config(&config).await
}

/// A fire on `org`'s queue, drained and acknowledged.
async fn fire_round_trip(conn: redis::aio::MultiplexedConnection, org: &str) -> dreamtown_client::Result<()> {
    let mut queue = RedisFireQueue::new(conn, QuietHours::none(), org);
    queue.fire(&RegionKey::new(org, "web", 1), "node-a").await?;
    let DrainResult::Ready(fire) = queue.drain(Duration::from_secs(1)).await? else { panic!("the fire is ready") };
    let acked = queue.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await?;
    assert!(matches!(acked, AcknowledgeOutcome::Acknowledged(_)), "{acked:?}");
    Ok(())
}

#[tokio::test]
async fn the_client_verifies_the_server_by_its_ca_and_refuses_others_unless_insecure() {
    let pki = Pki::new("tls-verify");
    let server = TlsServer::start(&pki, false);
    let org = tenant("tls-verify");

    let conn = multiplexed(&pki.options(false), &server.url()).await.expect("verified against our CA");
    fire_round_trip(conn, &org).await.unwrap();

    let unknown =
        Options { tls: Tls { ca_file: Some(pki.path("other-ca.crt")), ..Tls::default() }, ..Options::default() };
    let refused = multiplexed(&unknown, &server.url()).await.expect_err("a CA that signed nothing here is refused");
    assert!(refused.to_string().to_lowercase().contains("certificate"), "{refused}");
    let system =
        multiplexed(&Options::default(), &server.url()).await.expect_err("the system's roots do not know our CA");
    assert!(system.to_string().to_lowercase().contains("certificate"), "{system}");
    let plain = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let plaintext = async {
        plain
            .get_multiplexed_async_connection_with_config(&config)
            .await?
            .send_packed_command(&redis::cmd("PING"))
            .await
    };
    assert!(plaintext.await.is_err(), "no plaintext on the TLS port");

    let insecure = Options { tls: Tls { insecure: true, ..unknown.tls.clone() }, ..Options::default() };
    let conn = multiplexed(&insecure, &server.url()).await.expect("insecure accepts any certificate");
    fire_round_trip(conn, &org).await.unwrap();
    let conn = multiplexed(&Options::default(), &format!("{}#insecure", server.url()))
        .await
        .expect("so does the URL's #insecure");
    fire_round_trip(conn, &org).await.unwrap();

    let misconfigured =
        Options { tls: Tls { cert_file: Some(pki.path("client.crt")), ..Tls::default() }, ..Options::default() };
    assert!(misconfigured.client(&server.url()).is_err(), "a certificate without its key is refused at once");
    assert!(
        pki.options(false).client(&format!("redis://127.0.0.1:{}/", server.port)).is_err(),
        "TLS options with a plain URL"
    );
}

#[tokio::test]
async fn a_server_that_requires_client_certificates_takes_ours() {
    let pki = Pki::new("tls-mutual");
    let server = TlsServer::start(&pki, true);
    let org = tenant("tls-mutual");
    let without =
        async { multiplexed(&pki.options(false), &server.url()).await?.send_packed_command(&redis::cmd("PING")).await };
    assert!(without.await.is_err(), "no client certificate, no connection");
    let conn = multiplexed(&pki.options(true), &server.url()).await.expect("with the client certificate");
    fire_round_trip(conn, &org).await.unwrap();
}

#[tokio::test]
async fn an_acl_user_over_tls_works_its_tenant_and_is_refused_another() {
    let pki = Pki::new("tls-acl");
    let server = TlsServer::start(&pki, false);
    let (own, other) = (tenant("tls-acl-own"), tenant("tls-acl-other"));
    server.set_user(&pki, "tenant-own", &tenant_rules(&own));

    // User and password from the options (as the tools' flags give them).
    let options = Options { user: Some("tenant-own".into()), password: Some("secret".into()), ..pki.options(false) };
    let conn = multiplexed(&options, &server.url()).await.expect("tenant-own over TLS");
    fire_round_trip(conn.clone(), &own).await.unwrap();
    let mut theirs = RedisFireQueue::new(conn, QuietHours::none(), other.clone());
    let error = theirs.fire(&RegionKey::new(other.as_str(), "web", 1), "node-a").await.expect_err("another tenant");
    assert!(error.is_no_permission(), "{error}");
    let lengths = multiplexed(&pki.options(false), &server.url()).await.unwrap();
    let mut admin = RedisFireQueue::new(lengths, QuietHours::none(), other.clone());
    assert_eq!(admin.lengths().await.unwrap().ready, 0, "nothing was written for the other tenant");

    // The URL's credentials win over the options'.
    let wrong = Options { password: Some("wrong".into()), ..options.clone() };
    let url = format!("rediss://tenant-own:secret@127.0.0.1:{}/", server.port);
    fire_round_trip(multiplexed(&wrong, &url).await.expect("the URL's password"), &own).await.unwrap();
    let refused = multiplexed(&wrong, &server.url()).await.expect_err("a wrong password");
    assert_eq!(refused.kind(), redis::ErrorKind::AuthenticationFailed, "{refused}");
}

/// A child process killed (by its own handle) when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_get(port: u16) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// The exporter with `args` and `env`, until a scrape says `dreamtown_up`
/// for the node: that scrape's text.
fn scrape_once(args: &[&str], env: &[(&str, &str)]) -> String {
    let port = free_port();
    let mut command = Command::new(tool("dreamtown-exporter"));
    command.args(args).args(["--listen", &format!("127.0.0.1:{port}")]);
    command.env_remove("REDIS_USER").env_remove("REDIS_PASSWORD").env_remove("REDIS_PASSWORD_FILE");
    command.envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::null());
    let _process = Process(command.spawn().expect("dreamtown-exporter"));
    let mut text = String::new();
    wait_until("the exporter to serve", || {
        text = http_get(port).unwrap_or_default();
        text.contains("dreamtown_up{")
    });
    text
}

/// Command-line flags and environment variables of one run.
type Way<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>);

fn migrate(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut command = Command::new(tool("dreamtown-migrate"));
    command.args(args);
    command.env_remove("REDIS_USER").env_remove("REDIS_PASSWORD").env_remove("REDIS_PASSWORD_FILE");
    let output = command.envs(env.iter().copied()).output().expect("dreamtown-migrate");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

#[tokio::test]
async fn both_tools_reach_a_tls_server_with_the_password_from_a_flag_a_file_or_the_environment() {
    let pki = Pki::new("tls-tools");
    let server = TlsServer::start(&pki, true);
    let org = tenant("tls-tools");
    fire_round_trip(multiplexed(&pki.options(true), &server.url()).await.unwrap(), &org).await.unwrap();
    RedisFireQueue::new(
        multiplexed(&pki.options(true), &server.url()).await.unwrap(),
        QuietHours::none(),
        org.as_str(),
    )
    .fire(&RegionKey::new(org.as_str(), "web", 1), "node-a")
    .await
    .unwrap();
    // The exporter's user reads; the migration tool's moves keys.
    server.set_user(
        &pki,
        "exporter",
        "on >scrape-pw -@all +info +scan +zrange +dreams.stats +town.stats +cluster|slots +ping ~*",
    );
    server.set_user(&pki, "migrator", "on >move-pw +@all ~* &*");
    std::fs::write(pki.path("exporter.pw"), "scrape-pw\n").unwrap();
    std::fs::write(pki.path("migrator.pw"), "move-pw\n").unwrap();
    let url = server.url();
    let (ca, cert, key) = (pki.file("ca.crt"), pki.file("client.crt"), pki.file("client.key"));
    let tls = [
        "--tls-ca-cert-file",
        ca.as_str(),
        "--tls-client-cert-file",
        cert.as_str(),
        "--tls-client-key-file",
        key.as_str(),
    ];
    let node = format!("127.0.0.1:{}", server.port);
    let up = |text: &str| text.contains(&format!("dreamtown_up{{node=\"{node}\"}} 1"));
    let ready = |text: &str| text.contains(&format!("dreamtown_dreams_ready{{node=\"{node}\",org=\"{org}\"}} 1"));

    let exporter_pw = pki.file("exporter.pw");
    let ways: [Way; 4] = [
        (vec!["--user", "exporter", "--password", "scrape-pw"], vec![]),
        (vec!["--user", "exporter", "--password-file", exporter_pw.as_str()], vec![]),
        (vec![], vec![("REDIS_USER", "exporter"), ("REDIS_PASSWORD", "scrape-pw")]),
        (vec!["--user", "exporter"], vec![("REDIS_PASSWORD_FILE", exporter_pw.as_str())]),
    ];
    for (flags, env) in &ways {
        let mut args = vec!["--redis", url.as_str()];
        args.extend(tls);
        args.extend(flags);
        let text = scrape_once(&args, env);
        assert!(up(&text) && ready(&text), "{flags:?} {env:?}:\n{text}");
    }
    let mut args = vec!["--redis", url.as_str(), "--user", "exporter", "--password", "wrong"];
    args.extend(tls);
    let text = scrape_once(&args, &[]);
    assert!(text.contains(&format!("dreamtown_up{{node=\"{node}\"}} 0")), "a wrong password reads down:\n{text}");
    let mut args = vec!["--redis", url.as_str(), "--user", "exporter", "--password", "scrape-pw"];
    args.extend(&tls[..2]);
    let text = scrape_once(&args, &[]);
    assert!(text.contains(&format!("dreamtown_up{{node=\"{node}\"}} 0")), "no client certificate reads down:\n{text}");

    let migrator_pw = pki.file("migrator.pw");
    let ways: [Way; 3] = [
        (vec!["--user", "migrator", "--password", "move-pw"], vec![]),
        (vec!["--user", "migrator", "--password-file", migrator_pw.as_str()], vec![]),
        (vec![], vec![("REDIS_USER", "migrator"), ("REDIS_PASSWORD", "move-pw")]),
    ];
    for (flags, env) in &ways {
        let mut args = vec!["--dry-run", "--from", url.as_str()];
        args.extend(tls);
        args.extend(flags);
        args.extend(["town", "--all"]);
        let (status, text) = migrate(&args, env);
        assert_eq!((status, text.contains("no town tenant found")), (0, true), "{flags:?} {env:?}: {text}");
    }
    let mut args = vec!["--dry-run", "--from", url.as_str(), "--user", "migrator", "--password", "wrong"];
    args.extend(tls);
    args.extend(["town", "--all"]);
    let (status, text) = migrate(&args, &[]);
    assert_eq!(status, 3, "a wrong password cannot reach the server: {text}");
    assert!(!text.contains("wrong"), "the password is not printed: {text}");
}

/// docs/client.md's openssl recipe ("Certificates for TLS"): the `sh`
/// block that makes the CA.
fn documented_recipe() -> String {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/client.md");
    let text = std::fs::read_to_string(&page).expect("docs/client.md");
    text.split("```sh\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("```").map(|(block, _)| block.to_owned()))
        .find(|block| block.contains("openssl req -x509"))
        .expect("docs/client.md has the openssl recipe")
}

#[tokio::test]
async fn the_documented_openssl_recipe_makes_v3_certificates_both_sides_take() {
    let dir = scratch_dir("tls-recipe", 0);
    let ran = Command::new("bash").args(["-euo", "pipefail", "-c", &documented_recipe()]).current_dir(&dir).output();
    let ran = ran.expect("bash");
    assert!(ran.status.success(), "the recipe: {}", String::from_utf8_lossy(&ran.stderr));
    let pki = Pki { dir };
    let server = TlsServer::start(&pki, true);
    let org = tenant("tls-recipe");
    // Verified against the recipe's CA, with the recipe's client certificate.
    let conn = multiplexed(&pki.options(true), &server.url()).await.expect("the recipe's certificates");
    fire_round_trip(conn, &org).await.unwrap();
    let without =
        async { multiplexed(&pki.options(false), &server.url()).await?.send_packed_command(&redis::cmd("PING")).await };
    assert!(without.await.is_err(), "the server asks for the client certificate");
}

/// `name`.crt: a certificate for `name`.key that the test CA signs without
/// extensions, which openssl makes X.509 v1.
fn v1_certificate(pki: &Pki, name: &str) {
    let (key, csr, crt) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"));
    openssl(
        &pki.dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    openssl(
        &pki.dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "2",
        ],
    );
}

/// The exporter run to its end (it stops at once on a bad option): status, stderr.
fn exporter_refuses(args: &[&str]) -> (i32, String) {
    let output = Command::new(tool("dreamtown-exporter")).args(args).output().expect("dreamtown-exporter");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[tokio::test]
async fn a_v1_certificate_is_named_as_the_clients_or_the_servers() {
    let pki = Pki::new("tls-v1");
    v1_certificate(&pki, "client-v1");
    v1_certificate(&pki, "server-v1");
    let (ca, cert, key) = (pki.file("ca.crt"), pki.file("client-v1.crt"), pki.file("client-v1.key"));
    let url = "rediss://127.0.0.1:6380/";

    // The client's own: refused before connecting, by its path, in the
    // client crate and both tools.
    let own = format!("the client certificate {cert} is X.509 v1");
    let options = Options {
        tls: Tls {
            ca_file: Some(ca.clone().into()),
            cert_file: Some(cert.clone().into()),
            key_file: Some(key.clone().into()),
            insecure: false,
        },
        ..Options::default()
    };
    let refused = options.client(url).expect_err("a v1 client certificate");
    assert!(refused.to_string().contains(&own), "{refused}");
    let tls = [
        "--tls-ca-cert-file",
        ca.as_str(),
        "--tls-client-cert-file",
        cert.as_str(),
        "--tls-client-key-file",
        key.as_str(),
    ];
    let mut args = vec!["--dry-run", "--from", url];
    args.extend(tls);
    args.extend(["dreams", "acme"]);
    let (status, text) = migrate(&args, &[]);
    assert!(status != 0 && text.contains(&own), "dreamtown-migrate: {status} {text}");
    let mut args = vec!["--redis", url];
    args.extend(tls);
    let (status, text) = exporter_refuses(&args);
    assert!(status == 2 && text.contains(&own), "dreamtown-exporter: {status} {text}");

    // The server's: the connection fails, and the error names the server.
    let server = TlsServer::start_with(&pki, false, "server-v1");
    let theirs = "the server's TLS certificate (or one of its chain) is not X.509 v3";
    let raw = multiplexed(&pki.options(false), &server.url()).await.expect_err("a v1 server certificate");
    let explained = dreamtown_client::connect::explain(raw).to_string();
    assert!(explained.contains(theirs) && explained.contains("UnsupportedCertVersion"), "{explained}");
    let server_url = server.url();
    let mut args = vec!["--dry-run", "--from", server_url.as_str(), "--tls-ca-cert-file", ca.as_str()];
    args.extend(["dreams", "acme"]);
    let (status, text) = migrate(&args, &[]);
    assert!(status != 0 && text.contains(theirs), "dreamtown-migrate: {status} {text}");
    let text = scrape_once(&["--redis", &server_url, "--tls-ca-cert-file", &ca], &[]);
    assert!(text.contains(theirs), "dreamtown-exporter's scrape:\n{text}");
}
