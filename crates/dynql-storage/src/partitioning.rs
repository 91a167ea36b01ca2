//! Auto-partitioning by size, as the store runs it: rounds of the splits and merges that
//! [`crate::kernel::partitioning`] plans from the catalog, each committed as one
//! [`Action::Reshard`](crate::log::Action) (design note 0008).

use crate::error::Result;
use crate::kernel::partitioning::*;

/// Most rounds of splits and merges one call makes: each round at least halves what it
/// splits, so a tablet 2^16 times the partition size is the most one call can bring down.
const MAX_ROUNDS: usize = 16;

impl crate::store::Store {
    /// Auto-partitions the sorted table at `path` by size, if its settings ask for it
    /// (`auto_partitioning_by_size`): rounds of splits and merges until none applies. Returns
    /// the rounds committed (none when nothing changed).
    ///
    /// # Errors
    /// No such table; the store failed.
    pub async fn partition_by_size(&self, path: &str) -> Result<Vec<Repartition>> {
        let entry = self.table(path).await?;
        let limit = entry.auto_partitioning.partition_size_bytes();
        self.partition_with_limit(path, limit).await
    }

    /// [`Store::partition_by_size`] with a tablet splitting above `limit` bytes (tests use
    /// limits far below a megabyte).
    pub(crate) async fn partition_with_limit(
        &self,
        path: &str,
        limit: u64,
    ) -> Result<Vec<Repartition>> {
        let mut rounds = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let state = self.refresh().await?;
            let (entry, data) = state.table_data(path)?;
            let settings = entry.auto_partitioning;
            if !settings.by_size || !entry.schema.is_sorted() {
                break;
            }
            let Some(change) = plan(&entry.pivot_keys, &data.chunks, &settings, limit) else {
                break;
            };
            let table_id = entry.id.clone();
            let planned_from = entry.pivot_keys.clone();
            let (_, seq) = self
                .append_commit(None, |state| {
                    let (current, _) = state.table_data(path)?;
                    // Planned from other pivots (a concurrent split or reshard), or the table
                    // changed: nothing to do this round.
                    if current.id != table_id
                        || current.pivot_keys != planned_from
                        || !current.auto_partitioning.by_size
                    {
                        return Ok(vec![]);
                    }
                    Ok(vec![crate::log::Action::Reshard {
                        path: path.into(),
                        table_id: table_id.clone(),
                        tablet_count: change.pivots.len(),
                        pivot_keys: change.pivots.clone(),
                    }])
                })
                .await?;
            if seq.is_none() {
                break;
            }
            rounds.push(change);
        }
        Ok(rounds)
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use dynql_core::{compare_rows, Value};

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Write(i64, i64),
        Delete(i64),
        Flush,
        Partition,
        /// A full compaction, which partitions by the table's own size (1 MB) first.
        Compact,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0i64..200, 0i64..1000).prop_map(|(k, v)| Op::Write(k, v)),
            1 => (0i64..200).prop_map(Op::Delete),
            2 => Just(Op::Flush),
            2 => Just(Op::Partition),
            1 => Just(Op::Compact),
        ]
    }

    /// Runs `ops` on a table that partitions by size with a tablet splitting above `limit`
    /// bytes; checks every read against a map of the rows written and the pivots' invariants
    /// after every round. Returns the most tablets the table had, and its tablets at the end.
    async fn run(ops: &[Op], limit: u64) -> (usize, usize) {
        use crate::kernel::catalog::TableOptions;
        use crate::kernel::mvcc::WriteKind;
        use crate::kernel::timestamp::Timestamp;
        use crate::store::Store;
        use std::collections::BTreeMap;
        let store = Store::open("memory://").unwrap();
        let schema = crate::test_tables::key_value_schema();
        let settings = AutoPartitioning {
            by_size: true,
            partition_size_mb: 1,
            min_partitions_count: 1,
            max_partitions_count: 6,
        };
        let options = TableOptions {
            auto_partitioning: settings,
            // Only the rounds below change the tablets.
            enable_compaction_and_partitioning: Some(false),
            ..TableOptions::default()
        };
        store.create_table("//t", schema, options).await.unwrap();
        let mut model = BTreeMap::new();
        let mut most = 1;
        for op in ops {
            match op {
                Op::Write(k, v) => {
                    let row = vec![Some(Value::Int64(*k)), Some(Value::Int64(*v))];
                    store
                        .write_rows("//t", WriteKind::Overwrite, false, vec![row])
                        .await
                        .unwrap();
                    model.insert(*k, *v);
                }
                Op::Delete(k) => {
                    let row = vec![Some(Value::Int64(*k)), None];
                    store
                        .write_rows("//t", WriteKind::Delete, false, vec![row])
                        .await
                        .unwrap();
                    model.remove(k);
                }
                Op::Flush => {
                    store.flush_table("//t").await.unwrap();
                }
                Op::Partition | Op::Compact => {
                    if let Op::Compact = op {
                        store.compact("//t").await.unwrap();
                    } else {
                        store.partition_with_limit("//t", limit).await.unwrap();
                    }
                    let entry = store.table("//t").await.unwrap();
                    let pivots = &entry.pivot_keys;
                    assert!(pivots[0].0.is_empty(), "{pivots:?}");
                    assert!(
                        pivots
                            .windows(2)
                            .all(|w| compare_rows(&w[0].0, &w[1].0) == Ordering::Less),
                        "{pivots:?}"
                    );
                    assert!(pivots.len() as u64 <= settings.max_partitions_count);
                    assert_eq!(entry.tablet_count, pivots.len());
                    most = most.max(pivots.len());
                }
            }
            let read = store.read_rows("//t", Timestamp::MAX).await.unwrap();
            let expected: Vec<Vec<Value>> = model
                .iter()
                .map(|(k, v)| vec![Value::Int64(*k), Value::Int64(*v)])
                .collect();
            assert_eq!(read, expected, "after {op:?}");
        }
        (most, store.table("//t").await.unwrap().tablet_count)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Splits and merges never change what a read returns, and keep the pivots valid.
        #[test]
        fn splits_and_merges_never_change_a_read(
            ops in proptest::collection::vec(op(), 1..120),
            limit in 1_000u64..8_000,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(run(&ops, limit));
        }
    }

    /// The property's workload does split: flushes of rising keys outgrow a small limit.
    #[tokio::test]
    async fn growing_tables_split_and_shrinking_ones_merge() {
        let mut ops = Vec::new();
        for batch in 0..8 {
            for k in 0..25 {
                ops.push(Op::Write(batch * 25 + k, k));
            }
            ops.push(Op::Flush);
        }
        ops.push(Op::Partition);
        let (most, now) = run(&ops, 3_000).await;
        assert!(most >= 3, "only {most} tablets");
        assert_eq!(now, most);
        // Emptied and compacted, the tablets merge back into one (the 1 MB partition size
        // of the table's settings: a few kilobytes is far below a quarter of it).
        ops.extend((0..200).map(Op::Delete));
        ops.push(Op::Compact);
        let (_, now) = run(&ops, 3_000).await;
        assert_eq!(now, 1);
    }
}
