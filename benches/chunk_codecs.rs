//! The codec of the store's own chunks (issue 40, item 1): the same table written with each
//! `compression_codec` (none, snappy, lz4, zstd_1, zstd_3), each figure side by side with
//! the uncompressed table's in one run:
//!
//! 1. bytes of the table's chunks once compacted;
//! 2. `import` of a Parquet file holding the rows into a fresh table, then `compact`;
//! 3. a cold full-scan aggregate: a fresh handle without a chunk cache, so every run reads
//!    and decompresses what it reads (the files are in the OS page cache, as the peers'
//!    are in `peers.rs`: this measures the codec, not the disk);
//! 4. the same aggregate warm (default chunk cache, after one run);
//! 5. cold point lookups: 1,000 random keys by `lookup_rows` from a fresh handle without a
//!    chunk cache (each key decompresses the pages that hold it).
//!
//! The table is shaped like the peer benchmark's: an int64 key, ids with repeats, a
//! 16-value category, prices, a status code and a text payload with a common prefix.
//!
//! Run: `cargo bench -p dynql-benches --bench chunk_codecs` (N = DYNQL_BENCH_ROWS, default
//! 1,000,000; runs per measurement = DYNQL_BENCH_RUNS, default 3, taken in turns over the
//! codecs so that a machine that slows down weighs on all of them alike).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql::io::ImportOptions;
use dynql::{Database, LookupOptions, SelectOptions, Yson};
use dynql_benches::{env, Lcg};

/// The allocator the `dynql` binary uses, so that the figures are the CLI's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The codecs compared; the first is the baseline of every ratio.
const CODECS: [&str; 5] = ["none", "snappy", "lz4", "zstd_1", "zstd_3"];

const SCHEMA: &str = "[{name=k; type=int64; sort_order=ascending}; {name=user_id; type=int64}; \
     {name=category; type=string}; {name=price; type=double}; {name=status; type=int64}; \
     {name=payload; type=string}]";

const CATEGORIES: [&str; 16] = [
    "books", "music", "video", "games", "garden", "tools", "toys", "food", "health", "beauty",
    "sports", "auto", "office", "pets", "baby", "travel",
];

/// Rows `start..start + n`: values repeat as they do in event tables (a user acts many
/// times, few categories and statuses, prices in cents, a payload with a fixed prefix).
fn batch(start: usize, n: usize) -> RecordBatch {
    let keys = start as i64..(start + n) as i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("user_id", DataType::Int64, true),
        Field::new("category", DataType::Utf8, true),
        Field::new("price", DataType::Float64, true),
        Field::new("status", DataType::Int64, true),
        Field::new("payload", DataType::Utf8, true),
    ]));
    let mix = |k: i64| (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(keys.clone())),
            Arc::new(Int64Array::from_iter_values(
                keys.clone().map(|k| (mix(k) % 50_000) as i64),
            )),
            Arc::new(StringArray::from_iter_values(
                keys.clone().map(|k| CATEGORIES[(mix(k) % 16) as usize]),
            )),
            Arc::new(Float64Array::from_iter_values(
                keys.clone().map(|k| (mix(k) % 100_000) as f64 / 100.0),
            )),
            Arc::new(Int64Array::from_iter_values(
                keys.clone()
                    .map(|k| [200, 200, 200, 201, 404, 500][(mix(k) % 6) as usize]),
            )),
            Arc::new(StringArray::from_iter_values(keys.map(|k| {
                format!(
                    "session={:08x}; agent=Mozilla/5.0; ref=/catalog/{}",
                    mix(k) % 1_000_000,
                    CATEGORIES[(k % 16) as usize]
                )
            }))),
        ],
    )
    .unwrap()
}

/// What one codec's table gave.
#[derive(Default)]
struct Figures {
    bytes: u64,
    import: Vec<Duration>,
    compact: Vec<Duration>,
    cold_scan: Vec<Duration>,
    warm_scan: Vec<Duration>,
    cold_lookups: Vec<Duration>,
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn main() {
    let n = env("DYNQL_BENCH_ROWS", 1_000_000);
    let runs = env("DYNQL_BENCH_RUNS", 3).max(1);
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!("dynql chunk codecs: {n} rows, median of {runs} runs, ratios against none");

    let source_dir = tempfile::tempdir().unwrap();
    let source = source_dir.path().join("rows.parquet");
    {
        let file = std::fs::File::create(&source).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch(0, 0).schema(), None).unwrap();
        for start in (0..n).step_by(1_000_000) {
            w.write(&batch(start, 1_000_000.min(n - start))).unwrap();
        }
        w.close().unwrap();
    }
    let sources = [source.display().to_string()];

    // 1-2. Build each codec's table `runs` times, in turns; keep the last of each.
    let mut figures: Vec<Figures> = CODECS.iter().map(|_| Figures::default()).collect();
    let mut stores: Vec<Option<tempfile::TempDir>> = CODECS.iter().map(|_| None).collect();
    for _ in 0..runs {
        for (i, codec) in CODECS.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let db = Database::open(&format!("file://{}", dir.path().display())).unwrap();
            let attributes = format!(
                "{{dynamic=%true; compression_codec={codec}; \
                 mount_config={{enable_compaction_and_partitioning=%false}}; schema={SCHEMA}}}"
            );
            rt.block_on(db.create_table_from_text("//t", &attributes))
                .unwrap();
            let (report, import) = timed(|| {
                rt.block_on(db.import("//t", &sources, &ImportOptions::default()))
                    .unwrap()
            });
            assert_eq!(report.rows_imported, n as u64);
            let (_, compact) = timed(|| rt.block_on(db.compact("//t")).unwrap());
            let chunks = rt.block_on(db.store().chunks("//t")).unwrap();
            figures[i].bytes = chunks.iter().map(|c| c.bytes).sum();
            figures[i].import.push(import);
            figures[i].compact.push(compact);
            stores[i] = Some(dir);
        }
    }

    // 3-5. Scans and lookups over each codec's compacted table, in turns.
    let query = "category, sum(price) as revenue, sum(user_id) as users, max(payload) as p, \
                 sum(1) as c from [//t] where status != 500 group by category";
    let options = SelectOptions {
        input_row_limit: u64::MAX,
        output_row_limit: u64::MAX,
        ..SelectOptions::default()
    };
    let mut rng = Lcg(42);
    let keys: Vec<Yson> = (0..1_000)
        .map(|_| {
            let k = (rng.next() % n as u64) as i64;
            Yson::Map(vec![(b"k".to_vec(), Yson::Int64(k))])
        })
        .collect();
    let url = |i: usize| {
        let dir: &Path = stores[i].as_ref().unwrap().path();
        format!("file://{}", dir.display())
    };
    let warm: Vec<Database> = (0..CODECS.len())
        .map(|i| Database::open(&url(i)).unwrap())
        .collect();
    let scan = |db: &Database| {
        let r = rt.block_on(db.select_rows(query, &options)).unwrap();
        assert_eq!(r.rows.len(), CATEGORIES.len());
    };
    for db in &warm {
        scan(db);
    }
    for _ in 0..runs {
        for i in 0..CODECS.len() {
            let cold = Database::open_with_chunk_cache(&url(i), 0).unwrap();
            figures[i].cold_scan.push(timed(|| scan(&cold)).1);
            figures[i].warm_scan.push(timed(|| scan(&warm[i])).1);
            let cold = Database::open_with_chunk_cache(&url(i), 0).unwrap();
            let (found, t) = timed(|| {
                rt.block_on(cold.lookup_rows("//t", &keys, &LookupOptions::default()))
                    .unwrap()
            });
            assert_eq!(found.rows.len(), keys.len());
            figures[i].cold_lookups.push(t);
        }
    }

    let base = &figures[0];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = |a: f64, b: f64| a / b.max(1e-9);
    println!(
        "{:<8} {:>18} {:>20} {:>20} {:>20} {:>20} {:>20}",
        "codec",
        "bytes",
        "import ms",
        "compact ms",
        "cold scan ms",
        "warm scan ms",
        "cold 1k lookups ms"
    );
    for (codec, f) in CODECS.iter().zip(&figures) {
        let cell = |times: &[Duration], base: &[Duration]| {
            let (a, b) = (ms(median(times)), ms(median(base)));
            format!("{a:>9.1} ({:>5.2}x)", ratio(a, b))
        };
        println!(
            "{codec:<8} {:>8.1} MB ({:>5.2}x) {:>20} {:>20} {:>20} {:>20} {:>20}",
            f.bytes as f64 / 1e6,
            ratio(f.bytes as f64, base.bytes as f64),
            cell(&f.import, &base.import),
            cell(&f.compact, &base.compact),
            cell(&f.cold_scan, &base.cold_scan),
            cell(&f.warm_scan, &base.warm_scan),
            cell(&f.cold_lookups, &base.cold_lookups),
        );
    }
}
