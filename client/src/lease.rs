//! Leases as the client sees them: the result of running work while a
//! lease is kept alive, and how often it is renewed.

use std::future::Future;
use std::time::Duration;

/// What `hold_lease` returns: the work's output, and whether the lease was
/// kept the whole time (`false`: an extension found it leased to no one,
/// so the item went back to ready/the inbox and may run twice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held<T> {
    /// The work's output.
    pub output: T,
    /// Every renewal found the lease still ours.
    pub lease_kept: bool,
}

/// Renew a lease of `lease` every third of it (at least every 10 ms), so
/// two renewals can be late before it runs out.
pub(crate) fn renew_period(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(10))
}

/// Run `work` while `extend` renews a lease of `lease` every
/// [`renew_period`]; `extend` answers whether the lease was still ours.
/// The first renewal that finds it gone stops the renewals, and the work
/// then runs to its end unleased ([`Held::lease_kept`] false).
pub(crate) async fn hold<F, R>(
    lease: Duration,
    work: F,
    mut extend: impl FnMut() -> R,
) -> crate::Result<Held<F::Output>>
where
    F: Future,
    R: Future<Output = crate::Result<bool>>,
{
    let mut work = std::pin::pin!(work);
    let period = renew_period(lease);
    loop {
        tokio::select! {
            output = &mut work => return Ok(Held { output, lease_kept: true }),
            () = tokio::time::sleep(period) => {}
        }
        if !extend().await? {
            return Ok(Held { output: work.await, lease_kept: false });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewals_come_three_times_a_lease() {
        assert_eq!(renew_period(Duration::from_secs(30)), Duration::from_secs(10));
        assert_eq!(renew_period(Duration::from_millis(3)), Duration::from_millis(10));
    }
}
