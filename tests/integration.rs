//! The module crate's integration tests, as one binary: each file of
//! tests/ is a module of it (`cargo test -p dreamtown --test integration
//! dreams_drain::` runs one file's tests), and all of them share one build
//! of the harness (`common`, `dreams_support`, `town_support`). Each test
//! starts its own servers on free ports, so tests of different files run
//! side by side in this one process; `async_load`'s tests run apart (the
//! Makefile's `test-rust` runs them after the rest, see that file).
//!
//! A new file of tests/ is a `mod` line here (Cargo.toml turns off Cargo's
//! one-binary-per-file discovery); `every_test_file_is_a_module` fails on
//! one that is not.

mod common;
mod dreams_support;
mod town_support;

mod acl;
mod acl_matrix;
mod async_load;
mod bounded_steps;
mod dreams_ack;
mod dreams_config;
mod dreams_differential;
mod dreams_drain;
mod dreams_errors;
mod dreams_eviction;
mod dreams_fire;
mod dreams_fuzz;
mod dreams_lease;
mod dreams_limits;
mod dreams_notify;
mod dreams_quiet;
mod dreams_record;
mod dreams_redrive;
mod dreams_replica;
mod dreams_replies;
mod harness;
mod lease_catch_up;
mod native_events;
mod native_flags;
mod native_latency;
mod native_replies;
mod native_semantics;
mod observe_stats;
mod one_trip;
mod pause;
mod seed_domain;
mod server_events;
mod town_commands;
mod town_errors;
mod town_fuzz;
mod town_lease;
mod town_messages;
mod town_reclaim;
mod town_replication;
mod town_replies;
mod town_state;
mod upgrade;
mod version;
mod waiters;

/// Every `tests/*.rs` is declared above: a file left out would compile
/// nowhere and its tests would silently not run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let missing = dreamtown_test_support::test_files_left_out(&dir, include_str!("integration.rs"));
    assert!(missing.is_empty(), "not modules of tests/integration.rs (add `mod <name>;`): {}", missing.join(", "));
}
