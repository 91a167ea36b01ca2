//! YT timestamps: a u64 whose high bits are unix seconds and whose low 30 bits count commits
//! within that second. See DESIGN.md "Data model".

use std::fmt;

/// Bits of the in-second counter.
pub const COUNTER_BITS: u32 = 30;

/// A YT timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// Reads the latest committed state (YT `SyncLastCommittedTimestamp`).
    pub const SYNC_LAST_COMMITTED: Timestamp = Timestamp(0x3fff_ffff_ffff_ff01);
    /// Reads a recent committed state (YT `AsyncLastCommittedTimestamp`); same as sync here.
    pub const ASYNC_LAST_COMMITTED: Timestamp = Timestamp(0x3fff_ffff_ffff_ff04);
    /// The largest real timestamp (YT `MaxTimestamp`).
    pub const MAX: Timestamp = Timestamp(0x3fff_ffff_ffff_ff00);
    /// Before every commit.
    pub const MIN: Timestamp = Timestamp(0);

    /// A timestamp for `unix_seconds` with counter 0.
    pub fn from_unix_seconds(unix_seconds: u64) -> Timestamp {
        Timestamp(unix_seconds << COUNTER_BITS)
    }

    /// The unix seconds part.
    pub fn unix_seconds(self) -> u64 {
        self.0 >> COUNTER_BITS
    }

    /// Whether a read at this timestamp reads the latest state: the "last committed"
    /// sentinels, and [`Timestamp::MAX`], which sees every commit. Other values above
    /// `MAX` are not timestamps at all ([`Timestamp::check_read`] refuses them).
    pub fn is_latest(self) -> bool {
        matches!(
            self,
            Timestamp::MAX | Timestamp::SYNC_LAST_COMMITTED | Timestamp::ASYNC_LAST_COMMITTED
        )
    }

    /// Checks that this can be a read timestamp: at most [`Timestamp::MAX`], or one of the
    /// "last committed" sentinels (YT's `ValidateReadTimestamp`). How far ahead of the clock a
    /// real timestamp may be is the store's check (`Store::settle_read_timestamp`).
    ///
    /// # Errors
    /// The message for a value above `MAX` that is no sentinel (`2^62`, `u64::MAX`, …).
    pub fn check_read(self) -> Result<(), String> {
        if self <= Timestamp::MAX || self.is_latest() {
            return Ok(());
        }
        Err(format!(
            "Invalid read timestamp {self} ({:#x}): above the largest timestamp {} ({:#x}) and not sync_last_committed ({:#x}) or async_last_committed ({:#x})",
            self.0,
            Timestamp::MAX,
            Timestamp::MAX.0,
            Timestamp::SYNC_LAST_COMMITTED.0,
            Timestamp::ASYNC_LAST_COMMITTED.0,
        ))
    }

    /// Parses a number or the names `sync_last_committed` / `async_last_committed`.
    pub fn parse(text: &str) -> Option<Timestamp> {
        match text {
            "sync_last_committed" => Some(Timestamp::SYNC_LAST_COMMITTED),
            "async_last_committed" => Some(Timestamp::ASYNC_LAST_COMMITTED),
            _ => {
                let t = text.trim();
                let parsed = match t.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).ok(),
                    None => t.trim_end_matches('u').parse().ok(),
                };
                parsed.map(Timestamp)
            }
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_and_sentinels() {
        assert_eq!(
            Timestamp::parse("sync_last_committed"),
            Some(Timestamp::SYNC_LAST_COMMITTED)
        );
        assert_eq!(
            Timestamp::parse("0x3fffffffffffff04"),
            Some(Timestamp::ASYNC_LAST_COMMITTED)
        );
        assert_eq!(Timestamp::parse("42"), Some(Timestamp(42)));
        assert!(Timestamp::SYNC_LAST_COMMITTED.is_latest());
        assert_eq!(Timestamp::parse("x"), None);
    }

    #[test]
    fn read_timestamps_above_max_are_only_the_sentinels() {
        for ok in [
            Timestamp::MIN,
            Timestamp(42),
            Timestamp(Timestamp::MAX.0 - 1),
            Timestamp::MAX,
            Timestamp::SYNC_LAST_COMMITTED,
            Timestamp::ASYNC_LAST_COMMITTED,
        ] {
            assert_eq!(ok.check_read(), Ok(()), "{ok}");
        }
        for bad in [
            Timestamp(Timestamp::MAX.0 + 2),
            Timestamp((1 << 62) - 1),
            Timestamp(1 << 62),
            Timestamp(u64::MAX),
        ] {
            let err = bad.check_read().unwrap_err();
            assert!(err.starts_with("Invalid read timestamp"), "{err}");
            assert!(!bad.is_latest(), "{bad}");
        }
    }
}
