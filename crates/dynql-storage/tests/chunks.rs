//! Reads over chunks and the dynamic store against a model: any interleaving of writes,
//! deletes, flushes, compactions and checkpoints reads like a `BTreeMap` replay, now and at
//! every earlier commit timestamp (retention here keeps every version), from the writing
//! handle and from a freshly opened one.

use std::collections::BTreeMap;

use dynql_core::{TableSchema, Value};
use dynql_storage::{Retention, Store, TableOptions, Timestamp, WriteKind};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(i64, i64)>),
    Update(Vec<(i64, i64)>),
    Delete(Vec<i64>),
    Flush,
    Compact,
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    let pairs = proptest::collection::vec((0i64..12, 0i64..100), 1..5);
    prop_oneof![
        3 => pairs.clone().prop_map(Op::Write),
        1 => pairs.prop_map(Op::Update),
        1 => proptest::collection::vec(0i64..12, 1..3).prop_map(Op::Delete),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Checkpoint),
    ]
}

fn schema() -> TableSchema {
    TableSchema::parse(
        "[{name=k;type=int64;sort_order=ascending};{name=v;type=int64};{name=n;type=int64;aggregate=sum}]",
    )
    .unwrap()
}

/// Model rows: key -> (v, n).
type Model = BTreeMap<i64, (Option<i64>, Option<i64>)>;

fn rows_of(rows: Vec<Vec<Value>>) -> Model {
    let int = |v: &Value| match v {
        Value::Int64(i) => Some(*i),
        _ => None,
    };
    rows.iter()
        .map(|r| (int(&r[0]).unwrap(), (int(&r[1]), int(&r[2]))))
        .collect()
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let s = Store::open(&url).unwrap().with_gc_grace_ms(0);
        let keep_all = Retention {
            min_data_versions: u64::MAX,
            max_data_versions: u64::MAX,
            min_data_ttl: u64::MAX,
            max_data_ttl: u64::MAX,
        };
        let options = TableOptions {
            retention: keep_all,
            ..TableOptions::default()
        };
        s.create_table("//t", schema(), options).await.unwrap();
        let mut model = Model::new();
        let mut history: Vec<(Timestamp, Model)> = Vec::new();
        for op in ops {
            let ts = match &op {
                Op::Write(pairs) | Op::Update(pairs) => {
                    let update = matches!(op, Op::Update(_));
                    let rows = pairs
                        .iter()
                        .map(|(k, v)| {
                            if update {
                                vec![Some(Value::Int64(*k)), None, Some(Value::Int64(*v))]
                            } else {
                                vec![Some(Value::Int64(*k)), Some(Value::Int64(*v)), None]
                            }
                        })
                        .collect();
                    let kind = if update {
                        WriteKind::Update
                    } else {
                        WriteKind::Overwrite
                    };
                    // Updates add to the aggregate column `n`.
                    let ts = s.write_rows("//t", kind, update, rows).await.unwrap();
                    for (k, v) in pairs {
                        if update {
                            let e = model.entry(*k).or_insert((None, None));
                            e.1 = Some(e.1.unwrap_or(0) + v);
                        } else {
                            model.insert(*k, (Some(*v), None));
                        }
                    }
                    Some(ts)
                }
                Op::Delete(keys) => {
                    let rows = keys
                        .iter()
                        .map(|k| vec![Some(Value::Int64(*k)), None, None])
                        .collect();
                    let ts = s
                        .write_rows("//t", WriteKind::Delete, false, rows)
                        .await
                        .unwrap();
                    for k in keys {
                        model.remove(k);
                    }
                    Some(ts)
                }
                Op::Flush => {
                    s.flush_table("//t").await.unwrap();
                    None
                }
                Op::Compact => {
                    s.compact("//t").await.unwrap();
                    None
                }
                Op::Checkpoint => {
                    s.checkpoint().await.unwrap();
                    None
                }
            };
            if let Some(ts) = ts {
                history.push((ts, model.clone()));
            }
            let got = rows_of(s.read_rows("//t", Timestamp::MAX).await.unwrap());
            prop_assert_eq!(&got, &model);
            // Counting (rows dropped as they come) agrees with reading them all.
            let weighed = s.count_rows("//t", Timestamp::MAX, true).await.unwrap();
            let (_, read) = s.scan_ranges("//t", None, Timestamp::MAX).await.unwrap();
            prop_assert_eq!(weighed.rows_read, model.len() as u64);
            prop_assert_eq!(weighed.data_weight, read.data_weight);
            let keys_only = s.count_rows("//t", Timestamp::MAX, false).await.unwrap();
            prop_assert_eq!(keys_only.rows_read, model.len() as u64);
            let (rows, keys) = s
                .keys_at_even_steps("//t", Timestamp::MAX, 3)
                .await
                .unwrap();
            let all: Vec<i64> = model.keys().copied().collect();
            let expected: Vec<Vec<Value>> = (1..3u64)
                .map(|i| i * rows / 3)
                .filter(|&p| p < rows)
                .map(|p| vec![Value::Int64(all[p as usize])])
                .collect();
            prop_assert_eq!(rows, model.len() as u64);
            prop_assert_eq!(keys, expected);
        }
        let reopened = Store::open(&url).unwrap();
        for (ts, expected) in &history {
            let got = rows_of(reopened.read_rows("//t", *ts).await.unwrap());
            prop_assert_eq!(&got, expected, "time travel to {:?}", ts);
            let keys: Vec<Vec<Value>> = (0..12).map(|k| vec![Value::Int64(k)]).collect();
            let looked_up = reopened.lookup_rows("//t", &keys, *ts).await.unwrap();
            for (k, row) in looked_up.iter().enumerate() {
                let got = row.as_ref().map(|r| rows_of(vec![r.clone()])[&(k as i64)]);
                prop_assert_eq!(
                    got,
                    expected.get(&(k as i64)).copied(),
                    "lookup {} at {:?}",
                    k,
                    ts
                );
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn reads_through_flushes_and_compactions_match_the_model(ops in proptest::collection::vec(op(), 1..24)) {
        run(ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Pruned scans: a table with two key columns, random pivots, random writes with flushes and
// compactions; scanning random key ranges returns exactly the model's rows inside them.

fn two_key_schema() -> TableSchema {
    TableSchema::parse(
        "[{name=a;type=int64;sort_order=ascending};{name=b;type=int64;sort_order=ascending};{name=v;type=int64}]",
    )
    .unwrap()
}

fn bound() -> impl Strategy<Value = dynql_storage::KeyBound> {
    (proptest::collection::vec(0i64..5, 0..3), any::<bool>()).prop_map(|(prefix, after)| {
        dynql_storage::KeyBound::new(prefix.into_iter().map(Value::Int64).collect(), after)
    })
}

#[derive(Debug, Clone)]
enum ScanOp {
    Write(Vec<((i64, i64), i64)>),
    Delete(Vec<(i64, i64)>),
    Flush,
    Compact,
    Reshard(Vec<Vec<i64>>),
}

fn scan_op() -> impl Strategy<Value = ScanOp> {
    let key = (0i64..5, 0i64..5);
    prop_oneof![
        3 => proptest::collection::vec((key.clone(), 0i64..100), 1..6).prop_map(ScanOp::Write),
        1 => proptest::collection::vec(key, 1..3).prop_map(ScanOp::Delete),
        1 => Just(ScanOp::Flush),
        1 => Just(ScanOp::Compact),
        1 => proptest::collection::vec(proptest::collection::vec(0i64..5, 1..3), 0..4)
            .prop_map(ScanOp::Reshard),
    ]
}

/// Pivot keys from random prefixes: `[]` first, then sorted and distinct.
fn pivots_of(pivots: Vec<Vec<i64>>) -> Vec<Vec<Value>> {
    let mut sorted: Vec<Vec<i64>> = pivots.into_iter().filter(|p| !p.is_empty()).collect();
    sorted.sort();
    sorted.dedup();
    let mut out: Vec<Vec<Value>> = vec![vec![]];
    out.extend(
        sorted
            .into_iter()
            .map(|p| p.into_iter().map(Value::Int64).collect()),
    );
    out
}

fn run_scans(
    pivots: Vec<Vec<i64>>,
    ops: Vec<ScanOp>,
    ranges: Vec<(dynql_storage::KeyBound, dynql_storage::KeyBound)>,
) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = Store::open("memory://").unwrap();
        let pivot_keys = pivots_of(pivots);
        let mut tablets = pivot_keys.len();
        let options = TableOptions {
            pivot_keys: Some(pivot_keys),
            ..TableOptions::default()
        };
        s.create_table("//t", two_key_schema(), options)
            .await
            .unwrap();
        let mut model: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for op in ops {
            match op {
                ScanOp::Write(rows) => {
                    let values = rows
                        .iter()
                        .map(|((a, b), v)| {
                            vec![
                                Some(Value::Int64(*a)),
                                Some(Value::Int64(*b)),
                                Some(Value::Int64(*v)),
                            ]
                        })
                        .collect();
                    s.write_rows("//t", WriteKind::Overwrite, false, values)
                        .await
                        .unwrap();
                    for (k, v) in rows {
                        model.insert(k, v);
                    }
                }
                ScanOp::Delete(keys) => {
                    let values = keys
                        .iter()
                        .map(|(a, b)| vec![Some(Value::Int64(*a)), Some(Value::Int64(*b)), None])
                        .collect();
                    s.write_rows("//t", WriteKind::Delete, false, values)
                        .await
                        .unwrap();
                    for k in keys {
                        model.remove(&k);
                    }
                }
                ScanOp::Flush => {
                    for c in s.flush_table("//t").await.unwrap() {
                        // A flushed chunk lies inside one tablet.
                        let one_tablet = s
                            .explain_scan(
                                "//t",
                                Some(&[dynql_storage::KeyRange {
                                    lower: dynql_storage::KeyBound::new(c.min_key.clone(), false),
                                    upper: dynql_storage::KeyBound::new(c.max_key.clone(), true),
                                }]),
                                Timestamp::MAX,
                            )
                            .await
                            .unwrap();
                        prop_assert_eq!(one_tablet.tablets.0, 1);
                    }
                }
                ScanOp::Compact => {
                    s.compact("//t").await.unwrap();
                }
                ScanOp::Reshard(pivots) => {
                    let pivots = pivots_of(pivots);
                    s.set_tablet_state("//t", dynql_storage::TabletCommand::Unmount)
                        .await
                        .unwrap();
                    tablets = s
                        .reshard_table("//t", dynql_storage::Reshard::Pivots(pivots))
                        .await
                        .unwrap();
                    s.set_tablet_state("//t", dynql_storage::TabletCommand::Mount)
                        .await
                        .unwrap();
                }
            }
        }
        let ranges: Vec<dynql_storage::KeyRange> = ranges
            .into_iter()
            .map(|(lower, upper)| dynql_storage::KeyRange { lower, upper })
            .collect();
        let (tablet_rows, stats) = s
            .scan_ranges("//t", Some(&ranges), Timestamp::MAX)
            .await
            .unwrap();
        prop_assert_eq!(stats.tablets.1, tablets);
        let got: Vec<(i64, i64, i64)> = tablet_rows
            .iter()
            .flat_map(|t| &t.rows)
            .map(|r| match (&r[0], &r[1], &r[2]) {
                (Value::Int64(a), Value::Int64(b), Value::Int64(v)) => (*a, *b, *v),
                other => panic!("unexpected row {other:?}"),
            })
            .collect();
        let expected: Vec<(i64, i64, i64)> = model
            .iter()
            .filter(|((a, b), _)| {
                let key = [Value::Int64(*a), Value::Int64(*b)];
                ranges.iter().any(|r| r.contains(&key))
            })
            .map(|((a, b), v)| (*a, *b, *v))
            .collect();
        prop_assert_eq!(got, expected);
        prop_assert_eq!(
            stats.rows_read as usize,
            tablet_rows.iter().map(|t| t.rows.len()).sum::<usize>()
        );
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn scans_of_key_ranges_return_exactly_the_rows_inside(
        pivots in proptest::collection::vec(proptest::collection::vec(0i64..5, 1..3), 0..4),
        ops in proptest::collection::vec(scan_op(), 1..16),
        ranges in proptest::collection::vec((bound(), bound()), 0..4),
    ) {
        run_scans(pivots, ops, ranges)?;
    }
}

/// Writes rows `(a, 0, v)` of `(a, v)` to `//t` (of [`two_key_schema`]) and flushes them
/// into one chunk.
async fn flush_one_chunk(s: &Store, rows: impl Iterator<Item = (i64, i64)>) {
    let rows = rows
        .map(|(a, v)| {
            vec![
                Some(Value::Int64(a)),
                Some(Value::Int64(0)),
                Some(Value::Int64(v)),
            ]
        })
        .collect();
    s.write_rows("//t", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    assert_eq!(s.flush_table("//t").await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_narrow_range_decodes_one_row_group() {
    let s = Store::open("memory://").unwrap();
    s.create_table("//t", two_key_schema(), TableOptions::default())
        .await
        .unwrap();
    let n = 2 * dynql_storage::chunk::ROW_GROUP_ROWS as i64 + 100;
    flush_one_chunk(&s, (0..n).map(|i| (i, i))).await;
    let point = dynql_storage::KeyRange {
        lower: dynql_storage::KeyBound::new(vec![Value::Int64(n - 5)], false),
        upper: dynql_storage::KeyBound::new(vec![Value::Int64(n - 5)], true),
    };
    let (rows, stats) = s
        .scan_ranges("//t", Some(std::slice::from_ref(&point)), Timestamp::MAX)
        .await
        .unwrap();
    assert_eq!(stats.row_groups, (1, 3));
    assert_eq!(stats.chunks, (1, 1));
    assert_eq!(
        rows[0].rows,
        vec![vec![
            Value::Int64(n - 5),
            Value::Int64(0),
            Value::Int64(n - 5)
        ]]
    );
    let (_, all) = s.scan_ranges("//t", None, Timestamp::MAX).await.unwrap();
    assert_eq!(all.row_groups, (3, 3));
    assert_eq!(all.rows_read, n as u64);
    // Flushed whole-row overwrites with unique keys scan column-wise, row groups as decoded.
    let (batches, stats) = s.scan_batches("//t", None, Timestamp::MAX).await.unwrap();
    assert_eq!(batches.len(), 3);
    assert_eq!(stats.rows_read, n as u64);
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).sum::<usize>(),
        n as usize
    );
    // A newer write to a key inside a row group sends that piece through the version merge.
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        vec![vec![
            Some(Value::Int64(7)),
            Some(Value::Int64(0)),
            Some(Value::Int64(-7)),
        ]],
    )
    .await
    .unwrap();
    let (batches, _) = s.scan_batches("//t", None, Timestamp::MAX).await.unwrap();
    let types = [dynql_core::ValueType::Int64; 3];
    let rows: Vec<Vec<Value>> = batches
        .iter()
        .flat_map(|b| dynql_core::arrow_convert::batch_to_rows(b, &types))
        .collect();
    assert_eq!(rows.len(), n as usize);
    assert_eq!(rows[7][2], Value::Int64(-7));
    assert_eq!(rows[8][2], Value::Int64(8));
}

#[tokio::test]
async fn interleaved_layers_decode_each_row_group_once() {
    // No chunk cache: the row groups the pieces of a scan share, the scan keeps itself.
    let s = Store::open("memory://").unwrap().with_chunk_cache_bytes(0);
    s.create_table("//t", two_key_schema(), TableOptions::default())
        .await
        .unwrap();
    let r = dynql_storage::chunk::ROW_GROUP_ROWS as i64;
    let n = 3 * r;
    // Two flushes of interleaved keys (even ones, then odd ones from half a row group on):
    // the scan's pieces are cut at each row group's first key, so a row group of one meets
    // two of the other, each in a piece of its own.
    let layers = [(0, 0), (1, r)];
    for (odd, shift) in layers {
        flush_one_chunk(&s, (0..n).map(|i| (2 * i + odd + shift, i))).await;
    }
    let (batches, stats) = s.scan_batches("//t", None, Timestamp::MAX).await.unwrap();
    assert_eq!(stats.row_groups, (6, 6));
    // Each row group once (a piece met by one row group alone may read a window of it once
    // more): per piece, the merges would decode 10 row groups.
    assert!(stats.rows_decoded <= (2 * n + 2 * r) as u64, "{stats:?}");
    let types = [dynql_core::ValueType::Int64; 3];
    let keys: Vec<Value> = batches
        .iter()
        .flat_map(|b| dynql_core::arrow_convert::batch_to_rows(b, &types))
        .map(|row| row[0].clone())
        .collect();
    let mut expected: Vec<i64> = layers
        .iter()
        .flat_map(|&(odd, shift)| (0..n).map(move |i| 2 * i + odd + shift))
        .collect();
    expected.sort_unstable();
    let expected: Vec<Value> = expected.into_iter().map(Value::Int64).collect();
    assert_eq!(keys, expected);
}

#[tokio::test]
async fn a_copy_survives_reopening_after_its_source_was_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", two_key_schema(), TableOptions::default())
        .await
        .unwrap();
    let row = |a: i64| {
        vec![
            Some(Value::Int64(a)),
            Some(Value::Int64(0)),
            Some(Value::Int64(a)),
        ]
    };
    s.write_rows("//t", WriteKind::Overwrite, false, vec![row(1), row(2)])
        .await
        .unwrap();
    s.copy_table("//t", "//c", true).await.unwrap();
    // The source's flush comes after the copy in the log: replay must still give the copy
    // the versions it took from the source's dynamic store.
    assert!(!s.flush_table("//t").await.unwrap().is_empty());
    let reopened = Store::open(&url).unwrap();
    for path in ["//t", "//c"] {
        assert_eq!(
            reopened
                .read_rows(path, Timestamp::MAX)
                .await
                .unwrap()
                .len(),
            2,
            "{path}"
        );
    }
}

/// Scans `ranges` from a fresh handle (nothing cached, so the page index decides what is
/// read), row-wise and column-wise, and checks both against the model.
async fn check_page_scan(
    url: &str,
    model: &BTreeMap<(i64, i64), i64>,
    ranges: Vec<dynql_storage::KeyRange>,
) -> dynql_storage::ScanStatistics {
    let s = Store::open(url).unwrap();
    let (tablets, stats) = s
        .scan_ranges("//t", Some(&ranges), Timestamp::MAX)
        .await
        .unwrap();
    let got: Vec<Vec<Value>> = tablets.into_iter().flat_map(|t| t.rows).collect();
    let want: Vec<Vec<Value>> = model
        .iter()
        .filter(|((a, b), _)| {
            let k = [Value::Int64(*a), Value::Int64(*b)];
            ranges.iter().any(|r| r.contains(&k))
        })
        .map(|((a, b), v)| vec![Value::Int64(*a), Value::Int64(*b), Value::Int64(*v)])
        .collect();
    assert_eq!(got, want, "ranges {ranges:?}");
    let (batches, _) = s
        .scan_batches("//t", Some(&ranges), Timestamp::MAX)
        .await
        .unwrap();
    let types = [dynql_core::ValueType::Int64; 3];
    let columnar: Vec<Vec<Value>> = batches
        .iter()
        .flat_map(|b| dynql_core::arrow_convert::batch_to_rows(b, &types))
        .collect();
    assert_eq!(columnar, want, "columnar, ranges {ranges:?}");
    stats
}

// Page windows: a narrow scan of a large row group decodes only the pages that may hold its
// keys, through both the column-wise path (clean row groups) and the version merge (a newer
// chunk updates some keys), and returns exactly the model's rows.

#[tokio::test]
async fn narrow_scans_decode_page_windows_and_match_the_model() {
    use dynql_storage::chunk::{PAGE_ROWS, ROW_GROUP_ROWS};
    use dynql_storage::{KeyBound, KeyRange};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", two_key_schema(), TableOptions::default())
        .await
        .unwrap();
    // Keys (a, b): a in 0..8 (a hash-like leading column), b unique; a changes mid-page.
    let n = 2 * ROW_GROUP_ROWS as i64 + 300;
    let key = |i: i64| (i * 8 / n, i * 3);
    let mut model: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    let rows = (0..n)
        .map(|i| {
            let (a, b) = key(i);
            model.insert((a, b), i);
            vec![
                Some(Value::Int64(a)),
                Some(Value::Int64(b)),
                Some(Value::Int64(i)),
            ]
        })
        .collect();
    s.write_rows("//t", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    s.flush_table("//t").await.unwrap();
    let point = |i: i64| {
        let (a, b) = key(i);
        let k = vec![Value::Int64(a), Value::Int64(b)];
        KeyRange {
            lower: KeyBound::new(k.clone(), false),
            upper: KeyBound::new(k, true),
        }
    };
    // A point decodes one page (plus, at most, a neighbour where `a` changes).
    for i in [0, 5, 1023, 1024, 9000, n / 8, n / 2, n - 1] {
        let stats = check_page_scan(&url, &model, vec![point(i)]).await;
        assert!(
            stats.rows_decoded <= 2 * PAGE_ROWS as u64,
            "point {i}: decoded {}",
            stats.rows_decoded
        );
    }
    // A missing key between two present ones, ranges across pages, a prefix range of `a`.
    let (a, b) = key(4000);
    let between = KeyRange {
        lower: KeyBound::new(vec![Value::Int64(a), Value::Int64(b + 1)], false),
        upper: KeyBound::new(vec![Value::Int64(a), Value::Int64(b + 2)], true),
    };
    assert_eq!(
        check_page_scan(&url, &model, vec![between]).await.rows_read,
        0
    );
    let across = KeyRange {
        lower: point(1000).lower,
        upper: point(3100).upper,
    };
    let stats = check_page_scan(&url, &model, vec![across.clone()]).await;
    assert_eq!(stats.rows_read, 2101);
    assert!(stats.rows_decoded <= 4 * PAGE_ROWS as u64, "{stats:?}");
    let prefix = KeyRange {
        lower: KeyBound::new(vec![Value::Int64(3)], false),
        upper: KeyBound::new(vec![Value::Int64(3)], true),
    };
    check_page_scan(&url, &model, vec![prefix.clone(), point(7)]).await;
    // Newer versions of some keys in a second chunk: those pieces merge versions.
    let mut updates = Vec::new();
    for i in (0..n).step_by(997) {
        let (a, b) = key(i);
        model.insert((a, b), -i);
        updates.push(vec![
            Some(Value::Int64(a)),
            Some(Value::Int64(b)),
            Some(Value::Int64(-i)),
        ]);
    }
    s.write_rows("//t", WriteKind::Overwrite, false, updates)
        .await
        .unwrap();
    s.flush_table("//t").await.unwrap();
    for i in [0, 997, 998, 9970, n - 1] {
        check_page_scan(&url, &model, vec![point(i)]).await;
    }
    check_page_scan(&url, &model, vec![across, prefix]).await;
}
