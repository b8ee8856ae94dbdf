//! `dreamtown-console`: an operator's web console for dreamtown.
//!
//! Pointed at one server, any node of a cluster or the master of a
//! Sentinel set (with the other tools' TLS and ACL options), it shows
//! every tenant of both families ([`tenants`], kept by a background
//! [`directory`] sweep), one organization ([`org`]) or town ([`town`]),
//! refreshed live in the page, and runs the actions operators take
//! ([`actions`]) through the module's own commands, after a dry run for
//! the bulk ones, for a signed-in operator only ([`auth`]). The binary
//! parses the command line ([`args`]) and calls [`serve`]. See
//! docs/console.md.

#![warn(missing_docs)]

pub mod actions;
pub mod args;
pub mod auth;
pub mod backend;
pub mod directory;
pub mod fields;
pub mod html;
pub mod org;
pub mod server;
pub mod summary;
pub mod tenants;
pub mod town;

use std::time::Duration;

use auth::AuthConfig;
use backend::{Backend, Target};
use directory::{Directory, DirectoryConfig};

/// Everything the console is started with.
#[derive(Clone, Debug)]
pub struct Config {
    /// What to read and act on.
    pub target: Target,
    /// TLS and credentials of the console's own connections.
    pub connect: dreamtown_client::connect::Options,
    /// Where to serve (default `127.0.0.1:9809`).
    pub listen: String,
    /// Who may act.
    pub auth: AuthConfig,
    /// How the tenant list is kept.
    pub directory: DirectoryConfig,
    /// Connect and reply timeout.
    pub timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            target: Target::Servers(Vec::new()),
            connect: dreamtown_client::connect::Options::default(),
            listen: "127.0.0.1:9809".into(),
            auth: AuthConfig { token: None, acl_login: false, ttl: Duration::from_secs(12 * 3600) },
            directory: DirectoryConfig::default(),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Serve the console on `listener` until the process ends. The directory
/// starts sweeping at once.
pub async fn serve(config: Config, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let backend = Backend::new(config.target, config.connect, config.timeout);
    let directory = Directory::new(backend.clone(), config.directory);
    directory.spawn();
    let app = server::App::new(backend, directory, config.auth);
    axum::serve(listener, app.router()).await
}
