//! The Town settings (`CONFIG SET/GET dreamtown.<name>`), declared here and
//! registered by the module through [`crate::glue::config`].

use crate::glue::config::Numeric;
use crate::lease::LEASE_SECS_MAX;

/// `town-lease`: seconds a message received `RELIABLE` is leased when
/// `TOWN.RECV` names no `LEASE` (0: no lease).
pub static TOWN_LEASE: Numeric = Numeric::new("town-lease", 0, (0, LEASE_SECS_MAX as i64));

/// The configured Town lease in seconds, if any.
pub fn town_lease_secs() -> Option<f64> {
    let secs = TOWN_LEASE.get();
    (secs > 0).then_some(secs as f64)
}
