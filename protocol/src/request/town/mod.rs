//! The `TOWN.*` requests, and the argument readers they share.
