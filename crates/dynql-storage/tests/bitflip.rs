//! One flipped bit anywhere in a store gives an error or the right answer, never a different
//! answer (issue 11: before checksums, a flipped bit in a chunk read `n=16240` back as
//! `68719492976`).
//!
//! The store holds every kind of file: log records (before and after the newest checkpoint),
//! two checkpoint manifests, flushed and compacted chunks, a checkpoint's tail chunk (an
//! ordered table's rows) and a large write's chunk named by a record after the newest
//! checkpoint. For a deterministic sample of bit positions in every file, the bit is flipped,
//! a fresh handle opens the store and runs a set of reads (whole tables, point lookups, a
//! narrow range scan that reads single pages), and each read must fail or equal the answer of
//! the intact store.

use std::path::{Path, PathBuf};

use dynql_core::{TableSchema, Value};
use dynql_storage::{KeyBound, KeyRange, Store, TableOptions, Timestamp, WriteKind};

type Answers = Vec<Result<String, String>>;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

async fn build(url: &str) {
    let s = Store::open(url).unwrap();
    let sorted = TableSchema::parse(
        "[{name=k;type=int64;sort_order=ascending};{name=n;type=int64};{name=s;type=string}]",
    )
    .unwrap();
    let row = |k: i64, n: i64| {
        vec![
            Some(Value::Int64(k)),
            Some(Value::Int64(n)),
            Some(Value::string(format!("s{k}"))),
        ]
    };
    s.create_table("//s", sorted.clone(), TableOptions::default())
        .await
        .unwrap();
    s.create_table("//big", sorted, TableOptions::default())
        .await
        .unwrap();
    s.create_table(
        "//q",
        TableSchema::parse("[{name=a;type=int64};{name=b;type=string}]").unwrap(),
        TableOptions::default(),
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..1200).map(|k| row(k, k * 16 + 1)).collect();
    s.write_rows("//s", WriteKind::Overwrite, false, rows)
        .await
        .unwrap();
    s.checkpoint().await.unwrap();
    s.write_rows("//s", WriteKind::Update, false, vec![row(7, -7)])
        .await
        .unwrap();
    s.compact("//s").await.unwrap();
    s.write_rows("//s", WriteKind::Overwrite, false, vec![row(5000, 5)])
        .await
        .unwrap();
    s.append_rows(
        "//q",
        (0..50)
            .map(|i| (None, vec![Some(Value::Int64(i)), Some(Value::string("x"))]))
            .collect(),
    )
    .await
    .unwrap();
    s.checkpoint().await.unwrap();
    // After the newest checkpoint: a large write (its own chunk) and small ones.
    let big: Vec<_> = (0..dynql_storage::store::LARGE_WRITE_ROWS as i64)
        .map(|k| row(k, 3 * k))
        .collect();
    s.write_rows("//big", WriteKind::Overwrite, false, big)
        .await
        .unwrap();
    s.write_rows(
        "//s",
        WriteKind::Delete,
        false,
        vec![vec![Some(Value::Int64(3)), None, None]],
    )
    .await
    .unwrap();
}

/// The reads, each as text or the error text.
async fn answers(url: &str) -> Answers {
    let s = Store::open(url).unwrap();
    let text = |r: dynql_storage::Result<Vec<Vec<Value>>>| {
        r.map(|rows| format!("{rows:?}")).map_err(|e| e.to_string())
    };
    let mut out = Vec::new();
    for t in ["//s", "//big", "//q"] {
        out.push(text(s.read_rows(t, Timestamp::MAX).await));
    }
    let keys: Vec<Vec<Value>> = [0, 7, 1100, 2999, 5000]
        .iter()
        .map(|k| vec![Value::Int64(*k)])
        .collect();
    let found = s.lookup_rows("//big", &keys, Timestamp::MAX).await;
    out.push(found.map(|r| format!("{r:?}")).map_err(|e| e.to_string()));
    let fresh = Store::open(url).unwrap();
    let narrow = [KeyRange {
        lower: KeyBound::new(vec![Value::Int64(1000)], false),
        upper: KeyBound::new(vec![Value::Int64(1010)], true),
    }];
    let scanned = fresh
        .scan_ranges("//s", Some(&narrow), Timestamp::MAX)
        .await;
    out.push(
        scanned
            .map(|(t, _)| format!("{:?}", t.iter().map(|t| &t.rows).collect::<Vec<_>>()))
            .map_err(|e| e.to_string()),
    );
    out
}

/// Positions to flip in a file of `len` bytes: both ends (headers, footers) and an even
/// spread over the rest, about 30 per file (every position costs a replay and all reads; the
/// unit tests of crate::checksum flip every bit of a framed file).
fn positions(len: usize) -> Vec<usize> {
    let ends = 8.min(len);
    let mut p: Vec<usize> = (0..ends).chain(len - ends..len).collect();
    p.extend((0..16).map(|i| i * len / 16 + (i * 7) % 13));
    p.retain(|&i| i < len);
    p.sort_unstable();
    p.dedup();
    p
}

#[tokio::test]
async fn a_flipped_bit_anywhere_is_an_error_or_the_right_answer() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    build(&url).await;
    let expected = answers(&url).await;
    assert!(expected.iter().all(Result::is_ok), "{expected:?}");
    let mut all = Vec::new();
    files(dir.path(), &mut all);
    let kinds = |p: &Path| {
        let s = p.to_string_lossy();
        [
            "/_log/",
            "/_checkpoints/",
            "flush-",
            "compact-",
            "tail-",
            "write-",
        ]
        .iter()
        .filter(|k| s.contains(*k))
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
    };
    let covered: std::collections::BTreeSet<String> = all.iter().flat_map(|p| kinds(p)).collect();
    assert_eq!(
        covered.len(),
        6,
        "the store lacks a kind of file: {covered:?}"
    );
    // The chunks the current state reads (older ones stay until garbage collection).
    let store = Store::open(&url).unwrap();
    let mut live: Vec<String> = Vec::new();
    for t in ["//s", "//big"] {
        live.extend(store.chunks(t).await.unwrap().into_iter().map(|c| c.path));
    }
    let mut flips = 0;
    for file in &all {
        let original = std::fs::read(file).unwrap();
        let name = file.to_string_lossy().to_string();
        let must_detect =
            name.contains("write-") || live.iter().any(|c| name.ends_with(c.as_str()));
        for pos in positions(original.len()) {
            let mut damaged = original.clone();
            damaged[pos] ^= 1 << (pos % 8);
            std::fs::write(file, &damaged).unwrap();
            let got = answers(&url).await;
            flips += 1;
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                if let Ok(g) = g {
                    assert!(
                        g == e.as_ref().unwrap(),
                        "{} byte {pos}: read #{i} gave a different answer",
                        file.display()
                    );
                }
            }
            // Every chunk a replay or a whole-table read touches detects the flip.
            if must_detect {
                assert!(
                    got.iter().any(Result::is_err),
                    "{} byte {pos}: a damaged chunk went unnoticed",
                    file.display()
                );
            }
        }
        std::fs::write(file, &original).unwrap();
    }
    assert_eq!(answers(&url).await, expected);
    println!("bit flips: {flips} over {} files", all.len());
}

/// A transaction with two staged writes in a fresh store; returns the store's directory,
/// its URL and the transaction id.
async fn staged_transaction() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    let schema =
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=n;type=int64}]")
            .unwrap();
    s.create_table("//t", schema, TableOptions::default())
        .await
        .unwrap();
    let tx = s.start_transaction(60_000).await.unwrap();
    for k in [1, 2] {
        s.write_rows_in(
            &tx.id,
            "//t",
            WriteKind::Overwrite,
            false,
            vec![vec![Some(Value::Int64(k)), Some(Value::Int64(k * 10))]],
        )
        .await
        .unwrap();
    }
    (dir, url, tx.id)
}

/// The files of the transaction folder, by name.
fn staged_files(dir: &Path, id: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    files(&dir.join("_tx").join(id), &mut all);
    all.sort();
    all
}

/// Issue 38: a flipped bit in a staged write (or its acknowledgement) used to commit a
/// different value, and `check` said "no damage found". Now `check` names the file and the
/// commit fails, committing nothing.
#[tokio::test]
async fn a_flipped_bit_in_a_staged_write_fails_the_commit_and_check_names_it() {
    let (dir, _, id) = staged_transaction().await;
    let names: Vec<String> = staged_files(dir.path(), &id)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .filter(|n| n != "meta.json")
        .collect();
    assert_eq!(
        names.len(),
        4,
        "two slots and two acknowledgements: {names:?}"
    );
    let mut flips = 0;
    for name in &names {
        let len = {
            let (dir, _, id) = staged_transaction().await;
            std::fs::read(dir.path().join("_tx").join(&id).join(name))
                .unwrap()
                .len()
        };
        for pos in positions(len) {
            let (dir, url, id) = staged_transaction().await;
            let file = dir.path().join("_tx").join(&id).join(name);
            let mut bytes = std::fs::read(&file).unwrap();
            bytes[pos] ^= 1 << (pos % 8);
            std::fs::write(&file, &bytes).unwrap();
            flips += 1;
            let s = Store::open(&url).unwrap();
            let report = s.check().await.unwrap();
            assert!(
                report.damage.iter().any(|d| d.file.contains(&id)),
                "{name} byte {pos}: check found no damage: {report:?}"
            );
            let committed = s.commit_transaction(&id).await;
            assert!(
                matches!(committed, Err(dynql_storage::Error::Corrupt { .. })),
                "{name} byte {pos}: the commit went on: {committed:?}"
            );
            assert!(s.read_rows("//t", Timestamp::MAX).await.unwrap().is_empty());
        }
    }
    println!("bit flips in staged files: {flips}");
}

/// Issue 38: deleting the newest staged write used to commit without it.
#[tokio::test]
async fn a_deleted_staged_write_fails_the_commit_newest_included() {
    for slot in [1, 2] {
        let (dir, url, id) = staged_transaction().await;
        let file = dir
            .path()
            .join("_tx")
            .join(&id)
            .join(format!("staged-{slot:020}.json"));
        std::fs::remove_file(&file).unwrap();
        let s = Store::open(&url).unwrap();
        let report = s.check().await.unwrap();
        assert!(
            report
                .damage
                .iter()
                .any(|d| d.file.ends_with(&format!("staged-{slot:020}.json"))
                    && d.problem.contains("missing")),
            "slot {slot}: {report:?}"
        );
        let committed = s.commit_transaction(&id).await;
        assert!(
            matches!(&committed, Err(dynql_storage::Error::Corrupt { message, .. }) if message.contains("missing")),
            "slot {slot}: {committed:?}"
        );
        assert!(s.read_rows("//t", Timestamp::MAX).await.unwrap().is_empty());
    }
}
