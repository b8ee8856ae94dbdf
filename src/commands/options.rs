//! The docs of the options several commands take (`COUNT`, `LEASE`); their
//! readers are the protocol's (`dreamtown_protocol::request::options`).

use crate::glue::command::{Arg, ArgKind};

/// `[COUNT count]`, for docs.
pub const COUNT_ARG: Arg = Arg::new("count", ArgKind::Integer).token("COUNT").optional();

/// `[LEASE secs]`, for docs.
pub const LEASE_ARG: Arg = Arg::new("secs", ArgKind::Double).token("LEASE").optional();
