//! `compression_codec` (issue 40, item 1): a table's codec is kept in its catalog entry
//! through the log and checkpoints, every writer of the table's chunks (flush, large
//! writes, bulk writes, compaction, static writes) compresses with it, a change reaches the
//! chunks written afterwards, and a table whose chunks mix codecs reads whole.

use std::collections::BTreeSet;
use std::path::Path;

use dynql_core::{KeyBound, KeyRange, TableSchema, Value};
use dynql_storage::codec::CompressionCodec;
use dynql_storage::{AttributeValue, Store, TableOptions, Timestamp, WriteKind};
use parquet::file::reader::{FileReader, SerializedFileReader};

fn schema() -> TableSchema {
    TableSchema::parse(
        "[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=x;type=double}]",
    )
    .unwrap()
}

fn row(k: i64, layer: i64) -> Vec<Option<Value>> {
    vec![
        Some(Value::Int64(k)),
        Some(Value::String(format!("value-{k}-{layer}").into_bytes())),
        Some(Value::Double(k as f64 * 0.5 + layer as f64)),
    ]
}

fn codec(name: &str) -> CompressionCodec {
    CompressionCodec::parse(name).unwrap()
}

fn temp_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    (dir, url)
}

/// The codecs of every column chunk of the Parquet file at `path` (relative to the store's
/// directory `root`), as its footer records them.
fn file_codecs(root: &Path, path: &str) -> BTreeSet<String> {
    let file = std::fs::File::open(root.join(path)).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let metadata = reader.metadata();
    assert!(metadata.num_row_groups() > 0, "{path} has no row groups");
    metadata
        .row_groups()
        .iter()
        .flat_map(|g| {
            g.columns()
                .iter()
                .map(|c| kind(format!("{:?}", c.compression())))
        })
        .collect()
}

/// The one codec of every column chunk of the file at `path`.
fn file_codec(root: &Path, path: &str) -> String {
    let codecs = file_codecs(root, path);
    assert_eq!(codecs.len(), 1, "{path}: {codecs:?}");
    codecs.into_iter().next().unwrap()
}

/// The codec `name` names, as [`file_codecs`] shows it: a Parquet footer records the codec
/// and not its level, so `ZSTD(ZstdLevel(3))` is `ZSTD`.
fn expected(name: &str) -> String {
    kind(format!("{:?}", codec(name).compression()))
}

fn kind(debug: String) -> String {
    match debug.split_once('(') {
        Some((kind, _)) => kind.to_string(),
        None => debug,
    }
}

/// The chunks of the table at `path`, by the writer that made them (the first part of
/// their file name: `flush`, `write`, `bulk`, `compact`), each with its codec.
async fn chunk_codecs(s: &Store, root: &Path, path: &str) -> Vec<(String, String)> {
    s.chunks(path)
        .await
        .unwrap()
        .iter()
        .map(|c| {
            let name = c.path.rsplit('/').next().unwrap();
            let writer = name.split('-').next().unwrap().to_string();
            (writer, file_codec(root, &c.path))
        })
        .collect()
}

/// Reads every row of `//t` three ways (a full read, lookups, a range scan) and checks
/// them against keys `0..n`, each last written in `layer_of(k)`.
async fn check_rows(s: &Store, n: i64, layer_of: impl Fn(i64) -> i64) {
    let rows = s.read_rows("//t", Timestamp::MAX).await.unwrap();
    assert_eq!(rows.len(), n as usize);
    for (k, r) in rows.iter().enumerate() {
        let k = k as i64;
        let want: Vec<Value> = row(k, layer_of(k)).into_iter().flatten().collect();
        assert_eq!(r, &want, "key {k}");
    }
    let keys: Vec<Vec<Value>> = (0..n).step_by(37).map(|k| vec![Value::Int64(k)]).collect();
    let found = s.lookup_rows("//t", &keys, Timestamp::MAX).await.unwrap();
    for (key, r) in keys.iter().zip(found) {
        let Value::Int64(k) = key[0] else {
            unreachable!()
        };
        let want: Vec<Value> = row(k, layer_of(k)).into_iter().flatten().collect();
        assert_eq!(r, Some(want), "lookup of {k}");
    }
    let range = KeyRange {
        lower: KeyBound::new(vec![Value::Int64(n / 4)], false),
        upper: KeyBound::new(vec![Value::Int64(n / 2)], false),
    };
    let (tablets, _) = s
        .scan_ranges("//t", Some(&[range]), Timestamp::MAX)
        .await
        .unwrap();
    assert_eq!(
        tablets.iter().map(|t| t.rows.len()).sum::<usize>(),
        (n / 2 - n / 4) as usize
    );
}

#[tokio::test]
async fn the_codec_is_kept_through_reopen_and_checkpoints() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    let options = TableOptions {
        compression_codec: Some(codec("zstd(3)")),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    s.create_table("//plain", schema(), TableOptions::default())
        .await
        .unwrap();
    let reopened = Store::open(&url).unwrap();
    assert_eq!(
        reopened
            .table("//t")
            .await
            .unwrap()
            .compression_codec
            .name(),
        "zstd_3"
    );
    // A table that names none has the default, and the catalog leaves it out.
    let plain = reopened.table("//plain").await.unwrap();
    assert_eq!(plain.compression_codec, CompressionCodec::DEFAULT);
    assert!(!serde_json::to_string(&plain)
        .unwrap()
        .contains("compression_codec"));

    s.set_attribute(
        "//t",
        "compression_codec",
        AttributeValue::Text("snappy".into()),
    )
    .await
    .unwrap();
    let reopened = Store::open(&url).unwrap();
    assert_eq!(
        reopened.table("//t").await.unwrap().compression_codec,
        codec("snappy")
    );
    // From a checkpoint, not the log's records.
    s.checkpoint().await.unwrap();
    let reopened = Store::open(&url).unwrap();
    assert_eq!(
        reopened.table("//t").await.unwrap().compression_codec,
        codec("snappy")
    );
    assert_eq!(
        reopened.table("//plain").await.unwrap().compression_codec,
        CompressionCodec::DEFAULT
    );
}

#[tokio::test]
async fn every_writer_of_a_tables_chunks_uses_its_codec() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    let options = TableOptions {
        compression_codec: Some(codec("zstd_3")),
        enable_compaction_and_partitioning: Some(false),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    // A small write, flushed.
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        (0..100).map(|k| row(k, 0)).collect(),
    )
    .await
    .unwrap();
    s.flush_table("//t").await.unwrap();
    // A large write: straight to a chunk.
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        (100..20_100).map(|k| row(k, 0)).collect(),
    )
    .await
    .unwrap();
    // A bulk write (insert_rows of many rows, import).
    let mut bulk = s.start_bulk_write("//t").await.unwrap();
    s.stage_bulk_rows(&mut bulk, (20_100..40_100).map(|k| row(k, 0)).collect())
        .await
        .unwrap();
    s.write_bulk_rows(&mut bulk, &mut |_| {}).await.unwrap();
    s.commit_bulk_write(bulk).await.unwrap();

    let chunks = chunk_codecs(&s, dir.path(), "//t").await;
    let writers: BTreeSet<&str> = chunks.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(writers, BTreeSet::from(["bulk", "flush"]), "{chunks:?}");
    for (writer, c) in &chunks {
        assert_eq!(c, &expected("zstd_3"), "{writer}");
    }
    // The large write's chunk is read into the dynamic store (its versions get their
    // commit timestamps there), so the table does not list it: find its file.
    let id = s.table("//t").await.unwrap().id;
    let large: Vec<String> = std::fs::read_dir(dir.path().join("tables").join(&id))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("write-") && name.ends_with(".parquet"))
        .collect();
    assert_eq!(large.len(), 1, "{large:?}");
    assert_eq!(
        file_codec(dir.path(), &format!("tables/{id}/{}", large[0])),
        expected("zstd_3")
    );
    check_rows(&s, 40_100, |_| 0).await;

    // Compaction writes with the codec of the moment.
    s.set_attribute(
        "//t",
        "compression_codec",
        AttributeValue::Text("brotli_2".into()),
    )
    .await
    .unwrap();
    s.compact("//t").await.unwrap();
    let chunks = chunk_codecs(&s, dir.path(), "//t").await;
    assert!(!chunks.is_empty());
    for (writer, c) in &chunks {
        assert_eq!(writer, "compact");
        assert_eq!(c, &expected("brotli_2"));
    }
    check_rows(&s, 40_100, |_| 0).await;
}

#[tokio::test]
async fn a_table_whose_chunks_mix_codecs_reads_whole() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap().with_chunk_cache_bytes(0);
    let options = TableOptions {
        compression_codec: Some(codec("none")),
        enable_compaction_and_partitioning: Some(false),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    // Layer l overwrites the keys from l * 5,000 on, each flushed with another codec.
    let layers = ["none", "snappy", "lz4", "zstd_1", "zlib_6"];
    let n = 30_000;
    for (layer, name) in layers.iter().enumerate() {
        s.set_attribute(
            "//t",
            "compression_codec",
            AttributeValue::Text(name.to_string()),
        )
        .await
        .unwrap();
        let layer = layer as i64;
        s.write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            (layer * 5_000..n).map(|k| row(k, layer)).collect(),
        )
        .await
        .unwrap();
        s.flush_table("//t").await.unwrap();
    }
    let codecs: BTreeSet<String> = chunk_codecs(&s, dir.path(), "//t")
        .await
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    let want: BTreeSet<String> = layers.iter().map(|l| expected(l)).collect();
    assert_eq!(codecs, want);
    let layer_of = |k: i64| (k / 5_000).min(layers.len() as i64 - 1);
    check_rows(&s, n, layer_of).await;
    // A fresh handle (nothing cached, footers read again) reads the same.
    let fresh = Store::open(&url).unwrap().with_chunk_cache_bytes(0);
    check_rows(&fresh, n, layer_of).await;

    // Compaction rewrites the old chunks with the codec of the moment.
    s.compact("//t").await.unwrap();
    for (_, c) in chunk_codecs(&s, dir.path(), "//t").await {
        assert_eq!(c, expected("zlib_6"));
    }
    check_rows(&s, n, layer_of).await;
}

#[tokio::test]
async fn a_static_tables_chunks_use_its_codec() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    let options = TableOptions {
        static_table: true,
        compression_codec: Some(codec("snappy")),
        ..TableOptions::default()
    };
    s.create_table("//s", schema(), options).await.unwrap();
    let mut w = s.start_static_write("//s", None, false).await.unwrap();
    let rows = (0..1_000)
        .map(|k| row(k, 0).into_iter().flatten().collect())
        .collect();
    s.write_static_rows(&mut w, rows).await.unwrap();
    s.commit_static_write(w).await.unwrap();
    let entry = s.table("//s").await.unwrap();
    assert!(!entry.static_chunks.is_empty());
    for c in &entry.static_chunks {
        assert_eq!(file_codec(dir.path(), &c.path), expected("snappy"));
    }
}

#[tokio::test]
async fn a_bad_codec_is_refused_and_changes_nothing() {
    let s = Store::open("memory://").unwrap();
    let options = TableOptions {
        compression_codec: Some(codec("lz4")),
        ..TableOptions::default()
    };
    s.create_table("//t", schema(), options).await.unwrap();
    for bad in [
        AttributeValue::Text("lzo".into()),
        AttributeValue::Text("zstd_40".into()),
        AttributeValue::Number(3),
    ] {
        let message = s
            .set_attribute("//t", "compression_codec", bad.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(message.contains("compression_codec"), "{message}");
        assert!(
            message.contains("none, snappy, lz4, zstd_N"),
            "{bad:?}: {message}"
        );
        assert_eq!(
            s.table("//t").await.unwrap().compression_codec,
            codec("lz4")
        );
    }
}
