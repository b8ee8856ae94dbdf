//! The docs of the options several commands take (`COUNT`, `LEASE`), and
//! the option readers both families share (defined once, in
//! `dreamtown_protocol::request::options`).

use crate::glue::command::{Arg, ArgKind};

/// `[COUNT count]`, for docs.
pub const COUNT_ARG: Arg = Arg::new("count", ArgKind::Integer).token("COUNT").optional();

/// `[LEASE secs]`, for docs.
pub const LEASE_ARG: Arg = Arg::new("secs", ArgKind::Double).token("LEASE").optional();

pub use dreamtown_protocol::request::options::{flag_once, given_twice, lease_secs, unknown_option};
