//! Riding out a slot that moves the legacy way: how long, and how often, a
//! call answered `TRYAGAIN` is sent again.
//!
//! While a tenant's slot moves by `CLUSTER SETSLOT ... IMPORTING/MIGRATING`
//! and `MIGRATE` (what `redis-cli --cluster reshard` does), every command of
//! the tenant is refused with `TRYAGAIN`, changing nothing, until
//! `SETSLOT ... NODE` ends the move (docs/resharding.md). A cluster
//! connection of the `redis` crate retries `TRYAGAIN` by itself, a set
//! number of times (16 by default, waiting 1.28 s or more each); a
//! connection built with fewer retries, or a move longer than those, hands
//! the refusal back. The typed clients then send the call again, with a
//! growing pause, until their deadline
//! ([`RedisFireQueue::with_tryagain_deadline`](crate::dreams::RedisFireQueue::with_tryagain_deadline),
//! [`Channel::with_tryagain_deadline`](crate::town::Channel::with_tryagain_deadline);
//! default [`DEFAULT_TRYAGAIN_DEADLINE`]), counted from the call's first
//! send. Resending is safe: the module's `TRYAGAIN` means the command ran
//! nowhere.

use std::time::Duration;

#[cfg(doc)]
use crate::Error;

/// How long a call keeps resending a command refused with `TRYAGAIN`
/// unless told otherwise (`with_tryagain_deadline` on the queue or
/// channel). The deadline counts from the call's first send; the pause
/// between sends is 10 ms, doubled after each refusal up to 500 ms; at the
/// deadline the call returns the `TRYAGAIN` ([`Error::is_retryable`]). The
/// `redis` crate's cluster connection retries first, by its own settings
/// (docs/client.md, "Slots that move"). Long enough for a legacy move of a slot holding a
/// deep queue and thousands of other keys (docs/resharding.md has the
/// measurements), short enough that a move stuck half-way surfaces as an
/// error.
///
/// ```
/// assert_eq!(dreamtown_client::DEFAULT_TRYAGAIN_DEADLINE.as_secs(), 30);
/// ```
pub const DEFAULT_TRYAGAIN_DEADLINE: Duration = Duration::from_secs(30);

/// The first pause before resending, doubled after each refusal up to
/// [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);

/// The longest pause between two sends.
const MAX_PAUSE: Duration = Duration::from_millis(500);

/// The pause after the `refusals`-th `TRYAGAIN` of one call (counting from
/// 0): 10 ms, 20 ms, 40 ms ... 500 ms, never past what is `left` of the
/// deadline.
pub(crate) fn pause(refusals: u32, left: Duration) -> Duration {
    let doubled = FIRST_PAUSE.saturating_mul(1_u32.checked_shl(refusals.min(16)).unwrap_or(u32::MAX));
    doubled.min(MAX_PAUSE).min(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap_and_never_pass_the_deadline() {
        let long = Duration::from_secs(60);
        assert_eq!(pause(0, long), Duration::from_millis(10));
        assert_eq!(pause(1, long), Duration::from_millis(20));
        assert_eq!(pause(5, long), Duration::from_millis(320));
        assert_eq!(pause(6, long), MAX_PAUSE);
        assert_eq!(pause(u32::MAX, long), MAX_PAUSE);
        assert_eq!(pause(6, Duration::from_millis(7)), Duration::from_millis(7));
        assert_eq!(pause(0, Duration::ZERO), Duration::ZERO);
    }
}
