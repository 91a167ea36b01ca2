//! Pivot keys and resharding of [`crate::tablets`]: the pivots a new table gets
//! (`tablet_count`/`pivot_keys`), their checks, uniform and data-driven pivots, and
//! [`Store::reshard_table`] for sorted and ordered tables.

use dynql_core::{compare_rows, TableSchema, Value, ValueType};

use super::TabletState;
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::pivots::*;
use crate::kernel::timestamp::Timestamp;
use crate::log::Action;
use crate::store::Store;

/// Refuses a reshard of a table that is not unmounted (YT's rule).
fn unmounted_for_reshard(entry: &TableEntry, path: &str) -> Result<()> {
    if entry.tablet_state == TabletState::Unmounted {
        return Ok(());
    }
    let state = entry.tablet_state.name();
    Err(Error::wrong_state(
        path,
        state,
        format!("Cannot reshard table {path} since it is {state}: unmount-table first"),
    ))
}

impl Store {
    async fn reshard_queues(
        &self,
        path: &str,
        entry: &TableEntry,
        reshard: Reshard,
    ) -> Result<usize> {
        let (tablet_count, first, last, trimmed_row_counts) = match reshard {
            Reshard::Queues {
                tablet_count,
                first,
                last,
                trimmed_row_counts,
            } => (tablet_count, first, last, trimmed_row_counts),
            Reshard::TabletCount { count, uniform: false } => (count, None, None, vec![]),
            _ => {
                return Err(Error::Invalid(format!(
                    "{path} is an ordered table: reshard it by tablet count only (no pivot keys, no --uniform)"
                )))
            }
        };
        let current = entry.tablet_count;
        let first = first.unwrap_or(0);
        let last = last.unwrap_or(current.saturating_sub(1));
        if tablet_count == 0 {
            return Err(Error::Invalid("\"tablet_count\" must be positive".into()));
        }
        if first > last || last >= current {
            return Err(Error::Invalid(format!(
                "Invalid tablet range {first}..{last}: {path} has {current} tablets"
            )));
        }
        let span = last - first + 1;
        let new = tablet_count.saturating_sub(span);
        if !trimmed_row_counts.is_empty() && trimmed_row_counts.len() != new {
            return Err(Error::Invalid(format!(
                "--trimmed-row-counts has {} values but the reshard creates {new} tablets",
                trimmed_row_counts.len()
            )));
        }
        check_tablet_count("\"tablet_count\"", tablet_count)?;
        let result = current - span + tablet_count;
        check_tablet_count("The resulting number of tablets", result)?;
        let table_id = entry.id.clone();
        self.commit(|state| {
            let (e, data) = crate::validate::same_table(state, path, &table_id)?;
            unmounted_for_reshard(e, path)?;
            if tablet_count < span {
                for t in first + tablet_count..=last {
                    if data.queues.get(t).is_some_and(|q| q.trimmed > 0) {
                        return Err(Error::Invalid(format!(
                            "Cannot reshard {path}: tablet {t} would be removed but has trimmed rows, which could become readable again"
                        )));
                    }
                }
            }
            Ok(vec![Action::ReshardQueues {
                path: path.into(),
                table_id: table_id.clone(),
                first,
                last,
                tablet_count,
                trimmed_row_counts: if trimmed_row_counts.is_empty() {
                    vec![0; new]
                } else {
                    trimmed_row_counts.clone()
                },
            }])
        })
        .await?;
        Ok(result)
    }

    /// Pivots for `count` tablets of similar row counts, from the keys of the data (fewer
    /// tablets when there are fewer distinct keys, as YT does for small tables); an empty
    /// table with an integer first key column is split uniformly.
    async fn pivots_from_keys(
        &self,
        path: &str,
        schema: &TableSchema,
        count: usize,
    ) -> Result<Vec<Vec<Value>>> {
        let integer_first = matches!(
            schema.key_columns()[0].wire_type(),
            ValueType::Int64 | ValueType::Uint64
        );
        // The keys at even steps through the rows, read without holding the table.
        let (rows, keys) = self.keys_at_even_steps(path, Timestamp::MAX, count).await?;
        if rows == 0 && integer_first {
            return uniform_pivots(schema, count);
        }
        let mut pivots: Vec<Vec<Value>> = vec![vec![]];
        for k in keys {
            if pivots
                .last()
                .is_none_or(|p| compare_rows(p, &k) == std::cmp::Ordering::Less)
            {
                pivots.push(k);
            }
        }
        Ok(pivots)
    }

    /// Changes a table's tablets. Returns the new tablet count.
    ///
    /// # Errors
    /// Invalid pivots, `uniform` over a non-integer first key column, an ordered table
    /// (resharding queues is not supported yet).
    pub async fn reshard_table(&self, path: &str, reshard: Reshard) -> Result<usize> {
        let entry = self.table(path).await?;
        let schema = &entry.schema;
        unmounted_for_reshard(&entry, path)?;
        if !schema.is_sorted() {
            return self.reshard_queues(path, &entry, reshard).await;
        }
        let pivots = match reshard {
            Reshard::Queues { .. } => {
                return Err(Error::Invalid(format!(
                    "{path} is a sorted table: give pivot keys or a tablet count (--first-tablet-index, --last-tablet-index and --trimmed-row-counts are for ordered tables)"
                )))
            }
            Reshard::Pivots(p) => {
                check_tablet_count("The number of pivot keys", p.len())?;
                check_pivots(schema, &p)?;
                p
            }
            Reshard::TabletCount { count, uniform } => {
                check_count(count)?;
                if uniform {
                    uniform_pivots(schema, count)?
                } else {
                    self.pivots_from_keys(path, schema, count).await?
                }
            }
            Reshard::Sliced { count } => {
                check_count(count)?;
                let chunks = self.chunks(path).await?;
                if chunks.is_empty() {
                    self.pivots_from_keys(path, schema, count).await?
                } else {
                    crate::kernel::partitioning::slice_pivots(&chunks, count)
                }
            }
        };
        let typed = pivot_keys(&pivots);
        let tablet_count = pivots.len();
        self.commit(|state| {
            let (current, _) = crate::validate::same_table(state, path, &entry.id)?;
            // Checked again here: a mount that won the race would let writes land in
            // tablets this reshard is about to move.
            unmounted_for_reshard(current, path)?;
            Ok(vec![Action::Reshard {
                path: path.into(),
                table_id: current.id.clone(),
                tablet_count,
                pivot_keys: typed.clone(),
            }])
        })
        .await?;
        Ok(tablet_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::catalog::TableOptions;
    use crate::tablets::TabletCommand;

    #[test]
    fn tablet_counts_above_the_limit_are_refused_before_any_work() {
        let int = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        let with = |tablet_count| TableOptions {
            tablet_count: Some(tablet_count),
            ..TableOptions::default()
        };
        assert!(validate_tablets(&int, &with(MAX_TABLET_COUNT)).is_ok());
        let err = validate_tablets(&int, &with(10_000_000)).unwrap_err();
        assert!(
            err.to_string().contains("above the limit of 10000 tablets"),
            "{err}"
        );
        let queue = TableSchema::parse("[{name=a;type=int64}]").unwrap();
        assert!(validate_tablets(&queue, &with(MAX_TABLET_COUNT + 1)).is_err());
    }

    #[tokio::test]
    async fn reshards_above_the_limit_are_refused() {
        let s = Store::open("memory://").unwrap();
        let int = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        s.create_table("//t", int, TableOptions::default())
            .await
            .unwrap();
        s.create_table(
            "//q",
            TableSchema::parse("[{name=a;type=int64}]").unwrap(),
            TableOptions::default(),
        )
        .await
        .unwrap();
        for t in ["//t", "//q"] {
            s.set_tablet_state(t, TabletCommand::Unmount).await.unwrap();
            let err = s
                .reshard_table(
                    t,
                    Reshard::TabletCount {
                        count: 10_000_000,
                        uniform: false,
                    },
                )
                .await
                .unwrap_err();
            assert!(err.to_string().contains("above the limit"), "{t}: {err}");
        }
        let pivots: Vec<Vec<Value>> = std::iter::once(vec![])
            .chain((1..=MAX_TABLET_COUNT as i64).map(|i| vec![Value::Int64(i)]))
            .collect();
        let err = s
            .reshard_table("//t", Reshard::Pivots(pivots))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("pivot keys"), "{err}");
    }

    #[test]
    fn uniform_pivots_split_the_integer_range() {
        let int = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        assert_eq!(
            uniform_pivots(&int, 2).unwrap(),
            vec![vec![], vec![Value::Int64(0)]]
        );
        let text = TableSchema::parse("[{name=k;type=string;sort_order=ascending}]").unwrap();
        assert!(uniform_pivots(&text, 2)
            .unwrap_err()
            .to_string()
            .contains("integer first key column"));
        let uint = TableSchema::parse("[{name=k;type=uint64;sort_order=ascending}]").unwrap();
        let p = uniform_pivots(&uint, 3).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[1], vec![Value::Uint64(((1u128 << 64) / 3) as u64)]);
    }

    /// Issue 39: a narrow key splits its own type's range (every key used to land in tablet 0).
    #[test]
    fn uniform_pivots_follow_the_key_type() {
        let schema = |t: &str| {
            TableSchema::parse(&format!("[{{name=k;type={t};sort_order=ascending}}]")).unwrap()
        };
        assert_eq!(
            uniform_pivots(&schema("uint32"), 4).unwrap(),
            vec![
                vec![],
                vec![Value::Uint64(1 << 30)],
                vec![Value::Uint64(2 << 30)],
                vec![Value::Uint64(3 << 30)]
            ]
        );
        assert_eq!(
            uniform_pivots(&schema("int32"), 2).unwrap(),
            vec![vec![], vec![Value::Int64(0)]]
        );
        assert_eq!(
            uniform_pivots(&schema("int8"), 4).unwrap(),
            vec![
                vec![],
                vec![Value::Int64(-64)],
                vec![Value::Int64(0)],
                vec![Value::Int64(64)]
            ]
        );
        assert_eq!(
            uniform_pivots(&schema("uint16"), 2).unwrap(),
            vec![vec![], vec![Value::Uint64(1 << 15)]]
        );
        assert!(uniform_pivots(&schema("uint8"), 257)
            .unwrap_err()
            .to_string()
            .contains("has 256 values"));
        assert_eq!(uniform_pivots(&schema("uint8"), 256).unwrap().len(), 256);
    }
}
