//! The migrate crate's test harness: the shared one
//! (`dreamtown-test-support`, with its async connections: real servers with
//! the module on free loopback ports, a local cluster built with
//! `redis-cli --cluster create`, waits with one deadline, which server it
//! is). Nothing here is the migrate crate's own yet; the module keeps tests
//! writing `common::...`.

#![allow(dead_code, unused_imports)]

pub use dreamtown_test_support::*;
