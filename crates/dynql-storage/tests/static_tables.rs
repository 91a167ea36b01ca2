//! Static tables (seed 004): `write-table` over and after a table's rows, inside master
//! transactions with exclusive and shared locks, branched versions merging at commit and
//! vanishing at abort; snapshot locks reading the rows they saw and keeping their chunks
//! from garbage collection; durability; and a property test of random nested writes,
//! commits and aborts against a model.

use dynql_core::{TableSchema, Value};
use dynql_storage::cypress::locks::LockMode;
use dynql_storage::static_table::TableRead;
use dynql_storage::{Error, Store, TableOptions};
use proptest::prelude::*;

fn temp_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    (dir, url)
}

async fn create(s: &Store, path: &str, sorted: bool, tx: Option<&str>) {
    let schema = match sorted {
        true => "[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]",
        false => "[{name=k;type=int64};{name=v;type=string}]",
    };
    let options = TableOptions {
        static_table: true,
        transaction: tx.map(str::to_string),
        ..TableOptions::default()
    };
    s.create_table(path, TableSchema::parse(schema).unwrap(), options)
        .await
        .unwrap();
}

fn row(k: i64) -> Vec<Value> {
    vec![Value::Int64(k), Value::string(format!("v{k}"))]
}

async fn write(
    s: &Store,
    path: &str,
    tx: Option<&str>,
    append: bool,
    keys: &[i64],
) -> Result<u64, Error> {
    let mut w = s.start_static_write(path, tx, append).await?;
    s.write_static_rows(&mut w, keys.iter().map(|&k| row(k)).collect())
        .await?;
    s.commit_static_write(w).await
}

/// The keys of the table's rows as `tx` reads them.
async fn keys(s: &Store, path: &str, tx: Option<&str>) -> Vec<i64> {
    let TableRead::Static { chunks, .. } = s.table_for_read(path, tx).await.unwrap() else {
        panic!("{path} is static")
    };
    let mut out = Vec::new();
    for c in &chunks {
        for batch in s.read_static_chunk(c).await.unwrap() {
            let types = [dynql_core::ValueType::Int64, dynql_core::ValueType::String];
            for r in dynql_core::arrow_convert::batch_to_rows(&batch, &types) {
                match r[0] {
                    Value::Int64(k) => out.push(k),
                    ref other => panic!("{other:?}"),
                }
            }
        }
    }
    out
}

async fn start(s: &Store, parent: Option<&str>) -> String {
    s.start_master_transaction(parent, 600_000, None)
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn writes_replace_or_append_and_sorted_tables_keep_their_key_order() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//s", true, None).await;
    assert_eq!(write(&s, "//s", None, false, &[1, 2, 3]).await.unwrap(), 3);
    write(&s, "//s", None, true, &[5, 8]).await.unwrap();
    assert_eq!(keys(&s, "//s", None).await, [1, 2, 3, 5, 8]);
    // Out of order within a write, or before the last row when appending: refused, and
    // nothing changes.
    let e = write(&s, "//s", None, false, &[2, 1]).await.unwrap_err();
    assert!(e.to_string().contains("Sort order violation"), "{e}");
    let e = write(&s, "//s", None, true, &[8]).await.unwrap_err();
    assert!(e.to_string().contains("Duplicate key"), "{e}");
    assert_eq!(keys(&s, "//s", None).await, [1, 2, 3, 5, 8]);
    write(&s, "//s", None, false, &[0]).await.unwrap();
    assert_eq!(keys(&s, "//s", None).await, [0]);
    // An unsorted table takes rows in any order.
    create(&s, "//u", false, None).await;
    write(&s, "//u", None, false, &[3, 1]).await.unwrap();
    write(&s, "//u", None, true, &[2]).await.unwrap();
    assert_eq!(keys(&s, "//u", None).await, [3, 1, 2]);
    // An empty overwrite empties the table.
    write(&s, "//u", None, false, &[]).await.unwrap();
    assert_eq!(keys(&s, "//u", None).await, Vec::<i64>::new());
}

#[tokio::test]
async fn many_rows_span_chunks_in_row_order() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//s", true, None).await;
    let n = dynql_storage::static_table::CHUNK_ROWS as i64 + 10;
    let all: Vec<i64> = (0..n).collect();
    write(&s, "//s", None, false, &all).await.unwrap();
    let TableRead::Static { chunks, .. } = s.table_for_read("//s", None).await.unwrap() else {
        panic!("static")
    };
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[1].first_key, vec![Value::Int64(n - 10)]);
    assert_eq!(keys(&s, "//s", None).await, all);
}

#[tokio::test]
async fn a_transactions_writes_show_in_it_and_reach_others_at_commit() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//s", true, None).await;
    write(&s, "//s", None, false, &[1]).await.unwrap();
    let t = start(&s, None).await;
    write(&s, "//s", Some(&t), true, &[2]).await.unwrap();
    assert_eq!(keys(&s, "//s", Some(&t)).await, [1, 2]);
    assert_eq!(keys(&s, "//s", None).await, [1]);
    s.commit_master_transaction(&t).await.unwrap();
    assert_eq!(keys(&s, "//s", None).await, [1, 2]);
    // Abort: the staged rows vanish.
    let t = start(&s, None).await;
    write(&s, "//s", Some(&t), false, &[7]).await.unwrap();
    assert_eq!(keys(&s, "//s", Some(&t)).await, [7]);
    s.abort_master_transaction(&t).await.unwrap();
    assert_eq!(keys(&s, "//s", None).await, [1, 2]);
    // A table created in a transaction is written there and appears at commit.
    let t = start(&s, None).await;
    create(&s, "//new", false, Some(&t)).await;
    write(&s, "//new", Some(&t), false, &[4]).await.unwrap();
    write(&s, "//new", Some(&t), true, &[5]).await.unwrap();
    assert!(s.table_for_read("//new", None).await.is_err());
    s.commit_master_transaction(&t).await.unwrap();
    assert_eq!(keys(&s, "//new", None).await, [4, 5]);
}

#[tokio::test]
async fn appends_share_the_table_and_overwrites_hold_it_alone() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//u", false, None).await;
    let (a, b) = (start(&s, None).await, start(&s, None).await);
    write(&s, "//u", Some(&a), true, &[1]).await.unwrap();
    write(&s, "//u", Some(&b), true, &[2]).await.unwrap();
    // Appending outside transactions goes along with the shared locks; overwriting does not.
    write(&s, "//u", None, true, &[0]).await.unwrap();
    let e = write(&s, "//u", None, false, &[9]).await.unwrap_err();
    assert!(matches!(e, Error::LockConflict(_)), "{e}");
    let c = start(&s, None).await;
    let e = write(&s, "//u", Some(&c), false, &[9]).await.unwrap_err();
    assert!(matches!(e, Error::LockConflict(_)), "{e}");
    // Both appends land, in commit order.
    s.commit_master_transaction(&b).await.unwrap();
    s.commit_master_transaction(&a).await.unwrap();
    assert_eq!(keys(&s, "//u", None).await, [0, 2, 1]);
    // An exclusive writer keeps appenders out.
    write(&s, "//u", Some(&c), false, &[9]).await.unwrap();
    let d = start(&s, None).await;
    let e = write(&s, "//u", Some(&d), true, &[3]).await.unwrap_err();
    assert!(matches!(e, Error::LockConflict(_)), "{e}");
    s.commit_master_transaction(&c).await.unwrap();
    assert_eq!(keys(&s, "//u", None).await, [9]);
}

#[tokio::test]
async fn appends_to_a_sorted_table_that_no_longer_follow_are_refused_at_commit() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//s", true, None).await;
    let (a, b) = (start(&s, None).await, start(&s, None).await);
    write(&s, "//s", Some(&a), true, &[1]).await.unwrap();
    write(&s, "//s", Some(&b), true, &[5]).await.unwrap();
    s.commit_master_transaction(&b).await.unwrap();
    let e = s.commit_master_transaction(&a).await.unwrap_err();
    assert!(e.to_string().contains("Sort order violation"), "{e}");
    // Refused, not logged: the transaction is still there to abort.
    s.abort_master_transaction(&a).await.unwrap();
    assert_eq!(keys(&s, "//s", None).await, [5]);
}

#[tokio::test]
async fn nested_writes_merge_into_the_parent_and_a_nested_abort_drops_only_its_own() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//u", false, None).await;
    write(&s, "//u", None, false, &[1]).await.unwrap();
    let p = start(&s, None).await;
    write(&s, "//u", Some(&p), true, &[2]).await.unwrap();
    let c = start(&s, Some(&p)).await;
    write(&s, "//u", Some(&c), true, &[3]).await.unwrap();
    assert_eq!(keys(&s, "//u", Some(&c)).await, [1, 2, 3]);
    assert_eq!(keys(&s, "//u", Some(&p)).await, [1, 2]);
    s.commit_master_transaction(&c).await.unwrap();
    assert_eq!(keys(&s, "//u", Some(&p)).await, [1, 2, 3]);
    let c = start(&s, Some(&p)).await;
    write(&s, "//u", Some(&c), false, &[8]).await.unwrap();
    s.abort_master_transaction(&c).await.unwrap();
    // Meanwhile others appended (shared locks): the commit puts the appends after them.
    write(&s, "//u", None, true, &[0]).await.unwrap();
    s.commit_master_transaction(&p).await.unwrap();
    assert_eq!(keys(&s, "//u", None).await, [1, 0, 2, 3]);
}

#[tokio::test]
async fn a_snapshot_lock_reads_what_it_saw_and_keeps_its_chunks_from_collection() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap().with_gc_grace_ms(0);
    create(&s, "//s", true, None).await;
    write(&s, "//s", None, false, &[1, 2]).await.unwrap();
    let id = s.table("//s").await.unwrap().id;
    let t = start(&s, None).await;
    s.lock_node("//s", &t, LockMode::Snapshot, Default::default())
        .await
        .unwrap();
    write(&s, "//s", None, false, &[7]).await.unwrap();
    create(&s, "//other", false, None).await;
    // Collection keeps what the two newest checkpoints name: three more, each after a
    // change, leave only the lock to name the first rows.
    let collect = || async {
        for k in 0..3 {
            write(&s, "//other", None, true, &[k]).await.unwrap();
            s.checkpoint().await.unwrap();
        }
    };
    collect().await;
    assert_eq!(keys(&s, "//s", None).await, [7]);
    assert_eq!(keys(&s, "//s", Some(&t)).await, [1, 2]);
    s.remove_table("//s").await.unwrap();
    collect().await;
    let again = Store::open(&url).unwrap();
    assert_eq!(keys(&again, &format!("#{id}"), Some(&t)).await, [1, 2]);
    // Once the lock ends, nothing names the chunks: they go.
    s.abort_master_transaction(&t).await.unwrap();
    collect().await;
    let left: Vec<_> = std::fs::read_dir(_dir.path().join("tables").join(&id))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert_eq!(left, Vec::<std::ffi::OsString>::new());
}

#[tokio::test]
async fn static_rows_and_staged_ones_survive_reopening() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    create(&s, "//s", true, None).await;
    write(&s, "//s", None, false, &[1]).await.unwrap();
    let t = start(&s, None).await;
    write(&s, "//s", Some(&t), true, &[2]).await.unwrap();
    s.checkpoint().await.unwrap();
    write(&s, "//s", Some(&t), true, &[3]).await.unwrap();
    let again = Store::open(&url).unwrap();
    assert_eq!(keys(&again, "//s", Some(&t)).await, [1, 2, 3]);
    again.commit_master_transaction(&t).await.unwrap();
    assert_eq!(keys(&s, "//s", None).await, [1, 2, 3]);
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Step {
    /// Write in the transaction at this depth (0: outside), appending or not.
    Write {
        depth: usize,
        append: bool,
        rows: Vec<i64>,
    },
    Start,
    Commit,
    Abort,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..4, any::<bool>(), proptest::collection::vec(0i64..100, 0..4))
            .prop_map(|(depth, append, rows)| Step::Write { depth, append, rows }),
        2 => Just(Step::Start),
        2 => Just(Step::Commit),
        1 => Just(Step::Abort),
    ]
}

/// The model's version of the table at one level of the chain of transactions.
#[derive(Debug, Clone)]
enum Delta {
    Unbranched,
    Overwritten(Vec<i64>),
    Appended(Vec<i64>),
}

/// The model: the committed rows, and per transaction of the chain (outermost first) its
/// delta and the lock it holds (`Some(true)`: exclusive, `Some(false)`: shared).
#[derive(Debug, Default)]
struct Model {
    committed: Vec<i64>,
    levels: Vec<(Delta, Option<bool>)>,
}

impl Model {
    /// The rows level `d` reads (0: outside transactions).
    fn view(&self, d: usize) -> Vec<i64> {
        if d == 0 {
            return self.committed.clone();
        }
        match &self.levels[d - 1].0 {
            Delta::Unbranched => self.view(d - 1),
            Delta::Overwritten(rows) => rows.clone(),
            Delta::Appended(rows) => [self.view(d - 1), rows.clone()].concat(),
        }
    }

    /// Applies a write (or a merged delta) at level `d`.
    fn apply(&mut self, d: usize, delta: Delta) {
        if d == 0 {
            match delta {
                Delta::Unbranched => {}
                Delta::Overwritten(rows) => self.committed = rows,
                Delta::Appended(rows) => self.committed.extend(rows),
            }
            return;
        }
        let own = &mut self.levels[d - 1].0;
        *own = match (std::mem::replace(own, Delta::Unbranched), delta) {
            (before, Delta::Unbranched) => before,
            (_, Delta::Overwritten(rows)) => Delta::Overwritten(rows),
            (Delta::Unbranched, Delta::Appended(rows)) => Delta::Appended(rows),
            (Delta::Appended(a), Delta::Appended(b)) => Delta::Appended([a, b].concat()),
            (Delta::Overwritten(a), Delta::Appended(b)) => Delta::Overwritten([a, b].concat()),
        };
    }

    /// Takes (or strengthens) level `d`'s lock.
    fn lock(&mut self, d: usize, exclusive: Option<bool>) {
        if d > 0 {
            let held = &mut self.levels[d - 1].1;
            *held = match (*held, exclusive) {
                (h, None) => h,
                (None, e) => e,
                (Some(a), Some(b)) => Some(a || b),
            };
        }
    }

    /// Whether a write at level `d` is kept out: the transactions nested deeper are not its
    /// ancestors, so their locks count (an append shares with shared locks).
    fn refuses(&self, d: usize, append: bool) -> bool {
        self.levels[d..].iter().any(|(_, lock)| match lock {
            Some(exclusive) => *exclusive || !append,
            None => false,
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A chain of nested transactions writing one unsorted table, against [`Model`]: every
    /// level reads what the model says after every step, and a write is refused exactly when
    /// a lock of a transaction that is not its own or an ancestor keeps it out.
    #[test]
    fn nested_static_writes_match_a_model(steps in proptest::collection::vec(step(), 1..16)) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let s = Store::open("memory://").unwrap();
            create(&s, "//u", false, None).await;
            let mut chain: Vec<String> = Vec::new();
            let mut model = Model::default();
            for step in steps {
                match step {
                    Step::Start => {
                        chain.push(start(&s, chain.last().map(String::as_str)).await);
                        model.levels.push((Delta::Unbranched, None));
                    }
                    Step::Write { depth, append, rows } => {
                        let d = depth.min(chain.len());
                        let tx = d.checked_sub(1).map(|i| chain[i].clone());
                        let refused = model.refuses(d, append);
                        let result = write(&s, "//u", tx.as_deref(), append, &rows).await;
                        prop_assert_eq!(result.is_err(), refused, "{:?}", result);
                        if !refused {
                            model.lock(d, Some(!append));
                            let delta = match append {
                                true => Delta::Appended(rows),
                                false => Delta::Overwritten(rows),
                            };
                            model.apply(d, delta);
                        }
                    }
                    Step::Commit | Step::Abort if chain.is_empty() => {}
                    Step::Commit => {
                        s.commit_master_transaction(&chain.pop().unwrap()).await.unwrap();
                        let (delta, lock) = model.levels.pop().unwrap();
                        model.lock(chain.len(), lock);
                        model.apply(chain.len(), delta);
                    }
                    Step::Abort => {
                        s.abort_master_transaction(&chain.pop().unwrap()).await.unwrap();
                        model.levels.pop();
                    }
                }
                for d in 0..=chain.len() {
                    let tx = d.checked_sub(1).map(|i| chain[i].clone());
                    prop_assert_eq!(keys(&s, "//u", tx.as_deref()).await, model.view(d), "level {}", d);
                }
            }
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn copies_and_moves_of_static_tables_are_staged_and_dynamic_ones_refused() {
    let s = Store::open("memory://").unwrap();
    create(&s, "//s", true, None).await;
    write(&s, "//s", None, false, &[1, 2]).await.unwrap();
    let t = start(&s, None).await;
    s.copy_node("//s", "//c", true, false, false, Some(&t))
        .await
        .unwrap();
    write(&s, "//c", Some(&t), true, &[3]).await.unwrap();
    assert_eq!(keys(&s, "//c", Some(&t)).await, [1, 2, 3]);
    assert!(s.table_for_read("//c", None).await.is_err());
    s.commit_master_transaction(&t).await.unwrap();
    assert_eq!(keys(&s, "//c", None).await, [1, 2, 3]);
    assert_eq!(keys(&s, "//s", None).await, [1, 2]);
    let t = start(&s, None).await;
    s.copy_node("//s", "//m", false, false, false, Some(&t))
        .await
        .unwrap();
    s.commit_master_transaction(&t).await.unwrap();
    assert_eq!(keys(&s, "//m", None).await, [1, 2]);
    assert!(s.table_for_read("//s", None).await.is_err());
    let schema = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
    s.create_table("//d", schema, TableOptions::default())
        .await
        .unwrap();
    let t = start(&s, None).await;
    let e = s
        .copy_node("//d", "//d2", true, false, false, Some(&t))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("dynamic table"), "{e}");
}

/// Issue 38: `check` read only dynamic chunks, so a deleted static chunk made reads fail
/// while `check` said "no damage found".
#[tokio::test]
async fn check_reads_the_chunks_of_static_tables() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    create(&s, "//home/s", true, None).await;
    write(&s, "//home/s", None, false, &[1, 2, 3])
        .await
        .unwrap();
    s.copy_node("//home/s", "//home/c", true, false, false, None)
        .await
        .unwrap();
    let report = s.check().await.unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.chunks, 1, "a shared chunk is read once");
    let TableRead::Static { chunks, .. } = s.table_for_read("//home/s", None).await.unwrap() else {
        panic!("static")
    };
    std::fs::remove_file(dir.path().join(&chunks[0].path)).unwrap();
    let report = s.check().await.unwrap();
    assert_eq!(report.damage.len(), 1, "{report:?}");
    let d = &report.damage[0];
    assert_eq!(d.file, chunks[0].path);
    assert!(d.problem.contains("missing"), "{d:?}");
    assert_eq!(
        d.tables,
        vec!["//home/c".to_string(), "//home/s".to_string()]
    );
}

/// Issue 38: rows only a master transaction or a snapshot lock holds are checked too: a
/// commit of the transaction, or a read under the lock, needs them.
#[tokio::test]
async fn check_reads_the_chunks_transactions_and_snapshot_locks_hold() {
    let (dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    create(&s, "//home/s", false, None).await;
    write(&s, "//home/s", None, false, &[1]).await.unwrap();
    let reader = start(&s, None).await;
    s.lock_node("//home/s", &reader, LockMode::Snapshot, Default::default())
        .await
        .unwrap();
    let TableRead::Static { chunks: locked, .. } =
        s.table_for_read("//home/s", None).await.unwrap()
    else {
        panic!("static")
    };
    // Others write over the table: the old chunk is held by the snapshot lock alone.
    write(&s, "//home/s", None, false, &[2]).await.unwrap();
    let writer = start(&s, None).await;
    write(&s, "//home/s", Some(&writer), true, &[3])
        .await
        .unwrap();
    let report = s.check().await.unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.chunks, 3, "{report:?}");
    let TableRead::Static { chunks: staged, .. } =
        s.table_for_read("//home/s", Some(&writer)).await.unwrap()
    else {
        panic!("static")
    };
    let appended = staged.last().unwrap();
    for gone in [&locked[0], appended] {
        std::fs::remove_file(dir.path().join(&gone.path)).unwrap();
    }
    let report = s.check().await.unwrap();
    assert_eq!(report.damage.len(), 2, "{report:?}");
    for d in &report.damage {
        assert!(d.problem.contains("missing"), "{d:?}");
        let holder = &d.tables[0];
        match d.file == appended.path {
            true => assert_eq!(*holder, format!("//home/s in transaction {writer}")),
            false => assert!(holder.starts_with("//home/s under snapshot lock"), "{d:?}"),
        }
    }
}

/// Issue 39: YT's bulk-load path. A sorted static table written with write-table, then made
/// dynamic, keeps every row, readable (and writable) as a dynamic table; an unsorted one is
/// refused with the reason.
#[tokio::test]
async fn a_sorted_static_table_with_rows_becomes_dynamic() {
    let (_dir, url) = temp_store();
    let s = Store::open(&url).unwrap();
    create(&s, "//home/s", true, None).await;
    let keys: Vec<i64> = (0..25_000).map(|k| k * 2).collect();
    write(&s, "//home/s", None, false, &keys[..12_000])
        .await
        .unwrap();
    write(&s, "//home/s", None, true, &keys[12_000..])
        .await
        .unwrap();
    s.alter_table("//home/s", None, Some(true)).await.unwrap();
    s.set_tablet_state("//home/s", dynql_storage::TabletCommand::Mount)
        .await
        .unwrap();
    for fresh in [s.clone(), Store::open(&url).unwrap()] {
        let rows = fresh
            .read_rows("//home/s", dynql_storage::Timestamp::MAX)
            .await
            .unwrap();
        assert_eq!(rows.len(), keys.len());
        assert_eq!(rows[100], row(200));
        let found = fresh
            .lookup_rows(
                "//home/s",
                &[vec![Value::Int64(48_000)], vec![Value::Int64(3)]],
                dynql_storage::Timestamp::MAX,
            )
            .await
            .unwrap();
        assert_eq!(found, vec![Some(row(48_000)), None]);
    }
    // A dynamic table now: rows are written by key.
    s.write_rows(
        "//home/s",
        dynql_storage::WriteKind::Overwrite,
        false,
        vec![vec![Some(Value::Int64(3)), Some(Value::string("v3"))]],
    )
    .await
    .unwrap();
    assert_eq!(
        s.read_rows("//home/s", dynql_storage::Timestamp::MAX)
            .await
            .unwrap()
            .len(),
        keys.len() + 1
    );
    assert!(s.check().await.unwrap().is_ok());

    create(&s, "//home/u", false, None).await;
    write(&s, "//home/u", None, false, &[3, 1, 2])
        .await
        .unwrap();
    let err = s
        .alter_table("//home/u", None, Some(true))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not sorted"), "{err}");
    assert_eq!(keys_of_static(&s, "//home/u").await, [3, 1, 2]);
}

async fn keys_of_static(s: &Store, path: &str) -> Vec<i64> {
    keys(s, path, None).await
}
