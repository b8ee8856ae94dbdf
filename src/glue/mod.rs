//! The Redis glue: thin, safe wrappers over the module API that every
//! command and service is built from. The API table (`api`), strings,
//! keys that replicate and notify their writes (`key`, `effects`),
//! `RedisModule_Call` (`call`), argument parsing (`args`), replies and
//! errors (`reply`), sessions with ACL checks (`session`), configuration
//! (`config`), command registration with its metadata (`command`,
//! `acl_category`), and latency events (`latency`). Nothing here knows a command family or a background
//! mechanism.

pub mod access;
pub mod acl;
pub mod acl_category;
pub mod api;
pub mod args;
pub mod argv;
pub mod blocked;
pub mod call;
pub mod command;
pub mod config;
pub mod context_flags;
pub mod ctx;
pub mod db_scope;
pub mod effects;
pub mod filter;
pub mod info;
pub mod key;
pub mod keyspace_events;
pub mod latency;
pub mod load;
pub mod main_thread;
pub mod module_options;
pub mod reply;
pub mod scan;
pub mod server_events;
pub mod server_info;
pub mod session;
pub mod slot_migration_events;
pub mod string;
pub mod timer;
pub mod unload_guard;
