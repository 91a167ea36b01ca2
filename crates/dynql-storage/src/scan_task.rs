//! A scan as plain data ([`ScanTask`]): what to read (the store, the log position, the
//! table, the read timestamp, the tablets, key ranges and columns, a row limit) with nothing
//! live in it, so it can be written down (serde: JSON, or any other format), sent to
//! another process and run there. That process opens the same store, goes to the same log
//! position ([`Store::snapshot_at`]) and plans the same scan: unflushed rows and tablet
//! numbering are those of the position, whatever was committed since (issue 42, step 3;
//! design note 0011). A distributed plan ships one task per tablet.

use futures::stream::{BoxStream, StreamExt};

use arrow::record_batch::RecordBatch;

use crate::error::{Error, Result};
use crate::kernel::key_range::KeyRange;
use crate::kernel::timestamp::Timestamp;
use crate::store::Store;
use crate::stream::{Prefetch, TableScan};

/// A scan of one table at one log position, as data.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql_storage::{ScanTask, Store, TableOptions, Timestamp};
/// let store = Store::open("memory://")?;
/// let schema = dynql_core::TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]")?;
/// store.create_table("//t", schema, TableOptions::default()).await?;
/// let scan = store.plan_table_scan("//t", None, Timestamp::SYNC_LAST_COMMITTED).await?;
/// let task = scan.task(None, None);
/// let sent = serde_json::to_string(&task).unwrap();
/// let received: ScanTask = serde_json::from_str(&sent).unwrap();
/// assert_eq!(received, task);
/// # Ok::<(), dynql_storage::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScanTask {
    /// The URL of the store (what a process opens to run the task).
    pub store: String,
    /// The log position read: the last commit record the scan sees.
    pub seq: u64,
    /// The table's path, and its id at that position (checked when the task is run).
    pub path: String,
    pub table_id: String,
    /// The read timestamp (YT's: a real timestamp, or a "latest" sentinel, which reads
    /// everything committed up to `seq`).
    pub timestamp: u64,
    /// The tablets to read, in the order read (a subset of what the ranges meet).
    pub tablets: Vec<usize>,
    /// The key ranges, normalized (sorted, not overlapping).
    #[serde(with = "wire_ranges")]
    pub ranges: Vec<KeyRange>,
    /// The columns to give (indices into the table's query schema); `None`: all.
    pub columns: Option<Vec<usize>>,
    /// At most this many rows; `None`: every row.
    pub limit: Option<u64>,
}

/// Key ranges as serde sees them: each bound a list of values and whether it lies after
/// them; a double by its bits, so that every value (NaN, -0.0) comes back as it went.
mod wire_ranges {
    use dynql_core::Value;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::kernel::key_range::{KeyBound, KeyRange};

    #[derive(Serialize, Deserialize)]
    enum WireValue {
        Null,
        Int64(i64),
        Uint64(u64),
        Double(u64),
        Boolean(bool),
        String(Vec<u8>),
        Any(Vec<u8>),
    }

    #[derive(Serialize, Deserialize)]
    struct WireBound {
        prefix: Vec<WireValue>,
        after: bool,
    }

    #[derive(Serialize, Deserialize)]
    struct WireRange {
        lower: WireBound,
        upper: WireBound,
    }

    fn to_wire(b: &KeyBound) -> WireBound {
        WireBound {
            prefix: b
                .prefix
                .iter()
                .map(|v| match v {
                    Value::Null => WireValue::Null,
                    Value::Int64(i) => WireValue::Int64(*i),
                    Value::Uint64(u) => WireValue::Uint64(*u),
                    Value::Double(d) => WireValue::Double(d.to_bits()),
                    Value::Boolean(b) => WireValue::Boolean(*b),
                    Value::String(s) => WireValue::String(s.clone()),
                    Value::Any(a) => WireValue::Any(a.clone()),
                })
                .collect(),
            after: b.after,
        }
    }

    fn from_wire(b: WireBound) -> KeyBound {
        KeyBound::new(
            b.prefix
                .into_iter()
                .map(|v| match v {
                    WireValue::Null => Value::Null,
                    WireValue::Int64(i) => Value::Int64(i),
                    WireValue::Uint64(u) => Value::Uint64(u),
                    WireValue::Double(bits) => Value::Double(f64::from_bits(bits)),
                    WireValue::Boolean(b) => Value::Boolean(b),
                    WireValue::String(s) => Value::String(s),
                    WireValue::Any(a) => Value::Any(a),
                })
                .collect(),
            b.after,
        )
    }

    pub(super) fn serialize<S: Serializer>(ranges: &[KeyRange], s: S) -> Result<S::Ok, S::Error> {
        let wire: Vec<WireRange> = ranges
            .iter()
            .map(|r| WireRange {
                lower: to_wire(&r.lower),
                upper: to_wire(&r.upper),
            })
            .collect();
        wire.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<KeyRange>, D::Error> {
        let wire = Vec::<WireRange>::deserialize(d)?;
        Ok(wire
            .into_iter()
            .map(|r| KeyRange {
                lower: from_wire(r.lower),
                upper: from_wire(r.upper),
            })
            .collect())
    }
}

impl TableScan {
    /// This scan as data (see [`ScanTask`]), giving `columns` (all when `None`) and at most
    /// `limit` rows.
    pub fn task(&self, columns: Option<Vec<usize>>, limit: Option<u64>) -> ScanTask {
        ScanTask {
            store: self.store.url().to_string(),
            seq: self.state.seq,
            path: self.path.clone(),
            table_id: self.entry.id.clone(),
            timestamp: self.timestamp.0,
            tablets: self.tablets.clone(),
            ranges: self.ranges.as_ref().clone(),
            columns,
            limit,
        }
    }
}

impl ScanTask {
    /// The task's tablets, each as a task of its own (in order): one per worker.
    pub fn per_tablet(&self) -> Vec<ScanTask> {
        self.tablets
            .iter()
            .map(|&t| ScanTask {
                tablets: vec![t],
                ..self.clone()
            })
            .collect()
    }

    /// Plans the task's scan on `store` (the same store, opened by any process): at the
    /// task's log position, with its ranges and timestamp.
    ///
    /// # Errors
    /// The position is too old or past the store's newest commit (see
    /// [`Store::snapshot_at`]); no such table there, or another table than the task's (a
    /// different store); a tablet the ranges do not meet.
    pub async fn plan(&self, store: &Store) -> Result<TableScan> {
        let snapshot = store.snapshot_at(self.seq).await?;
        let scan =
            snapshot.plan_table_scan(&self.path, Some(&self.ranges), Timestamp(self.timestamp))?;
        if scan.entry.id != self.table_id {
            return Err(Error::Invalid(format!(
                "The scan task reads table {} ({}) at log position {}, but this store has table {} there: run it on the store it was planned on ({})",
                self.path, self.table_id, self.seq, scan.entry.id, self.store
            )));
        }
        if let Some(t) = self.tablets.iter().find(|t| !scan.tablets.contains(t)) {
            return Err(Error::Invalid(format!(
                "The scan task reads tablet {t} of {}, which its key ranges do not meet",
                self.path
            )));
        }
        Ok(scan)
    }

    /// Runs the task on `store`: its rows as batches of at most `batch_rows` (byte strings
    /// as `BinaryView`), its tablets in order, stopping after `limit` rows.
    ///
    /// # Errors
    /// See [`ScanTask::plan`]; reading a chunk fails.
    pub async fn stream(
        &self,
        store: &Store,
        batch_rows: usize,
        prefetch: Prefetch,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let scan = self.plan(store).await?;
        if self.limit == Some(0) {
            return Ok(futures::stream::empty().boxed());
        }
        let stream = scan.stream(
            self.tablets.clone(),
            self.columns.clone(),
            true,
            batch_rows,
            prefetch,
        )?;
        let Some(limit) = self.limit else {
            return Ok(stream.boxed());
        };
        // The rows still to give; the stream ends (and its reads stop) once none are.
        let limited = stream
            .scan(limit, |left, batch| {
                let out = match batch {
                    _ if *left == 0 => None,
                    Ok(b) => {
                        let take = (b.num_rows() as u64).min(*left);
                        *left -= take;
                        Some(Ok(b.slice(0, take as usize)))
                    }
                    Err(e) => Some(Err(e)),
                };
                futures::future::ready(out)
            })
            .boxed();
        Ok(limited)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dynql_core::{TableSchema, Value};
    use futures::TryStreamExt;

    use super::*;
    use crate::kernel::mvcc::WriteKind;
    use crate::{KeyBound, TableOptions};

    use crate::test_tables::key_value_row as row;

    async fn keys_and_values(task: &ScanTask, store: &Store) -> Vec<(i64, i64)> {
        let batches: Vec<RecordBatch> = task
            .stream(store, 7, Prefetch::Task)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        crate::test_tables::key_value_pairs(&batches)
    }

    /// A task planned in one process and sent as JSON reads, in another process and after
    /// later commits (overwrites, a flush, a compaction, a reshard), exactly what the first
    /// process would have read: per tablet, with a key range, a projection and a limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_sent_to_another_process_reads_its_position() {
        let objects = Arc::new(object_store::memory::InMemory::new());
        let planner = Store::from_object_store(objects.clone(), "memory://shared");
        let schema = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=w;type=int64}]",
        )
        .unwrap();
        let options = TableOptions {
            pivot_keys: Some(vec![vec![], vec![Value::Int64(50)]]),
            ..TableOptions::default()
        };
        planner.create_table("//t", schema, options).await.unwrap();
        let rows = |v: i64| -> Vec<Vec<Option<Value>>> {
            (0..100)
                .map(|k| {
                    let mut r = row(k, v);
                    r.push(Some(Value::Int64(-k)));
                    r
                })
                .collect()
        };
        planner
            .write_rows("//t", WriteKind::Overwrite, false, rows(1))
            .await
            .unwrap();
        planner.flush_table("//t").await.unwrap();
        // Unflushed overwrites of some keys: the task must see them too.
        planner
            .write_rows("//t", WriteKind::Overwrite, false, rows(2)[40..60].to_vec())
            .await
            .unwrap();
        let range = KeyRange {
            lower: KeyBound::new(vec![Value::Int64(30)], false),
            upper: KeyBound::new(vec![Value::Int64(70)], false),
        };
        let scan = planner
            .plan_table_scan("//t", Some(&[range]), Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert_eq!(scan.tablets(), &[0, 1]);
        let task = scan.task(Some(vec![0, 1]), None);
        let expected: Vec<(i64, i64)> = (30..70)
            .map(|k| (k, if (40..60).contains(&k) { 2 } else { 1 }))
            .collect();
        assert_eq!(keys_and_values(&task, &planner).await, expected);

        // Later commits change everything the task reads.
        planner
            .write_rows("//t", WriteKind::Overwrite, false, rows(3))
            .await
            .unwrap();
        planner.compact("//t").await.unwrap();

        let sent = serde_json::to_string(&task).unwrap();
        let worker = Store::from_object_store(objects, "memory://shared");
        let received: ScanTask = serde_json::from_str(&sent).unwrap();
        assert_eq!(keys_and_values(&received, &worker).await, expected);
        // One task per tablet: together they read the whole.
        let mut together = Vec::new();
        for part in received.per_tablet() {
            together.extend(keys_and_values(&part, &worker).await);
        }
        assert_eq!(together, expected);
        // A limit stops the rows there.
        let limited = ScanTask {
            limit: Some(12),
            ..received.clone()
        };
        assert_eq!(keys_and_values(&limited, &worker).await, expected[..12]);
        let none = ScanTask {
            limit: Some(0),
            ..received.clone()
        };
        assert!(keys_and_values(&none, &worker).await.is_empty());
        // Another table at the path (another store) is refused.
        let other = Store::open("memory://").unwrap();
        let wrong = other
            .plan_table_scan("//t", None, Timestamp::SYNC_LAST_COMMITTED)
            .await;
        assert!(wrong.is_err());
        let forged = ScanTask {
            table_id: "not-this-one".into(),
            ..received
        };
        let err = forged.plan(&worker).await.unwrap_err();
        assert!(
            err.to_string().contains("the store it was planned on"),
            "{err}"
        );
    }
}
