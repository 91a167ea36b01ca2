//! `import` of the peer benchmark's Parquet files (10M rows by default) into a fresh
//! `file://` store vs writing the same rows to one Parquet file with the parquet crate, side
//! by side in one run; then `compact` of the freshly imported table vs its import (issue 41:
//! compaction of clean, single-version data within 2x the import's time); then a point query
//! from a freshly opened store right after the import.
//!
//! Run: `cargo bench -p dynql-benches --bench import -- DIR`, DIR holding `parquet/*.parquet`
//! (the peer benchmark's; written here when missing, DYNQL_BENCH_ROWS rows, default
//! 10,000,000). Runs per measurement = DYNQL_BENCH_RUNS (default 3). Peak memory is a
//! whole-process figure: measure the CLI's `dynql import` for it.

use std::path::PathBuf;
use std::time::Instant;

use arrow::record_batch::RecordBatch;
use dynql::io::ImportOptions;
use dynql::{Database, SelectOptions};
use dynql_benches::{batch, env, median_pair, report, BENCH_TABLE_ATTRIBUTES};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The allocator the `dynql` binary uses, so that the figures are the CLI's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("dynql-bench-peers"));
    let runs = env("DYNQL_BENCH_RUNS", 3);
    let parquet_dir = dir.join("parquet");
    if !parquet_dir.exists() {
        let rows = env("DYNQL_BENCH_ROWS", 10_000_000);
        std::fs::create_dir_all(&parquet_dir).unwrap();
        for (part, start) in (0..rows).step_by(1_000_000).enumerate() {
            let b = batch(start, 1_000_000.min(rows - start), true);
            let file =
                std::fs::File::create(parquet_dir.join(format!("part-{part:03}.parquet"))).unwrap();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, b.schema(), None).unwrap();
            w.write(&b).unwrap();
            w.close().unwrap();
        }
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&parquet_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    let sources: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    // The baseline's rows, in memory.
    let batches: Vec<RecordBatch> = files
        .iter()
        .flat_map(|p| {
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(p).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .map(Result::unwrap)
        })
        .collect();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    println!(
        "dynql import benchmark: {rows} rows in {} files, median of {runs} runs",
        files.len()
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let import_into = |url: &str| {
        let db = Database::open(url).unwrap();
        rt.block_on(async {
            db.create_table_from_text("//bench", BENCH_TABLE_ATTRIBUTES)
                .await
                .unwrap();
            let report = db
                .import("//bench", &sources, &ImportOptions::default())
                .await
                .unwrap();
            assert_eq!(report.rows_imported, rows as u64);
        });
    };
    let (import, parquet) = median_pair(
        runs,
        || {
            let store = tempfile::tempdir().unwrap();
            import_into(&format!("file://{}", store.path().display()));
        },
        || {
            let out = tempfile::tempdir().unwrap();
            let file = std::fs::File::create(out.path().join("t.parquet")).unwrap();
            let mut w =
                parquet::arrow::ArrowWriter::try_new(file, batches[0].schema(), None).unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            w.close().unwrap();
        },
    );
    report("import (parquet files)", import, "parquet write", parquet);

    // `compact` right after an import, against that import: each run imports into a fresh
    // store (timed), then compacts it (timed).
    let mut imports = Vec::new();
    let mut compactions = Vec::new();
    for _ in 0..runs.max(1) {
        let store = tempfile::tempdir().unwrap();
        let url = format!("file://{}", store.path().display());
        let t = Instant::now();
        import_into(&url);
        imports.push(t.elapsed());
        let db = Database::open(&url).unwrap();
        let t = Instant::now();
        let (before, after) = rt.block_on(db.compact("//bench")).unwrap();
        compactions.push(t.elapsed());
        assert_eq!((before, after), (rows, rows));
    }
    imports.sort();
    compactions.sort();
    report(
        "compact (fresh import)",
        compactions[compactions.len() / 2],
        "its import",
        imports[imports.len() / 2],
    );

    // A point query from a store opened right after the import.
    let store = tempfile::tempdir().unwrap();
    let url = format!("file://{}", store.path().display());
    import_into(&url);
    let options = SelectOptions::default();
    let id = rows as i64 / 2;
    let query = format!("* from [//bench] where hash = farm_hash({id}) % 64 and id = {id}");
    let t = Instant::now();
    let db = Database::open(&url).unwrap();
    let found = rt.block_on(db.select_rows(&query, &options)).unwrap();
    assert_eq!(found.rows.len(), 1);
    println!(
        "point query, fresh open after import: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}
