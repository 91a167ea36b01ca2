//! Commits: a record built from the actions validated against the newest state, appended to
//! the log as the next sequence number with `PutMode::Create`; losing the race to another
//! writer means refresh and retry (so concurrent writers never lose a commit).

use crate::error::{Error, Result};
use crate::log::{self, Action, Append, CommitRecord};
use crate::store::*;
use crate::timestamp::Timestamp;

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
            let timestamp = Timestamp::next_after(state.last_timestamp);
            let record = CommitRecord {
                seq: state.seq + 1,
                timestamp: timestamp.0,
                transaction_id: transaction_id.map(str::to_string),
                actions,
            };
            match log::append(self.objects.as_ref(), &record).await? {
                Append::Committed => {
                    self.refresh().await?;
                    return Ok((timestamp, Some(record.seq)));
                }
                Append::LostRace => continue,
            }
        }
        Err(Error::Invalid(format!(
            "commit failed: lost the race for the next log record {MAX_COMMIT_ATTEMPTS} times; retry"
        )))
    }

    /// The timestamp of the latest commit.
    pub async fn last_committed_timestamp(&self) -> Result<Timestamp> {
        Ok(self.refresh().await?.last_timestamp)
    }

    /// A fresh timestamp after every commit so far (`generate-timestamp`).
    pub async fn generate_timestamp(&self) -> Result<Timestamp> {
        Ok(Timestamp::next_after(
            self.last_committed_timestamp().await?,
        ))
    }
}
