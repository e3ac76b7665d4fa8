//! Per-instance retry delays: exponential with jitter, through `backon`,
//! reset by a success.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// The delays between attempts: 1 s doubling to at most `max`, jittered so
/// that instances failing together do not retry together.
pub fn delays(max: Duration) -> impl Iterator<Item = Duration> + Send {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_secs(1))
        .with_max_delay(max)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_stay_bounded() {
        let max = Duration::from_secs(30);
        let first: Vec<Duration> = delays(max).take(12).collect();
        assert_eq!(first.len(), 12, "the sequence never ends");
        assert!(first[0] >= Duration::from_secs(1) && first[0] <= Duration::from_secs(2));
        // Jitter adds at most one base delay, so the cap can be doubled at most.
        assert!(first.iter().all(|d| *d <= 2 * max), "{first:?}");
        assert!(first[11] >= Duration::from_secs(30), "{first:?}");
    }
}
