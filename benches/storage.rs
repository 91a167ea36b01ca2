//! Storage benchmarks, each side by side with its baseline in one run:
//!
//! 1. bulk `insert_rows` of N rows vs writing the same rows to one Parquet file;
//! 2. `lookup_rows` of 10k random keys on an N-row table vs SQLite primary-key lookups, and
//!    10k lookups of a hot 1% of the keys through the lookup row cache vs without it;
//! 3. a full-scan aggregate over a table with 8 uncompacted delta layers vs the same table
//!    compacted;
//! 4. cold point scans (one per row group, nothing cached) reading page windows chosen by
//!    the page index vs reading whole row groups;
//! 5. `import` of the rows from a Parquet file vs writing them to Parquet, then a point query
//!    from a freshly opened store right after the import vs after compaction.
//!
//! Run: `cargo bench -p dynql-benches` (N = DYNQL_BENCH_ROWS, default 1,000,000;
//! runs per measurement = DYNQL_BENCH_RUNS, default 3).

use std::sync::Arc;

use arrow::array::{Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql::{Database, LookupOptions, SelectOptions, Yson};
use dynql_benches::{env, median, median_pair, report, Lcg};

const SCHEMA: &str = "{dynamic=%true; min_data_ttl=0; max_data_ttl=0; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=x;type=double}]}";

fn rows(n: usize, layer: i64) -> Vec<Yson> {
    (0..n as i64)
        .map(|k| {
            Yson::Map(vec![
                (b"k".to_vec(), Yson::Int64(k)),
                (
                    b"v".to_vec(),
                    Yson::String(format!("value-{k}-{layer}").into_bytes()),
                ),
                (b"x".to_vec(), Yson::Double(k as f64 * 0.5 + layer as f64)),
            ])
        })
        .collect()
}

fn batch(n: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|k| format!("value-{k}-0")),
            )),
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|k| k as f64 * 0.5),
            )),
        ],
    )
    .unwrap()
}

fn main() {
    let n = env("DYNQL_BENCH_ROWS", 1_000_000);
    let runs = env("DYNQL_BENCH_RUNS", 3);
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!("dynql storage benchmarks: {n} rows, median of {runs} runs");

    // 1. Bulk insert vs a plain Parquet write of the same rows.
    let input = rows(n, 0);
    let arrow_batch = batch(n);
    let (insert, parquet) = median_pair(
        runs,
        || {
            let dir = tempfile::tempdir().unwrap();
            let db = Database::open(&format!("file://{}", dir.path().display())).unwrap();
            rt.block_on(async {
                db.create_table_from_text("//t", SCHEMA).await.unwrap();
                db.insert_rows("//t", &input).await.unwrap();
            });
        },
        || {
            let dir = tempfile::tempdir().unwrap();
            let file = std::fs::File::create(dir.path().join("t.parquet")).unwrap();
            let mut w =
                parquet::arrow::ArrowWriter::try_new(file, arrow_batch.schema(), None).unwrap();
            w.write(&arrow_batch).unwrap();
            w.close().unwrap();
        },
    );
    report("bulk insert_rows", insert, "parquet write", parquet);

    // 2. 10k random lookups vs SQLite primary-key lookups.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&format!("file://{}", dir.path().display())).unwrap();
    rt.block_on(async {
        db.create_table_from_text("//t", SCHEMA).await.unwrap();
        db.insert_rows("//t", &input).await.unwrap();
    });
    drop(input);
    let mut rng = Lcg(42);
    let keys: Vec<i64> = (0..10_000)
        .map(|_| (rng.next() % n as u64) as i64)
        .collect();
    let key_maps: Vec<Yson> = keys
        .iter()
        .map(|k| Yson::Map(vec![(b"k".to_vec(), Yson::Int64(*k))]))
        .collect();
    let lookup = median(runs, || {
        let r = rt
            .block_on(db.lookup_rows("//t", &key_maps, &LookupOptions::default()))
            .unwrap();
        assert_eq!(r.rows.len(), keys.len());
    });
    let sqlite = rusqlite::Connection::open(dir.path().join("t.sqlite")).unwrap();
    sqlite.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT, x REAL);").unwrap();
    {
        let tx = sqlite.unchecked_transaction().unwrap();
        let mut ins = tx.prepare("INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
        for k in 0..n as i64 {
            ins.execute(rusqlite::params![k, format!("value-{k}-0"), k as f64 * 0.5])
                .unwrap();
        }
        drop(ins);
        tx.commit().unwrap();
    }
    let sqlite_lookup = median(runs, || {
        let mut q = sqlite
            .prepare_cached("SELECT k, v, x FROM t WHERE k = ?1")
            .unwrap();
        let mut found = 0;
        for k in &keys {
            let mut rows = q.query([k]).unwrap();
            if rows.next().unwrap().is_some() {
                found += 1;
            }
        }
        assert_eq!(found, keys.len());
    });
    report(
        "lookup_rows 10k random keys",
        lookup,
        "sqlite pk lookups",
        sqlite_lookup,
    );

    // 2b. 10k lookups of a hot 1% of the keys through the lookup row cache (room for 2% of
    // the rows) vs the same lookups without it, on the same table.
    rt.block_on(db.set_attribute(
        "//t",
        "mount_config/lookup_cache_rows_ratio",
        &Yson::Double(0.02),
    ))
    .unwrap();
    let hot: Vec<Yson> = (0..10_000)
        .map(|_| {
            let k = (rng.next() % (n as u64 / 100).max(1)) as i64 * 100;
            Yson::Map(vec![(b"k".to_vec(), Yson::Int64(k))])
        })
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
        "lookup_rows 10k of a hot 1%, cache",
        cached,
        "without the cache",
        uncached,
    );

    // 4 (after 3's setup of the lookup table). Cold point scans, one per row group of the
    // flushed table, each from a fresh handle: page windows vs whole row groups.
    rt.block_on(db.flush("//t")).unwrap();
    let url = format!("file://{}", dir.path().display());
    let groups = (n / dynql_storage::chunk::ROW_GROUP_ROWS).max(1);
    let points: Vec<dynql_storage::KeyRange> = (0..groups)
        .map(|g| {
            let k = (g * dynql_storage::chunk::ROW_GROUP_ROWS + 4321 % n) as i64;
            let key = vec![dynql_core::Value::Int64(k)];
            dynql_storage::KeyRange {
                lower: dynql_storage::KeyBound::new(key.clone(), false),
                upper: dynql_storage::KeyBound::new(key, true),
            }
        })
        .collect();
    let cold_points = |page_windows: bool| {
        let store = dynql_storage::Store::open(&url)
            .unwrap()
            .with_page_windows(page_windows);
        for point in &points {
            let (rows, _) = rt
                .block_on(store.scan_ranges(
                    "//t",
                    Some(std::slice::from_ref(point)),
                    dynql_storage::Timestamp::MAX,
                ))
                .unwrap();
            assert_eq!(rows.iter().map(|t| t.rows.len()).sum::<usize>(), 1);
        }
    };
    let windows = median(runs, || cold_points(true));
    let whole = median(runs, || cold_points(false));
    report(
        &format!("cold point scans, {groups} row groups"),
        windows,
        "whole row groups",
        whole,
    );

    // 3. Full-scan aggregate over 8 flushed layers of the same keys vs the same table
    //    compacted: with the compaction policy off (8 chunks to merge), and with it on (as a
    //    table is by default: it merges layers as they come).
    let layer_rows = (n / 8).max(1);
    let query = "sum(x) as s, sum(1) as c from [//t] group by 1";
    let options = SelectOptions {
        input_row_limit: u64::MAX,
        output_row_limit: u64::MAX,
        ..SelectOptions::default()
    };
    let scan = |db: &Database| {
        let r = rt.block_on(db.select_rows(query, &options)).unwrap();
        assert_eq!(r.rows.len(), 1);
    };
    for policy in [false, true] {
        let layered_dir = tempfile::tempdir().unwrap();
        let layered = Database::open(&format!("file://{}", layered_dir.path().display())).unwrap();
        let schema = SCHEMA.replacen(
            "dynamic=%true;",
            &format!(
                "dynamic=%true; mount_config={{enable_compaction_and_partitioning=%{policy}}};"
            ),
            1,
        );
        rt.block_on(async {
            layered
                .create_table_from_text("//t", &schema)
                .await
                .unwrap();
            for layer in 0..8 {
                layered
                    .insert_rows("//t", &rows(layer_rows, layer))
                    .await
                    .unwrap();
                // Each layer becomes its own chunk, as successive checkpoints would leave it
                // (a large insert is one already: a bulk write).
                layered.flush("//t").await.unwrap();
            }
        });
        let chunks = rt.block_on(layered.store().chunks("//t")).unwrap().len();
        let layers = median(runs, || scan(&layered));
        let (_, after) = rt.block_on(layered.compact("//t")).unwrap();
        assert_eq!(after, layer_rows);
        let compacted = median(runs, || scan(&layered));
        let label = if policy {
            format!("select, 8 flushed layers, compaction policy on ({chunks} chunks)")
        } else {
            format!("select, 8 flushed layers, compaction policy off ({chunks} chunks)")
        };
        report(&label, layers, "same table compacted", compacted);
    }

    // 5. Import of a Parquet file vs the Parquet write of the same rows (1.'s baseline), and
    //    a point query from a fresh handle right after the import vs after compaction.
    let source_dir = tempfile::tempdir().unwrap();
    let source = source_dir.path().join("rows.parquet");
    {
        let file = std::fs::File::create(&source).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, arrow_batch.schema(), None).unwrap();
        w.write(&arrow_batch).unwrap();
        w.close().unwrap();
    }
    let sources = [source.display().to_string()];
    let import_into = |db: &Database| {
        rt.block_on(async {
            db.create_table_from_text("//t", SCHEMA).await.unwrap();
            let report = db
                .import("//t", &sources, &dynql::io::ImportOptions::default())
                .await
                .unwrap();
            assert_eq!(report.rows_imported, n as u64);
        })
    };
    let import = median(runs, || {
        let dir = tempfile::tempdir().unwrap();
        import_into(&Database::open(&format!("file://{}", dir.path().display())).unwrap());
    });
    report("import (parquet file)", import, "parquet write", parquet);
    let imported_dir = tempfile::tempdir().unwrap();
    let imported_url = format!("file://{}", imported_dir.path().display());
    let imported = Database::open(&imported_url).unwrap();
    import_into(&imported);
    let point_query = format!("* from [//t] where k = {}", n / 2);
    let fresh_point = || {
        let db = Database::open(&imported_url).unwrap();
        let r = rt
            .block_on(db.select_rows(&point_query, &SelectOptions::default()))
            .unwrap();
        assert_eq!(r.rows.len(), 1);
    };
    let after_import = median(runs, fresh_point);
    rt.block_on(imported.compact("//t")).unwrap();
    let after_compact = median(runs, fresh_point);
    report(
        "point query, fresh open after import",
        after_import,
        "after compact",
        after_compact,
    );
}
