//! Deterministic races: a gated object store holds one writer at a chosen point of its commit
//! (the put of its log record, or of a staged transaction slot) while another store handle —
//! another process, as far as the store can tell — changes the table; then the held writer
//! goes on. Each test replays one defect found by an adversarial trial, and asserts the rule
//! that fixes it: a write is either refused with an error or acknowledged and visible; never
//! acknowledged and gone (crate::validate, crate::transaction, crate::compaction).
//!
//! Every scenario runs several times: the gate makes the interleaving exact, the repetitions
//! catch anything that depends on timing anyway.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use dynql_core::{TableSchema, Value};
use dynql_storage::{
    Error, Reshard, Retention, Store, TableOptions, TabletCommand, Timestamp, WriteKind,
};
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use tokio::sync::oneshot;

const REPEATS: usize = 5;

/// A one-shot gate on puts whose path starts with `prefix`.
struct Gate {
    prefix: String,
    reached: oneshot::Sender<()>,
    release: oneshot::Receiver<()>,
}

/// Passes everything to `inner`, except that the first put matching an armed gate waits
/// until the test releases it.
struct GatedStore {
    inner: Arc<dyn ObjectStore>,
    gate: Mutex<Option<Gate>>,
}

impl fmt::Debug for GatedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GatedStore")
    }
}

impl fmt::Display for GatedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GatedStore({})", self.inner)
    }
}

/// The test's side of an armed gate.
struct Held {
    reached: oneshot::Receiver<()>,
    release: oneshot::Sender<()>,
}

impl Held {
    async fn reached(&mut self) {
        (&mut self.reached)
            .await
            .expect("the gated call never came");
    }

    fn release(self) {
        let _ = self.release.send(());
    }
}

impl GatedStore {
    fn arm(&self, prefix: &str) -> Held {
        let (reached_tx, reached_rx) = oneshot::channel();
        let (release_tx, release_rx) = oneshot::channel();
        *self.gate.lock().unwrap() = Some(Gate {
            prefix: prefix.to_string(),
            reached: reached_tx,
            release: release_rx,
        });
        Held {
            reached: reached_rx,
            release: release_tx,
        }
    }

    async fn pass(&self, location: &Path) {
        let gate = {
            let mut g = self.gate.lock().unwrap();
            match g.as_ref() {
                Some(gate) if location.as_ref().starts_with(&gate.prefix) => g.take(),
                _ => None,
            }
        };
        if let Some(gate) = gate {
            let _ = gate.reached.send(());
            let _ = gate.release.await;
        }
    }
}

#[async_trait]
impl ObjectStore for GatedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.pass(location).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// Two handles on one store: `held` goes through the gate, `other` does not.
struct Pair {
    gated: Arc<GatedStore>,
    held: Store,
    other: Store,
    objects: Arc<dyn ObjectStore>,
}

fn pair() -> Pair {
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let gated = Arc::new(GatedStore {
        inner: objects.clone(),
        gate: Mutex::new(None),
    });
    Pair {
        held: Store::from_object_store(gated.clone(), "memory://held"),
        other: Store::from_object_store(objects.clone(), "memory://other"),
        gated,
        objects,
    }
}

impl Pair {
    /// A third handle opened afresh: replays the whole log.
    fn reopened(&self) -> Store {
        Store::from_object_store(self.objects.clone(), "memory://reopened")
    }
}

fn sorted() -> TableSchema {
    TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]").unwrap()
}

fn queue() -> TableSchema {
    TableSchema::parse("[{name=a;type=int64}]").unwrap()
}

fn row(k: i64, v: i64) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), Some(Value::Int64(v))]
}

/// Defect 1: a 200k-row append to tablet 3 while another process unmounts, reshards to one
/// tablet and mounts: the append used to exit 0 and vanish on replay.
#[tokio::test]
async fn an_append_racing_a_reshard_is_refused_not_lost() {
    for _ in 0..REPEATS {
        let p = pair();
        let options = TableOptions {
            tablet_count: Some(4),
            ..TableOptions::default()
        };
        p.other.create_table("//q", queue(), options).await.unwrap();
        let mut held = p.gated.arm("_log/");
        let store = p.held.clone();
        let append = tokio::spawn(async move {
            let rows = (0..2_000)
                .map(|i| (Some(3), vec![Some(Value::Int64(i))]))
                .collect();
            store.append_rows("//q", rows).await
        });
        held.reached().await;
        p.other
            .set_tablet_state("//q", TabletCommand::Unmount)
            .await
            .unwrap();
        p.other
            .reshard_table(
                "//q",
                Reshard::TabletCount {
                    count: 1,
                    uniform: false,
                },
            )
            .await
            .unwrap();
        p.other
            .set_tablet_state("//q", TabletCommand::Mount)
            .await
            .unwrap();
        held.release();
        let err = append.await.unwrap().unwrap_err();
        assert!(
            err.to_string().contains("tablet 3"),
            "the error names the missing tablet: {err}"
        );
        // Nothing was acknowledged and nothing appears; the log replays without error.
        let rows = p.reopened().read_rows("//q", Timestamp::MAX).await.unwrap();
        assert!(rows.is_empty(), "{} rows appeared", rows.len());
    }
}

/// Defect 4: writes racing `freeze-table` / `unmount-table` used to commit after the state
/// change.
#[tokio::test]
async fn writes_racing_a_freeze_or_an_unmount_are_refused() {
    for command in [TabletCommand::Freeze, TabletCommand::Unmount] {
        for large in [false, true] {
            let p = pair();
            p.other
                .create_table("//t", sorted(), TableOptions::default())
                .await
                .unwrap();
            let n = if large {
                dynql_storage::store::LARGE_WRITE_ROWS as i64
            } else {
                10
            };
            let mut held = p.gated.arm("_log/");
            let store = p.held.clone();
            let write = tokio::spawn(async move {
                let rows = (0..n).map(|k| row(k, k)).collect();
                store
                    .write_rows("//t", WriteKind::Overwrite, false, rows)
                    .await
            });
            held.reached().await;
            p.other.set_tablet_state("//t", command).await.unwrap();
            held.release();
            let err = write.await.unwrap().unwrap_err();
            assert!(
                err.to_string().contains("frozen") || err.to_string().contains("not mounted"),
                "{command:?}: {err}"
            );
            p.other
                .set_tablet_state("//t", TabletCommand::Mount)
                .await
                .unwrap();
            assert!(p
                .reopened()
                .read_rows("//t", Timestamp::MAX)
                .await
                .unwrap()
                .is_empty());
        }
    }
}

/// An ordered append racing a freeze, and a write racing the removal and re-creation of its
/// table: refused too.
#[tokio::test]
async fn appends_racing_a_freeze_and_writes_racing_a_replacement_are_refused() {
    let p = pair();
    p.other
        .create_table("//q", queue(), TableOptions::default())
        .await
        .unwrap();
    let mut held = p.gated.arm("_log/");
    let store = p.held.clone();
    let append = tokio::spawn(async move {
        store
            .append_rows("//q", vec![(None, vec![Some(Value::Int64(1))])])
            .await
    });
    held.reached().await;
    p.other
        .set_tablet_state("//q", TabletCommand::Freeze)
        .await
        .unwrap();
    held.release();
    assert!(append.await.unwrap().is_err());

    p.other
        .create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    let mut held = p.gated.arm("_log/");
    let store = p.held.clone();
    let write = tokio::spawn(async move {
        store
            .write_rows("//t", WriteKind::Overwrite, false, vec![row(1, 1)])
            .await
    });
    held.reached().await;
    p.other.remove_table("//t").await.unwrap();
    p.other
        .create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    held.release();
    assert!(matches!(
        write.await.unwrap(),
        Err(Error::NoSuchTable { .. })
    ));
    assert!(p
        .reopened()
        .read_rows("//t", Timestamp::MAX)
        .await
        .unwrap()
        .is_empty());
}

/// Defect 2: `insert-rows --tx X` racing `commit-tx X`: the commit listed the staged files
/// once and deleted the folder afterwards, including files staged after the listing, so an
/// acknowledged write vanished from a successful commit.
#[tokio::test]
async fn a_write_racing_the_commit_of_its_transaction_is_in_it_or_refused() {
    for _ in 0..REPEATS {
        let p = pair();
        p.other
            .create_table("//t", sorted(), TableOptions::default())
            .await
            .unwrap();
        let tx = p.other.start_transaction(60_000).await.unwrap();
        p.other
            .write_rows_in(&tx.id, "//t", WriteKind::Overwrite, false, vec![row(1, 1)])
            .await
            .unwrap();
        // The second write is held just before its staged slot is created...
        let mut held = p.gated.arm(&format!("_tx/{}/staged-", tx.id));
        let store = p.held.clone();
        let id = tx.id.clone();
        let write = tokio::spawn(async move {
            store
                .write_rows_in(&id, "//t", WriteKind::Overwrite, false, vec![row(2, 2)])
                .await
        });
        held.reached().await;
        // ...while the commit runs to its end.
        p.other.commit_transaction(&tx.id).await.unwrap();
        held.release();
        let late = write.await.unwrap();
        assert!(
            matches!(late, Err(Error::TransactionSealed { .. })),
            "a write after the commit started must fail: {late:?}"
        );
        let rows = p.reopened().read_rows("//t", Timestamp::MAX).await.unwrap();
        assert_eq!(rows, vec![vec![Value::Int64(1), Value::Int64(1)]]);
        // Later writes fail clearly too.
        assert!(p
            .other
            .write_rows_in(&tx.id, "//t", WriteKind::Overwrite, false, vec![row(3, 3)])
            .await
            .is_err());
    }
}

/// The other order: a write whose slot exists before the commit seals is committed.
#[tokio::test]
async fn a_write_staged_before_the_seal_is_committed() {
    let p = pair();
    p.other
        .create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    let tx = p.other.start_transaction(60_000).await.unwrap();
    // The commit is held just before it creates its seal; a write slips in first.
    let mut held = p.gated.arm(&format!("_tx/{}/staged-", tx.id));
    let store = p.held.clone();
    let id = tx.id.clone();
    let commit = tokio::spawn(async move { store.commit_transaction(&id).await });
    held.reached().await;
    p.other
        .write_rows_in(&tx.id, "//t", WriteKind::Overwrite, false, vec![row(7, 7)])
        .await
        .unwrap();
    held.release();
    // The seal lost its slot to the write, took the next one, and committed the write.
    commit.await.unwrap().unwrap();
    let rows = p.reopened().read_rows("//t", Timestamp::MAX).await.unwrap();
    assert_eq!(rows, vec![vec![Value::Int64(7), Value::Int64(7)]]);
}

/// Issue 38, defect 1: a writer lists the empty folder (so it takes slot 1) and is held;
/// meanwhile another write takes slot 1 and the commit seals, commits and cleans up. The held
/// writer used to create slot 1 again after the cleanup: acknowledged, exit 0, never read.
/// Slot numbers are never reused now, so it collides, finds the seal and fails.
#[tokio::test]
async fn a_writer_that_listed_before_the_commit_never_reuses_a_committed_slot() {
    for _ in 0..REPEATS {
        let p = pair();
        p.other
            .create_table("//t", sorted(), TableOptions::default())
            .await
            .unwrap();
        let tx = p.other.start_transaction(60_000).await.unwrap();
        let mut held = p.gated.arm(&format!("_tx/{}/staged-", tx.id));
        let store = p.held.clone();
        let id = tx.id.clone();
        let write = tokio::spawn(async move {
            store
                .write_rows_in(&id, "//t", WriteKind::Overwrite, false, vec![row(2, 2)])
                .await
        });
        held.reached().await;
        p.other
            .write_rows_in(&tx.id, "//t", WriteKind::Overwrite, false, vec![row(1, 1)])
            .await
            .unwrap();
        p.other.commit_transaction(&tx.id).await.unwrap();
        held.release();
        let late = write.await.unwrap();
        let rows = p.reopened().read_rows("//t", Timestamp::MAX).await.unwrap();
        match late {
            Ok(()) => panic!("an acknowledged write must be committed: {rows:?}"),
            Err(e) => assert!(
                matches!(e, Error::TransactionSealed { .. }),
                "the late write must fail as sealed: {e:?}"
            ),
        }
        assert_eq!(rows, vec![vec![Value::Int64(1), Value::Int64(1)]]);
    }
}

/// Three writers and a commit, interleaved at random (bounded): every write acknowledged is
/// in the committed rows, and every committed row was acknowledged.
#[tokio::test]
async fn racing_writers_and_a_commit_lose_no_acknowledged_write() {
    for round in 0..20i64 {
        let p = pair();
        p.other
            .create_table("//t", sorted(), TableOptions::default())
            .await
            .unwrap();
        let tx = p.other.start_transaction(60_000).await.unwrap();
        let mut writers = Vec::new();
        for w in 0..3i64 {
            let store = if w % 2 == 0 {
                p.held.clone()
            } else {
                p.other.clone()
            };
            let id = tx.id.clone();
            writers.push(tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0..4i64 {
                    let k = w * 100 + i;
                    match store
                        .write_rows_in(&id, "//t", WriteKind::Overwrite, false, vec![row(k, round)])
                        .await
                    {
                        Ok(()) => acked.push(k),
                        // Refused: the commit started (sealed) or finished (gone).
                        Err(Error::TransactionSealed { .. } | Error::NoSuchTransaction { .. }) => {
                            break
                        }
                        Err(e) => panic!("writer {w}: {e}"),
                    }
                    tokio::task::yield_now().await;
                }
                acked
            }));
        }
        for _ in 0..(round % 5) {
            tokio::task::yield_now().await;
        }
        p.other.commit_transaction(&tx.id).await.unwrap();
        let mut acked = Vec::new();
        for w in writers {
            acked.extend(w.await.unwrap());
        }
        acked.sort_unstable();
        let rows = p.reopened().read_rows("//t", Timestamp::MAX).await.unwrap();
        let committed: Vec<i64> = rows
            .iter()
            .map(|r| match r[0] {
                Value::Int64(k) => k,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(committed, acked, "round {round}");
    }
}

fn no_ttl() -> TableOptions {
    TableOptions {
        retention: Retention {
            min_data_ttl: 0,
            max_data_ttl: 0,
            ..Retention::default()
        },
        ..TableOptions::default()
    }
}

/// Defect 3: with `min_data_ttl = max_data_ttl = 0`, compaction dropped the tombstone that was
/// a live transaction's only evidence of a conflict, and the deleted row came back.
#[tokio::test]
async fn compaction_keeps_the_tombstone_a_live_transaction_conflicts_with() {
    for explicit_compaction in [true, false] {
        let s = Store::open("memory://").unwrap();
        s.create_table("//t", sorted(), no_ttl()).await.unwrap();
        s.write_rows("//t", WriteKind::Overwrite, false, vec![row(1, 1)])
            .await
            .unwrap();
        let tx = s.start_transaction(60_000).await.unwrap();
        let seen = s
            .lookup_rows("//t", &[vec![Value::Int64(1)]], tx.start_timestamp)
            .await
            .unwrap();
        assert!(seen[0].is_some());
        s.write_rows(
            "//t",
            WriteKind::Delete,
            false,
            vec![vec![Some(Value::Int64(1)), None]],
        )
        .await
        .unwrap();
        if explicit_compaction {
            s.compact("//t").await.unwrap();
        } else {
            // Checkpoints compact crowded tables on their own: crowd it.
            for layer in 0..=dynql_storage::checkpoint::AUTO_COMPACTION_CHUNKS as i64 {
                s.write_rows(
                    "//t",
                    WriteKind::Overwrite,
                    false,
                    vec![row(100 + layer, 0)],
                )
                .await
                .unwrap();
                s.checkpoint().await.unwrap();
            }
        }
        s.write_rows_in(&tx.id, "//t", WriteKind::Overwrite, false, vec![row(1, 2)])
            .await
            .unwrap();
        let err = s.commit_transaction(&tx.id).await.unwrap_err();
        assert!(matches!(err, Error::Conflict { .. }), "{err}");
        let rows = s
            .lookup_rows("//t", &[vec![Value::Int64(1)]], Timestamp::MAX)
            .await
            .unwrap();
        assert!(rows[0].is_none(), "the deleted row came back");
        // With no transaction live, the same compaction does drop the tombstone.
        s.compact("//t").await.unwrap();
    }
}

/// A transaction that starts while a compaction is running is not among the live ones the
/// compaction saw: if the compaction's horizon passes its start, its commit is refused
/// rather than checked against evidence that may be gone.
#[tokio::test]
async fn a_transaction_the_compaction_could_not_see_is_refused() {
    let p = pair();
    p.other
        .create_table("//t", sorted(), no_ttl())
        .await
        .unwrap();
    p.other
        .write_rows("//t", WriteKind::Overwrite, false, vec![row(1, 1)])
        .await
        .unwrap();
    // The transaction takes its snapshot, but its metadata is held back...
    let mut held = p.gated.arm("_tx/");
    let store = p.held.clone();
    let start = tokio::spawn(async move { store.start_transaction(60_000).await });
    held.reached().await;
    // ...while a delete commits and a compaction that cannot see it runs.
    p.other
        .write_rows(
            "//t",
            WriteKind::Delete,
            false,
            vec![vec![Some(Value::Int64(1)), None]],
        )
        .await
        .unwrap();
    p.other.compact("//t").await.unwrap();
    held.release();
    let tx = start.await.unwrap().unwrap();
    p.held
        .write_rows_in(&tx.id, "//t", WriteKind::Overwrite, false, vec![row(1, 2)])
        .await
        .unwrap();
    let err = p.held.commit_transaction(&tx.id).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::CompactedSinceStart { .. } | Error::Conflict { .. }
        ),
        "{err}"
    );
    let rows = p
        .reopened()
        .lookup_rows("//t", &[vec![Value::Int64(1)]], Timestamp::MAX)
        .await
        .unwrap();
    assert!(rows[0].is_none());
}
