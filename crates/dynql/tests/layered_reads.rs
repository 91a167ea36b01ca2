//! A table of several layers of overlapping chunks (compaction off, a flush per layer)
//! read by a hash aggregation takes each layer's newest versions as batches of their own
//! (`TabletScanExec` "rows in any order"): the groups are those of a model of the rows
//! written, whatever the layers overwrite, and reads whose result depends on the order
//! (rows in key order, LIMIT without ORDER BY) still get the rows in key order.

use std::collections::BTreeMap;
use std::sync::Arc;

use dynql::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use dynql::arrow::record_batch::RecordBatch;
use dynql::{Database, SelectOptions, Value};

const CATEGORIES: [Option<&str>; 6] = [
    Some("alpha"),
    Some("beta"),
    Some("a category past twelve bytes"),
    Some(""),
    Some("gamma"),
    None,
];

/// Per key: category and amount.
type Model = BTreeMap<i64, (Option<String>, i64)>;

/// Which rows of the model (key, amount) a query's WHERE keeps.
type Keep = fn(i64, i64) -> bool;

/// A small deterministic generator (no dependency on a seeded crate's stream).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// `//t (k, s, v, d)` written as `layers` flushes with compaction off: each layer a random
/// set of keys (new ones and overwrites of older layers' keys), tens of thousands of rows
/// (several row groups); the last layer, when `unflushed`, stays in the dynamic store.
async fn layered_table(seed: u64, layers: usize, unflushed: bool) -> (Database, Model) {
    let db = Database::open("memory://").unwrap();
    db.create_table_from_text(
        "//t",
        "{dynamic=%true; mount_config={enable_compaction_and_partitioning=%false}; \
         pivot_keys=[[];[20000]]; schema=[{name=k;type=int64;sort_order=ascending};\
         {name=s;type=string};{name=v;type=int64};{name=d;type=double}]}",
    )
    .await
    .unwrap();
    let mut random = Lcg(seed);
    let mut model = Model::new();
    for layer in 0..layers {
        // A layer is every key of a stride from some start, a random share of them, so
        // layers both interleave and overwrite one another.
        let stride = 1 + random.next(4) as i64;
        let start = random.next(5) as i64;
        let keep = 1 + random.next(4);
        let keys: Vec<i64> = (start..40_000)
            .step_by(stride as usize)
            .filter(|_| random.next(4) < keep)
            .collect();
        let mut categories = Vec::with_capacity(keys.len());
        let mut amounts = Vec::with_capacity(keys.len());
        for &k in &keys {
            let category = CATEGORIES[random.next(CATEGORIES.len() as u64) as usize];
            let amount = random.next(1000) as i64 - 300 + layer as i64;
            model.insert(k, (category.map(str::to_string), amount));
            categories.push(category);
            amounts.push(amount);
        }
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("k", Arc::new(Int64Array::from(keys))),
            ("s", Arc::new(StringArray::from(categories))),
            ("v", Arc::new(Int64Array::from(amounts.clone()))),
            (
                "d",
                Arc::new(Float64Array::from_iter_values(
                    amounts.iter().map(|&a| a as f64 / 4.0),
                )),
            ),
        ];
        db.insert_batch("//t", &RecordBatch::try_from_iter(columns).unwrap())
            .await
            .unwrap();
        if !(unflushed && layer + 1 == layers) {
            db.flush("//t").await.unwrap();
        }
    }
    (db, model)
}

fn options() -> SelectOptions {
    SelectOptions {
        input_row_limit: u64::MAX,
        output_row_limit: u64::MAX,
        ..Default::default()
    }
}

/// The physical plan of `query`.
async fn plan_of(db: &Database, query: &str) -> String {
    db.explain_query(query, &options())
        .await
        .unwrap()
        .plan
        .unwrap()
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(b) => Some(String::from_utf8(b.clone()).unwrap()),
        other => panic!("a string {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int64(n) => *n,
        other => panic!("an integer {other:?}"),
    }
}

/// Sum of `v` and count per category of the model's rows that pass `keep`.
fn expected(
    model: &Model,
    keep: impl Fn(i64, i64) -> bool,
) -> BTreeMap<Option<String>, (i64, i64)> {
    let mut groups = BTreeMap::new();
    for (&k, (s, v)) in model {
        if keep(k, *v) {
            let entry = groups.entry(s.clone()).or_insert((0, 0));
            entry.0 += v;
            entry.1 += 1;
        }
    }
    groups
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hash_aggregation_over_layers_reads_them_in_any_order_and_matches_the_model() {
    for (seed, layers, unflushed) in [(1, 2, false), (2, 5, false), (3, 8, false), (4, 4, true)] {
        let (db, model) = layered_table(seed, layers, unflushed).await;
        let cases: [(&str, Keep); 4] = [
            // Through the dictionaries (`DictionaryGroupsExec`), and DataFusion's own
            // aggregation (grouped by an expression; with a filter).
            (
                "s, sum(v) as total, sum(1) as n from [//t] group by s",
                |_, _| true,
            ),
            (
                "s, sum(v) as total, sum(1) as n from [//t] group by lower(s) as s",
                |_, _| true,
            ),
            (
                "s, sum(v) as total, sum(1) as n from [//t] where v % 3 = 0 group by s",
                |_, v| v % 3 == 0,
            ),
            (
                "s, sum(v) as total, sum(1) as n from [//t] where k between 15000 and 25000 group by s",
                |k, _| (15000..=25000).contains(&k),
            ),
        ];
        for (query, keep) in cases {
            let plan = plan_of(&db, query).await;
            assert!(plan.contains("rows in any order"), "{query}\n{plan}");
            let result = db.select_rows(query, &options()).await.unwrap();
            let groups: BTreeMap<Option<String>, (i64, i64)> = result
                .rows
                .iter()
                .map(|r| (text(&r[0]), (int(&r[1]), int(&r[2]))))
                .collect();
            // Every category is lower case already.
            assert_eq!(groups, expected(&model, keep), "seed {seed}: {query}");
            if !query.contains("between") {
                assert_eq!(
                    result.statistics.rows_read,
                    model.len() as u64,
                    "seed {seed}: {query}: every key's newest version is read once"
                );
            }
        }
        // A sum of doubles and a count over the whole table, grouped by a constant.
        let result = db
            .select_rows("sum(d) as d, sum(1) as n from [//t] group by 1", &options())
            .await
            .unwrap();
        let sum: f64 = model.values().map(|(_, v)| *v as f64 / 4.0).sum();
        assert_eq!(result.rows.len(), 1);
        match (&result.rows[0][0], &result.rows[0][1]) {
            (Value::Double(d), Value::Int64(n)) => {
                assert!((d - sum).abs() < 1e-6, "seed {seed}: {d} vs {sum}");
                assert_eq!(*n, model.len() as i64);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_whose_result_depends_on_the_order_keep_key_order_over_layers() {
    let (db, model) = layered_table(5, 6, false).await;
    // Rows in key order.
    let result = db
        .select_rows("k, s, v from [//t] where v > 600", &options())
        .await
        .unwrap();
    let want: Vec<Vec<Value>> = model
        .iter()
        .filter(|(_, (_, v))| *v > 600)
        .map(|(&k, (s, v))| {
            vec![
                Value::Int64(k),
                s.as_ref()
                    .map_or(Value::Null, |s| Value::String(s.as_bytes().to_vec())),
                Value::Int64(*v),
            ]
        })
        .collect();
    assert_eq!(result.rows, want);
    // LIMIT without ORDER BY keeps the groups first met in key order: the scan stays in
    // key order under it.
    let query = "s, sum(1) as n from [//t] group by s limit 2";
    let plan = plan_of(&db, query).await;
    assert!(!plan.contains("rows in any order"), "{plan}");
    let result = db.select_rows(query, &options()).await.unwrap();
    let mut first_met = Vec::new();
    for (s, _) in model.values() {
        if !first_met.contains(s) {
            first_met.push(s.clone());
        }
    }
    let got: Vec<Option<String>> = result.rows.iter().map(|r| text(&r[0])).collect();
    assert_eq!(got, first_met[..2].to_vec());
}
