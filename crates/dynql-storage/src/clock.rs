//! The one place the store reads the wall clock and makes ids: commit timestamps, "now" for
//! TTL, compaction ages and transaction deadlines, and the ids of tables, chunks, nodes,
//! locks and transactions. The kernel never reads a clock (see `kernel/mod.rs`): its rules
//! are given the time by their callers.
//!
//! Both sources are injected: a [`Store`](crate::Store) reads them through its
//! [`Fresh`] (set by [`Store::with_clock`](crate::Store::with_clock) and
//! [`Store::with_ids`](crate::Store::with_ids)), so a test or a seeded simulation can run a
//! store on a [`ManualClock`] and [`SeededIds`] and replay it exactly. Outside this module
//! the wall clock is not read: `clippy.toml` disallows `SystemTime::now` and
//! `std::process::id`, and this module alone allows them.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::kernel::timestamp::{Timestamp, COUNTER_BITS};

/// A source of the current time.
///
/// # Example
/// ```
/// use dynql_storage::{Clock, ManualClock};
/// let clock = ManualClock::new(1_700_000_000_000_000_000);
/// clock.advance(std::time::Duration::from_millis(5));
/// assert_eq!(clock.unix_nanos(), 1_700_000_000_005_000_000);
/// ```
pub trait Clock: Send + Sync + fmt::Debug {
    /// Nanoseconds since the Unix epoch.
    fn unix_nanos(&self) -> u64;
}

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one read of the wall clock
    fn unix_nanos(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to: for tests and seeded simulations.
#[derive(Debug)]
pub struct ManualClock {
    nanos: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `unix_nanos`.
    pub fn new(unix_nanos: u64) -> ManualClock {
        ManualClock {
            nanos: AtomicU64::new(unix_nanos),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        self.nanos.fetch_add(by.as_nanos() as u64, Ordering::SeqCst);
    }

    /// Puts the clock at `unix_nanos` (backwards too: a clock that steps back is one of the
    /// things a simulation may try; commit timestamps still increase, see
    /// [`Fresh::next_after`]).
    pub fn set(&self, unix_nanos: u64) {
        self.nanos.store(unix_nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn unix_nanos(&self) -> u64 {
        self.nanos.load(Ordering::SeqCst)
    }
}

/// A source of unique ids (of tables, chunks, Cypress nodes, locks, transactions). An id is
/// made of ASCII letters, digits and `-` only (it appears in object paths and in YT's `#ID`
/// syntax), and ids from one source never repeat.
pub trait IdGenerator: Send + Sync + fmt::Debug {
    /// A new id; `unix_nanos` is the store's clock now.
    fn next_id(&self, unix_nanos: u64) -> String;
}

/// Counts the ids of every [`ProcessIds`] in the process, so that two stores opened in one
/// process at the same instant still make different ids.
static PROCESS_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Ids as processes on many machines make them without talking: the time, the process id
/// and a counter of the process (`18edef71917f09b3-1299-0`).
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessIds;

impl IdGenerator for ProcessIds {
    #[allow(clippy::disallowed_methods)] // the process id makes ids of two processes differ
    fn next_id(&self, unix_nanos: u64) -> String {
        format!(
            "{unix_nanos:x}-{:x}-{:x}",
            std::process::id(),
            PROCESS_COUNTER.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// Ids from a seed and a counter (`5eed-0`, `5eed-1`, …): the same seed gives the same ids
/// in the same order, whatever the clock says. Stores that share one store's files must
/// not share a seed.
#[derive(Debug)]
pub struct SeededIds {
    seed: u64,
    next: AtomicU64,
}

impl SeededIds {
    /// Ids of `seed`, counted from 0.
    pub fn new(seed: u64) -> SeededIds {
        SeededIds {
            seed,
            next: AtomicU64::new(0),
        }
    }
}

impl IdGenerator for SeededIds {
    fn next_id(&self, _unix_nanos: u64) -> String {
        format!(
            "{:x}-{:x}",
            self.seed,
            self.next.fetch_add(1, Ordering::SeqCst)
        )
    }
}

/// A store's clock and id generator: where every fresh timestamp, time and id of the store
/// comes from.
#[derive(Clone, Debug)]
pub struct Fresh {
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl Default for Fresh {
    /// The wall clock and [`ProcessIds`].
    fn default() -> Fresh {
        Fresh::new(Arc::new(SystemClock), Arc::new(ProcessIds))
    }
}

impl Fresh {
    /// Times from `clock`, ids from `ids`.
    pub fn new(clock: Arc<dyn Clock>, ids: Arc<dyn IdGenerator>) -> Fresh {
        Fresh { clock, ids }
    }

    /// This source with another clock.
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Fresh {
        self.clock = clock;
        self
    }

    /// This source with another id generator.
    pub(crate) fn with_ids(mut self, ids: Arc<dyn IdGenerator>) -> Fresh {
        self.ids = ids;
        self
    }

    /// The current time: unix seconds, and the nanoseconds of the second as the counter
    /// (10^9 < 2^30), so a timestamp generated now is below every commit made later.
    pub fn now(&self) -> Timestamp {
        let nanos = self.clock.unix_nanos();
        Timestamp(((nanos / 1_000_000_000) << COUNTER_BITS) | (nanos % 1_000_000_000))
    }

    /// Unix milliseconds now (transaction deadlines, node creation times).
    pub fn now_ms(&self) -> u64 {
        self.clock.unix_nanos() / 1_000_000
    }

    /// A fresh timestamp: now, and strictly after `last`.
    pub fn next_after(&self, last: Timestamp) -> Timestamp {
        self.now().max(Timestamp(last.0 + 1))
    }

    /// `read` where it is a real timestamp, the current time where it is one of the
    /// "latest" sentinels: what rules that depend on the read's time (TTL) are given.
    pub fn resolve_latest(&self, read: Timestamp) -> Timestamp {
        if read.is_latest() {
            self.now()
        } else {
            read
        }
    }

    /// A new unique id.
    pub fn id(&self) -> String {
        self.ids.next_id(self.clock.unix_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_timestamps_increase_and_carry_seconds() {
        let fresh = Fresh::default();
        let a = fresh.next_after(Timestamp::MIN);
        let b = fresh.next_after(a);
        assert!(b > a);
        assert!(a.unix_seconds() > 1_600_000_000);
        let generated = fresh.next_after(b);
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert!(
            fresh.next_after(b) > generated,
            "a later commit must follow a generated timestamp"
        );
        let far = Timestamp::from_unix_seconds(4_000_000_000);
        assert_eq!(fresh.next_after(far), Timestamp(far.0 + 1));
    }

    #[test]
    fn a_manual_clock_and_seeded_ids_replay_exactly() {
        let run = || {
            let clock = Arc::new(ManualClock::new(1_700_000_000_123_456_789));
            let fresh = Fresh::new(clock.clone(), Arc::new(SeededIds::new(0x5eed)));
            let mut seen = Vec::new();
            for step in 0..5u64 {
                seen.push((fresh.now(), fresh.now_ms(), fresh.id()));
                clock.advance(std::time::Duration::from_micros(step * 7));
            }
            seen
        };
        let first = run();
        assert_eq!(first, run());
        assert_eq!(first[0].0.unix_seconds(), 1_700_000_000);
        assert_eq!(first[0].0 .0 & ((1 << COUNTER_BITS) - 1), 123_456_789);
        assert_eq!(first[0].1, 1_700_000_000_123);
        let ids: Vec<&str> = first.iter().map(|s| s.2.as_str()).collect();
        assert_eq!(ids, ["5eed-0", "5eed-1", "5eed-2", "5eed-3", "5eed-4"]);
    }

    #[test]
    fn commit_timestamps_increase_when_the_clock_steps_back() {
        let clock = Arc::new(ManualClock::new(2_000_000_000_000_000_000));
        let fresh = Fresh::new(clock.clone(), Arc::new(ProcessIds));
        let a = fresh.next_after(Timestamp::MIN);
        clock.set(1_000_000_000_000_000_000);
        let b = fresh.next_after(a);
        assert_eq!(b, Timestamp(a.0 + 1));
        assert_eq!(
            fresh.resolve_latest(Timestamp::SYNC_LAST_COMMITTED),
            fresh.now()
        );
    }

    #[test]
    fn process_ids_are_unique_and_plain() {
        let fresh = Fresh::new(Arc::new(ManualClock::new(42)), Arc::new(ProcessIds));
        let a = fresh.id();
        let b = fresh.id();
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }
}
