//! The two families' data on Redis keys: the stores that implement the pure
//! cores' traits (`crate::dreams::store`, `crate::town`) over the key API,
//! opening every key with its ACL and type checks up front so that later
//! writes cannot fail, the lease set both families keep ([`leases`]), and
//! each family's lease expiry for the lease timer.

pub mod dreams;
pub mod leases;
pub mod town;
