//! Crash tests: a fault-injecting object store fails (or cuts off after doing) every mutating
//! call in turn during a workload of commits, a tablet transaction and master transactions; the store is then reopened on
//! the surviving objects and must hold exactly the acknowledged commits (plus, when the fault
//! cut the acknowledgement off, possibly the one in flight) — never a partial commit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use dynql_core::Value;
use dynql_storage::{Store, TableOptions, Timestamp, WriteKind};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;

mod support;
use support::faulty_store::{Fault, FaultPlan, FaultyStore};
use support::model_disk::{ModelDisk, Rng};
use support::{key, row, schema};

/// Passes calls through until `left` mutating calls were made, then injects `fault` once and
/// fails every later mutation (the process is "dead").
struct Budget {
    left: AtomicI64,
    fault: Fault,
}

impl FaultPlan for Budget {
    fn next_fault(&self) -> Option<Fault> {
        let left = self.left.fetch_sub(1, Ordering::SeqCst);
        if left > 0 {
            None
        } else if left == 0 {
            Some(self.fault)
        } else {
            Some(Fault::Fail)
        }
    }
}

/// The table's rows (`None`: no table yet) and the nodes master transactions committed
/// under `//tmp`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    rows: Option<BTreeMap<i64, i64>>,
    nodes: BTreeMap<String, i64>,
    /// The keys of the static table `//st` in row order (`None`: no table yet).
    static_rows: Option<Vec<i64>>,
}

/// One step: what it does to the store, and to the model.
enum Step {
    Create,
    Write(Vec<(i64, i64)>),
    Delete(Vec<i64>),
    Transaction(Vec<(i64, i64)>),
    /// A bulk write: batches sorted with spill files, chunks in several tablets, one commit.
    Bulk(Vec<(i64, i64)>),
    Checkpoint,
    /// Flush and compaction move versions between chunks; the rows stay the same.
    Flush,
    Compact,
    /// Tablet state changes: no effect on the rows.
    Freeze,
    Unfreeze,
    /// A master transaction with a nested one: nodes set in both and a lock, committed.
    Master(Vec<(&'static str, i64)>),
    /// A static table `//st`, created empty.
    CreateStatic,
    /// A master transaction writing `//st` (over its rows, or after them), committed.
    Static {
        append: bool,
        keys: Vec<i64>,
    },
}

fn apply_model(model: &mut Model, step: &Step) {
    match step {
        Step::Create => model.rows = Some(BTreeMap::new()),
        Step::CreateStatic => model.static_rows = Some(vec![]),
        Step::Static { append, keys } => {
            let rows = model.static_rows.get_or_insert_with(Vec::new);
            if !append {
                rows.clear();
            }
            rows.extend(keys);
        }
        Step::Master(nodes) => {
            for (name, v) in nodes {
                model.nodes.insert(name.to_string(), *v);
            }
        }
        Step::Write(rows) | Step::Transaction(rows) | Step::Bulk(rows) => {
            let m = model.rows.get_or_insert_with(BTreeMap::new);
            for (k, v) in rows {
                m.insert(*k, *v);
            }
        }
        Step::Checkpoint | Step::Flush | Step::Compact | Step::Freeze | Step::Unfreeze => {}
        Step::Delete(keys) => {
            if let Some(m) = &mut model.rows {
                for k in keys {
                    m.remove(k);
                }
            }
        }
    }
}

async fn run_step(store: &Store, step: &Step) -> dynql_storage::Result<()> {
    match step {
        Step::Create => {
            // Three tablets, so that a large write spans several.
            let options = TableOptions {
                pivot_keys: Some(vec![
                    vec![],
                    vec![Value::Int64(200)],
                    vec![Value::Int64(5000)],
                ]),
                ..TableOptions::default()
            };
            store.create_table("//t", schema(), options).await
        }
        Step::Write(rows) => {
            store
                .write_rows(
                    "//t",
                    WriteKind::Overwrite,
                    false,
                    rows.iter().map(|(k, v)| row(*k, *v)).collect(),
                )
                .await?;
            Ok(())
        }
        Step::Delete(keys) => {
            store
                .write_rows(
                    "//t",
                    WriteKind::Delete,
                    false,
                    keys.iter().map(|k| key(*k)).collect(),
                )
                .await?;
            Ok(())
        }
        Step::Transaction(rows) => {
            let tx = store.start_transaction(60_000).await?;
            for (k, v) in rows {
                store
                    .write_rows_in(
                        &tx.id,
                        "//t",
                        WriteKind::Overwrite,
                        false,
                        vec![row(*k, *v)],
                    )
                    .await?;
            }
            store.commit_transaction(&tx.id).await?;
            Ok(())
        }
        Step::Bulk(rows) => {
            let mut bulk = store.start_bulk_write("//t").await?;
            // A budget of a few batches: the sort spills runs to temporary files.
            bulk.set_sort_memory(64 << 10);
            for part in rows.chunks(1000) {
                store
                    .stage_bulk_rows(&mut bulk, part.iter().map(|(k, v)| row(*k, *v)).collect())
                    .await?;
            }
            store.commit_bulk_write(bulk).await?;
            Ok(())
        }
        Step::CreateStatic => {
            let options = TableOptions {
                static_table: true,
                ..TableOptions::default()
            };
            store.create_table("//st", schema(), options).await
        }
        Step::Static { append, keys } => {
            let tx = store.start_master_transaction(None, 600_000, None).await?;
            let mut write = store
                .start_static_write("//st", Some(&tx.id), *append)
                .await?;
            let rows = keys
                .iter()
                .map(|&k| vec![Value::Int64(k), Value::Int64(k)])
                .collect();
            store.write_static_rows(&mut write, rows).await?;
            store.commit_static_write(write).await?;
            store.commit_master_transaction(&tx.id).await
        }
        Step::Master(nodes) => {
            let top = store.start_master_transaction(None, 600_000, None).await?;
            let nested = store
                .start_master_transaction(Some(&top.id), 600_000, None)
                .await?;
            let (first, rest) = nodes.split_first().expect("nodes");
            let value = |v: i64| dynql_core::Yson::Int64(v);
            store
                .set_node(
                    &format!("//tmp/{}", first.0),
                    &value(first.1),
                    false,
                    Some(&top.id),
                )
                .await?;
            store
                .lock_node(
                    "//tmp",
                    &nested.id,
                    dynql_storage::cypress::locks::LockMode::Shared,
                    Default::default(),
                )
                .await?;
            for (name, v) in rest {
                store
                    .set_node(
                        &format!("//tmp/{name}"),
                        &value(*v),
                        false,
                        Some(&nested.id),
                    )
                    .await?;
            }
            store.commit_master_transaction(&nested.id).await?;
            store.commit_master_transaction(&top.id).await
        }
        Step::Checkpoint => store.checkpoint().await.map(|_| ()),
        Step::Flush => store.flush_table("//t").await.map(|_| ()),
        Step::Compact => store.compact("//t").await.map(|_| ()),
        Step::Freeze => {
            store
                .set_tablet_state("//t", dynql_storage::TabletCommand::Freeze)
                .await
        }
        Step::Unfreeze => {
            store
                .set_tablet_state("//t", dynql_storage::TabletCommand::Unfreeze)
                .await
        }
    }
}

fn workload() -> Vec<Step> {
    vec![
        Step::Create,
        Step::Write(vec![(1, 10), (2, 20), (3, 30)]),
        Step::Write(vec![(2, 21)]),
        // A large write goes to a chunk first, then the record names it.
        Step::Write(
            (100..100 + dynql_storage::store::LARGE_WRITE_ROWS as i64)
                .map(|k| (k, k))
                .collect(),
        ),
        Step::Checkpoint,
        // Keys over all three tablets, some given twice (the later wins), some overwriting
        // the large write's.
        Step::Bulk(
            (0..2 * dynql_storage::store::LARGE_WRITE_ROWS as i64)
                .map(|i| (150 + (i * 7919) % 15_000, -i))
                .collect(),
        ),
        Step::Delete(vec![1]),
        Step::Transaction(vec![(4, 40), (3, 31)]),
        Step::Checkpoint,
        Step::Write(vec![(5, 50)]),
        Step::Master(vec![("a", 1), ("b", 2)]),
        Step::CreateStatic,
        Step::Static {
            append: false,
            keys: vec![1, 2],
        },
        Step::Flush,
        // Small flushes pile up in the first tablet until the compaction policy merges them
        // (a minor compaction after the commit of one of them).
        Step::Write(vec![(7, 70), (2, 23)]),
        Step::Flush,
        Step::Delete(vec![7]),
        Step::Flush,
        Step::Write(vec![(8, 80)]),
        Step::Flush,
        Step::Write(vec![(2, 22), (6, 60)]),
        Step::Freeze,
        Step::Compact,
        Step::Unfreeze,
        Step::Delete(vec![6]),
        Step::Master(vec![("a", 3), ("c", 4)]),
        Step::Static {
            append: true,
            keys: vec![5],
        },
        Step::Checkpoint,
        Step::Static {
            append: false,
            keys: vec![9],
        },
    ]
}

async fn observed(objects: Arc<dyn ObjectStore>) -> Model {
    observed_in(&Store::from_object_store(objects, "memory://reopened")).await
}

/// What a reopened `store` holds.
async fn observed_in(store: &Store) -> Model {
    let mut nodes = BTreeMap::new();
    for name in store.list_node("//tmp", None).await.expect("reopen") {
        match store.get_node(&format!("//tmp/{name}"), None).await {
            Ok(dynql_core::Yson::Int64(v)) => nodes.insert(name, v),
            other => panic!("unexpected node //tmp/{name}: {other:?}"),
        };
    }
    let rows = match store.read_rows("//t", Timestamp::MAX).await {
        Ok(rows) => Some(
            rows.into_iter()
                .map(|r| match (&r[0], &r[1]) {
                    (Value::Int64(k), Value::Int64(v)) => (*k, *v),
                    other => panic!("unexpected row {other:?}"),
                })
                .collect(),
        ),
        Err(dynql_storage::Error::NoSuchTable { .. }) => None,
        Err(e) => panic!("reopen failed: {e}"),
    };
    Model {
        rows,
        nodes,
        static_rows: static_rows(store).await.map(|(keys, _)| keys),
    }
}

/// The keys of `//st` in row order and the chunks holding them, if there is such a table.
async fn static_rows(store: &Store) -> Option<(Vec<i64>, Vec<String>)> {
    let read = match store.table_for_read("//st", None).await {
        Ok(dynql_storage::static_table::TableRead::Static { chunks, .. }) => chunks,
        Ok(other) => panic!("//st is static: {other:?}"),
        Err(dynql_storage::Error::NoSuchTable { .. }) => return None,
        Err(e) => panic!("reopen failed: {e}"),
    };
    let mut keys = Vec::new();
    for chunk in &read {
        for batch in store.read_static_chunk(chunk).await.expect("chunk") {
            let types = [dynql_core::ValueType::Int64; 2];
            for row in dynql_core::arrow_convert::batch_to_rows(&batch, &types) {
                match row[0] {
                    Value::Int64(k) => keys.push(k),
                    ref other => panic!("unexpected row {other:?}"),
                }
            }
        }
    }
    Some((keys, read.into_iter().map(|c| c.path).collect()))
}

/// After a crash, the store's own maintenance leaves no garbage: a reopened store (no grace
/// period) that compacts and checkpoints three times keeps exactly the chunks its two kept
/// checkpoints name; chunks written by the commit in flight (or by ones that lost their
/// acknowledgement and were later replaced) are gone.
async fn garbage_is_collected(objects: Arc<dyn ObjectStore>) {
    use futures::TryStreamExt;
    let store = Store::from_object_store(objects.clone(), "memory://reopened").with_gc_grace_ms(0);
    if store.table("//t").await.is_err() {
        return;
    }
    // Flushes stay as written here, so that the checkpoints' states name every chunk kept
    // (a merge by the policy would leave its inputs named by log records until later).
    store
        .set_attribute(
            "//t",
            "mount_config/enable_compaction_and_partitioning",
            dynql_storage::AttributeValue::Boolean(false),
        )
        .await
        .unwrap();
    // The crash may have left the tablets frozen (unfreezing mounted ones is refused).
    let _ = store
        .set_tablet_state("//t", dynql_storage::TabletCommand::Unfreeze)
        .await;
    store.compact("//t").await.unwrap();
    // A master transaction the crash left open names the rows it staged: it ends first
    // (as it would by its timeout).
    for tx in store.master_transactions().await.unwrap() {
        if tx.parent_id.is_none() {
            store.abort_master_transaction(&tx.id).await.unwrap();
        }
    }
    // The static table's chunks stay as they are.
    let mut named: std::collections::BTreeSet<String> = static_rows(&store)
        .await
        .map(|(_, chunks)| chunks.into_iter().collect())
        .unwrap_or_default();
    for i in 0..3 {
        store
            .write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![row(1_000_000 + i, i)],
            )
            .await
            .unwrap();
        store.checkpoint().await.unwrap();
        if i > 0 {
            // The state the two kept checkpoints recorded (the flush left no tail).
            named.extend(
                store
                    .chunks("//t")
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|c| c.path),
            );
        }
    }
    let stored: std::collections::BTreeSet<String> = objects
        .list(Some(&Path::from("tables")))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(stored, named, "chunks left behind");
}

#[tokio::test]
async fn every_fault_point_keeps_exactly_the_acknowledged_commits() {
    let steps = workload();
    let mut points = 0;
    for fault in [Fault::Fail, Fault::CutOff] {
        for budget in 0.. {
            let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let faulty = Arc::new(FaultyStore {
                inner: inner.clone(),
                plan: Budget {
                    left: AtomicI64::new(budget),
                    fault,
                },
            });
            let store = Store::from_object_store(faulty.clone(), "memory://faulty");
            let mut acked = Model::default();
            let mut in_flight = None;
            for (i, step) in steps.iter().enumerate() {
                match run_step(&store, step).await {
                    Ok(()) => apply_model(&mut acked, step),
                    Err(_) => {
                        in_flight = Some(i);
                        break;
                    }
                }
            }
            let got = observed(inner.clone()).await;
            let Some(i) = in_flight else {
                // The whole workload ran: no fault point left at this budget.
                assert_eq!(got, acked);
                break;
            };
            points += 1;
            let mut with_in_flight = acked.clone();
            apply_model(&mut with_in_flight, &steps[i]);
            assert!(
                got == acked || got == with_in_flight,
                "{fault:?} at mutation {budget} (step {i}): store holds {got:?}, acknowledged {acked:?}"
            );
            if fault == Fault::Fail {
                // A failed put has no effect: nothing unacknowledged may appear.
                assert_eq!(got, acked, "{fault:?} at mutation {budget}");
            }
            garbage_is_collected(inner).await;
        }
    }
    assert!(points >= 20, "only {points} fault points exercised");
    println!("crash test: {points} fault points exercised");
}

/// Runs the workload on a `file://` store over a [`ModelDisk`] that crashes after
/// `ops_before_crash` operations, then reopens the disk image the crash leaves (chosen by
/// `seed`). Returns what was acknowledged, the step in flight, what the image holds, and the
/// disk's operation count.
async fn crash_on_disk(
    durability: dynql_storage::Durability,
    ops_before_crash: i64,
    seed: u64,
) -> (Model, Option<usize>, Option<Model>, u64) {
    let steps = workload();
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(ModelDisk::new(dir.path(), ops_before_crash));
    let options = dynql_storage::StoreOptions {
        durability,
        disk: Some(disk.clone()),
    };
    let store = Store::open_with(&format!("file://{}", dir.path().display()), options).unwrap();
    let mut acked = Model::default();
    let mut in_flight = None;
    for (i, step) in steps.iter().enumerate() {
        match run_step(&store, step).await {
            Ok(()) => apply_model(&mut acked, step),
            Err(e) => {
                assert!(disk.crashed(), "step {i} failed before the crash: {e}");
                in_flight = Some(i);
                break;
            }
        }
    }
    let image = tempfile::tempdir().unwrap();
    disk.crash_image(&mut Rng(seed), image.path());
    let reopened = Store::open(&format!("file://{}", image.path().display())).unwrap();
    // A store that cannot be read (`observed_in` panics) holds no model.
    let got =
        futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(observed_in(&reopened)))
            .await
            .ok();
    (acked, in_flight, got, disk.operations())
}

/// The acknowledged model, and that with the step in flight applied.
fn either(acked: &Model, in_flight: Option<usize>) -> [Model; 2] {
    let mut with_in_flight = acked.clone();
    if let Some(i) = in_flight {
        apply_model(&mut with_in_flight, &workload()[i]);
    }
    [acked.clone(), with_in_flight]
}

/// The seeds of the disk crash test: `DYNQL_CRASH_SEEDS=A..B`, else `0..16` (CI's range).
fn crash_seeds() -> std::ops::Range<u64> {
    let text = std::env::var("DYNQL_CRASH_SEEDS").unwrap_or_default();
    match text.split_once("..") {
        Some((a, b)) => a.parse().unwrap()..b.parse().unwrap(),
        None => 0..16,
    }
}

/// A power loss at a point chosen by the seed, on a disk that loses, reorders and tears what
/// was not synced: with `durability = fsync`, the reopened store holds every acknowledged
/// commit, and of the one in flight all or nothing. (`DYNQL_CRASH_SEEDS=0..500 cargo test
/// -p dynql-storage --test crash --release` for a longer run.)
#[tokio::test]
async fn a_power_loss_keeps_every_acknowledged_commit() {
    let durability = dynql_storage::Durability::Fsync;
    let (_, none, _, operations) = crash_on_disk(durability, i64::MAX, 0).await;
    assert_eq!(none, None, "the workload runs whole without a crash");
    for seed in crash_seeds() {
        let mut rng = Rng(seed ^ 0x5EED);
        let point = 1 + rng.below(operations) as i64;
        let (acked, in_flight, got, _) = crash_on_disk(durability, point, seed).await;
        let got = got.unwrap_or_else(|| {
            panic!("seed {seed}: the store after a crash at disk operation {point} cannot be read")
        });
        assert!(
            either(&acked, in_flight).contains(&got),
            "seed {seed}: a crash after disk operation {point} (step {in_flight:?}) left {got:?}; acknowledged {acked:?}"
        );
    }
}

/// The same disk without syncs (`durability = none`) loses acknowledged commits at some
/// crash point: the model can tell a store that syncs from one that does not.
#[tokio::test]
async fn without_syncs_a_power_loss_loses_acknowledged_commits() {
    let durability = dynql_storage::Durability::None;
    let (_, _, _, operations) = crash_on_disk(durability, i64::MAX, 0).await;
    let mut lost = 0;
    for seed in 0..8u64 {
        let point = operations as i64 - seed as i64 * 3;
        let (acked, in_flight, got, _) = crash_on_disk(durability, point, seed).await;
        if !got.is_some_and(|got| either(&acked, in_flight).contains(&got)) {
            lost += 1;
        }
    }
    assert!(lost > 0, "no crash point lost an unsynced commit");
}

/// The OS disk, recording each write operation (the hook of the sync tests).
#[derive(Debug)]
struct RecordingDisk {
    root: std::path::PathBuf,
    ops: std::sync::Mutex<Vec<String>>,
}

impl RecordingDisk {
    fn new(root: &std::path::Path) -> RecordingDisk {
        RecordingDisk {
            root: root.to_path_buf(),
            ops: Default::default(),
        }
    }

    /// Records `op` of `path`, named inside the store.
    fn note(&self, op: &str, path: &std::path::Path) {
        let inside = path.strip_prefix(&self.root).unwrap_or(path);
        let mut ops = self.ops.lock().unwrap();
        ops.push(format!("{op} {}", inside.display()));
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.ops.lock().unwrap())
    }
}

impl dynql_storage::Disk for RecordingDisk {
    fn create_file(
        &self,
        path: &std::path::Path,
        bytes: &[bytes::Bytes],
        sync: bool,
    ) -> std::io::Result<()> {
        dynql_storage::OsDisk.create_file(path, bytes, sync)?;
        self.note(if sync { "write+sync" } else { "write" }, path);
        Ok(())
    }
    fn create_dir(&self, path: &std::path::Path) -> std::io::Result<()> {
        dynql_storage::OsDisk.create_dir(path)?;
        self.note("mkdir", path);
        Ok(())
    }
    fn hard_link(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        dynql_storage::OsDisk.hard_link(from, to)?;
        self.note("link", to);
        Ok(())
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        dynql_storage::OsDisk.rename(from, to)?;
        self.note("rename", to);
        Ok(())
    }
    fn remove_file(&self, path: &std::path::Path) -> std::io::Result<()> {
        dynql_storage::OsDisk.remove_file(path)?;
        self.note("unlink", path);
        Ok(())
    }
    fn sync_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        dynql_storage::OsDisk.sync_dir(dir)?;
        self.note("syncdir", dir);
        Ok(())
    }
}

/// A `file://` store in a new directory over a [`RecordingDisk`], with table `//t` created.
async fn recorded_table(
    durability: dynql_storage::Durability,
) -> (tempfile::TempDir, Arc<RecordingDisk>, Store) {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(RecordingDisk::new(dir.path()));
    let options = dynql_storage::StoreOptions {
        durability,
        disk: Some(disk.clone()),
    };
    let store = Store::open_with(&format!("file://{}", dir.path().display()), options).unwrap();
    store
        .create_table("//t", schema(), TableOptions::default())
        .await
        .unwrap();
    (dir, disk, store)
}

/// A one-row commit returns only after its record is on disk: the record's bytes synced
/// before its name is linked, then its directory synced; two syncs in all. A large write's
/// chunk is synced (bytes and name) before the record that names it is written.
#[tokio::test]
async fn a_commit_returns_after_its_record_and_directory_are_synced() {
    let (_dir, disk, store) = recorded_table(dynql_storage::Durability::Fsync).await;
    disk.take();
    store
        .write_rows("//t", WriteKind::Overwrite, false, vec![row(1, 10)])
        .await
        .unwrap();
    let record = "_log/00000000000000000002.json";
    assert_eq!(
        disk.take(),
        vec![
            format!("write+sync {record}#1"),
            format!("link {record}"),
            format!("unlink {record}#1"),
            "syncdir _log".to_string(),
        ]
    );

    let large: Vec<_> = (0..dynql_storage::store::LARGE_WRITE_ROWS as i64)
        .map(|k| row(k, k))
        .collect();
    store
        .write_rows("//t", WriteKind::Overwrite, false, large)
        .await
        .unwrap();
    let ops = disk.take();
    let at = |op: &str| ops.iter().position(|o| o == op);
    let chunk_synced = ops
        .iter()
        .position(|o| o.starts_with("write+sync tables/"))
        .unwrap_or_else(|| panic!("no chunk written and synced: {ops:?}"));
    let chunk_dir_synced = ops
        .iter()
        .position(|o| o.starts_with("syncdir tables/"))
        .unwrap_or_else(|| panic!("the chunk's directory is not synced: {ops:?}"));
    let record = "_log/00000000000000000003.json";
    let linked = at(&format!("link {record}")).expect("the record");
    assert!(
        chunk_synced < linked && chunk_dir_synced < linked,
        "{ops:?}"
    );
    assert_eq!(
        ops.last().map(String::as_str),
        Some("syncdir _log"),
        "{ops:?}"
    );
    assert!(
        ops.iter().all(|o| !o.starts_with("write ")),
        "unsynced writes: {ops:?}"
    );
}

/// With `durability = none` nothing is synced.
#[tokio::test]
async fn without_durability_nothing_is_synced() {
    let (_dir, disk, store) = recorded_table(dynql_storage::Durability::None).await;
    store
        .write_rows("//t", WriteKind::Overwrite, false, vec![row(1, 10)])
        .await
        .unwrap();
    let ops = disk.take();
    assert!(!ops.is_empty());
    assert!(
        ops.iter().all(|o| !o.contains("sync")),
        "synced without durability: {ops:?}"
    );
}
