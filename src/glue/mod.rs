//! The Redis glue: thin, safe wrappers over the module API that every
//! command and service is built from, and the only place that talks to it
//! (`unsafe`, `redis_module::raw` and `api!` appear nowhere else:
//! `scripts/check-layers.py`). The API table (`api`), strings, keys that
//! replicate and notify their writes (`key`, `effects`), `RedisModule_Call`
//! (`call`), argument strings (`argv`; their parsing is
//! `dreamtown_protocol::args`), replies and errors
//! (`reply`), sessions with ACL checks (`session`), configuration
//! (`config`), command registration with its metadata (`command`,
//! `acl_category`), latency events (`latency`); the module's entry points
//! (`load`), contexts and what they tell (`ctx`, `context_flags`,
//! `db_scope`, `server_info`), timers (`timer`), blocked clients
//! (`blocked`), server, keyspace and slot-migration events
//! (`server_events`, `keyspace_events`, `slot_migration_events`), the
//! command filter (`filter`), key scans (`scan`), `INFO` (`info`), module
//! options (`module_options`), and the per-load state every service keeps
//! its values in (`module_state`).
//! Nothing here knows a command family or a background mechanism.

pub mod access;
pub mod acl;
pub mod acl_category;
pub mod api;
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
pub mod module_options;
pub mod module_state;
pub mod reply;
pub mod scan;
pub mod server_events;
pub mod server_info;
pub mod session;
pub mod slot_migration_events;
pub mod string;
pub mod timer;
pub mod unload_guard;
