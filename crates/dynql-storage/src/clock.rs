//! The one place the store reads the wall clock: commit timestamps, "now" for TTL and
//! compaction ages. The kernel never does (see `kernel/mod.rs`); the next step of
//! `docs/design/0011-storage-layers.md` makes this clock injectable for seeded simulations.

use crate::kernel::timestamp::{Timestamp, COUNTER_BITS};

impl Timestamp {
    /// The current time: unix seconds, and the nanoseconds of the second as the counter
    /// (10^9 < 2^30), so a timestamp generated now is below every commit made later.
    pub fn now() -> Timestamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp((now.as_secs() << COUNTER_BITS) | u64::from(now.subsec_nanos()))
    }

    /// A fresh timestamp: now, and strictly after `last`.
    pub fn next_after(last: Timestamp) -> Timestamp {
        Timestamp::now().max(Timestamp(last.0 + 1))
    }

    /// `read` where it is a real timestamp, the current time where it is one of the
    /// "latest" sentinels: what rules that depend on the read's time (TTL) are given.
    pub fn resolve_latest(read: Timestamp) -> Timestamp {
        if read.is_latest() {
            Timestamp::now()
        } else {
            read
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_timestamps_increase_and_carry_seconds() {
        let a = Timestamp::next_after(Timestamp::MIN);
        let b = Timestamp::next_after(a);
        assert!(b > a);
        assert!(a.unix_seconds() > 1_600_000_000);
        let generated = Timestamp::next_after(b);
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(
            Timestamp::next_after(b) > generated,
            "a later commit must follow a generated timestamp"
        );
        let far = Timestamp::from_unix_seconds(4_000_000_000);
        assert_eq!(Timestamp::next_after(far), Timestamp(far.0 + 1));
    }
}
