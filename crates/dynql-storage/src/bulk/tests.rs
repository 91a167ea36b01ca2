//! Tests of [`crate::bulk`].

use dynql_core::{TableSchema, Value};

use super::*;
use crate::kernel::catalog::TableOptions;
use crate::store::LARGE_WRITE_ROWS;

fn row(k: i64, v: &str) -> RowValues {
    vec![Some(Value::Int64(k)), Some(Value::string(v))]
}

#[tokio::test]
async fn batches_become_visible_together_in_one_commit() {
    let store = Store::open("memory://").unwrap();
    let schema =
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
            .unwrap();
    store
        .create_table("//t", schema, TableOptions::default())
        .await
        .unwrap();
    let mut bulk = store.start_bulk_write("//t").await.unwrap();
    // One batch large enough to become a chunk, one small enough to travel inline.
    let big: Vec<RowValues> = (0..crate::store::LARGE_WRITE_ROWS as i64)
        .map(|k| row(k, "big"))
        .collect();
    store.stage_bulk_rows(&mut bulk, big).await.unwrap();
    store
        .stage_bulk_rows(&mut bulk, vec![row(-1, "small")])
        .await
        .unwrap();
    assert_eq!(
        bulk.staged_rows(),
        crate::store::LARGE_WRITE_ROWS as u64 + 1
    );
    let before = store
        .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    assert!(before.is_empty(), "nothing is visible before the commit");
    store.commit_bulk_write(bulk).await.unwrap();
    let after = store
        .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    assert_eq!(after.len(), crate::store::LARGE_WRITE_ROWS + 1);
    assert_eq!(after[0], vec![Value::Int64(-1), Value::string("small")]);
}

fn schema() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]").unwrap()
}

/// A table of two tablets (pivot 5000).
async fn two_tablets(store: &Store) {
    let options = TableOptions {
        pivot_keys: Some(vec![vec![], vec![Value::Int64(5000)]]),
        ..TableOptions::default()
    };
    store.create_table("//t", schema(), options).await.unwrap();
}

/// Rows `keys` with value `v`, in the order given.
fn rows(keys: impl Iterator<Item = i64>, v: &str) -> Vec<RowValues> {
    keys.map(|k| row(k, v)).collect()
}

/// The table's rows as of the last commit.
async fn latest(store: &Store) -> Vec<Vec<Value>> {
    store
        .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap()
}

/// Key `k`'s value in `rows` (as read).
fn value_of(rows: &[Vec<Value>], k: i64) -> Option<Value> {
    rows.iter()
        .find(|r| r[0] == Value::Int64(k))
        .map(|r| r[1].clone())
}

#[tokio::test]
async fn a_bulk_insert_is_chunks_at_its_commit_timestamp_and_opening_reads_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let store = Store::open(&url).unwrap();
    two_tablets(&store).await;
    // Earlier rows, some of whose keys the bulk write overwrites.
    let before = store
        .write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            rows([3, 7000].into_iter(), "old"),
        )
        .await
        .unwrap();
    let n = LARGE_WRITE_ROWS as i64;
    let mut bulk = store.start_bulk_write("//t").await.unwrap();
    // Unsorted input, across both tablets, in two batches.
    store
        .stage_bulk_rows(&mut bulk, rows((0..n).rev().map(|k| k * 2), "bulk"))
        .await
        .unwrap();
    store
        .stage_bulk_rows(&mut bulk, rows((0..n).map(|k| k * 2 + 1), "bulk"))
        .await
        .unwrap();
    store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
    // Nothing visible, and the rows are one chunk per tablet, split at the pivot key.
    assert_eq!(
        store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(bulk.staged_chunks().len(), 2);
    assert_eq!(bulk.rows_written(), 2 * n as u64);
    for c in bulk.staged_chunks() {
        let lower = c.min_key[0] >= Value::Int64(5000);
        let upper = c.max_key[0] >= Value::Int64(5000);
        assert_eq!(lower, upper, "a chunk straddles the pivot: {c:?}");
    }
    let committed = store.commit_bulk_write(bulk).await.unwrap();
    assert!(committed > before);

    // `in_memory`: keys in the dynamic store (the two earlier rows, until a flush).
    let check = |store: Store, in_memory: usize| async move {
        let state = store.refresh().await.unwrap();
        let (_, data) = state.table_data("//t").unwrap();
        // The bulk rows are chunks stamped with the commit timestamp, never in memory.
        assert_eq!(data.sorted.len(), in_memory);
        let bulk: Vec<_> = data
            .chunks
            .iter()
            .filter(|c| c.path.contains("/bulk-"))
            .collect();
        assert_eq!(bulk.len(), 2);
        assert!(bulk.iter().all(|c| c.commit_timestamp == Some(committed.0)
            && c.min_timestamp == committed.0
            && c.max_timestamp == committed.0));
        let now = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        // Keys 0..2n, the earlier rows' among them.
        assert_eq!(now.len(), 2 * LARGE_WRITE_ROWS);
        assert_eq!(value_of(&now, 3), Some(Value::string("bulk")));
        assert_eq!(value_of(&now, 7000), Some(Value::string("bulk")));
        assert_eq!(value_of(&now, 2 * n - 1), Some(Value::string("bulk")));
        // A read before the commit sees the table as it was.
        let then = store.read_rows("//t", before).await.unwrap();
        assert_eq!(then.len(), 2);
        assert_eq!(value_of(&then, 7000), Some(Value::string("old")));
        let found = store
            .lookup_rows("//t", &[vec![Value::Int64(3)]], before)
            .await
            .unwrap();
        assert_eq!(
            found[0].as_ref().map(|r| r[1].clone()),
            Some(Value::string("old"))
        );
    };
    check(store.clone(), 2).await;
    // A fresh process opening the store reads the log, not the rows.
    check(Store::open(&url).unwrap(), 2).await;
    // And so does one opening it from a checkpoint, which flushed the two earlier rows
    // into a chunk listed after the (newer) bulk chunks.
    store.checkpoint().await.unwrap();
    check(Store::open(&url).unwrap(), 0).await;

    // Later writes win over the bulk rows, through compaction too.
    store
        .write_rows("//t", WriteKind::Overwrite, false, vec![row(3, "new")])
        .await
        .unwrap();
    store
        .write_rows(
            "//t",
            WriteKind::Delete,
            false,
            vec![vec![Some(Value::Int64(4)), None]],
        )
        .await
        .unwrap();
    for _ in 0..2 {
        let now = store
            .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
            .await
            .unwrap();
        assert_eq!(now.len(), 2 * LARGE_WRITE_ROWS - 1);
        assert_eq!(value_of(&now, 3), Some(Value::string("new")));
        assert_eq!(value_of(&now, 4), None);
        assert_eq!(value_of(&now, 5), Some(Value::string("bulk")));
        store.compact("//t").await.unwrap();
    }
}

#[tokio::test]
async fn arrow_batches_in_any_order_become_clean_chunks_and_a_bad_one_is_refused() {
    use arrow::array::{ArrayRef, BinaryArray, Int64Array};
    use std::sync::Arc;
    let store = Store::open("memory://").unwrap();
    two_tablets(&store).await;
    let batch = |keys: &[Option<i64>], v: &str| {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(keys.to_vec())),
            Arc::new(BinaryArray::from_iter_values(
                keys.iter()
                    .map(|k| format!("{v}{}", k.unwrap_or(0)).into_bytes()),
            )),
        ];
        RecordBatch::try_new(
            dynql_core::arrow_convert::table_arrow_schema(&schema()),
            columns,
        )
        .unwrap()
    };
    let mut bulk = store.start_bulk_write("//t").await.unwrap();
    // A budget of a few batches: the sort spills runs and merges them.
    bulk.set_sort_memory(1 << 20);
    let null_key = store
        .stage_bulk_batch(&mut bulk, &batch(&[Some(1), None], "v"))
        .await
        .unwrap_err();
    assert!(
        null_key.to_string().contains("null in key column \"k\""),
        "{null_key}"
    );
    let keys_only =
        RecordBatch::try_from_iter([("k", Arc::new(Int64Array::from(vec![1i64])) as ArrayRef)])
            .unwrap();
    let schema_error = store
        .stage_bulk_batch(&mut bulk, &keys_only)
        .await
        .unwrap_err();
    assert!(
        schema_error.to_string().contains("table's Arrow schema"),
        "{schema_error}"
    );
    assert_eq!(bulk.staged_rows(), 0);

    // Keys 0..n descending in batches of 1000, then the even ones again: those win.
    let n = 4 * LARGE_WRITE_ROWS as i64;
    let keys: Vec<Option<i64>> = (0..n).rev().map(Some).collect();
    for part in keys.chunks(1000) {
        store
            .stage_bulk_batch(&mut bulk, &batch(part, "old"))
            .await
            .unwrap();
    }
    let evens: Vec<Option<i64>> = (0..n).filter(|k| k % 2 == 0).map(Some).collect();
    store
        .stage_bulk_batch(&mut bulk, &batch(&evens, "new"))
        .await
        .unwrap();
    assert!(bulk.spilled_runs() > 1, "{}", bulk.spilled_runs());
    store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
    assert_eq!(bulk.rows_written(), n as u64);
    assert_eq!(bulk.duplicates_folded(), n as u64 / 2);
    // Split at the pivot 5000: one chunk per tablet.
    assert_eq!(bulk.staged_chunks().len(), 2);
    assert_eq!(bulk.staged_chunks()[1].min_key, vec![Value::Int64(5000)]);
    let late = store
        .stage_bulk_batch(&mut bulk, &batch(&[Some(1)], "v"))
        .await
        .unwrap_err();
    assert!(late.to_string().contains("takes no more"), "{late}");
    let committed = store.commit_bulk_write(bulk).await.unwrap();
    let state = store.refresh().await.unwrap();
    let (_, data) = state.table_data("//t").unwrap();
    assert!(data
        .chunks
        .iter()
        .flat_map(|c| &c.row_groups)
        .all(
            |g| g.clean == crate::kernel::chunk_ref::Cleanliness::Since(committed.0)
                && g.nan_columns.as_deref() == Some(&[])
        ));
    let read = store
        .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    let expected: Vec<Vec<Value>> = (0..n)
        .map(|k| {
            let v = if k % 2 == 0 { "new" } else { "old" };
            vec![Value::Int64(k), Value::string(format!("{v}{k}"))]
        })
        .collect();
    assert_eq!(read, expected);
}

#[tokio::test]
async fn a_key_given_twice_keeps_its_last_row() {
    let store = Store::open("memory://").unwrap();
    two_tablets(&store).await;
    for size in [3, LARGE_WRITE_ROWS as i64] {
        let mut bulk = store.start_bulk_write("//t").await.unwrap();
        let mut batch = rows(0..size, "a");
        batch.push(row(1, "b"));
        store.stage_bulk_rows(&mut bulk, batch).await.unwrap();
        store
            .stage_bulk_rows(&mut bulk, vec![row(2, "c")])
            .await
            .unwrap();
        store.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
        assert_eq!(bulk.duplicates_folded(), 2);
        store.commit_bulk_write(bulk).await.unwrap();
        let now = latest(&store).await;
        assert_eq!(now.len(), size as usize);
        assert_eq!(value_of(&now, 0), Some(Value::string("a")));
        assert_eq!(value_of(&now, 1), Some(Value::string("b")));
        assert_eq!(value_of(&now, 2), Some(Value::string("c")));
    }
}

#[tokio::test]
async fn a_reshard_during_the_bulk_write_leaves_its_rows_readable() {
    use crate::tablets::{Reshard, TabletCommand};
    let store = Store::open("memory://").unwrap();
    two_tablets(&store).await;
    let mut bulk = store.start_bulk_write("//t").await.unwrap();
    let n = LARGE_WRITE_ROWS as i64;
    store
        .stage_bulk_rows(&mut bulk, rows(0..n, "a"))
        .await
        .unwrap();
    // The chunks are cut at the pivots of the start ([], [5000]); the table is resharded
    // at other pivots before the commit, as a split by size may do at any time.
    store
        .set_tablet_state("//t", TabletCommand::Unmount)
        .await
        .unwrap();
    store
        .reshard_table(
            "//t",
            Reshard::Pivots(vec![
                vec![],
                vec![Value::Int64(100)],
                vec![Value::Int64(7000)],
            ]),
        )
        .await
        .unwrap();
    store
        .set_tablet_state("//t", TabletCommand::Mount)
        .await
        .unwrap();
    store.commit_bulk_write(bulk).await.unwrap();
    let now = latest(&store).await;
    assert_eq!(now.len(), n as usize);
    for (i, row) in now.iter().enumerate() {
        assert_eq!(row[0], Value::Int64(i as i64));
    }
    // A compaction cuts the chunks at the new pivots; the rows stay.
    store.compact("//t").await.unwrap();
    assert_eq!(latest(&store).await, now);
    let state = store.refresh().await.unwrap();
    let (entry, data) = state.table_data("//t").unwrap();
    let tablets = crate::scan_plan::tablet_ranges(entry);
    for chunk in &data.chunks {
        let inside = tablets
            .iter()
            .any(|t| !t.lower.is_after(&chunk.min_key) && t.upper.is_after(&chunk.max_key));
        assert!(
            inside,
            "{:?}..{:?} straddles a pivot",
            chunk.min_key, chunk.max_key
        );
    }
}

#[tokio::test]
async fn a_replaced_table_fails_the_commit() {
    let store = Store::open("memory://").unwrap();
    let schema = || {
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]")
            .unwrap()
    };
    store
        .create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    let mut bulk = store.start_bulk_write("//t").await.unwrap();
    store
        .stage_bulk_rows(&mut bulk, vec![row(1, "a")])
        .await
        .unwrap();
    store.remove_table("//t").await.unwrap();
    store
        .create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    let err = store.commit_bulk_write(bulk).await.unwrap_err();
    assert!(matches!(err, Error::NoSuchTable { .. }), "{err}");
    let rows = store
        .read_rows("//t", Timestamp::SYNC_LAST_COMMITTED)
        .await
        .unwrap();
    assert!(rows.is_empty());
}
