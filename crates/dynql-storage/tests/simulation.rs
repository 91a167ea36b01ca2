//! A seeded simulation of several processes sharing one store (issue 42, step 5; design
//! note 0011). Every choice comes from the seed: which of three store handles acts, what it
//! does (writes, deletes, flushes, compactions, tablet transactions, two writers at once,
//! two transactions racing for the same keys, checkpoints, reads), which of its object
//! store calls fail (before taking effect, or after: a lost acknowledgement), and how far
//! the shared manual clock moves. The handles run on one thread, on a manual clock and
//! seeded ids, so a run is a function of its seed: it is run twice and must leave the same
//! trace and the same objects.
//!
//! Checked against a model (a `BTreeMap` of the acknowledged rows): a read by any handle
//! gives exactly the model; a call that failed may or may not have taken effect (its
//! acknowledgement may be what was lost), and a read right after it decides which, but
//! nothing else is allowed; two transactions that write a common key never both commit; a reopened store
//! (a new process) reads the same rows.
//!
//! CI runs seeds `0..24`; a longer run: `DYNQL_SIMULATION_SEEDS=0..2000 cargo test -p
//! dynql-storage --test simulation --release`. A failing seed is printed with its trace;
//! `DYNQL_SIMULATION_TRACE=1` prints every seed's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use dynql_core::Value;
use dynql_storage::{Error, ManualClock, SeededIds, Store, TableOptions, Timestamp, WriteKind};
use futures::TryStreamExt;
use object_store::memory::InMemory;

/// splitmix64: small, seedable, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

mod support;
use support::faulty_store::{Fault, FaultPlan, FaultyStore};
use support::{key, row, schema};

/// Faults at seeded random while `armed`: about one mutating call in `1000 / per_mille`,
/// half of them failing before taking effect and half after.
struct Seeded {
    faults: Mutex<Rng>,
    per_mille: u64,
    armed: AtomicBool,
    injected: AtomicU64,
}

impl FaultPlan for Seeded {
    fn next_fault(&self) -> Option<Fault> {
        if !self.armed.load(Ordering::SeqCst) {
            return None;
        }
        let mut rng = self.faults.lock().unwrap();
        if !rng.chance(self.per_mille) {
            return None;
        }
        self.injected.fetch_add(1, Ordering::SeqCst);
        Some(if rng.chance(500) {
            Fault::Fail
        } else {
            Fault::CutOff
        })
    }
}

const TABLE: &str = "//t";
const KEYS: u64 = 40;
const PROCESSES: usize = 3;
/// 2031-01-01T00:00:00Z.
const START_NANOS: u64 = 1_924_992_000_000_000_000;

/// Rows as the model holds them: key -> value.
type Rows = BTreeMap<i64, i64>;

/// A change to the rows: `Some(v)` writes, `None` deletes.
type Change = Vec<(i64, Option<i64>)>;

fn applied(rows: &Rows, change: &Change) -> Rows {
    let mut next = rows.clone();
    for (k, v) in change {
        match v {
            Some(v) => next.insert(*k, *v),
            None => next.remove(k),
        };
    }
    next
}

async fn read(store: &Store) -> Rows {
    store
        .read_rows(TABLE, Timestamp::SYNC_LAST_COMMITTED)
        .await
        .expect("reads do not fail")
        .into_iter()
        .map(|r| match (&r[0], &r[1]) {
            (Value::Int64(k), Value::Int64(v)) => (*k, *v),
            other => panic!("a row of two int64s: {other:?}"),
        })
        .collect()
}

/// The rows of a snapshot (see [`dynql_storage::Store::snapshot_at`]).
async fn read_snapshot(snapshot: &dynql_storage::Snapshot) -> Rows {
    let scan = snapshot
        .plan_table_scan(TABLE, None, Timestamp::SYNC_LAST_COMMITTED)
        .unwrap();
    let tablets = scan.tablets().to_vec();
    let batches: Vec<arrow::record_batch::RecordBatch> = scan
        .stream(tablets, None, false, 1024, dynql_storage::Prefetch::Inline)
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut rows = Rows::new();
    for b in &batches {
        let k = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            rows.insert(k.value(i), v.value(i));
        }
    }
    rows
}

/// A run's record: what happened at each step, and the objects left.
#[derive(Debug, PartialEq)]
struct Outcome {
    trace: Vec<String>,
    objects: Vec<(String, usize)>,
}

/// Where a simulated process stands with the model: the acknowledged rows, and the changes
/// whose calls failed (any of which may have taken effect; the next read decides).
struct Model {
    rows: Rows,
    pending: Vec<Change>,
}

impl Model {
    /// Takes `seen` (a read) as the truth if it is the rows with some of the pending
    /// changes applied, in order; fails otherwise.
    fn settle(&mut self, seen: Rows, seed: u64, trace: &[String]) {
        let n = self.pending.len();
        for mask in 0..(1u32 << n) {
            let mut rows = self.rows.clone();
            for (i, change) in self.pending.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    rows = applied(&rows, change);
                }
            }
            if rows == seen {
                self.rows = rows;
                self.pending.clear();
                return;
            }
        }
        panic!(
            "seed {seed}: a read gave rows no history allows\nread:  {seen:?}\nmodel: {:?}\npending: {:?}\ntrace:\n{}",
            self.rows,
            self.pending,
            trace.join("\n")
        );
    }
}

async fn simulate(seed: u64, steps: usize) -> Outcome {
    let mut rng = Rng(seed);
    let memory = Arc::new(InMemory::new());
    let faulty = Arc::new(FaultyStore {
        inner: memory.clone(),
        plan: Seeded {
            faults: Mutex::new(Rng(seed ^ 0xFA17)),
            per_mille: 60,
            armed: AtomicBool::new(false),
            injected: AtomicU64::new(0),
        },
    });
    let clock = Arc::new(ManualClock::new(START_NANOS));
    let open = |process: u64| {
        Store::from_object_store(faulty.clone(), "memory://")
            .with_clock(clock.clone())
            .with_ids(Arc::new(SeededIds::new(seed * 16 + process)))
            .with_gc_grace_ms(0)
    };
    let stores: Vec<Store> = (0..PROCESSES as u64).map(open).collect();
    stores[0]
        .create_table(TABLE, schema(), TableOptions::default())
        .await
        .unwrap();
    faulty.plan.armed.store(true, Ordering::SeqCst);
    let mut model = Model {
        rows: Rows::new(),
        pending: vec![],
    };
    let mut trace = Vec::new();
    let mut next_value = 0i64;
    // Log positions read, with the rows there.
    let mut positions: Vec<(u64, Rows)> = Vec::new();
    for step in 0..steps {
        clock.advance(Duration::from_micros(rng.below(5_000)));
        let p = rng.below(PROCESSES as u64) as usize;
        let store = &stores[p];
        let mut change = |rng: &mut Rng, n: u64| -> Change {
            (0..1 + rng.below(n))
                .map(|_| {
                    let k = rng.below(KEYS) as i64;
                    next_value += 1;
                    (k, (!rng.chance(250)).then_some(next_value))
                })
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect()
        };
        let action = rng.below(100);
        let what = match action {
            // Writes and deletes, one commit each.
            0..=39 => {
                let change = change(&mut rng, 6);
                let (writes, deletes): (Vec<_>, Vec<_>) =
                    change.iter().partition(|(_, v)| v.is_some());
                let mut failed = false;
                if !writes.is_empty() {
                    let rows = writes.iter().map(|(k, v)| row(*k, v.unwrap())).collect();
                    failed |= store
                        .write_rows(TABLE, WriteKind::Overwrite, false, rows)
                        .await
                        .is_err();
                }
                if !deletes.is_empty() {
                    let keys = deletes.iter().map(|(k, _)| key(*k)).collect();
                    failed |= store
                        .write_rows(TABLE, WriteKind::Delete, false, keys)
                        .await
                        .is_err();
                }
                // The two commits are two changes: either may be the one lost.
                let (writes, deletes): (Change, Change) = (writes, deletes);
                if failed {
                    model.pending.push(writes);
                    model.pending.push(deletes);
                } else {
                    model.rows = applied(&applied(&model.rows, &writes), &deletes);
                }
                format!("{step}: p{p} write {change:?} failed={failed}")
            }
            // A tablet transaction over a few keys.
            40..=54 => {
                let change = change(&mut rng, 4);
                let result = async {
                    let tx = store.start_transaction(60_000).await?;
                    for (k, v) in &change {
                        let (kind, r) = match v {
                            Some(v) => (WriteKind::Overwrite, row(*k, *v)),
                            None => (WriteKind::Delete, key(*k)),
                        };
                        store
                            .write_rows_in(&tx.id, TABLE, kind, false, vec![r])
                            .await?;
                    }
                    store.commit_transaction(&tx.id).await
                }
                .await;
                match result {
                    Ok(_) => model.rows = applied(&model.rows, &change),
                    Err(_) => model.pending.push(change.clone()),
                }
                format!("{step}: p{p} transaction {change:?} ok={}", result.is_ok())
            }
            // Two processes write at once (faults off: each must commit, in some order).
            55..=64 => {
                let q = (p + 1 + rng.below(PROCESSES as u64 - 1) as usize) % PROCESSES;
                let a = change(&mut rng, 4);
                let b = change(&mut rng, 4);
                let writes = |c: &Change| -> Vec<_> {
                    c.iter().map(|(k, v)| row(*k, v.unwrap_or(-1))).collect()
                };
                let as_written = |c: &Change| -> Change {
                    c.iter().map(|(k, v)| (*k, Some(v.unwrap_or(-1)))).collect()
                };
                faulty.plan.armed.store(false, Ordering::SeqCst);
                let (ra, rb) = futures::join!(
                    store.write_rows(TABLE, WriteKind::Overwrite, false, writes(&a)),
                    stores[q].write_rows(TABLE, WriteKind::Overwrite, false, writes(&b)),
                );
                faulty.plan.armed.store(true, Ordering::SeqCst);
                let (ta, tb) = (
                    ra.expect("a write without faults commits"),
                    rb.expect("a write without faults commits"),
                );
                assert_ne!(ta, tb, "seed {seed}: two commits at one timestamp");
                let (first, second) = if ta < tb { (&a, &b) } else { (&b, &a) };
                model.rows = applied(
                    &applied(&model.rows, &as_written(first)),
                    &as_written(second),
                );
                format!("{step}: p{p}+p{q} concurrent writes, a first={}", ta < tb)
            }
            // Two transactions of two processes, started together, over a common key.
            65..=72 => {
                let q = (p + 1 + rng.below(PROCESSES as u64 - 1) as usize) % PROCESSES;
                let common = rng.below(KEYS) as i64;
                next_value += 2;
                let (va, vb) = (next_value - 1, next_value);
                faulty.plan.armed.store(false, Ordering::SeqCst);
                let ta = store.start_transaction(60_000).await.unwrap();
                let tb = stores[q].start_transaction(60_000).await.unwrap();
                store
                    .write_rows_in(
                        &ta.id,
                        TABLE,
                        WriteKind::Overwrite,
                        false,
                        vec![row(common, va)],
                    )
                    .await
                    .unwrap();
                stores[q]
                    .write_rows_in(
                        &tb.id,
                        TABLE,
                        WriteKind::Overwrite,
                        false,
                        vec![row(common, vb)],
                    )
                    .await
                    .unwrap();
                let (ca, cb) = futures::join!(
                    store.commit_transaction(&ta.id),
                    stores[q].commit_transaction(&tb.id)
                );
                faulty.plan.armed.store(true, Ordering::SeqCst);
                assert!(
                    !(ca.is_ok() && cb.is_ok()),
                    "seed {seed}: two transactions wrote key {common} and both committed"
                );
                if ca.is_ok() {
                    model.rows.insert(common, va);
                } else if cb.is_ok() {
                    model.rows.insert(common, vb);
                }
                format!(
                    "{step}: p{p}/p{q} racing transactions on {common}: {} {}",
                    ca.is_ok(),
                    cb.is_ok()
                )
            }
            73..=80 => {
                let ok = store.flush_table(TABLE).await.is_ok();
                format!("{step}: p{p} flush ok={ok}")
            }
            81..=86 => {
                let ok = store.compact(TABLE).await.is_ok();
                format!("{step}: p{p} compact ok={ok}")
            }
            87..=89 => {
                let ok = store.checkpoint().await.is_ok();
                format!("{step}: p{p} checkpoint ok={ok}")
            }
            _ => {
                let seen = read(store).await;
                model.settle(seen, seed, &trace);
                // The position just read, and a past one read again at its position.
                let seq = store.snapshot().await.unwrap().seq();
                positions.push((seq, model.rows.clone()));
                let (at, rows) = positions[rng.below(positions.len() as u64) as usize].clone();
                let past = match store.snapshot_at(at).await {
                    Ok(snapshot) => {
                        assert_eq!(
                            read_snapshot(&snapshot).await,
                            rows,
                            "seed {seed}: the store at position {at}\n{}",
                            trace.join("\n")
                        );
                        "read again"
                    }
                    Err(Error::SnapshotTooOld { .. }) => "too old",
                    Err(e) => panic!("seed {seed}: at position {at}: {e}"),
                };
                format!(
                    "{step}: p{p} read {} rows at {seq}; position {at} {past}",
                    model.rows.len()
                )
            }
        };
        trace.push(what);
        // A failed call is settled before anything else changes the rows, so that the
        // model knows the order of every change that took effect.
        if !model.pending.is_empty() {
            let seen = read(&stores[rng.below(PROCESSES as u64) as usize]).await;
            model.settle(seen, seed, &trace);
            trace.push(format!("{step}: settled, {} rows", model.rows.len()));
        }
    }
    faulty.plan.armed.store(false, Ordering::SeqCst);
    // Every process, and a new one opened on what is left, reads the model.
    let seen = read(&stores[0]).await;
    model.settle(seen, seed, &trace);
    for store in stores.iter().chain([&open(PROCESSES as u64)]) {
        assert_eq!(
            read(store).await,
            model.rows,
            "seed {seed}\n{}",
            trace.join("\n")
        );
    }
    trace.push(format!(
        "end: {} rows, {} faults injected",
        model.rows.len(),
        faulty.plan.injected.load(Ordering::SeqCst)
    ));
    let objects = support::stored_objects(memory.as_ref())
        .await
        .into_iter()
        .map(|(path, bytes)| (path, bytes.len()))
        .collect();
    Outcome { trace, objects }
}

/// The seeds to run: `DYNQL_SIMULATION_SEEDS` (`A..B`), else `0..24`.
fn seeds() -> std::ops::Range<u64> {
    let Ok(range) = std::env::var("DYNQL_SIMULATION_SEEDS") else {
        return 0..24;
    };
    let (a, b) = range
        .split_once("..")
        .expect("DYNQL_SIMULATION_SEEDS is a range A..B");
    a.parse().expect("a seed")..b.parse().expect("a seed")
}

fn run(seed: u64, steps: usize) -> Outcome {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(simulate(seed, steps))
}

#[test]
fn seeded_processes_sharing_a_store_agree_with_the_model_and_replay_exactly() {
    let mut faults = 0;
    for seed in seeds() {
        let first = run(seed, 60);
        if std::env::var_os("DYNQL_SIMULATION_TRACE").is_some() {
            eprintln!("seed {seed}:\n{}", first.trace.join("\n"));
        }
        let again = run(seed, 60);
        assert_eq!(first, again, "seed {seed} did not replay exactly");
        faults += first
            .trace
            .last()
            .and_then(|t| t.split(", ").nth(1))
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    assert!(faults > 0, "the seeds injected faults");
}
