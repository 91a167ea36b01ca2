//! Auto-partitioning by size (issue 15), side by side in one run: a table grown by
//! `insert_rows` batches to about ten times its partition size, with
//! `auto_partitioning_by_size` on, against the same rows in a table that never splits.
//! Prints the tablets the growth left, their sizes, what a point query reads, and point
//! queries and a full-scan count on both tables (medians and ratios).
//!
//! Run: `cargo bench -p dynql-benches --bench partitioning` (N = DYNQL_BENCH_ROWS rows,
//! default 1,000,000, in batches of 100,000; partition size DYNQL_PARTITION_MB, default 4;
//! runs = DYNQL_BENCH_RUNS, default 3).

use dynql::{Database, SelectOptions, Yson};
use dynql_benches::{env, median_pair, report, Lcg};

/// A row whose value compresses badly (so N rows are tens of megabytes of chunks).
fn row(k: i64) -> Yson {
    let mut x = (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut v = String::with_capacity(32);
    for _ in 0..2 {
        x ^= x >> 31;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        v.push_str(&format!("{x:016x}"));
    }
    Yson::Map(vec![
        (b"k".to_vec(), Yson::Int64(k)),
        (b"v".to_vec(), Yson::String(v.into_bytes())),
    ])
}

fn main() {
    let n = env("DYNQL_BENCH_ROWS", 1_000_000) as i64;
    let size_mb = env("DYNQL_PARTITION_MB", 4);
    let runs = env("DYNQL_BENCH_RUNS", 3);
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!("dynql auto-partitioning: {n} rows in batches of 100,000, partition size {size_mb} MB, median of {runs} runs");
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&format!("file://{}", dir.path().display())).unwrap();
    let schema = "schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]";
    rt.block_on(async {
        db.create_table_from_text(
            "//split",
            &format!("{{dynamic=%true; auto_partitioning_by_size=%true; auto_partitioning_partition_size_mb={size_mb}; {schema}}}"),
        )
        .await
        .unwrap();
        db.create_table_from_text("//whole", &format!("{{dynamic=%true; {schema}}}"))
            .await
            .unwrap();
        // Keys arrive shuffled across batches, as inserts into a growing table do.
        let batches = (n + 99_999) / 100_000;
        for b in 0..batches {
            let rows: Vec<Yson> = (0..100_000)
                .map(|i| i * batches + b)
                .filter(|k| *k < n)
                .map(row)
                .collect();
            db.insert_rows("//split", &rows).await.unwrap();
            db.insert_rows("//whole", &rows).await.unwrap();
        }
    });
    let tablets = rt
        .block_on(db.get_attribute("//split", Some("tablets")))
        .unwrap();
    let sizes: Vec<i64> = match &tablets {
        Yson::List(items) => items
            .iter()
            .filter_map(|t| match t.get("compressed_data_size") {
                Some(Yson::Int64(s)) => Some(*s),
                _ => None,
            })
            .collect(),
        _ => vec![],
    };
    let total: i64 = sizes.iter().sum();
    println!(
        "grown to {:.1}x the partition size: {} tablets, {:.2}-{:.2} MB each (the unsplit table: 1 tablet)",
        total as f64 / (size_mb as f64 * 1048576.0),
        sizes.len(),
        *sizes.iter().min().unwrap_or(&0) as f64 / 1048576.0,
        *sizes.iter().max().unwrap_or(&0) as f64 / 1048576.0,
    );
    let mut rng = Lcg(7);
    let keys: Vec<i64> = (0..200).map(|_| (rng.next() % n as u64) as i64).collect();
    let point = |table: &str| {
        let mut tablets_read = 0;
        for k in &keys {
            let q = format!("v from [{table}] where k = {k}");
            let r = rt
                .block_on(db.select_rows(&q, &SelectOptions::default()))
                .unwrap();
            assert_eq!(r.rows.len(), 1);
            tablets_read = tablets_read.max(r.statistics.scan.tablets.0);
        }
        tablets_read
    };
    println!(
        "a point query reads {} tablet(s) of the split table",
        point("//split")
    );
    let (split, whole) = median_pair(runs, || _ = point("//split"), || _ = point("//whole"));
    report("200 point queries", split, "unsplit table", whole);
    let count = |table: &str| {
        let q = format!("sum(1) as n from [{table}] group by 1");
        let options = SelectOptions {
            input_row_limit: u64::MAX,
            ..SelectOptions::default()
        };
        let r = rt.block_on(db.select_rows(&q, &options)).unwrap();
        assert_eq!(r.rows.len(), 1);
    };
    let (split, whole) = median_pair(runs, || count("//split"), || count("//whole"));
    report("full-scan count", split, "unsplit table", whole);
}
