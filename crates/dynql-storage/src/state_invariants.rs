//! The replayed state's invariants, written down and checked: what the read, write and
//! compaction rules rely on of every table that is not damaged (a damaged table's state is
//! unknown by definition, so it is left out). Debug builds check them after every replay
//! (opening the store, catching up with the log, `snapshot_at`); a broken one is a bug of
//! dynql's, not bad input, and fails loudly there.

use std::cmp::Ordering;

use dynql_core::compare_rows;

use crate::state::State;

impl State {
    /// The first invariant this state breaks, if any.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        for (path, (entry, data)) in self.tables.iter() {
            if data.damage.is_some() {
                continue;
            }
            let broken = |what: String| Err(format!("table {path}: {what}"));
            if !entry.schema.is_sorted() {
                // An ordered table's rows are in its queues, never in a store by key.
                if !data.sorted.is_empty() {
                    return broken("an ordered table holds versions by key".into());
                }
                continue;
            }
            // Pivot keys: the first is empty, each after the one before.
            if entry.pivot_keys.first().is_some_and(|p| !p.0.is_empty()) {
                return broken("its first pivot key is not empty".into());
            }
            if let Some(w) = entry
                .pivot_keys
                .windows(2)
                .find(|w| compare_rows(&w[0].0, &w[1].0) != Ordering::Less)
            {
                return broken(format!(
                    "pivot keys {:?} and {:?} are not in order",
                    w[0].0, w[1].0
                ));
            }
            // The dynamic store: full keys, each key's versions in commit order, none after
            // the last commit.
            let key_count = entry.schema.key_column_count();
            for (key, versions) in &data.sorted {
                if key.0.len() != key_count {
                    return broken(format!("key {:?} is not {key_count} columns", key.0));
                }
                if versions.windows(2).any(|w| w[0].timestamp > w[1].timestamp) {
                    return broken(format!("the versions of key {:?} are out of order", key.0));
                }
                if versions
                    .last()
                    .is_some_and(|v| v.timestamp > self.last_timestamp)
                {
                    return broken(format!(
                        "key {:?} has a version after the last commit",
                        key.0
                    ));
                }
            }
            // Chunks: bounds in order, nothing after the last commit.
            for c in &data.chunks {
                if c.min_timestamp > c.max_timestamp || c.max_timestamp > self.last_timestamp.0 {
                    return broken(format!("chunk {} has timestamps out of bounds", c.path));
                }
                if c.rows > 0 && compare_rows(&c.min_key, &c.max_key) == Ordering::Greater {
                    return broken(format!("chunk {} has its key bounds reversed", c.path));
                }
            }
        }
        // Master transactions: a nested one's parent is live, every lock's holder is live.
        let master = &self.master;
        for (id, t) in &master.transactions {
            if let Some(parent) = t.parent_id.as_deref() {
                if !master.transactions.contains_key(parent) {
                    return Err(format!(
                        "master transaction {id} outlives its parent {parent}"
                    ));
                }
            }
        }
        if let Some(l) = master
            .locks
            .values()
            .find(|l| !master.transactions.contains_key(&l.transaction_id))
        {
            return Err(format!(
                "lock {} is held by {}, which is not live",
                l.id, l.transaction_id
            ));
        }
        Ok(())
    }

    /// Panics (in debug builds only) when this state breaks an invariant: see the module.
    pub(crate) fn debug_check_invariants(&self) {
        if cfg!(debug_assertions) {
            if let Err(broken) = self.check_invariants() {
                panic!(
                    "the state replayed up to log record {} breaks an invariant: {broken}",
                    self.seq
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use dynql_core::{TableSchema, Value};

    use crate::kernel::catalog::TableEntry;
    use crate::kernel::key_range::PivotKey;
    use crate::kernel::mvcc::{RowDelta, WriteKind};
    use crate::kernel::timestamp::Timestamp;
    use crate::state::{KeyOrd, State, TableData};

    fn state_with(edit: impl FnOnce(&mut TableEntry, &mut TableData)) -> State {
        let schema =
            TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]")
                .unwrap();
        let mut entry = TableEntry::new_static("t-id", schema);
        let mut data = TableData::empty_for(&entry);
        edit(&mut entry, &mut data);
        let mut state = State {
            last_timestamp: Timestamp(100),
            ..State::default()
        };
        state.tables.insert("//t".into(), (entry, data));
        state
    }

    fn version(ts: u64) -> RowDelta {
        RowDelta {
            timestamp: Timestamp(ts),
            kind: WriteKind::Overwrite,
            values: vec![Some(Value::Int64(1)), Some(Value::Int64(2))],
            aggregate: false,
        }
    }

    #[test]
    fn a_sound_state_passes_and_each_broken_rule_is_named() {
        let key = KeyOrd(vec![Value::Int64(1)]);
        let sound = state_with(|_, d| {
            d.sorted.insert(key.clone(), vec![version(5), version(9)]);
        });
        assert_eq!(sound.check_invariants(), Ok(()));
        let cases: Vec<(State, &str)> = vec![
            (
                state_with(|_, d| {
                    d.sorted.insert(key.clone(), vec![version(9), version(5)]);
                }),
                "out of order",
            ),
            (
                state_with(|_, d| {
                    d.sorted.insert(key.clone(), vec![version(101)]);
                }),
                "after the last commit",
            ),
            (
                state_with(|_, d| {
                    d.sorted.insert(KeyOrd(vec![]), vec![version(1)]);
                }),
                "is not 1 columns",
            ),
            (
                state_with(|e, _| {
                    e.pivot_keys = vec![
                        PivotKey(vec![]),
                        PivotKey(vec![Value::Int64(5)]),
                        PivotKey(vec![Value::Int64(5)]),
                    ];
                }),
                "not in order",
            ),
            (
                state_with(|e, _| e.pivot_keys = vec![PivotKey(vec![Value::Int64(5)])]),
                "first pivot key",
            ),
        ];
        for (state, named) in cases {
            let broken = state.check_invariants().unwrap_err();
            assert!(broken.contains(named), "{broken} should say {named}");
        }
        // A damaged table is not judged.
        let damaged = state_with(|_, d| {
            d.sorted.insert(key.clone(), vec![version(9), version(5)]);
            d.damage = Some("lost".into());
        });
        assert_eq!(damaged.check_invariants(), Ok(()));
    }
}
