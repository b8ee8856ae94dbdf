//! The background services: what the module does outside a client's own
//! command, one file per mechanism. The write gate every background write
//! asks first (`write_gate`), the lease timer and its catch-up (`leases`),
//! blocked receivers (`waiters`), which organizations have limits
//! (`limits_index`), cluster safety (`migration_guard`,
//! `slot_migration`), and the server's events (`keyspace_events`,
//! `server_events`).

pub mod acl_watch;
pub mod command_filter;
pub mod keyspace_events;
pub mod lease_catch_up;
pub mod lease_index;
pub mod lease_timer;
pub mod limits_index;
pub mod migration_guard;
pub mod server_events;
pub mod slot_memo;
pub mod slot_migration;
pub mod slot_moves;
pub mod waiters;
pub mod write_gate;
