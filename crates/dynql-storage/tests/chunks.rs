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
