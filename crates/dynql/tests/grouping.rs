//! GROUP BY computed by DataFusion over columnar scans (no WHERE) must equal the row pipeline
//! (the same query with an always-true WHERE), over random data with nulls, flushed, compacted
//! and overwritten at random.

use dynql::{Database, SelectOptions, Value};
use proptest::prelude::*;
use serde_json::json;

fn normalize(mut rows: Vec<Vec<Value>>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = rows
        .drain(..)
        .map(|r| {
            r.into_iter()
                .map(|v| match v {
                    // Sums of doubles may add in another order.
                    Value::Double(d) => format!("{:.6e}", d),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect();
    out.sort();
    out
}

#[derive(Debug, Clone)]
struct Row {
    k: i64,
    g: Option<u8>,
    x: Option<i64>,
    d: Option<i32>,
}

fn row() -> impl Strategy<Value = Row> {
    (
        0i64..40,
        proptest::option::of(0u8..4),
        proptest::option::of(-1000i64..1000),
        proptest::option::of(-50i32..50),
    )
        .prop_map(|(k, g, x, d)| Row { k, g, x, d })
}

fn run(batches: Vec<(Vec<Row>, u8)>) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = Database::open("memory://").unwrap();
        db.create_table_from_text(
            "//t",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=g; type=string}; {name=x; type=int64}; {name=d; type=double}; {name=u; type=uint64}]}",
        )
        .await
        .unwrap();
        for (rows, action) in batches {
            let rows: Vec<_> = rows
                .iter()
                .map(|r| {
                    json!({"k": r.k, "g": r.g.map(|g| format!("g{g}")), "x": r.x,
                           "d": r.d.map(|d| d as f64 / 4.0), "u": r.x.map(|x| x.unsigned_abs())})
                })
                .collect();
            db.insert_json_rows("//t", &rows).await.unwrap();
            match action {
                0 => {
                    db.flush("//t").await.unwrap();
                }
                1 => {
                    db.compact("//t").await.unwrap();
                }
                _ => {}
            }
        }
        let opts = SelectOptions::default();
        for shape in [
            "g, sum(x) as s, min(d) as mn, max(g) as mx, avg(u) as a, sum(1) as n from [//t] {} group by g",
            "sum(d) as s, max(x) as mx, min(u) as mn from [//t] {} group by 1",
            "x, g, sum(u) as s from [//t] {} group by x, g having s > 10u order by x, g limit 5",
        ] {
            let columnar = db.select_rows(&shape.replace("{}", ""), &opts).await.unwrap();
            let rows = db
                .select_rows(&shape.replace("{}", "where k = k"), &opts)
                .await
                .unwrap();
            prop_assert_eq!(normalize(columnar.rows), normalize(rows.rows), "{}", shape);
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    #[test]
    fn datafusion_grouping_equals_the_row_pipeline(
        batches in proptest::collection::vec((proptest::collection::vec(row(), 0..20), 0u8..3), 1..5)
    ) {
        run(batches)?;
    }
}
