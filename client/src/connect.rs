//! How the client and both tools reach a server: TLS (`rediss://`) with
//! the server verified against the system's roots or a given CA file,
//! client certificates, an explicit insecure switch, and the ACL user and
//! password taken from the URL, from options (flags, a file) or from the
//! environment. One [`Options`] applies to every URL a program is given;
//! it builds the `redis` crate's clients (one server, a cluster, a
//! Sentinel), so every connection a tool makes carries the same TLS
//! material and credentials.
//!
//! Credentials, first found wins, per field (as redis_exporter does: a
//! URL is per server, the rest is per program):
//! 1. the URL's own `user:password@`;
//! 2. [`Options::user`] / [`Options::password`] (`--user`, `--password`
//!    or `--password-file` on the tools' command lines);
//! 3. the environment: `REDIS_USER`, then `REDIS_PASSWORD`, else the file
//!    named by `REDIS_PASSWORD_FILE` ([`Options::with_env`]).
//!
//! Certificates: rustls, the TLS of the `redis` crate here, takes only
//! X.509 v3 end-entity certificates (a CA may be v1), where `openssl x509
//! -req` makes v1 unless given `-extfile`. Its error ("invalid peer
//! certificate: UnsupportedCertVersion") says "peer" even for the client's
//! own certificate, so a v1 client certificate is refused here, before
//! connecting, by its path, and [`explain`] names the server's certificate
//! in a connection's error.

use std::fmt;
use std::path::{Path, PathBuf};

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisError, RedisResult};

/// TLS material for `rediss://` URLs. Empty: verify the server against
/// the system's roots, no client certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tls {
    /// PEM file of the CA(s) that signed the server's certificate, instead
    /// of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// PEM file of the client certificate (with `key_file`), for servers
    /// started with `tls-auth-clients yes`.
    pub cert_file: Option<PathBuf>,
    /// PEM file of the client certificate's private key.
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate (no verification at all). Only for
    /// tests and emergencies: anyone on the path can read and change the
    /// traffic.
    pub insecure: bool,
}

impl Tls {
    /// Anything set?
    pub fn is_set(&self) -> bool {
        self != &Tls::default()
    }

    /// The certificates the `redis` crate takes, read from the files.
    fn certificates(&self) -> RedisResult<Option<redis::TlsCertificates>> {
        let client_tls = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                let client_cert = read(cert, "client certificate")?;
                check_v3(&client_cert, cert)?;
                Some(redis::ClientTlsConfig { client_cert, client_key: read(key, "client key")? })
            }
            (None, None) => None,
            _ => return Err(invalid("a client certificate needs both its certificate and its key file")),
        };
        let root_cert = self.ca_file.as_deref().map(|ca| read(ca, "CA certificate")).transpose()?;
        if client_tls.is_none() && root_cert.is_none() {
            return Ok(None);
        }
        Ok(Some(redis::TlsCertificates { client_tls, root_cert }))
    }
}

fn read(path: &Path, what: &str) -> RedisResult<Vec<u8>> {
    std::fs::read(path).map_err(|error| invalid_owned(format!("cannot read the {what} {}: {error}", path.display())))
}

/// Where to read how to make a certificate rustls takes.
const CERTIFICATE_RECIPE: &str = "docs/client.md#certificates-for-tls";

/// Refuse a client certificate file whose first certificate is not X.509
/// v3, naming it: rustls would refuse it while building the client, with
/// an error about a "peer" certificate.
fn check_v3(pem: &[u8], path: &Path) -> RedisResult<()> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let Some(Ok(first)) = CertificateDer::pem_slice_iter(pem).next() else {
        return Err(invalid_owned(format!("the client certificate {} holds no PEM certificate", path.display())));
    };
    match x509_version(&first) {
        Some(3) | None => Ok(()),
        Some(version) => Err(invalid_owned(format!(
            "the client certificate {} is X.509 v{version}: rustls (this client's TLS) takes only v3 \
             certificates; make it with `openssl x509 -req ... -extfile <file>` ({CERTIFICATE_RECIPE})",
            path.display()
        ))),
    }
}

/// The X.509 version of a DER certificate (1, 2 or 3), or None when it
/// does not read as one (rustls then says what is wrong).
fn x509_version(der: &[u8]) -> Option<u8> {
    let (tag, certificate, _) = der_item(der)?;
    let (tbs_tag, tbs, _) = der_item(certificate)?;
    if tag != 0x30 || tbs_tag != 0x30 {
        return None;
    }
    // TBSCertificate: `[0] EXPLICIT Version DEFAULT v1`, then the serial.
    let (tag, explicit, _) = der_item(tbs)?;
    if tag != 0xa0 {
        return Some(1);
    }
    match der_item(explicit)? {
        (0x02, [version], _) if *version <= 2 => Some(version + 1),
        _ => None,
    }
}

/// One DER item: its tag, its contents, what follows it.
fn der_item(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 {
            return None;
        }
        let (bytes, rest) = rest.split_at_checked(octets)?;
        (bytes.iter().fold(0usize, |length, &byte| (length << 8) | usize::from(byte)), rest)
    };
    let (contents, rest) = rest.split_at_checked(length)?;
    Some((tag, contents, rest))
}

/// A connection's error, with the certificate it is about named where
/// rustls does not: "invalid peer certificate: UnsupportedCertVersion"
/// from a connection is the server's certificate (or one of its chain's)
/// being X.509 v1 or v2. Other errors are returned as they are. The
/// client's own certificate never gets this far (`Options::client`
/// refuses a v1 one by its path).
pub fn explain(error: RedisError) -> RedisError {
    let text = error.to_string();
    if !text.contains("UnsupportedCertVersion") {
        return error;
    }
    let detail = format!(
        "the server's TLS certificate (or one of its chain) is not X.509 v3, which rustls (this client's TLS) \
         requires: the server needs a v3 certificate ({CERTIFICATE_RECIPE}); rustls said: {text}"
    );
    RedisError::from((error.kind(), "the server's certificate was refused", detail))
}

fn invalid(message: &'static str) -> RedisError {
    RedisError::from((redis::ErrorKind::InvalidClientConfig, message))
}

fn invalid_owned(message: String) -> RedisError {
    RedisError::from((redis::ErrorKind::InvalidClientConfig, "invalid connection options", message))
}

/// TLS and credentials for every URL a program connects to.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// ACL user, when the URL names none.
    pub user: Option<String>,
    /// Password, when the URL gives none.
    pub password: Option<String>,
    /// TLS material (used with `rediss://` URLs only).
    pub tls: Tls,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("tls", &self.tls)
            .finish()
    }
}

/// Read a password file: its content without the trailing line break.
pub fn read_password_file(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text).to_owned())
}

impl Options {
    /// Fill what is still unset from the environment: `REDIS_USER`,
    /// `REDIS_PASSWORD`, or the file named by `REDIS_PASSWORD_FILE`.
    pub fn with_env(mut self) -> std::io::Result<Self> {
        if self.user.is_none() {
            self.user = std::env::var("REDIS_USER").ok().filter(|user| !user.is_empty());
        }
        if self.password.is_none() {
            self.password = match std::env::var("REDIS_PASSWORD") {
                Ok(password) => Some(password),
                Err(_) => match std::env::var_os("REDIS_PASSWORD_FILE") {
                    Some(path) => Some(read_password_file(Path::new(&path))?),
                    None => None,
                },
            };
        }
        Ok(self)
    }

    /// Take one of the tools' connection flags from a command line:
    /// `--user <name>`, `--password <pw>`, `--password-file <path>`,
    /// `--tls-ca-cert-file <pem>`, `--tls-client-cert-file <pem>`,
    /// `--tls-client-key-file <pem>`, `--tls-insecure`. `Ok(false)`: `flag`
    /// is none of them.
    pub fn parse_flag(&mut self, flag: &str, args: &mut impl Iterator<Item = String>) -> Result<bool, String> {
        let mut value = |what: &str| args.next().ok_or_else(|| format!("{flag} needs {what}"));
        match flag {
            "--user" => self.user = Some(value("a user name")?),
            "--password" | "--password-file" if self.password.is_some() => {
                return Err("give one of --password and --password-file".into());
            }
            "--password" => self.password = Some(value("a password")?),
            "--password-file" => {
                let path = value("a file")?;
                let password =
                    read_password_file(Path::new(&path)).map_err(|error| format!("--password-file {path}: {error}"))?;
                self.password = Some(password);
            }
            "--tls-ca-cert-file" => self.tls.ca_file = Some(value("a PEM file")?.into()),
            "--tls-client-cert-file" => self.tls.cert_file = Some(value("a PEM file")?.into()),
            "--tls-client-key-file" => self.tls.key_file = Some(value("a PEM file")?.into()),
            "--tls-insecure" => self.tls.insecure = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `url` with these options applied: credentials the URL lacks, TLS
    /// material for `rediss://` (refused for a plain `redis://` URL, so a
    /// certificate never silently goes unused).
    pub fn connection_info(&self, url: &str) -> RedisResult<ConnectionInfo> {
        let info = url.into_connection_info()?;
        let mut settings = info.redis_settings().clone();
        if settings.username().is_none()
            && let Some(user) = &self.user
        {
            settings = settings.set_username(user);
        }
        if settings.password().is_none()
            && let Some(password) = &self.password
        {
            settings = settings.set_password(password);
        }
        let info = info.set_redis_settings(settings);
        let tls = matches!(info.addr(), ConnectionAddr::TcpTls { .. });
        if !tls {
            if self.tls.is_set() {
                return Err(invalid_owned(format!("TLS options need a rediss:// URL, not {}", redacted(url))));
            }
            return Ok(info);
        }
        let info = match info.addr().clone() {
            ConnectionAddr::TcpTls { host, port, insecure, tls_params } => info.set_addr(ConnectionAddr::TcpTls {
                host,
                port,
                insecure: insecure || self.tls.insecure,
                tls_params,
            }),
            _ => info,
        };
        Ok(info)
    }

    /// A client for one server.
    pub fn client(&self, url: &str) -> RedisResult<redis::Client> {
        let info = self.connection_info(url)?;
        match self.tls.certificates()? {
            Some(certificates) => redis::Client::build_with_tls(info, certificates),
            None => redis::Client::open(info),
        }
    }

    /// A cluster client builder for `urls` (any nodes of the cluster).
    pub fn cluster_builder(&self, urls: &[String]) -> RedisResult<redis::cluster::ClusterClientBuilder> {
        let infos = urls.iter().map(|url| self.connection_info(url)).collect::<RedisResult<Vec<_>>>()?;
        let mut builder = redis::cluster::ClusterClient::builder(infos.clone());
        if let Some(first) = infos.first() {
            if let ConnectionAddr::TcpTls { insecure, .. } = first.addr() {
                builder = builder.tls(if *insecure { redis::TlsMode::Insecure } else { redis::TlsMode::Secure });
            }
            if let Some(user) = first.redis_settings().username() {
                builder = builder.username(user);
            }
            if let Some(password) = first.redis_settings().password() {
                builder = builder.password(password);
            }
        }
        if let Some(certificates) = self.tls.certificates()? {
            builder = builder.certs(certificates);
        }
        Ok(builder)
    }

    /// A Sentinel client for the master `name`, asking the Sentinels at
    /// `sentinels` (`redis://` or `rediss://` URLs of Sentinel processes).
    /// These options apply to the master (and its TLS material to the
    /// Sentinels too when they are `rediss://`); Sentinel credentials, if
    /// any, come from the Sentinel URLs.
    pub fn sentinel_client(&self, sentinels: &[String], name: &str) -> RedisResult<redis::sentinel::SentinelClient> {
        use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
        let mut addrs = Vec::new();
        let mut sentinel_user = None;
        let mut sentinel_password = None;
        for url in sentinels {
            let info = url.as_str().into_connection_info()?;
            sentinel_user = sentinel_user.or(info.redis_settings().username().map(str::to_owned));
            sentinel_password = sentinel_password.or(info.redis_settings().password().map(str::to_owned));
            addrs.push(info.addr().clone());
        }
        let sentinel_tls = addrs.iter().find_map(|addr| match addr {
            ConnectionAddr::TcpTls { insecure, .. } => Some(*insecure || self.tls.insecure),
            _ => None,
        });
        let master_tls = sentinel_tls.is_some() || self.tls.is_set();
        let mut builder = SentinelClientBuilder::new(addrs, name, SentinelServerType::Master)?;
        if let Some(user) = &self.user {
            builder = builder.set_client_to_redis_username(user);
        }
        if let Some(password) = &self.password {
            builder = builder.set_client_to_redis_password(password);
        }
        if let Some(user) = sentinel_user {
            builder = builder.set_client_to_sentinel_username(user);
        }
        if let Some(password) = sentinel_password {
            builder = builder.set_client_to_sentinel_password(password);
        }
        let mode = if self.tls.insecure || sentinel_tls == Some(true) {
            redis::TlsMode::Insecure
        } else {
            redis::TlsMode::Secure
        };
        if master_tls {
            builder = builder.set_client_to_redis_tls_mode(mode);
        }
        if sentinel_tls.is_some() {
            builder = builder.set_client_to_sentinel_tls_mode(mode);
        }
        if let Some(certificates) = self.tls.certificates()? {
            if sentinel_tls.is_some() {
                builder = builder.set_client_to_sentinel_certificates(certificates.clone());
            }
            builder = builder.set_client_to_redis_certificates(certificates);
        }
        builder.build()
    }
}

/// `url` without its password, for messages.
pub fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((userinfo, host)) => {
                let user = userinfo.split(':').next().unwrap_or_default();
                format!("{scheme}://{user}:***@{host}")
            }
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// `url` with its `host:port` replaced (credentials and database kept).
pub fn with_host_port(url: &str, host_port: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((user, after)) => (Some(user), after),
        None => (None, rest),
    };
    let path = after.split_once('/').map(|(_, path)| format!("/{path}")).unwrap_or_default();
    match userinfo {
        Some(user) => format!("{scheme}://{user}@{host_port}{path}"),
        None => format!("{scheme}://{host_port}{path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_is_replaced_keeping_credentials() {
        assert_eq!(with_host_port("redis://127.0.0.1:7000/", "127.0.0.1:7001"), "redis://127.0.0.1:7001/");
        assert_eq!(with_host_port("redis://u:p@h:1/0", "x:2"), "redis://u:p@x:2/0");
        assert_eq!(with_host_port("redis://h:1", "x:2"), "redis://x:2");
    }

    /// `openssl x509 -req` without `-extfile`: X.509 v1.
    const V1_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBEzCBuwIUQ8M1yeRVZLthaxwPEy2VukP5ndYwCgYIKoZIzj0EAwIwDDEKMAgG\nA1UEAwwBdDAgFw0yNjEyMDYyMTMyMTBaGA8yMTI2MTExMjIxMzIxMFowDDEKMAgG\nA1UEAwwBdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABJxEyafMHFAtKphe8Fyj\njEllHRBOi2xmyIDE/bpQvnJS11yDRhwn/zhKX+VuQ10ke9D1WRBu28FuKD3Azhz9\nOKQwCgYIKoZIzj0EAwIDRwAwRAIgcC7yICE7+zB+HEO8sKSaYdbKpwo+8R0ruhnM\nLVPDfikCIAEjtN7iV04LautP2xwZ1yHBFM7mu6RtgPM1Y8m9bdOD\n-----END CERTIFICATE-----\n";
    /// The same key and name with `-extfile` (extendedKeyUsage): v3.
    const V3_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBUDCB+KADAgECAhQdxPQK2fv1Lux/rNhvbttgC1NfJDAKBggqhkjOPQQDAjAM\nMQowCAYDVQQDDAF0MCAXDTI2MTIwNjIxMzIxMFoYDzIxMjYxMTEyMjEzMjEwWjAM\nMQowCAYDVQQDDAF0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEnETJp8wcUC0q\nmF7wXKOMSWUdEE6LbGbIgMT9ulC+clLXXINGHCf/OEpf5W5DXSR70PVZEG7bwW4o\nPcDOHP04pKM2MDQwEwYDVR0lBAwwCgYIKwYBBQUHAwIwHQYDVR0OBBYEFM/cYYEw\nTiFX16zK0r8AUsw52/DYMAoGCCqGSM49BAMCA0cAMEQCICF4iPXcNIVNWp9iY+2j\nMbvAQcakkk+9roB2Ox/GNF8qAiAFMMK1no47H81yF5zp+vMqiqe/6p3WM6i51o5i\nOr83uw==\n-----END CERTIFICATE-----\n";

    #[test]
    fn a_v1_client_certificate_is_refused_by_its_path_and_a_v3_one_taken() {
        let path = Path::new("/etc/redis/client.crt");
        let refused = check_v3(V1_PEM.as_bytes(), path).expect_err("v1");
        let text = refused.to_string();
        assert!(text.contains("the client certificate /etc/redis/client.crt is X.509 v1"), "{text}");
        assert!(text.contains("-extfile"), "{text}");
        check_v3(V3_PEM.as_bytes(), path).expect("v3");
        assert!(check_v3(b"not a certificate", path).expect_err("no PEM").to_string().contains("holds no PEM"));
    }

    #[test]
    fn the_version_reader_reads_v1_and_v3_and_never_panics_on_garbage() {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let der = |pem: &str| CertificateDer::pem_slice_iter(pem.as_bytes()).next().unwrap().unwrap().to_vec();
        let (v1, v3) = (der(V1_PEM), der(V3_PEM));
        assert_eq!(x509_version(&v1), Some(1));
        assert_eq!(x509_version(&v3), Some(3));
        for cut in 0..v3.len() {
            let _ = x509_version(&v3[..cut]);
            let mut flipped = v3.clone();
            flipped[cut] ^= 0xff;
            let _ = x509_version(&flipped);
        }
        assert_eq!(x509_version(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn a_refused_server_certificate_is_named_as_the_servers() {
        let rustls =
            RedisError::from((redis::ErrorKind::Io, "TLS", "invalid peer certificate: UnsupportedCertVersion".into()));
        let text = explain(rustls).to_string();
        assert!(text.contains("the server's TLS certificate"), "{text}");
        assert!(text.contains("UnsupportedCertVersion"), "{text}");
        let other = RedisError::from((redis::ErrorKind::Io, "TLS", "connection refused".into()));
        assert!(!explain(other).to_string().contains("server's TLS"));
    }

    #[test]
    fn the_urls_credentials_win_then_the_options() {
        let options =
            Options { user: Some("flag-user".into()), password: Some("flag-pw".into()), ..Options::default() };
        let info = options.connection_info("redis://url-user:url-pw@127.0.0.1:1/").unwrap();
        assert_eq!(info.redis_settings().username(), Some("url-user"));
        assert_eq!(info.redis_settings().password(), Some("url-pw"));
        let info = options.connection_info("redis://127.0.0.1:1/").unwrap();
        assert_eq!(info.redis_settings().username(), Some("flag-user"));
        assert_eq!(info.redis_settings().password(), Some("flag-pw"));
    }

    #[test]
    fn tls_options_need_a_tls_url_and_insecure_is_kept() {
        let options = Options { tls: Tls { insecure: true, ..Tls::default() }, ..Options::default() };
        assert!(options.connection_info("redis://127.0.0.1:1/").is_err());
        let info = options.connection_info("rediss://127.0.0.1:1/").unwrap();
        assert!(matches!(info.addr(), ConnectionAddr::TcpTls { insecure: true, .. }));
        let info = Options::default().connection_info("rediss://127.0.0.1:1/").unwrap();
        assert!(matches!(info.addr(), ConnectionAddr::TcpTls { insecure: false, .. }));
    }

    #[test]
    fn flags_parse_and_passwords_are_redacted() {
        let mut options = Options::default();
        let mut rest = vec!["alice".to_owned()].into_iter();
        assert_eq!(options.parse_flag("--user", &mut rest), Ok(true));
        let mut rest = vec!["pw".to_owned()].into_iter();
        assert_eq!(options.parse_flag("--password", &mut rest), Ok(true));
        let mut rest = vec!["/nonexistent".to_owned()].into_iter();
        assert!(options.parse_flag("--password-file", &mut rest).is_err());
        assert_eq!(options.parse_flag("--other", &mut Vec::new().into_iter()), Ok(false));
        assert!(!format!("{options:?}").contains("pw\""));
        assert_eq!(redacted("rediss://u:secret@h:1/"), "rediss://u:***@h:1/");
    }
}
