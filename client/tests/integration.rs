//! The client crate's integration tests, as one binary: each file of
//! client/tests/ is a module of it (`cargo test -p dreamtown-client --test
//! integration reshard::` runs one file's tests), sharing one build of the
//! harness (`common`, and `netns` for the partition tests). Each test starts
//! its own servers and clusters on free ports, so tests of different files
//! run side by side in this one process; `partition` and `sentinel` run
//! apart (`make test-client` runs them after the rest, one at a time).
//! The migration tool's and the exporter's tests live in their crates
//! (migrate/tests, exporter/tests).
//!
//! A new file of client/tests/ is a `mod` line here or a `[[test]]` of
//! Cargo.toml (Cargo's one-binary-per-file discovery is off);
//! `every_test_file_is_a_module` fails on one that is neither.

mod common;
mod netns;

mod acl;
mod cluster;
mod cluster_stats;
mod dreams;
mod guard_setslot;
mod lease;
mod legacy_move;
mod limits_cluster;
mod native;
mod partition;
mod reshard;
mod sentinel;
mod tls;
mod town;
mod town_view;
mod waiters_cluster;

/// Every `client/tests/*.rs` is declared above or in Cargo.toml: a file
/// left out would compile nowhere and its tests would silently not run.
#[test]
fn every_test_file_is_a_module() {
    let declared = [include_str!("integration.rs"), include_str!("../Cargo.toml")].concat();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let missing = dreamtown_test_support::test_files_left_out(&dir, &declared);
    assert!(
        missing.is_empty(),
        "neither modules of tests/integration.rs nor tests of Cargo.toml: {}",
        missing.join(", ")
    );
}
