//! Key filters and the lookup row cache on a 10M-row table (issue 15), side by side in one
//! run:
//! 1. 10k lookups of absent keys (odd keys of a table of even ones), each run from a freshly
//!    opened store: `mount_config/enable_key_filter_for_lookup` on vs off, on the same chunks
//!    (written with `chunk_writer/key_filter`); then the same lookups again on the warm handle.
//! 2. 10k lookups of a hot 1% of the keys with the lookup row cache vs without it.
//!
//! Run: `cargo bench -p dynql-benches --bench key_filters -- DIR` (DIR keeps the generated
//! Parquet files between runs; DYNQL_BENCH_ROWS rows, default 10,000,000; runs per
//! measurement DYNQL_BENCH_RUNS, default 3).

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql::io::ImportOptions;
use dynql::{Database, LookupOptions, Yson};
use dynql_benches::{env, median_pair, report, Lcg};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TABLE: &str = "{dynamic=%true; chunk_writer={key_filter={enable=%true}}; schema=[{name=k; type=int64; sort_order=ascending}; {name=v; type=string}; {name=x; type=double}]}";

/// Rows `start..start + n` of the table: key `2 * i` (even keys only).
fn batch(start: usize, n: usize) -> RecordBatch {
    let ids = start as i64..(start + n) as i64;
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values(ids.clone().map(|i| 2 * i))),
            Arc::new(StringArray::from_iter_values(
                ids.clone().map(|i| format!("value-{i:012}")),
            )),
            Arc::new(Float64Array::from_iter_values(ids.map(|i| i as f64 * 0.5))),
        ],
    )
    .unwrap()
}

fn key(k: i64) -> Yson {
    Yson::Map(vec![(b"k".to_vec(), Yson::Int64(k))])
}

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("dynql-bench-key-filters"));
    let runs = env("DYNQL_BENCH_RUNS", 3);
    let rows = env("DYNQL_BENCH_ROWS", 10_000_000);
    let parquet_dir = dir.join(format!("even-{rows}"));
    if !parquet_dir.exists() {
        std::fs::create_dir_all(&parquet_dir).unwrap();
        for (part, start) in (0..rows).step_by(1_000_000).enumerate() {
            let b = batch(start, 1_000_000.min(rows - start));
            let file =
                std::fs::File::create(parquet_dir.join(format!("part-{part:03}.parquet"))).unwrap();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, b.schema(), None).unwrap();
            w.write(&b).unwrap();
            w.close().unwrap();
        }
    }
    let mut sources: Vec<String> = std::fs::read_dir(&parquet_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".parquet"))
        .collect();
    sources.sort();
    println!("dynql key filter benchmark: {rows} rows, median of {runs} runs");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = tempfile::tempdir().unwrap();
    let url = format!("file://{}", store.path().display());
    let db = Database::open(&url).unwrap();
    rt.block_on(async {
        db.create_table_from_text("//t", TABLE).await.unwrap();
        let report = db
            .import("//t", &sources, &ImportOptions::default())
            .await
            .unwrap();
        assert_eq!(report.rows_imported, rows as u64);
    });
    let chunks = rt.block_on(db.store().chunks("//t")).unwrap();
    assert!(chunks.iter().all(|c| c.key_filter.is_some()));
    let filter_bytes: u64 = chunks
        .iter()
        .map(|c| c.key_filter.as_ref().map_or(0, |f| f.bytes))
        .sum();
    println!(
        "{} chunks, key filters {:.1} MB ({:.1} bits per key)",
        chunks.len(),
        filter_bytes as f64 / 1e6,
        filter_bytes as f64 * 8.0 / rows as f64
    );

    // 1. Absent keys spread over the whole table.
    let step = (rows / 10_000).max(1) as i64;
    let absent: Vec<Yson> = (0..10_000).map(|i| key(2 * (i * step) + 1)).collect();
    let set_filters = |on: bool| {
        rt.block_on(db.set_attribute(
            "//t",
            "mount_config/enable_key_filter_for_lookup",
            &Yson::Boolean(on),
        ))
        .unwrap();
    };
    let lookup_absent = |db: &Database| {
        let r = rt
            .block_on(db.lookup_rows("//t", &absent, &LookupOptions::default()))
            .unwrap();
        assert!(r.rows.is_empty());
        r.statistics.chunks_skipped_by_key_filter
    };
    set_filters(true);
    let skipped = lookup_absent(&Database::open(&url).unwrap());
    println!("chunks skipped by the key filter: {skipped} of 10000 lookups");
    let cold = |on: bool| {
        set_filters(on);
        lookup_absent(&Database::open(&url).unwrap());
    };
    let (with, without) = median_pair(runs, || cold(true), || cold(false));
    report(
        "10k absent-key lookups, fresh open: filter",
        with,
        "no filter",
        without,
    );
    let warm_with = Database::open(&url).unwrap();
    let warm_without = Database::open(&url).unwrap();
    let (with, without) = median_pair(
        runs,
        || {
            set_filters(true);
            lookup_absent(&warm_with);
        },
        || {
            set_filters(false);
            lookup_absent(&warm_without);
        },
    );
    report(
        "10k absent-key lookups, warm: filter",
        with,
        "no filter",
        without,
    );

    // 2. A hot 1% of the keys through the lookup row cache (room for 2% of the rows).
    rt.block_on(db.set_attribute(
        "//t",
        "mount_config/lookup_cache_rows_ratio",
        &Yson::Double(0.02),
    ))
    .unwrap();
    let mut rng = Lcg(7);
    let hot: Vec<Yson> = (0..10_000)
        .map(|_| key(2 * (rng.next() % (rows as u64 / 100).max(1)) as i64 * 100))
        .collect();
    let lookup_with = |cache: bool| {
        let options = LookupOptions {
            use_lookup_cache: Some(cache),
            ..LookupOptions::default()
        };
        let r = rt.block_on(db.lookup_rows("//t", &hot, &options)).unwrap();
        assert_eq!(r.rows.len(), hot.len());
    };
    let (cached, uncached) = median_pair(runs, || lookup_with(true), || lookup_with(false));
    report(
        "10k lookups of a hot 1%: cache",
        cached,
        "no cache",
        uncached,
    );
}
