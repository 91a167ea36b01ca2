//! Commits: a record built from the actions validated against the newest state, appended to
//! the log as the next sequence number with `PutMode::Create`; losing the race to another
//! writer means refresh and retry (so concurrent writers never lose a commit).

use crate::error::{Error, Result};
use crate::io::log_store::Append;
use crate::kernel::timestamp::{Timestamp, COUNTER_BITS};
use crate::log::{Action, CommitRecord};
use crate::state::State;
use crate::store::{Store, CHECKPOINT_INTERVAL, MAX_COMMIT_ATTEMPTS};

/// How far ahead of the clock a read timestamp may be: the read waits that long at most (see
/// [`Store::settle_read_timestamp`]).
pub const MAX_READ_AHEAD_NANOS: u64 = 1_000_000_000;

/// Nanoseconds since the epoch of a timestamp drawn from the clock (seconds and the
/// nanoseconds of the second as the counter, see [`Timestamp::now`]).
fn timestamp_nanos(t: Timestamp) -> u64 {
    let counter = t.0 & ((1 << COUNTER_BITS) - 1);
    t.unix_seconds()
        .saturating_mul(1_000_000_000)
        .saturating_add(counter)
}

fn describe_nanos(nanos: u64) -> String {
    if nanos >= 1_000_000_000 {
        format!("{} s", nanos / 1_000_000_000)
    } else {
        format!("{} ms", nanos / 1_000_000)
    }
}

impl Store {
    /// Validates and appends one commit built from the current state, retrying when another
    /// writer wins the sequence number. Returns the commit timestamp.
    pub(crate) async fn commit(
        &self,
        build: impl Fn(&State) -> Result<Vec<Action>>,
    ) -> Result<Timestamp> {
        self.commit_as(None, build).await
    }

    pub(crate) async fn commit_as(
        &self,
        transaction_id: Option<&str>,
        build: impl Fn(&State) -> Result<Vec<Action>>,
    ) -> Result<Timestamp> {
        let (timestamp, seq) = self.append_commit(transaction_id, build).await?;
        if seq.is_some_and(|seq| seq % CHECKPOINT_INTERVAL == 0) {
            // A checkpoint only speeds up opening; the log stays the truth, so a failed one
            // is retried at the next interval.
            let _ = self.checkpoint().await;
        }
        Ok(timestamp)
    }

    /// The commit loop without the checkpoint trigger: returns the commit timestamp and the
    /// record's position (`None` when there was nothing to commit).
    #[tracing::instrument(level = "debug", skip_all, fields(tx = transaction_id))]
    pub(crate) async fn append_commit(
        &self,
        transaction_id: Option<&str>,
        build: impl Fn(&State) -> Result<Vec<Action>>,
    ) -> Result<(Timestamp, Option<u64>)> {
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let state = self.refresh().await?;
            let actions = build(&state)?;
            if actions.is_empty() {
                return Ok((state.last_timestamp, None));
            }
            let timestamp = self.fresh.next_after(state.last_timestamp);
            let record = CommitRecord {
                seq: state.seq + 1,
                timestamp: timestamp.0,
                transaction_id: transaction_id.map(str::to_string),
                actions,
                // Bounds the damage should the record before this one be lost.
                previous: state.last_record.clone().filter(|p| p.seq == state.seq),
                lost: None,
            };
            match self.log.append(&record).await? {
                Append::Committed => {
                    self.refresh().await?;
                    return Ok((timestamp, Some(record.seq)));
                }
                Append::LostRace => continue,
            }
        }
        Err(Error::Contended(format!(
            "commit failed: lost the race for the next log record {MAX_COMMIT_ATTEMPTS} times; retry"
        )))
    }

    /// The timestamp of the latest commit.
    pub async fn last_committed_timestamp(&self) -> Result<Timestamp> {
        Ok(self.refresh().await?.last_timestamp)
    }

    /// Makes a read at `timestamp` repeatable: every commit not yet visible must draw a
    /// larger timestamp than the read. Commits draw `max(clock, last commit + 1)`, so a read at
    /// a timestamp at or below the latest commit, or below the clock, is repeatable as it is.
    /// One ahead of both waits for the clock to pass it when that is at most
    /// [`MAX_READ_AHEAD_NANOS`] away (a timestamp generated on a machine whose clock runs a
    /// little ahead), and is refused otherwise (design note 0002, "Read timestamps").
    ///
    /// # Errors
    /// [`Error::Invalid`] for a timestamp further ahead, or above [`Timestamp::MAX`] and no
    /// "last committed" sentinel ([`Timestamp::check_read`]).
    pub async fn settle_read_timestamp(&self, timestamp: Timestamp) -> Result<()> {
        timestamp.check_read().map_err(Error::Invalid)?;
        if timestamp.is_latest() {
            return Ok(());
        }
        let last = self.refresh().await?.last_timestamp;
        if timestamp <= last {
            return Ok(());
        }
        let now = self.fresh.now();
        if timestamp < now {
            return Ok(());
        }
        let ahead = timestamp_nanos(timestamp).saturating_sub(timestamp_nanos(now));
        if ahead > MAX_READ_AHEAD_NANOS {
            return Err(Error::Invalid(format!(
                "Cannot read at timestamp {timestamp}: it is {} ahead of the clock ({now}) and of the latest commit ({last}), so a later commit could draw a timestamp below it and change the answer; read at a timestamp from generate-timestamp or of a past commit",
                describe_nanos(ahead)
            )));
        }
        tokio::time::sleep(std::time::Duration::from_nanos(ahead + 1)).await;
        Ok(())
    }

    /// A fresh timestamp after every commit so far (`generate-timestamp`).
    pub async fn generate_timestamp(&self) -> Result<Timestamp> {
        Ok(self
            .fresh
            .next_after(self.last_committed_timestamp().await?))
    }
}
