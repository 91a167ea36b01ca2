//! Opening the store as of a past log position ([`Store::snapshot_at`]): the newest
//! checkpoint at or below it, then the log records after the checkpoint up to it, replayed
//! as opening the store replays them. Any process that opens the same store gets the same
//! state at the same position (unflushed rows, tablets and their numbering included), which
//! is what a scan sent to another process needs (issue 42, step 3; design note 0011).
//!
//! What a position needs is kept while it is at or after the older of the two newest
//! checkpoints that read back whole: garbage collection deletes only the log records before
//! that checkpoint and the chunks neither it, a newer checkpoint nor a kept record names
//! (see `io/garbage.rs`). Checkpoints are written every
//! [`CHECKPOINT_INTERVAL`](crate::store::CHECKPOINT_INTERVAL) commits, so at least that many
//! of the latest positions can always be read; an older one fails with
//! [`Error::SnapshotTooOld`].

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::log::LogEntry;
use crate::store::Store;
use crate::stream::Snapshot;

impl Store {
    /// The store's state as of log position `seq` (the commit that wrote record `seq`, and
    /// every one before it; `0` is the empty store), however far the log has moved on since.
    ///
    /// # Errors
    /// A position past the newest commit ([`Error::Invalid`]); one whose records were
    /// collected ([`Error::SnapshotTooOld`]); the object store failing.
    pub async fn snapshot_at(&self, seq: u64) -> Result<Snapshot> {
        let latest = self.refresh().await?;
        if seq == latest.seq {
            return Ok(Snapshot::new(self.clone(), latest));
        }
        if seq > latest.seq {
            return Err(Error::Invalid(format!(
                "Cannot read the store at log position {seq}: its newest commit is record {}",
                latest.seq
            )));
        }
        let start = crate::io::checkpoint::load_at_or_below(self.objects.as_ref(), seq)
            .await?
            .unwrap_or_default();
        let too_old = |oldest: u64| Error::SnapshotTooOld { seq, oldest };
        let mut state = start;
        if state.seq < seq {
            let records: Vec<LogEntry> = match self.log.read_after(state.seq, false).await {
                Ok(records) => records,
                Err(Error::LogTruncated { first, .. }) => return Err(too_old(first)),
                Err(e) => return Err(e),
            };
            let records: Vec<LogEntry> =
                records.into_iter().take_while(|r| r.seq() <= seq).collect();
            // A record collected meanwhile leaves a gap at the start: the position is older
            // than what the log keeps.
            if let Some(first) = records.first().map(LogEntry::seq) {
                if first != state.seq + 1 {
                    return Err(too_old(first));
                }
            }
            let fetched = self.fetch_logged_chunks(&records).await?;
            crate::refresh::apply_entries(&mut state, &records, &fetched);
        }
        state.debug_check_invariants();
        if state.seq != seq {
            return Err(Error::Internal(format!(
                "replaying the log up to record {seq} stopped at record {}",
                state.seq
            )));
        }
        Ok(Snapshot::new(self.clone(), Arc::new(state)))
    }
}

#[cfg(test)]
mod tests {
    use arrow::record_batch::RecordBatch;
    use futures::TryStreamExt;

    use crate::kernel::mvcc::WriteKind;
    use crate::kernel::timestamp::Timestamp;
    use crate::test_tables::key_value_row as row;
    use crate::{Error, Prefetch, Store};

    /// The rows of `//t` in the store as of `seq`.
    async fn rows_at(store: &Store, seq: u64) -> Vec<(i64, i64)> {
        let snapshot = store.snapshot_at(seq).await.unwrap();
        assert_eq!(snapshot.seq(), seq);
        let scan = snapshot
            .plan_table_scan("//t", None, Timestamp::SYNC_LAST_COMMITTED)
            .unwrap();
        let tablets = scan.tablets().to_vec();
        let batches: Vec<RecordBatch> = scan
            .stream(tablets, None, false, 1024, Prefetch::Inline)
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        crate::test_tables::key_value_pairs(&batches)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_past_position_reads_as_the_store_read_then_from_any_process() {
        let objects = std::sync::Arc::new(object_store::memory::InMemory::new());
        let store = Store::from_object_store(objects.clone(), "memory://");
        crate::test_tables::create_key_value_table(&store, "//t").await;
        let created = store.snapshot().await.unwrap().seq();
        // Per commit: its log position and the rows then (unflushed, flushed, compacted,
        // and past a checkpoint).
        let mut history = vec![(created, vec![])];
        for round in 0..6i64 {
            store
                .write_rows(
                    "//t",
                    WriteKind::Overwrite,
                    false,
                    (0..4).map(|k| row(k * 2 + round % 2, round)).collect(),
                )
                .await
                .unwrap();
            match round {
                1 => drop(store.flush_table("//t").await.unwrap()),
                3 => drop(store.compact("//t").await.unwrap()),
                4 => drop(store.checkpoint().await.unwrap()),
                _ => {}
            }
            let seq = store.snapshot().await.unwrap().seq();
            history.push((seq, rows_at(&store, seq).await));
        }
        assert!(history.windows(2).all(|w| w[0].1 != w[1].1));
        let other = Store::from_object_store(objects, "memory://");
        for (seq, rows) in &history {
            assert_eq!(&rows_at(&store, *seq).await, rows, "at {seq}");
            assert_eq!(
                &rows_at(&other, *seq).await,
                rows,
                "another process, at {seq}"
            );
        }
        // Before the table was created it is not there.
        let before = store.snapshot_at(created - 1).await.unwrap();
        assert!(before
            .plan_table_scan("//t", None, Timestamp::SYNC_LAST_COMMITTED)
            .is_err());
        let past = history.last().unwrap().0 + 1;
        let err = store.snapshot_at(past).await.unwrap_err();
        assert!(err.to_string().contains("newest commit"), "{err}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_position_whose_records_were_collected_is_too_old() {
        let store = Store::open("memory://").unwrap().with_gc_grace_ms(0);
        crate::test_tables::create_key_value_table(&store, "//t").await;
        let first = store.snapshot().await.unwrap().seq();
        // Three checkpoints: collection keeps the two newest and the log after the older.
        let (mut rounds, mut checkpoints) = (Vec::new(), Vec::new());
        for round in 0..3 {
            for k in 0..3 {
                store
                    .write_rows("//t", WriteKind::Overwrite, false, vec![row(k, round)])
                    .await
                    .unwrap();
            }
            rounds.push(store.snapshot().await.unwrap().seq());
            checkpoints.push(store.checkpoint().await.unwrap());
        }
        match store.snapshot_at(first).await {
            Err(e @ Error::SnapshotTooOld { .. }) => {
                assert!(e.to_string().starts_with("Snapshot too old"), "{e}")
            }
            Ok(_) => panic!("the log before the older kept checkpoint was collected"),
            Err(e) => panic!("{e}"),
        }
        // The older kept checkpoint's position and those after it still read; before it,
        // the records are gone.
        let rows = |round: i64, upto: i64| (0..3).map(move |k| (k, round - i64::from(k >= upto)));
        assert_eq!(
            rows_at(&store, rounds[2]).await,
            rows(2, 3).collect::<Vec<_>>()
        );
        assert_eq!(
            rows_at(&store, rounds[2] - 1).await,
            rows(2, 2).collect::<Vec<_>>()
        );
        assert_eq!(
            rows_at(&store, checkpoints[1]).await,
            rows(1, 3).collect::<Vec<_>>()
        );
        assert!(matches!(
            store.snapshot_at(checkpoints[1] - 1).await,
            Err(Error::SnapshotTooOld { .. })
        ));
    }
}
