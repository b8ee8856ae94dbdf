//! The module crate's test harness: the shared one
//! (`dreamtown-test-support`: real servers with the module on free loopback
//! ports, waits with one deadline, which server it is) plus what only these
//! tests use.

#![allow(dead_code, unused_imports)]

pub use dreamtown_test_support::*;

#[path = "../../src/test_random.rs"]
pub mod random;
pub mod replies;
