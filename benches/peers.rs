//! dynql's side of the peer benchmark (`benches/peers.py` runs it and the baselines, then
//! prints the ratios): a table keyed by `(hash = farm_hash(id) % 64, id)` with a few value
//! columns, written in 1M-row batches, flushed and compacted; the same rows as plain Parquet
//! files for DataFusion and DuckDB; then each query of `queries/bench/*.ytql`, timed warm.
//!
//! Run: `cargo bench -p dynql-benches --bench peers -- DIR` prints one JSON object per query:
//! `{"query": NAME, "ms": MEDIAN, "rows": N, "rows_read": N, "row_groups": [READ, TOTAL]}`.
//! DIR keeps the store and the Parquet files between runs (delete it to regenerate).
//! N = DYNQL_BENCH_ROWS (default 10,000,000), runs = DYNQL_BENCH_RUNS (default 5); one query
//! only with DYNQL_BENCH_ONLY=NAME (for profiling).

use std::path::{Path, PathBuf};
use std::time::Instant;

use dynql::{Database, SelectOptions};
use dynql_benches::{batch, env, median, BENCH_TABLE_ATTRIBUTES};

/// The allocator the `dynql` binary uses, so that the figures are the CLI's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TABLE: &str = "//bench";
const BATCH_ROWS: usize = 1_000_000;

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
        let b = batch(start, n, true);
        let file =
            std::fs::File::create(parquet_dir.join(format!("part-{part:03}.parquet"))).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, b.schema(), None).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
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
    let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("../queries/bench");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&queries)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ytql"))
        .collect();
    names.sort();
    let options = SelectOptions {
        input_row_limit: u64::MAX,
        output_row_limit: u64::MAX,
        ..SelectOptions::default()
    };
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
