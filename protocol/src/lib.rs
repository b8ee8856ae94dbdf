//! dreamtown's protocol, written once for the module and its clients: the
//! key names of both families ([`keyspace`]), which the module builds and
//! the tools (exporter, console, lease catch-up) parse back; the name of
//! every command and subcommand ([`commands`]); the schemas of the STATS
//! replies ([`stats`]) and of `INFO dreamtown` ([`info`]), which the module
//! writes from and the exporter iterates; a request type per command
//! ([`request`]: the module parses with it, the client encodes with it) and
//! a reply type per command ([`reply`]: the module writes with it, the
//! client decodes with it).
//!
//! Pure: no Redis types, no I/O, no allocation where a hot command path
//! builds a name (the `*_parts` functions return the pieces to join).

pub mod args;
pub mod commands;
pub mod decimal;
pub mod error;
pub mod info;
pub mod keyspace;
pub mod reply;
pub mod request;
pub mod stats;

#[cfg(test)]
#[path = "../../src/test_random.rs"]
mod test_random;
