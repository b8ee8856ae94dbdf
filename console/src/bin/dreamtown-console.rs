//! `dreamtown-console --redis <url> [--listen addr:port] [--token-file <path>] [--acl-login] [...]`:
//! an operator's web console for dreamtown. The logic is in
//! [`dreamtown_console`]; this parses the command line and serves.

use std::process::ExitCode;

use dreamtown_console::args::{self, Parsed, USAGE};
use dreamtown_console::backend::Backend;

fn main() -> ExitCode {
    let config = match args::parse(std::env::args().skip(1)) {
        Ok(Parsed::Print(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Serve(config)) => config,
        Err(message) => {
            eprintln!("dreamtown-console: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let backend = Backend::new(config.target.clone(), config.connect.clone(), config.timeout);
    if let Err(error) = backend.validate() {
        eprintln!("dreamtown-console: {error}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("dreamtown-console: cannot start: {error}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&config.listen).await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("dreamtown-console: cannot listen on {}: {error}", config.listen);
                return ExitCode::from(1);
            }
        };
        if let Err(error) = backend.probe().await {
            eprintln!("dreamtown-console: warning: {error} (serving anyway; pages show what fails)");
        }
        let mode = match (&config.auth.token, config.auth.acl_login) {
            (None, false) => "read-only",
            (Some(_), false) => "operator token sign-in",
            (None, true) => "ACL user sign-in",
            (Some(_), true) => "operator token or ACL user sign-in",
        };
        eprintln!("dreamtown-console: serving http://{} for {} ({mode})", config.listen, backend.label());
        match dreamtown_console::serve(*config, listener).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("dreamtown-console: {error}");
                ExitCode::from(1)
            }
        }
    })
}
