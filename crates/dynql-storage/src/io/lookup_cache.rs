//! The lookup row cache (YT's `mount_config/lookup_cache_rows_ratio`,
//! `enable_lookup_cache_by_default`, a request's `use_lookup_cache`): rows that lookups at the
//! latest timestamp resolved, kept per table in a long-lived [`Store`](crate::Store), so that a
//! repeated lookup of a hot key skips the chunks and the version merge.
//!
//! A cached row is the key's row as of the commit `as_of` of the state it was resolved in.
//! It stays right while nothing newer is written to the key: every commit after `as_of`
//! lands in the dynamic store first, so a key whose newest dynamic-store version is newer than
//! `as_of` is a miss, and is resolved and cached again. Versions leave the dynamic store only
//! into chunks (a flush, a bulk write, a compaction), and any change to the table's chunk list
//! drops its whole cache. Reads do not depend on the time they run at (retention acts only
//! through compaction), so a row resolved at `as_of` is the row at every later commit that
//! did not touch its key. Missing rows are cached too (`None`): a key looked up before it is
//! written stays a miss once it is.
//!
//! Lookups at an explicit timestamp and inside transactions never use the cache. Capacity is
//! `lookup_cache_rows_ratio` times the table's stored versions (chunk versions and keys in the
//! dynamic store), taken at each lookup,
//! evicting by the clock algorithm (a row looked up since the hand last passed is spared once).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

use dynql_core::Value;

use crate::kernel::timestamp::Timestamp;
use crate::state::KeyOrd;

/// One table's cached rows.
#[derive(Default)]
struct TableRows {
    /// The chunk list the rows were resolved over (paths, in order).
    chunks: Vec<String>,
    capacity: usize,
    rows: BTreeMap<KeyOrd, Cached>,
    /// The clock: keys in insertion order.
    clock: VecDeque<KeyOrd>,
}

struct Cached {
    row: Option<Vec<Value>>,
    as_of: Timestamp,
    referenced: bool,
}

/// The rows cached by lookups, per table id.
#[derive(Default)]
pub(crate) struct LookupCache {
    tables: Mutex<HashMap<String, TableRows>>,
}

/// What a lookup found in the cache: per key, the row if it was a hit.
pub(crate) type Hits = Vec<Option<Option<Vec<Value>>>>;

impl LookupCache {
    /// The cached rows of `keys` in table `table_id`, still right at a state whose chunk list
    /// is `chunks` and whose newest dynamic-store version of a key is `newest(key)`. A table
    /// whose chunk list changed loses its rows first; its room is now `capacity` rows.
    pub(crate) fn get(
        &self,
        table_id: &str,
        chunks: &[String],
        capacity: usize,
        keys: &[Vec<Value>],
        newest: impl Fn(&KeyOrd) -> Option<Timestamp>,
    ) -> Hits {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = || TableRows {
            chunks: chunks.to_vec(),
            capacity,
            ..TableRows::default()
        };
        let table = tables.entry(table_id.to_string()).or_insert_with(fresh);
        if table.chunks != chunks {
            *table = fresh();
        }
        // The table grows and shrinks: the room follows it (rows over it go as new ones come).
        table.capacity = capacity;
        keys.iter()
            .map(|key| {
                let key = KeyOrd(key.clone());
                let cached = table.rows.get_mut(&key)?;
                if newest(&key).is_some_and(|t| t > cached.as_of) {
                    return None;
                }
                cached.referenced = true;
                Some(cached.row.clone())
            })
            .collect()
    }

    /// Caches rows resolved as of commit `as_of` over the chunk list `chunks` (ignored if
    /// the table's cache was rebuilt for another list meanwhile).
    pub(crate) fn put(
        &self,
        table_id: &str,
        chunks: &[String],
        as_of: Timestamp,
        rows: impl IntoIterator<Item = (Vec<Value>, Option<Vec<Value>>)>,
    ) {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let Some(table) = tables.get_mut(table_id).filter(|t| t.chunks == chunks) else {
            return;
        };
        if table.capacity == 0 {
            return;
        }
        for (key, row) in rows {
            let key = KeyOrd(key);
            let entry = Cached {
                row,
                as_of,
                referenced: false,
            };
            if let Some(old) = table.rows.get_mut(&key) {
                if old.as_of <= as_of {
                    *old = entry;
                }
                continue;
            }
            while table.rows.len() >= table.capacity {
                let Some(victim) = table.clock.pop_front() else {
                    break;
                };
                match table.rows.get_mut(&victim) {
                    Some(c) if c.referenced => {
                        c.referenced = false;
                        table.clock.push_back(victim);
                    }
                    _ => {
                        table.rows.remove(&victim);
                    }
                }
            }
            table.clock.push_back(key.clone());
            table.rows.insert(key, entry);
        }
    }

    /// Rows cached for table `table_id` (tests).
    #[cfg(test)]
    pub(crate) fn len(&self, table_id: &str) -> usize {
        let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables.get(table_id).map_or(0, |t| t.rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: i64) -> Vec<Value> {
        vec![Value::Int64(k)]
    }

    #[test]
    fn rows_are_hits_until_a_newer_version_or_another_chunk_list() {
        let cache = LookupCache::default();
        let chunks = vec!["a".to_string()];
        let none = |_: &KeyOrd| None;
        assert_eq!(cache.get("t", &chunks, 10, &[key(1)], none), vec![None]);
        cache.put(
            "t",
            &chunks,
            Timestamp(5),
            [(key(1), Some(key(1))), (key(2), None)],
        );
        assert_eq!(
            cache.get("t", &chunks, 10, &[key(1), key(2), key(3)], none),
            vec![Some(Some(key(1))), Some(None), None]
        );
        // A version of key 1 newer than the cached row: a miss; older: still a hit.
        let newer = |k: &KeyOrd| (k.0 == key(1)).then_some(Timestamp(6));
        assert_eq!(cache.get("t", &chunks, 10, &[key(1)], newer), vec![None]);
        let older = |k: &KeyOrd| (k.0 == key(1)).then_some(Timestamp(5));
        assert_eq!(
            cache.get("t", &chunks, 10, &[key(1)], older),
            vec![Some(Some(key(1)))]
        );
        // Another chunk list drops everything.
        let other = vec!["a".to_string(), "b".to_string()];
        assert_eq!(cache.get("t", &other, 10, &[key(1)], none), vec![None]);
        assert_eq!(cache.len("t"), 0);
        // Rows resolved over the old list are not cached under the new one.
        cache.put("t", &chunks, Timestamp(7), [(key(1), None)]);
        assert_eq!(cache.len("t"), 0);
    }

    #[test]
    fn the_clock_spares_rows_looked_up_since_it_passed() {
        let cache = LookupCache::default();
        let chunks: Vec<String> = vec![];
        let none = |_: &KeyOrd| None;
        cache.get("t", &chunks, 2, &[], none);
        cache.put("t", &chunks, Timestamp(1), [(key(1), None), (key(2), None)]);
        // Key 1 is looked up: key 2 goes when key 3 comes.
        cache.get("t", &chunks, 2, &[key(1)], none);
        cache.put("t", &chunks, Timestamp(1), [(key(3), None)]);
        assert_eq!(cache.len("t"), 2);
        assert_eq!(
            cache.get("t", &chunks, 2, &[key(1), key(2), key(3)], none),
            vec![Some(None), None, Some(None)]
        );
        // Capacity 0 caches nothing.
        cache.get("u", &chunks, 0, &[], none);
        cache.put("u", &chunks, Timestamp(1), [(key(1), None)]);
        assert_eq!(cache.len("u"), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write(i64, i64),
        Add(i64, i64),
        Delete(i64),
        /// A write by another handle on the same store (another process).
        WriteElsewhere(i64, i64),
        /// A transaction writing a key, committed.
        Transaction(i64, i64),
        Flush,
        Compact,
        Lookup(Vec<i64>),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            3 => (0i64..30, 0i64..100).prop_map(|(k, v)| Op::Write(k, v)),
            1 => (0i64..30, 0i64..100).prop_map(|(k, v)| Op::Add(k, v)),
            1 => (0i64..30).prop_map(Op::Delete),
            1 => (0i64..30, 0i64..100).prop_map(|(k, v)| Op::WriteElsewhere(k, v)),
            1 => (0i64..30, 0i64..100).prop_map(|(k, v)| Op::Transaction(k, v)),
            1 => Just(Op::Flush),
            1 => Just(Op::Compact),
            6 => proptest::collection::vec(0i64..30, 1..8).prop_map(Op::Lookup),
        ]
    }

    /// Runs `ops`, checking every lookup through the cache against the same lookup without.
    /// Returns the cache hits seen.
    async fn run(ops: &[Op]) -> u64 {
        use crate::kernel::catalog::TableOptions;
        use crate::kernel::mvcc::WriteKind;
        use crate::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = Store::open(&url).unwrap();
        let elsewhere = Store::open(&url).unwrap();
        let schema = dynql_core::TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=s;type=int64;aggregate=sum}]",
        )
        .unwrap();
        let options = TableOptions {
            lookup_cache_rows_ratio: Some(0.5),
            enable_lookup_cache_by_default: Some(true),
            ..TableOptions::default()
        };
        store.create_table("//t", schema, options).await.unwrap();
        let row = |k: i64, v: Option<i64>, s: Option<i64>| {
            vec![
                Some(Value::Int64(k)),
                v.map(Value::Int64),
                s.map(Value::Int64),
            ]
        };
        let mut hits = 0;
        for op in ops {
            match op {
                Op::Write(k, v) => {
                    store
                        .write_rows(
                            "//t",
                            WriteKind::Overwrite,
                            false,
                            vec![row(*k, Some(*v), Some(*v))],
                        )
                        .await
                        .unwrap();
                }
                Op::Add(k, v) => {
                    store
                        .write_rows(
                            "//t",
                            WriteKind::Update,
                            true,
                            vec![row(*k, None, Some(*v))],
                        )
                        .await
                        .unwrap();
                }
                Op::Delete(k) => {
                    store
                        .write_rows("//t", WriteKind::Delete, false, vec![row(*k, None, None)])
                        .await
                        .unwrap();
                }
                Op::WriteElsewhere(k, v) => {
                    elsewhere
                        .write_rows(
                            "//t",
                            WriteKind::Overwrite,
                            false,
                            vec![row(*k, Some(*v), None)],
                        )
                        .await
                        .unwrap();
                }
                Op::Transaction(k, v) => {
                    let tx = store.start_transaction(60_000).await.unwrap();
                    store
                        .write_rows_in(
                            &tx.id,
                            "//t",
                            WriteKind::Overwrite,
                            false,
                            vec![row(*k, Some(*v), None)],
                        )
                        .await
                        .unwrap();
                    store.commit_transaction(&tx.id).await.unwrap();
                }
                Op::Flush => {
                    store.flush_table("//t").await.unwrap();
                }
                Op::Compact => {
                    elsewhere.compact("//t").await.unwrap();
                }
                Op::Lookup(keys) => {
                    let keys: Vec<Vec<Value>> = keys.iter().map(|k| key(*k)).collect();
                    let (cached, statistics) = store
                        .lookup_rows_with("//t", &keys, Timestamp::SYNC_LAST_COMMITTED, None)
                        .await
                        .unwrap();
                    let plain = store
                        .lookup_rows("//t", &keys, Timestamp::SYNC_LAST_COMMITTED)
                        .await
                        .unwrap();
                    assert_eq!(cached, plain, "after {op:?}");
                    assert_eq!(
                        statistics.cache_hits + statistics.cache_misses,
                        keys.len() as u64
                    );
                    hits += statistics.cache_hits;
                }
            }
        }
        hits
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// Lookups through the cache return what lookups without it return, whatever the
        /// writes (overwrites, aggregates, deletes, other handles, transactions), flushes and
        /// compactions between them.
        #[test]
        fn cached_lookups_equal_uncached_ones(ops in proptest::collection::vec(op(), 1..60)) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(run(&ops));
        }
    }

    #[tokio::test]
    async fn repeated_lookups_hit_until_their_key_is_written() {
        let keys = vec![1, 2, 3];
        // Ten rows: room for five (lookup_cache_rows_ratio 0.5).
        let mut ops: Vec<Op> = (0..10).map(|k| Op::Write(k, k)).collect();
        ops.extend([
            Op::Flush,
            Op::Lookup(keys.clone()),
            Op::Lookup(keys.clone()),
            Op::Write(1, 5),
            Op::Lookup(keys.clone()),
        ]);
        // Three misses, three hits, then key 1 missed again.
        assert_eq!(run(&ops).await, 3 + 2);
    }
}
