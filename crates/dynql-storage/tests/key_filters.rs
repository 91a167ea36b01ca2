//! Key filters ([`dynql_storage::key_filter`]): lookups and key-prefix scans with filters on
//! read like a model whatever the writes, flushes and compactions; absent keys skip chunks;
//! filter files are checked and collected with their chunks.

use std::collections::BTreeMap;

use dynql_core::{KeyBound, KeyRange, TableSchema, Value};
use dynql_storage::key_filter::{ChunkWriterSettings, KeyFilterSettings};
use dynql_storage::{Store, TableOptions, Timestamp, WriteKind};
use proptest::prelude::*;

fn schema() -> TableSchema {
    TableSchema::parse(
        "[{name=a;type=int64;sort_order=ascending};{name=b;type=string;sort_order=ascending};{name=v;type=int64}]",
    )
    .unwrap()
}

/// Whole-key filters and filters of the first column, of `bits` per key.
fn options(bits: u32, lookup: bool) -> TableOptions {
    TableOptions {
        chunk_writer: Some(ChunkWriterSettings {
            key_filter: KeyFilterSettings {
                enable: true,
                bits_per_key: Some(bits),
                ..KeyFilterSettings::default()
            },
            key_filter_prefix: KeyFilterSettings {
                enable: true,
                bits_per_key: Some(bits),
                prefix_lengths: vec![1],
                ..KeyFilterSettings::default()
            },
        }),
        enable_key_filter_for_lookup: Some(lookup),
        ..TableOptions::default()
    }
}

fn key(a: i64, b: i64) -> Vec<Value> {
    vec![Value::Int64(a), Value::String(format!("b{b}").into_bytes())]
}

fn row(a: i64, b: i64, v: i64) -> Vec<Option<Value>> {
    let mut r: Vec<Option<Value>> = key(a, b).into_iter().map(Some).collect();
    r.push(Some(Value::Int64(v)));
    r
}

fn prefix_range(a: i64) -> KeyRange {
    KeyRange {
        lower: KeyBound::new(vec![Value::Int64(a)], false),
        upper: KeyBound::new(vec![Value::Int64(a)], true),
    }
}

async fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    (dir, Store::open(&url).unwrap().with_gc_grace_ms(0))
}

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(i64, i64, i64)>),
    Delete(Vec<(i64, i64)>),
    Flush,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    let keys = (0i64..8, 0i64..4);
    prop_oneof![
        3 => proptest::collection::vec((0i64..8, 0i64..4, 0i64..100), 1..6).prop_map(Op::Write),
        1 => proptest::collection::vec(keys, 1..3).prop_map(Op::Delete),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Filters of 2 bits a key let many absent keys through and rule many out: either way
    /// lookups and prefix scans read like the model.
    #[test]
    fn reads_with_key_filters_match_the_model(ops in proptest::collection::vec(op(), 1..14)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (_dir, s) = store().await;
            s.create_table("//t", schema(), options(2, true)).await.unwrap();
            let mut model: BTreeMap<(i64, i64), i64> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Write(rows) => {
                        let batch = rows.iter().map(|&(a, b, v)| row(a, b, v)).collect();
                        s.write_rows("//t", WriteKind::Overwrite, false, batch).await.unwrap();
                        for (a, b, v) in rows {
                            model.insert((a, b), v);
                        }
                    }
                    Op::Delete(keys) => {
                        let batch = keys
                            .iter()
                            .map(|&(a, b)| key(a, b).into_iter().map(Some).chain([None]).collect())
                            .collect();
                        s.write_rows("//t", WriteKind::Delete, false, batch).await.unwrap();
                        for k in keys {
                            model.remove(&k);
                        }
                    }
                    Op::Flush => {
                        s.flush_table("//t").await.unwrap();
                    }
                    Op::Compact => {
                        s.compact("//t").await.unwrap();
                    }
                }
                let keys: Vec<Vec<Value>> =
                    (0..9).flat_map(|a| (0..5).map(move |b| key(a, b))).collect();
                let got = s.lookup_rows("//t", &keys, Timestamp::MAX).await.unwrap();
                for (k, r) in keys.iter().zip(got) {
                    let (Value::Int64(a), Value::String(b)) = (&k[0], &k[1]) else { unreachable!() };
                    let b: i64 = String::from_utf8_lossy(&b[1..]).parse().unwrap();
                    let expected = model.get(&(*a, b)).map(|v| Value::Int64(*v));
                    prop_assert_eq!(r.map(|r| r[2].clone()), expected, "key {:?}", k);
                }
                for a in 0..9 {
                    let (tablets, _) = s
                        .scan_ranges("//t", Some(&[prefix_range(a)]), Timestamp::MAX)
                        .await
                        .unwrap();
                    let got: Vec<Value> = tablets
                        .into_iter()
                        .flat_map(|t| t.rows)
                        .map(|r| r[2].clone())
                        .collect();
                    let expected: Vec<Value> = model
                        .range((a, i64::MIN)..=(a, i64::MAX))
                        .map(|(_, v)| Value::Int64(*v))
                        .collect();
                    prop_assert_eq!(got, expected, "prefix {}", a);
                }
            }
            Ok(())
        })?;
    }
}

/// Even `a` with one row each, flushed: 40,000 keys, three row groups.
async fn even_keys(s: &Store, lookup: bool) {
    s.create_table("//t", schema(), options(10, lookup))
        .await
        .unwrap();
    let rows = (0..40_000).map(|i| row(2 * i, 0, i)).collect();
    s.write_rows("//t", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    s.flush_table("//t").await.unwrap();
}

#[tokio::test]
async fn lookups_of_absent_keys_skip_the_chunks_their_filters_rule_out() {
    let (_dir, s) = store().await;
    even_keys(&s, true).await;
    let chunks = s.chunks("//t").await.unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].key_filter.as_ref().unwrap().lengths, vec![2, 1]);
    let absent: Vec<Vec<Value>> = (0..1000).map(|i| key(2 * i + 1, 0)).collect();
    let (rows, statistics) = s
        .lookup_rows_with("//t", &absent, Timestamp::MAX, None)
        .await
        .unwrap();
    assert!(rows.iter().all(Option::is_none));
    // At 10 bits a key (8-bit fingerprints) about 1 in 256 gets through.
    assert!(
        statistics.chunks_skipped_by_key_filter > 980,
        "{statistics:?}"
    );
    let present: Vec<Vec<Value>> = (0..1000).map(|i| key(2 * i, 0)).collect();
    let (rows, statistics) = s
        .lookup_rows_with("//t", &present, Timestamp::MAX, None)
        .await
        .unwrap();
    assert!(rows.iter().all(Option::is_some));
    assert_eq!(statistics.chunks_skipped_by_key_filter, 0);

    // A prefix the filters rule out reads no chunk.
    let (tablets, statistics) = s
        .scan_ranges("//t", Some(&[prefix_range(7)]), Timestamp::MAX)
        .await
        .unwrap();
    assert!(tablets.iter().all(|t| t.rows.is_empty()));
    assert_eq!(statistics.chunks_skipped_by_key_filter, 1, "{statistics:?}");
    assert_eq!(statistics.chunks.0, 0, "{statistics:?}");
    assert_eq!(statistics.rows_decoded, 0, "{statistics:?}");
}

#[tokio::test]
async fn filters_are_written_but_not_read_until_lookups_enable_them() {
    let (_dir, s) = store().await;
    even_keys(&s, false).await;
    assert!(s.chunks("//t").await.unwrap()[0].key_filter.is_some());
    let absent: Vec<Vec<Value>> = (0..100).map(|i| key(2 * i + 1, 0)).collect();
    let (_, statistics) = s
        .lookup_rows_with("//t", &absent, Timestamp::MAX, None)
        .await
        .unwrap();
    assert_eq!(statistics.chunks_skipped_by_key_filter, 0);
    s.set_attribute(
        "//t",
        "mount_config/enable_key_filter_for_lookup",
        dynql_storage::AttributeValue::Boolean(true),
    )
    .await
    .unwrap();
    let (_, statistics) = s
        .lookup_rows_with("//t", &absent, Timestamp::MAX, None)
        .await
        .unwrap();
    assert!(
        statistics.chunks_skipped_by_key_filter > 90,
        "{statistics:?}"
    );
}

/// A damaged or missing filter file is never trusted: lookups and prefix scans read the
/// chunk without it and answer right, and `check` names the file, once (issue 38: a missing
/// one failed every lookup with a raw object-store error, and `check` found nothing).
#[tokio::test]
async fn a_damaged_or_missing_filter_file_is_read_around_and_reported() {
    for damage in ["flip", "delete"] {
        let (dir, s) = store().await;
        even_keys(&s, true).await;
        let chunk = s.chunks("//t").await.unwrap().remove(0);
        let file = dir.path().join(format!("{}.kf", chunk.path));
        match damage {
            "flip" => {
                let mut bytes = std::fs::read(&file).unwrap();
                bytes[20] ^= 0xff;
                std::fs::write(&file, bytes).unwrap();
            }
            _ => std::fs::remove_file(&file).unwrap(),
        }
        let fresh = Store::open(&format!("file://{}", dir.path().display())).unwrap();
        let keys = [key(2, 0), key(3, 0), key(79_998, 0)];
        let (rows, statistics) = fresh
            .lookup_rows_with("//t", &keys, Timestamp::MAX, None)
            .await
            .unwrap();
        assert_eq!(
            rows.iter().map(Option::is_some).collect::<Vec<_>>(),
            [true, false, true],
            "{damage}"
        );
        assert_eq!(statistics.chunks_skipped_by_key_filter, 0, "{damage}");
        let (tablets, _) = fresh
            .scan_ranges("//t", Some(&[prefix_range(4)]), Timestamp::MAX)
            .await
            .unwrap();
        assert_eq!(tablets.iter().map(|t| t.rows.len()).sum::<usize>(), 1);
        let report = fresh.check().await.unwrap();
        let named: Vec<_> = report
            .damage
            .iter()
            .filter(|d| d.file.ends_with(".kf"))
            .collect();
        assert_eq!(named.len(), 1, "{damage}: {report:?}");
        assert!(named[0].problem.contains("key filter"), "{:?}", named[0]);
        if damage == "delete" {
            assert!(named[0].problem.contains("missing"), "{:?}", named[0]);
        }
        assert_eq!(named[0].tables, vec!["//t".to_string()]);
        assert_eq!(report.key_filters, 1);
    }
}

#[tokio::test]
async fn filter_files_live_and_go_with_their_chunks() {
    let (dir, s) = store().await;
    even_keys(&s, true).await;
    let first = s.chunks("//t").await.unwrap().remove(0);
    let filter_of = |c: &dynql_storage::ChunkRef| dir.path().join(format!("{}.kf", c.path));
    s.checkpoint().await.unwrap();
    assert!(
        filter_of(&first).exists(),
        "collected while its chunk lives"
    );
    s.write_rows("//t", WriteKind::Overwrite, false, vec![row(1, 0, 1)])
        .await
        .unwrap();
    s.compact("//t").await.unwrap();
    let compacted = s.chunks("//t").await.unwrap();
    assert!(compacted.iter().all(|c| c.key_filter.is_some()));
    // Two newer checkpoints (each after a commit) leave the first chunk unnamed.
    for k in 0..2 {
        s.write_rows("//t", WriteKind::Overwrite, false, vec![row(3, k, 1)])
            .await
            .unwrap();
        s.checkpoint().await.unwrap();
    }
    let chunk_file = dir.path().join(&first.path);
    assert!(!chunk_file.exists(), "the compacted chunk is collected");
    assert!(!filter_of(&first).exists(), "kept after its chunk went");
    assert!(compacted.iter().all(|c| filter_of(c).exists()));
}

#[tokio::test]
async fn bulk_written_chunks_carry_filters_per_row_group() {
    let (_dir, s) = store().await;
    s.create_table("//t", schema(), options(10, true))
        .await
        .unwrap();
    let mut bulk = s.start_bulk_write("//t").await.unwrap();
    let rows = (0..40_000).map(|i| row(2 * i, 0, i)).collect();
    s.stage_bulk_rows(&mut bulk, rows).await.unwrap();
    s.commit_bulk_write(bulk).await.unwrap();
    let chunks = s.chunks("//t").await.unwrap();
    assert!(!chunks.is_empty());
    assert!(chunks.iter().all(|c| c.key_filter.is_some()), "{chunks:?}");
    let keys: Vec<Vec<Value>> = (0..2000).map(|i| key(i, 0)).collect();
    let (rows, statistics) = s
        .lookup_rows_with("//t", &keys, Timestamp::MAX, None)
        .await
        .unwrap();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.is_some(), i % 2 == 0, "key {i}");
    }
    assert!(
        statistics.chunks_skipped_by_key_filter > 980,
        "{statistics:?}"
    );
}
