//! One damaged file does not take the whole store down (issue 38): a damaged only checkpoint
//! opens from the whole log, a lost log record damages only what the record after it says it
//! touched (or everything, when nothing says), garbage collection keeps an older checkpoint
//! until a newer one reads back, and `Store::repair` records losses without dropping an
//! acknowledged change unless told to for a named table.

use std::path::Path;

use dynql_core::{TableSchema, Value};
use dynql_storage::{Error, Store, TableOptions, Timestamp, WriteKind};

fn sorted() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]").unwrap()
}

fn row(k: i64, v: i64) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), Some(Value::Int64(v))]
}

fn temp_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    (dir, url)
}

async fn write(s: &Store, table: &str, k: i64) {
    s.write_rows(table, WriteKind::Overwrite, false, vec![row(k, k)])
        .await
        .unwrap();
}

async fn keys(s: &Store, table: &str) -> Result<Vec<i64>, Error> {
    Ok(s.read_rows(table, Timestamp::MAX)
        .await?
        .iter()
        .map(|r| match r[0] {
            Value::Int64(k) => k,
            _ => unreachable!(),
        })
        .collect())
}

/// The newest log record's number.
fn newest_record(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("_log"))
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .strip_suffix(".json")?
                .parse()
                .ok()
        })
        .max()
        .unwrap()
}

fn record_file(dir: &Path, seq: u64) -> std::path::PathBuf {
    dir.join("_log").join(format!("{seq:020}.json"))
}

fn manifest_file(dir: &Path, seq: u64) -> std::path::PathBuf {
    dir.join("_checkpoints").join(format!("{seq:020}.json"))
}

fn flip_middle(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(file, bytes).unwrap();
}

#[tokio::test]
async fn the_only_checkpoint_damaged_opens_from_the_log_and_repair_sets_it_aside() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    for t in ["//a", "//b"] {
        s.create_table(t, sorted(), TableOptions::default())
            .await
            .unwrap();
        write(&s, t, 1).await;
    }
    let only = s.checkpoint().await.unwrap();
    write(&s, "//a", 2).await;
    flip_middle(&manifest_file(dir.path(), only));
    // Every command works, reads answer from the whole log, `remove` included.
    let fresh = Store::open(&url).unwrap();
    assert_eq!(keys(&fresh, "//a").await.unwrap(), [1, 2]);
    assert_eq!(keys(&fresh, "//b").await.unwrap(), [1]);
    write(&fresh, "//b", 3).await;
    fresh.remove_table("//b").await.unwrap();
    let report = fresh.check().await.unwrap();
    assert_eq!(report.damage.len(), 1, "{report:?}");
    assert!(report.damage[0].file.contains("_checkpoints"), "{report:?}");
    let repaired = fresh.repair(&[]).await.unwrap();
    assert!(repaired.check.is_ok(), "{repaired:?}");
    assert!(
        repaired.repaired.iter().any(|r| r.contains("set aside")),
        "{repaired:?}"
    );
    assert!(dir
        .path()
        .join("_damaged/_checkpoints")
        .join(format!("{only:020}.json"))
        .exists());
    let reopened = Store::open(&url).unwrap();
    assert_eq!(keys(&reopened, "//a").await.unwrap(), [1, 2]);
    assert!(reopened.table("//b").await.is_err());
}

#[tokio::test]
async fn every_checkpoint_damaged_and_the_log_collected_names_the_files() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    s.create_table("//a", sorted(), TableOptions::default())
        .await
        .unwrap();
    let mut checkpoints = Vec::new();
    for k in 0..3 {
        write(&s, "//a", k).await;
        checkpoints.push(s.checkpoint().await.unwrap());
    }
    assert!(
        !record_file(dir.path(), 1).exists(),
        "the log was collected"
    );
    for seq in &checkpoints {
        if manifest_file(dir.path(), *seq).exists() {
            flip_middle(&manifest_file(dir.path(), *seq));
        }
    }
    let err = Store::open(&url).unwrap().tables().await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("restore one of these files"), "{text}");
    assert!(text.contains("_checkpoints"), "{text}");
}

/// Issue 38: a checkpoint damaged after garbage collection had deleted what the one before it
/// needed left nothing to open from. Collection now keeps the two newest checkpoints that
/// read back, so losing the newest leaves an older one and the log after it.
#[tokio::test]
async fn collection_keeps_an_older_checkpoint_until_two_newer_ones_read_back() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    s.create_table("//a", sorted(), TableOptions::default())
        .await
        .unwrap();
    write(&s, "//a", 1).await;
    let first = s.checkpoint().await.unwrap();
    write(&s, "//a", 2).await;
    let second = s.checkpoint().await.unwrap();
    flip_middle(&manifest_file(dir.path(), second));
    write(&s, "//a", 3).await;
    let third = s.checkpoint().await.unwrap();
    // The damaged second one does not count: the first stays, with the log after it.
    assert!(manifest_file(dir.path(), first).exists());
    assert!(record_file(dir.path(), first + 1).exists());
    flip_middle(&manifest_file(dir.path(), third));
    let fresh = Store::open(&url).unwrap();
    assert_eq!(keys(&fresh, "//a").await.unwrap(), [1, 2, 3]);
}

/// Two tables; the record that wrote `//lost`'s row 2 goes missing.
async fn store_with_a_lost_record(dir: &Path, url: &str) -> u64 {
    let s = Store::open(url).unwrap();
    for t in ["//kept", "//lost"] {
        s.create_table(t, sorted(), TableOptions::default())
            .await
            .unwrap();
        write(&s, t, 1).await;
    }
    write(&s, "//lost", 2).await;
    let lost = newest_record(dir);
    write(&s, "//kept", 2).await;
    write(&s, "//lost", 3).await;
    std::fs::remove_file(record_file(dir, lost)).unwrap();
    lost
}

#[tokio::test]
async fn a_missing_record_damages_only_what_the_next_record_says_it_touched() {
    let (dir, url) = temp_store();
    let lost = store_with_a_lost_record(dir.path(), &url).await;
    let s = Store::open(&url).unwrap();
    // The other table reads and writes.
    assert_eq!(keys(&s, "//kept").await.unwrap(), [1, 2]);
    write(&s, "//kept", 3).await;
    let err = keys(&s, "//lost").await.unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    assert!(err.to_string().contains("is missing"), "{err}");
    let report = s.check().await.unwrap();
    let named: Vec<_> = report
        .damage
        .iter()
        .filter(|d| d.file.ends_with(&format!("{lost:020}.json")))
        .collect();
    assert_eq!(named.len(), 1, "{report:?}");
    assert_eq!(named[0].tables, vec!["//lost".to_string()]);
    // No checkpoint while a loss is unrecorded: the log keeps what repair needs.
    assert!(s.checkpoint().await.is_err());
    // Repair records the loss; the table stays damaged until the loss is accepted.
    let repaired = s.repair(&[]).await.unwrap();
    assert!(
        repaired.repaired.iter().any(|r| r.contains("placeholder")),
        "{repaired:?}"
    );
    assert!(record_file(dir.path(), lost).exists());
    assert!(!repaired.check.is_ok());
    assert!(keys(&Store::open(&url).unwrap(), "//lost").await.is_err());
    // Accepting it for a table another action damaged is refused; for this one it works.
    let err = s.repair(&["//kept".into()]).await.unwrap_err();
    assert!(err.to_string().contains("not damaged"), "{err}");
    let repaired = s.repair(&["//lost".into()]).await.unwrap();
    assert!(repaired.check.is_ok(), "{repaired:?}");
    // Every acknowledged change but the lost record's.
    for fresh in [s.clone(), Store::open(&url).unwrap()] {
        assert_eq!(keys(&fresh, "//lost").await.unwrap(), [1, 3]);
        assert_eq!(keys(&fresh, "//kept").await.unwrap(), [1, 2, 3]);
    }
    // A checkpoint was written: the store is whole again.
    assert!(repaired.repaired.iter().any(|r| r.contains("checkpoint")));
    write(&s, "//lost", 4).await;
    assert_eq!(
        keys(&Store::open(&url).unwrap(), "//lost").await.unwrap(),
        [1, 3, 4]
    );
}

#[tokio::test]
async fn a_loss_nothing_bounds_damages_every_table_but_the_store_opens() {
    let (dir, url) = temp_store();
    let lost = store_with_a_lost_record(dir.path(), &url).await;
    // The record after it goes too: nothing says what the first one touched.
    std::fs::remove_file(record_file(dir.path(), lost + 1)).unwrap();
    let s = Store::open(&url).unwrap();
    for t in ["//kept", "//lost"] {
        assert!(matches!(
            keys(&s, t).await.unwrap_err(),
            Error::Damaged { .. }
        ));
    }
    // The catalog, the check and removal work.
    assert_eq!(s.tables().await.unwrap().len(), 2);
    assert!(!s.check().await.unwrap().is_ok());
    s.remove_table("//kept").await.unwrap();
    let repaired = s.repair(&["//lost".into()]).await.unwrap();
    assert!(repaired.check.is_ok(), "{repaired:?}");
    assert_eq!(keys(&s, "//lost").await.unwrap(), [1, 3]);
}

#[tokio::test]
async fn a_damaged_record_is_set_aside_and_restoring_it_restores_the_rows() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    s.create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    write(&s, "//t", 1).await;
    write(&s, "//t", 2).await;
    let damaged = newest_record(dir.path());
    write(&s, "//t", 3).await;
    let file = record_file(dir.path(), damaged);
    let intact = std::fs::read(&file).unwrap();
    let mut bytes = intact.clone();
    let end = bytes.len() - 3;
    bytes[end] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let s = Store::open(&url).unwrap();
    assert!(keys(&s, "//t").await.is_err());
    let repaired = s.repair(&[]).await.unwrap();
    assert!(
        repaired.repaired.iter().any(|r| r.contains("_damaged")),
        "{repaired:?}"
    );
    // The original file back over the placeholder: everything is there again.
    std::fs::write(&file, &intact).unwrap();
    let fresh = Store::open(&url).unwrap();
    assert_eq!(keys(&fresh, "//t").await.unwrap(), [1, 2, 3]);
    assert!(fresh.check().await.unwrap().is_ok());
}

/// The newest checkpoint's position.
fn newest_checkpoint(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("_checkpoints"))
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .strip_suffix(".json")?
                .parse()
                .ok()
        })
        .max()
        .unwrap()
}

/// Issue 75: with the record right after the checkpoint deleted, opening loaded the
/// checkpoint, found the next record absent and served the checkpoint's state: the records
/// after the gap were ignored, `check` said nothing, and the next write re-created the
/// missing record, splicing the log. Opening now lists the log after the checkpoint.
#[tokio::test]
async fn a_record_missing_right_after_the_checkpoint_is_a_loss_not_the_end_of_the_log() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    for t in ["//kept", "//lost"] {
        s.create_table(t, sorted(), TableOptions::default())
            .await
            .unwrap();
    }
    let mut k = 0;
    while !dir.path().join("_checkpoints").exists() {
        k += 1;
        write(&s, "//kept", k).await;
    }
    let checkpoint = newest_checkpoint(dir.path());
    for k in 1..=3 {
        write(&s, "//lost", k).await;
    }
    let newest = newest_record(dir.path());
    assert_eq!(newest, checkpoint + 3);
    let lost = checkpoint + 1;
    std::fs::remove_file(record_file(dir.path(), lost)).unwrap();

    let fresh = Store::open(&url).unwrap();
    let err = keys(&fresh, "//lost").await.unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("log record {lost} ")), "{text}");
    assert!(text.contains(&format!("{lost:020}.json")), "{text}");
    let err = fresh
        .write_rows("//lost", WriteKind::Overwrite, false, vec![row(9, 9)])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    assert_eq!(
        keys(&fresh, "//kept").await.unwrap(),
        (1..=k).collect::<Vec<_>>()
    );
    let report = fresh.check().await.unwrap();
    let named: Vec<_> = report
        .damage
        .iter()
        .filter(|d| d.file.ends_with(&format!("{lost:020}.json")))
        .collect();
    assert_eq!(named.len(), 1, "{report:?}");
    assert_eq!(named[0].tables, vec!["//lost".to_string()]);
    // A write lands after the newest record, not in the gap.
    write(&fresh, "//kept", k + 1).await;
    assert!(!record_file(dir.path(), lost).exists());
    assert_eq!(newest_record(dir.path()), newest + 1);
    let reopened = Store::open(&url).unwrap();
    assert_eq!(
        keys(&reopened, "//kept").await.unwrap(),
        (1..=k + 1).collect::<Vec<_>>()
    );
    assert!(keys(&reopened, "//lost").await.is_err());
}

/// Collects the warnings (and errors) the code under test logs on this thread.
#[derive(Clone, Default)]
struct Warnings(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Warnings {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct FieldText<'a>(&'a mut String);

impl tracing::field::Visit for FieldText<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl tracing::Subscriber for Warnings {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = String::new();
        event.record(&mut FieldText(&mut text));
        self.0.lock().unwrap().push(text);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The files beside the log that hold record `seq` set aside.
fn set_aside(dir: &Path, seq: u64) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with(&format!("{seq:020}.json.")) && name.ends_with(".torn")
        })
        .collect()
}

/// Issue 75: what an OS crash leaves of a commit never acknowledged (writers sync a record
/// before they acknowledge it) is an empty or cut-off newest record. It used to damage the
/// tables its header names, or every table when it had none. Opening now sets it aside,
/// keeping its bytes and saying so, and goes on from the record before it.
#[tokio::test]
async fn a_torn_newest_record_is_set_aside_and_its_number_reused() {
    // What is left of a file of `len` bytes.
    type Cut = fn(usize) -> usize;
    let cuts: [(&str, Cut); 3] = [
        ("empty", |_| 0),
        ("cut in the header", |len| len / 3),
        ("cut in the body", |len| len - 7),
    ];
    for (tear, cut) in cuts {
        let (dir, url) = temp_store();
        let s = Store::open(&url).unwrap();
        s.create_table("//t", sorted(), TableOptions::default())
            .await
            .unwrap();
        write(&s, "//t", 1).await;
        write(&s, "//t", 2).await;
        let torn = newest_record(dir.path());
        let file = record_file(dir.path(), torn);
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.truncate(cut(bytes.len()));
        std::fs::write(&file, &bytes).unwrap();

        let warnings = Warnings::default();
        let _log = tracing::subscriber::set_default(warnings.clone());
        let fresh = Store::open(&url).unwrap();
        assert_eq!(keys(&fresh, "//t").await.unwrap(), [1], "{tear}");
        let said = warnings.take();
        assert_eq!(said.len(), 1, "{tear}: {said:?}");
        assert!(said[0].contains(&format!("{torn:020}.json")), "{said:?}");
        let kept = set_aside(dir.path(), torn);
        assert_eq!(kept.len(), 1, "{tear}");
        assert_eq!(std::fs::read(&kept[0]).unwrap(), bytes, "{tear}");
        assert!(said[0].contains(&*kept[0].file_name().unwrap().to_string_lossy()));
        // The next commit takes the number, quietly.
        write(&fresh, "//t", 3).await;
        assert_eq!(newest_record(dir.path()), torn, "{tear}");
        let reopened = Store::open(&url).unwrap();
        assert_eq!(keys(&reopened, "//t").await.unwrap(), [1, 3], "{tear}");
        assert!(reopened.check().await.unwrap().is_ok(), "{tear}");
        assert_eq!(warnings.take(), Vec::<String>::new(), "{tear}");
        assert_eq!(set_aside(dir.path(), torn), kept, "{tear}");
    }
}

/// A record is read as torn only when it is the newest and looks like a cut: a flipped bit
/// in the newest record, a cut-off record with one after it, or a torn newest record after a
/// missing one, is damage as before.
#[tokio::test]
async fn damage_that_is_no_tear_stays_damage() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    s.create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    write(&s, "//t", 1).await;
    let newest = newest_record(dir.path());
    let file = record_file(dir.path(), newest);
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let fresh = Store::open(&url).unwrap();
    assert!(matches!(
        keys(&fresh, "//t").await.unwrap_err(),
        Error::Damaged { .. }
    ));
    assert!(set_aside(dir.path(), newest).is_empty());
    assert!(!fresh.check().await.unwrap().is_ok());

    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    s.create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    write(&s, "//t", 1).await;
    let cut = newest_record(dir.path());
    write(&s, "//t", 2).await;
    let file = record_file(dir.path(), cut);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&file, &bytes).unwrap();
    let fresh = Store::open(&url).unwrap();
    assert!(matches!(
        keys(&fresh, "//t").await.unwrap_err(),
        Error::Damaged { .. }
    ));
    assert!(set_aside(dir.path(), cut).is_empty());
    assert!(record_file(dir.path(), cut).exists());

    // The record before a torn newest one is missing: the torn one is the only sign of that
    // gap, so it stays.
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    s.create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    write(&s, "//t", 1).await;
    let missing = newest_record(dir.path());
    write(&s, "//t", 2).await;
    std::fs::remove_file(record_file(dir.path(), missing)).unwrap();
    std::fs::write(record_file(dir.path(), missing + 1), b"").unwrap();
    let fresh = Store::open(&url).unwrap();
    assert!(matches!(
        keys(&fresh, "//t").await.unwrap_err(),
        Error::Damaged { .. }
    ));
    assert!(set_aside(dir.path(), missing + 1).is_empty());
    let report = fresh.check().await.unwrap();
    assert!(
        report
            .damage
            .iter()
            .any(|d| d.file.ends_with(&format!("{missing:020}.json"))),
        "{report:?}"
    );
}
