//! Differential test: random queries over random tables give the same results (or the same
//! error) through `select_rows` (DataFusion over Arrow batches) and through a reference model
//! evaluating the bound plan row by row over the rows the test wrote ([`model`]). Tables hold
//! nulls and are flushed, compacted and overwritten at random, so the scans mix clean row
//! groups with version merges.

mod model;

use std::collections::BTreeMap;

use dynql::{Database, SelectOptions, Value};
use dynql_exec::{select_rows, Error};
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
struct Row {
    k: i64,
    g: Option<u8>,
    x: Option<i64>,
    d: Option<i32>,
    b: Option<bool>,
}

fn row() -> impl Strategy<Value = Row> {
    (
        0i64..40,
        proptest::option::of(0u8..4),
        proptest::option::of(-20i64..20),
        proptest::option::of(-50i32..50),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(k, g, x, d, b)| Row { k, g, x, d, b })
}

/// An int64 expression over the table's columns.
fn int_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("x".to_string()),
        Just("k".to_string()),
        (-5i64..6).prop_map(|v| v.to_string()),
        Just("length(g)".to_string()),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop_oneof![
                    Just("+"),
                    Just("-"),
                    Just("*"),
                    Just("/"),
                    Just("%"),
                    Just("&")
                ],
                inner.clone()
            )
                .prop_map(|(l, op, r)| format!("({l} {op} {r})")),
            inner.clone().prop_map(|e| format!("(-{e})")),
            (bool_leaf(), inner.clone(), inner.clone())
                .prop_map(|(c, t, f)| format!("if({c}, {t}, {f})")),
        ]
    })
}

/// A boolean expression without nesting.
fn bool_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("b".to_string()),
        (
            prop_oneof![Just("<"), Just("="), Just(">="), Just("!=")],
            -10i64..10
        )
            .prop_map(|(op, v)| format!("x {op} {v}")),
        (0u8..5).prop_map(|g| format!("g = \"g{g}\"")),
        Just("g > \"g1\"".to_string()),
        Just("d < 2.5".to_string()),
        Just("is_null(x)".to_string()),
        Just("x in (1, 2, 3, -4)".to_string()),
        Just("k between 10 and 20".to_string()),
        Just("x between -3 and 5".to_string()),
        Just("x between (null and -5, 0 and 0, 7 and 100)".to_string()),
        Just("g between \"g1\" and \"g3\"".to_string()),
        Just("g like \"g%1\"".to_string()),
        Just("is_prefix(\"g\", g)".to_string()),
    ]
}

fn bool_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        bool_leaf(),
        (
            int_expr(),
            prop_oneof![Just("<"), Just("="), Just(">")],
            int_expr()
        )
            .prop_map(|(l, op, r)| format!("{l} {op} {r}")),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("({l} and {r})")),
            (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("({l} or {r})")),
            inner.prop_map(|e| format!("not ({e})")),
        ]
    })
}

/// A query over `//t`, and whether its rows come in a defined order.
fn query() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        (int_expr(), bool_expr())
            .prop_map(|(v, w)| (format!("k, g, {v} as v from [//t] where {w}"), true)),
        (bool_expr(), int_expr(), 0u64..4).prop_map(|(w, v, offset)| (
            format!("k, {v} as v from [//t] where {w} order by v desc, k offset {offset} limit 7"),
            true
        )),
        (bool_expr(), int_expr(), proptest::option::of(-30i64..30)).prop_map(|(w, v, h)| {
            let having = h.map(|h| format!(" having s > {h}")).unwrap_or_default();
            (
                format!(
                    "g, sum({v}) as s, min(d) as mn, max(g) as mx, avg(x) as a, sum(1) as n, \
                     cardinality(x) as c, argmax(g, x) as am from [//t] where {w} group by g{having}"
                ),
                false,
            )
        }),
        // Grouped by the string column alone, the aggregates not reading it: the groups are
        // found through the scan's dictionaries where WHERE does not read it either.
        (bool_expr(), int_expr(), proptest::option::of(-30i64..30)).prop_map(|(w, v, h)| {
            let having = h.map(|h| format!(" having s > {h}")).unwrap_or_default();
            (
                format!(
                    "g, sum({v}) as s, min(d) as mn, avg(x) as a, sum(1) as n from [//t] \
                     where {w} group by g{having}"
                ),
                false,
            )
        }),
        (int_expr(), bool_expr()).prop_map(|(key, w)| (
            format!(
                "{key} as key, first(g) as f, max(b) as mb, argmin(k, d) as ak from [//t] where {w} \
                 group by key order by key limit 10"
            ),
            true
        )),
        (bool_expr(), int_expr()).prop_map(|(w, v)| (
            format!("sum(1) as n, sum({v}) as s from [//t] where {w} group by 1 as one"),
            true
        )),
        // Joins: lookups by the foreign key, without an index, LEFT, and grouped after.
        (bool_expr(), int_expr()).prop_map(|(w, v)| (
            format!("k, g, w, {v} as v from [//t] join [//u] using g where {w}"),
            true
        )),
        bool_expr().prop_map(|w| (
            format!("k, t.g, u.g as ug, w from [//t] as t left join [//u] as u on t.x = u.w and u.w > -2 where {w}"),
            true
        )),
        (bool_expr(), int_expr()).prop_map(|(w, v)| (
            format!("w, sum({v}) as s, sum(1) as n from [//t] left join [//u] using g where {w} group by w"),
            false
        )),
        // An inner join grouped by its string key and a foreign column: the key through the
        // scan's dictionaries, null keys matching no foreign row.
        (bool_expr(), int_expr(), proptest::bool::ANY).prop_map(|(w, v, left)| (
            format!(
                "g, w, sum({v}) as s, sum(1) as n from [//t] {}join [//u] using g where {w} group by g, w",
                if left { "left " } else { "" }
            ),
            false
        )),
        // WITH TOTALS before and after HAVING (a null group key fails), and the first groups
        // of a LIMIT without ORDER BY.
        (bool_expr(), int_expr(), -10i64..10, 0u8..3).prop_map(|(w, v, h, placement)| {
            let (key, clauses) = match placement {
                0 => ("g", "with totals".to_string()),
                1 => ("k % 3", format!("with totals having n > {h}")),
                _ => ("k % 3", format!("having s > {h} with totals")),
            };
            (
                format!(
                    "{key} as m, sum({v}) as s, first(x) as f, avg(d) as a, cardinality(g) as c, \
                     sum(1) as n from [//t] where {w} group by m {clauses}"
                ),
                false,
            )
        }),
        // WITH TOTALS without `first`: the groups aggregate in parallel and the totals merge
        // as they come.
        (bool_expr(), int_expr(), -10i64..10, any::<bool>()).prop_map(|(w, v, h, nullable)| {
            let key = if nullable { "g" } else { "k % 4" };
            (
                format!(
                    "{key} as m, sum({v}) as s, max(x) as mx, min(g) as mg, avg(d) as a, \
                     sum(1) as n from [//t] where {w} group by m with totals having n > {h}"
                ),
                false,
            )
        }),
        // Rows in key order up to a LIMIT: the scan stops once enough pass WHERE.
        (bool_expr(), 0u64..3, 1u64..12, any::<bool>()).prop_map(|(w, offset, limit, by_key)| (
            format!(
                "k, g, x from [//t] where {w} {} offset {offset} limit {limit}",
                if by_key { "order by k" } else { "" }
            ),
            true
        )),
        (bool_expr(), int_expr(), 0u64..3, 1u64..4).prop_map(|(w, v, offset, limit)| (
            format!(
                "k % 5 as m, sum({v}) as s, first(g) as f from [//t] where {w} group by m \
                 offset {offset} limit {limit}"
            ),
            false
        )),
    ]
}

/// YT's row limits, at random: small limits (or none), failing or cutting the rows.
fn limits() -> impl Strategy<Value = (Option<u64>, Option<u64>, bool)> {
    (
        proptest::option::of(1u64..40),
        proptest::option::of(1u64..12),
        any::<bool>(),
    )
}

fn normalize(rows: Vec<Vec<Value>>, ordered: bool) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| match v {
                    // Averages may add in another order.
                    Value::Double(d) => format!("{:.6e}", d),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect();
    if !ordered {
        out.sort();
    }
    out
}

/// An error raised by a check that a pipeline may make before evaluating a row's
/// expressions.
fn checked_first(e: &Error) -> bool {
    matches!(e, Error::LimitExceeded { .. })
        || e.to_string()
            .contains("Null values are forbidden in group key")
}

fn run(
    batches: Vec<(Vec<Row>, u8)>,
    queries: Vec<(String, bool)>,
    canonical: bool,
    (input_limit, output_limit, fail): (Option<u64>, Option<u64>, bool),
) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = Database::open("memory://").unwrap();
        db.create_table_from_text(
            "//t",
            "{dynamic=%true; schema=[{name=k; type=int64; sort_order=ascending}; {name=g; type=string}; \
             {name=x; type=int64}; {name=d; type=double}; {name=b; type=boolean}]}",
        )
        .await
        .unwrap();
        // The model of //t: the last write of each key, in key order.
        let mut latest: BTreeMap<i64, Row> = BTreeMap::new();
        for (rows, action) in batches {
            for r in &rows {
                latest.insert(r.k, r.clone());
            }
            let rows: Vec<_> = rows
                .iter()
                .map(|r| {
                    json!({"k": r.k, "g": r.g.map(|g| format!("g{g}")), "x": r.x,
                           "d": r.d.map(|d| d as f64 / 4.0), "b": r.b})
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
        db.create_table_from_text(
            "//u",
            "{dynamic=%true; schema=[{name=g; type=string; sort_order=ascending}; {name=w; type=int64}]}",
        )
        .await
        .unwrap();
        let foreign = [json!({"g": "g0", "w": 1}), json!({"g": "g1", "w": -2}),
                       json!({"g": "g2", "w": 1}), json!({"g": null, "w": 3})];
        db.insert_json_rows("//u", &foreign).await.unwrap();
        let text = |s: String| Value::String(s.into_bytes());
        let t_schema = db.store().table("//t").await.unwrap().schema.query_schema();
        let u_schema = db.store().table("//u").await.unwrap().schema.query_schema();
        let opt = |v: Option<Value>| v.unwrap_or(Value::Null);
        let tables = [
            model::Table {
                path: "//t".into(),
                schema: t_schema,
                rows: latest
                    .values()
                    .map(|r| {
                        vec![
                            Value::Int64(r.k),
                            opt(r.g.map(|g| text(format!("g{g}")))),
                            opt(r.x.map(Value::Int64)),
                            opt(r.d.map(|d| Value::Double(d as f64 / 4.0))),
                            opt(r.b.map(Value::Boolean)),
                        ]
                    })
                    .collect(),
            },
            model::Table {
                path: "//u".into(),
                schema: u_schema,
                // In key order: null first.
                rows: vec![
                    vec![Value::Null, Value::Int64(3)],
                    vec![text("g0".into()), Value::Int64(1)],
                    vec![text("g1".into()), Value::Int64(-2)],
                    vec![text("g2".into()), Value::Int64(1)],
                ],
            },
        ];
        let defaults = SelectOptions::default();
        let options = SelectOptions {
            allow_join_without_index: true,
            use_canonical_null_relations: canonical,
            input_row_limit: input_limit.unwrap_or(defaults.input_row_limit),
            output_row_limit: output_limit.unwrap_or(defaults.output_row_limit),
            fail_on_incomplete_result: fail,
            ..defaults
        };
        for (query, ordered) in &queries {
            let actual = select_rows(db.store(), query, &options).await;
            let expected = model::select(&tables, query, &options);
            match (actual, expected) {
                (Ok(v), Ok(m)) => {
                    prop_assert_eq!(
                        normalize(v.rows, *ordered),
                        normalize(m.rows, *ordered),
                        "{}",
                        query
                    );
                    prop_assert_eq!(
                        (v.statistics.incomplete_input, v.statistics.incomplete_output),
                        (m.incomplete_input, m.incomplete_output),
                        "{}",
                        query
                    );
                    // A lookup join reads the foreign table once per batch of its input (as
                    // YT does); a scan that stops early counts whole batches.
                    if !query.contains(" join ") {
                        let (least, most) = m.rows_read;
                        let read = v.statistics.rows_read;
                        prop_assert!(least <= read && read <= most, "{query}: read {read}, model {least}..={most}");
                    }
                }
                // Which comes first, a row limit (or WITH TOTALS' null key check, made per
                // batch) or an evaluation error, is not defined: both must fail.
                (Err(v), Err(m)) if checked_first(&v) || checked_first(&m) => {}
                // A scan that stops early evaluates WHERE a batch at a time (as YT does), so an
                // evaluation error in a row past the ones needed may fail the query.
                (Err(Error::Query(_)), Ok(m)) if m.stopped => {}
                (Err(v), Err(m)) => prop_assert_eq!(v.to_string(), m.to_string(), "{}", query),
                (v, m) => prop_assert!(
                    false,
                    "{query}: select_rows {:?}, model {:?}",
                    v.map(|r| r.rows),
                    m.map(|r| r.rows)
                ),
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn select_rows_equals_the_model(
        batches in proptest::collection::vec((proptest::collection::vec(row(), 0..25), 0u8..3), 1..4),
        queries in proptest::collection::vec(query(), 1..6),
        canonical in any::<bool>(),
        limits in limits(),
    ) {
        run(batches, queries, canonical, limits)?;
    }
}
