//! dynql's side of the peer benchmark (`benches/peers.py` runs it and the baselines, then
//! prints the ratios): a table `//bench` keyed by `(hash = farm_hash(id) % 64, id)` with a few
//! value columns, written in 1M-row batches, flushed and compacted; the same rows as plain
//! Parquet files for DataFusion and DuckDB (DIR/parquet); then each query of
//! `queries/bench/*.ytql`, timed warm. Two more tables serve single shapes:
//! * `//categories`, a small table keyed by `category` (the lookup join of `lookup_join`),
//!   also written as DIR/categories.parquet (outside DIR/parquet, which the peers read as
//!   `bench`);
//! * `//bench_layers`, the rows of `//bench` written as 8 flushes, flush `i` holding the ids
//!   with `id % 8 == i` (every chunk spans the whole key range), with compaction off
//!   (`mount_config/enable_compaction_and_partitioning=%false`): the 8-layer uncompacted read
//!   of `layers8`; the peers read `bench` for it (the same rows).
//!
//! Run: `cargo bench -p dynql-benches --bench peers -- DIR` prints one JSON object per query:
//! `{"query": NAME, "ms": MEDIAN, "rows": N, "rows_read": N, "row_groups": [READ, TOTAL]}`.
//! DIR keeps the store and the Parquet files between runs (delete it to regenerate); a store
//! made before `//categories` or `//bench_layers` existed gets them on the next run.
//! N = DYNQL_BENCH_ROWS (default 10,000,000), runs = DYNQL_BENCH_RUNS (default 5); one query
//! only with DYNQL_BENCH_ONLY=NAME (for profiling).

use std::path::{Path, PathBuf};
use std::time::Instant;

use dynql::{Database, SelectOptions, Value};
use dynql_benches::{
    batch, batch_of_ids, categories_batch, env, median, BENCH_TABLE_ATTRIBUTES,
    CATEGORIES_TABLE_ATTRIBUTES,
};

/// The allocator the `dynql` binary uses, so that the figures are the CLI's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TABLE: &str = "//bench";
const CATEGORIES: &str = "//categories";
const LAYERS: &str = "//bench_layers";
/// The number of flushes (layers of overlapping chunks) `//bench_layers` is written as.
const LAYER_COUNT: i64 = 8;
const BATCH_ROWS: usize = 1_000_000;

fn write_parquet(path: &Path, b: &arrow::record_batch::RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, b.schema(), None).unwrap();
    w.write(b).unwrap();
    w.close().unwrap();
}

async fn generate(db: &Database, parquet_dir: &Path, rows: usize) {
    db.create_table_from_text(TABLE, BENCH_TABLE_ATTRIBUTES)
        .await
        .unwrap();
    std::fs::create_dir_all(parquet_dir).unwrap();
    let t = Instant::now();
    let mut start = 0;
    let mut part = 0;
    while start < rows {
        let n = BATCH_ROWS.min(rows - start);
        db.insert_batch(TABLE, &batch(start, n, false))
            .await
            .unwrap();
        db.flush(TABLE).await.unwrap();
        write_parquet(
            &parquet_dir.join(format!("part-{part:03}.parquet")),
            &batch(start, n, true),
        );
        start += n;
        part += 1;
        eprintln!("generated {start} rows ({:.0?})", t.elapsed());
    }
    let (before, after) = db.compact(TABLE).await.unwrap();
    eprintln!(
        "compacted {before} -> {after} versions ({:.0?})",
        t.elapsed()
    );
}

/// Creates and fills the lookup-join table if the store lacks it, and writes its Parquet
/// file if missing.
async fn ensure_categories(db: &Database, parquet_file: &Path) {
    if !db.exists(CATEGORIES).await.unwrap() {
        db.create_table_from_text(CATEGORIES, CATEGORIES_TABLE_ATTRIBUTES)
            .await
            .unwrap();
        db.insert_batch(CATEGORIES, &categories_batch())
            .await
            .unwrap();
        db.flush(CATEGORIES).await.unwrap();
        eprintln!("created {CATEGORIES}");
    }
    if !parquet_file.exists() {
        write_parquet(parquet_file, &categories_batch());
    }
}

/// Creates `//bench_layers` if the store lacks it: the rows of `//bench` (ids `0..n`, n
/// counted) in [`LAYER_COUNT`] flushes, flush `i` holding the ids with `id % 8 == i`, so every
/// chunk overlaps every other; compaction off, so they stay as many layers. Each layer is one
/// insert (one commit) then a flush: a checkpoint between them flushes the whole layer, never
/// part of it (a ninth layer would make the checkpoint compact the table).
async fn ensure_layers(db: &Database, options: &SelectOptions) {
    if db.exists(LAYERS).await.unwrap() {
        return;
    }
    let counted = db
        .select_rows(&format!("sum(1) as n from [{TABLE}] group by 1"), options)
        .await
        .unwrap();
    let rows = match counted.rows.first().map(|r| &r[0]) {
        Some(Value::Int64(n)) => *n,
        other => panic!("row count of {TABLE}: {other:?}"),
    };
    let attributes = BENCH_TABLE_ATTRIBUTES.replacen(
        "{dynamic=%true;",
        "{dynamic=%true; mount_config={enable_compaction_and_partitioning=%false};",
        1,
    );
    db.create_table_from_text(LAYERS, &attributes)
        .await
        .unwrap();
    let t = Instant::now();
    for layer in 0..LAYER_COUNT {
        let ids = (layer..rows).step_by(LAYER_COUNT as usize);
        db.insert_batch(LAYERS, &batch_of_ids(ids, false))
            .await
            .unwrap();
        db.flush(LAYERS).await.unwrap();
        eprintln!(
            "{LAYERS}: layer {} of {LAYER_COUNT} ({:.0?})",
            layer + 1,
            t.elapsed()
        );
    }
    let chunks = db.get_attribute(LAYERS, Some("chunk_count")).await.unwrap();
    eprintln!(
        "{LAYERS}: {rows} rows, {} chunks",
        dynql::yson::to_text(&chunks)
    );
}

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("dynql-bench-peers"));
    let rows = env("DYNQL_BENCH_ROWS", 10_000_000);
    let runs = env("DYNQL_BENCH_RUNS", 5);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store_dir = dir.join("store");
    let fresh = !store_dir.exists();
    let db = Database::open_with_chunk_cache(
        &format!("file://{}", store_dir.display()),
        env("DYNQL_BENCH_CACHE", 2 << 30),
    )
    .unwrap();
    if fresh {
        rt.block_on(generate(&db, &dir.join("parquet"), rows));
    }
    let options = SelectOptions {
        input_row_limit: u64::MAX,
        output_row_limit: u64::MAX,
        ..SelectOptions::default()
    };
    rt.block_on(ensure_categories(&db, &dir.join("categories.parquet")));
    rt.block_on(ensure_layers(&db, &options));
    let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("../queries/bench");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&queries)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ytql"))
        .collect();
    names.sort();
    let only = std::env::var("DYNQL_BENCH_ONLY").ok();
    for path in names {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let query = std::fs::read_to_string(&path).unwrap();
        let query = query.trim();
        let mut last = None;
        let ms = median(runs, || {
            last = Some(rt.block_on(db.select_rows(query, &options)).unwrap());
        })
        .as_secs_f64()
            * 1e3;
        let r = last.unwrap();
        println!(
            "{{\"query\": \"{name}\", \"ms\": {ms:.3}, \"rows\": {}, \"rows_read\": {}, \"row_groups\": [{}, {}]}}",
            r.rows.len(),
            r.statistics.rows_read,
            r.statistics.scan.row_groups.0,
            r.statistics.scan.row_groups.1
        );
    }
}
