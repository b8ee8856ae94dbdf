//! dreamtown's protocol, written once for the module and its clients: the
//! key names of both families ([`keyspace`]), which the module builds and
//! the tools (exporter, console, lease catch-up) parse back, and the name
//! of every command and subcommand ([`commands`]).
//!
//! Pure: no Redis types, no I/O, no allocation where a hot command path
//! builds a name (the `*_parts` functions return the pieces to join).

pub mod commands;
pub mod keyspace;
