//! Master transactions and node locks (seed 004): the lock compatibility table as a
//! table-driven test, branched versions merging at commit and vanishing at abort, nested
//! commits and aborts, snapshot locks, waitable locks in queue order, expiry, durability;
//! and a property test of random nested sequences against a model of versioned nodes.
//! Concurrent transactions changing different keys of one node: [`merging`] (deterministic
//! cases) and [`merge_model`] (a property test against a model of per-key changes). Snapshot
//! locks read by path, read snapshots of static tables, unlock rules: [`snapshots`].

use std::collections::{BTreeMap, BTreeSet};

use dynql_core::Yson;
use dynql_storage::cypress::locks::{LockMode, LockState};
use dynql_storage::cypress::{LockOptions, NodeKind, Object};
use dynql_storage::{Error, Store};
use proptest::prelude::*;

#[path = "master_transactions/merge_model.rs"]
mod merge_model;
#[path = "master_transactions/merging.rs"]
mod merging;
#[path = "master_transactions/snapshots.rs"]
mod snapshots;

fn yson(text: &str) -> Yson {
    dynql_core::yson::parse(text.as_bytes()).unwrap()
}

async fn start(s: &Store, parent: Option<&str>) -> String {
    s.start_master_transaction(parent, 600_000, None)
        .await
        .unwrap()
        .id
}

async fn map_node(s: &Store, path: &str) {
    s.create_node(path, NodeKind::MapNode, BTreeMap::new(), false, false, None)
        .await
        .unwrap();
}

fn options(child_key: Option<&str>, attribute_key: Option<&str>) -> LockOptions {
    LockOptions {
        child_key: child_key.map(str::to_string),
        attribute_key: attribute_key.map(str::to_string),
        waitable: false,
    }
}

/// A lock as the table names it: mode and keys.
#[derive(Clone, Copy, Debug)]
struct Kind(LockMode, Option<&'static str>, Option<&'static str>);

const SNAPSHOT: Kind = Kind(LockMode::Snapshot, None, None);
const EXCLUSIVE: Kind = Kind(LockMode::Exclusive, None, None);
const SHARED: Kind = Kind(LockMode::Shared, None, None);
const SHARED_CHILD_A: Kind = Kind(LockMode::Shared, Some("a"), None);
const SHARED_CHILD_B: Kind = Kind(LockMode::Shared, Some("b"), None);
const SHARED_ATTRIBUTE_A: Kind = Kind(LockMode::Shared, None, Some("a"));

/// Who holds the first lock, seen from the transaction that asks for the second.
#[derive(Clone, Copy, Debug)]
enum Holder {
    Same,
    Ancestor,
    Descendant,
    Unrelated,
}

/// Seed 004's rules, written out: for each held lock (rows) and asked lock (columns, in the
/// order snapshot, exclusive, shared, shared child a, shared child b, shared attribute a),
/// whether the second can be taken when the holder is another transaction (unrelated or a
/// descendant) and when it is the same transaction or an ancestor.
const ASKED: [Kind; 6] = [
    SNAPSHOT,
    EXCLUSIVE,
    SHARED,
    SHARED_CHILD_A,
    SHARED_CHILD_B,
    SHARED_ATTRIBUTE_A,
];
const BY_OTHER: [(Kind, [bool; 6]); 5] = [
    (SNAPSHOT, [true, true, true, true, true, true]),
    (EXCLUSIVE, [true, false, false, false, false, false]),
    (SHARED, [true, false, true, true, true, true]),
    (SHARED_CHILD_A, [true, false, true, false, true, true]),
    (SHARED_ATTRIBUTE_A, [true, false, true, true, true, false]),
];
const BY_SELF_OR_ANCESTOR: [(Kind, [bool; 6]); 5] = [
    (SNAPSHOT, [true, false, false, false, false, false]),
    (EXCLUSIVE, [true, true, true, true, true, true]),
    (SHARED, [true, true, true, true, true, true]),
    (SHARED_CHILD_A, [true, true, true, true, true, true]),
    (SHARED_ATTRIBUTE_A, [true, true, true, true, true, true]),
];

#[tokio::test]
async fn lock_compatibility_follows_the_table_of_seed_004() {
    let mut cases = 0;
    for holder in [
        Holder::Same,
        Holder::Ancestor,
        Holder::Descendant,
        Holder::Unrelated,
    ] {
        let table = match holder {
            Holder::Same | Holder::Ancestor => &BY_SELF_OR_ANCESTOR,
            Holder::Descendant | Holder::Unrelated => &BY_OTHER,
        };
        for (held, row) in table {
            for (asked, expected) in ASKED.iter().zip(row) {
                let s = Store::open("memory://").unwrap();
                map_node(&s, "//tmp/n").await;
                let first = start(&s, None).await;
                let (holding, asking) = match holder {
                    Holder::Same => (first.clone(), first.clone()),
                    Holder::Ancestor => (first.clone(), start(&s, Some(&first)).await),
                    Holder::Descendant => (start(&s, Some(&first)).await, first.clone()),
                    Holder::Unrelated => (first.clone(), start(&s, None).await),
                };
                s.lock_node("//tmp/n", &holding, held.0, options(held.1, held.2))
                    .await
                    .unwrap();
                let got = s
                    .lock_node("//tmp/n", &asking, asked.0, options(asked.1, asked.2))
                    .await;
                assert_eq!(
                    got.is_ok(),
                    *expected,
                    "{held:?} held by {holder:?}, {asked:?} asked: {got:?}"
                );
                if let Err(e) = got {
                    assert!(matches!(e, Error::LockConflict(_)), "{e}");
                    assert!(e.to_string().starts_with("Cannot take"), "{e}");
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 4 * 5 * 6);
}

#[tokio::test]
async fn changes_outside_transactions_respect_their_locks() {
    let s = Store::open("memory://").unwrap();
    s.set_node("//tmp/doc", &yson("1"), false, None)
        .await
        .unwrap();
    let tx = start(&s, None).await;
    s.lock_node(
        "//tmp/doc",
        &tx,
        LockMode::Exclusive,
        LockOptions::default(),
    )
    .await
    .unwrap();
    let err = s
        .set_node("//tmp/doc", &yson("2"), false, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"exclusive\" lock is taken by transaction"),
        "{err}"
    );
    let err = s.remove_node("//tmp", true, false, None).await;
    assert!(err.is_err(), "a builtin stays");
    // A shared lock on one child key blocks that child's creation only.
    s.lock_node("//tmp", &tx, LockMode::Shared, options(Some("x"), None))
        .await
        .unwrap();
    let err = s
        .set_node("//tmp/x", &yson("1"), false, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("child key \"x\""), "{err}");
    s.set_node("//tmp/y", &yson("1"), false, None)
        .await
        .unwrap();
    // Once the transaction ends, the change goes through.
    s.abort_master_transaction(&tx).await.unwrap();
    s.set_node("//tmp/doc", &yson("2"), false, None)
        .await
        .unwrap();
    s.set_node("//tmp/x", &yson("1"), false, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn nested_versions_merge_up_at_commit_and_vanish_at_abort() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    let top = start(&s, None).await;
    let child = start(&s, Some(&top)).await;
    s.set_node("//tmp/a", &yson("{x=1}"), false, Some(&top))
        .await
        .unwrap();
    s.set_node("//tmp/a/y", &yson("2"), false, Some(&child))
        .await
        .unwrap();
    let get = |tx: Option<String>| {
        let s = s.clone();
        async move {
            match s.get_node("//tmp/a", tx.as_deref()).await {
                Ok(v) => dynql_core::yson::to_text(&v),
                Err(Error::NoSuchNode { .. }) => "missing".into(),
                Err(e) => panic!("{e}"),
            }
        }
    };
    assert_eq!(get(None).await, "missing");
    assert_eq!(get(Some(top.clone())).await, "{\"x\"=1;}");
    assert_eq!(get(Some(child.clone())).await, "{\"x\"=1;\"y\"=2;}");
    // A parent with a live nested transaction cannot commit.
    let err = s.commit_master_transaction(&top).await.unwrap_err();
    assert!(
        err.to_string().contains("active nested transaction"),
        "{err}"
    );
    // Transactions, their versions and locks replay in another process.
    let other = Store::open(&url).unwrap();
    assert_eq!(
        other.get_node("//tmp/a", Some(&child)).await.unwrap(),
        s.get_node("//tmp/a", Some(&child)).await.unwrap()
    );
    other.checkpoint().await.unwrap();
    let reopened = Store::open(&url).unwrap();
    assert!(reopened.is_master_transaction(&child).await.unwrap());
    s.commit_master_transaction(&child).await.unwrap();
    assert_eq!(get(Some(top.clone())).await, "{\"x\"=1;\"y\"=2;}");
    assert_eq!(get(None).await, "missing");
    // A second child removes what the first made; aborting it undoes the removal.
    let second = start(&s, Some(&top)).await;
    s.remove_node("//tmp/a", true, false, Some(&second))
        .await
        .unwrap();
    assert_eq!(get(Some(second.clone())).await, "missing");
    s.abort_master_transaction(&second).await.unwrap();
    assert!(!s.is_master_transaction(&second).await.unwrap());
    s.commit_master_transaction(&top).await.unwrap();
    assert_eq!(get(None).await, "{\"x\"=1;\"y\"=2;}");
    // Aborting a parent aborts its descendants.
    let parent = start(&s, None).await;
    let nested = start(&s, Some(&parent)).await;
    let deeper = start(&s, Some(&nested)).await;
    s.set_node("//tmp/b", &yson("1"), false, Some(&deeper))
        .await
        .unwrap();
    s.abort_master_transaction(&parent).await.unwrap();
    for id in [&parent, &nested, &deeper] {
        assert!(!s.is_master_transaction(id).await.unwrap());
    }
    assert!(!s.node_exists("//tmp/b", None).await.unwrap());
    let err = s
        .set_node("//tmp/b", &yson("1"), false, Some(&deeper))
        .await;
    assert!(
        matches!(err, Err(Error::NoSuchTransaction { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_snapshot_lock_keeps_the_locked_version() {
    let s = Store::open("memory://").unwrap();
    s.create_node(
        "//tmp/config",
        NodeKind::Document {
            value: "{v=1}".into(),
        },
        BTreeMap::new(),
        false,
        false,
        None,
    )
    .await
    .unwrap();
    let tx = start(&s, None).await;
    let taken = s
        .lock_node(
            "//tmp/config",
            &tx,
            LockMode::Snapshot,
            LockOptions::default(),
        )
        .await
        .unwrap();
    // Taking it again has no effect.
    let again = s
        .lock_node(
            "//tmp/config",
            &tx,
            LockMode::Snapshot,
            LockOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(again.lock_id, taken.lock_id);
    s.set_node("//tmp/config/v", &yson("2"), false, None)
        .await
        .unwrap();
    let version = |tx: Option<String>| {
        let s = s.clone();
        let id = taken.node_id.clone();
        async move {
            match s.object(&id, tx.as_deref()).await.unwrap() {
                Some(Object::Node {
                    snapshot: Some(dynql_storage::cypress::transactions::Entry::Node(n)),
                    ..
                }) => n.value(),
                Some(Object::Node { path: Some(p), .. }) => s.get_node(&p, None).await.ok(),
                _ => None,
            }
        }
    };
    assert_eq!(version(Some(tx.clone())).await, Some(yson("{v=1}")));
    assert_eq!(version(None).await, Some(yson("{v=2}")));
    // Removed by others: still readable under the lock.
    s.remove_node("//tmp/config", false, false, None)
        .await
        .unwrap();
    assert_eq!(version(Some(tx.clone())).await, Some(yson("{v=1}")));
    // The transaction cannot change what it holds a snapshot of.
    map_node(&s, "//tmp/other").await;
    s.lock_node(
        "//tmp/other",
        &tx,
        LockMode::Snapshot,
        LockOptions::default(),
    )
    .await
    .unwrap();
    let err = s
        .set_custom_attribute("//tmp/other", "a", Some(&yson("1")), Some(&tx))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"snapshot\" lock is already taken"),
        "{err}"
    );
}

#[tokio::test]
async fn waitable_locks_are_granted_in_queue_order() {
    let s = Store::open("memory://").unwrap();
    map_node(&s, "//tmp/n").await;
    let holder = start(&s, None).await;
    let first = start(&s, None).await;
    let second = start(&s, None).await;
    let third = start(&s, None).await;
    s.lock_node(
        "//tmp/n",
        &holder,
        LockMode::Exclusive,
        LockOptions::default(),
    )
    .await
    .unwrap();
    let waitable = LockOptions {
        waitable: true,
        ..LockOptions::default()
    };
    let mut ids = Vec::new();
    for (tx, mode) in [
        (&first, LockMode::Exclusive),
        (&second, LockMode::Shared),
        (&third, LockMode::Shared),
    ] {
        let taken = s
            .lock_node("//tmp/n", tx, mode, waitable.clone())
            .await
            .unwrap();
        assert_eq!(taken.state, LockState::Pending);
        ids.push(taken.lock_id);
    }
    let state = |id: String| {
        let s = s.clone();
        async move {
            match s.object(&id, None).await.unwrap() {
                Some(Object::Lock(l)) => l.state,
                other => panic!("{other:?}"),
            }
        }
    };
    s.commit_master_transaction(&holder).await.unwrap();
    assert_eq!(state(ids[0].clone()).await, LockState::Acquired);
    // The shared ones wait behind the exclusive one, though they would fit each other.
    assert_eq!(state(ids[1].clone()).await, LockState::Pending);
    assert_eq!(state(ids[2].clone()).await, LockState::Pending);
    s.abort_master_transaction(&first).await.unwrap();
    assert_eq!(state(ids[1].clone()).await, LockState::Acquired);
    assert_eq!(state(ids[2].clone()).await, LockState::Acquired);
    // unlock ends explicit locks; a node the transaction changed cannot be unlocked.
    s.unlock_node("//tmp/n", &second).await.unwrap();
    assert!(s.object(&ids[1], None).await.unwrap().is_none());
    s.set_custom_attribute("//tmp/n", "a", Some(&yson("1")), Some(&third))
        .await
        .unwrap();
    let err = s.unlock_node("//tmp/n", &third).await.unwrap_err();
    assert!(
        err.to_string().contains("branched version has changes"),
        "{err}"
    );
}

#[tokio::test]
async fn expired_transactions_abort_and_release_their_locks() {
    let s = Store::open("memory://").unwrap();
    let tx = s
        .start_master_transaction(None, 1_000, Some("short".into()))
        .await
        .unwrap();
    assert_eq!(tx.title.as_deref(), Some("short"));
    s.set_node("//tmp/x", &yson("1"), false, Some(&tx.id))
        .await
        .unwrap();
    let nested = start(&s, Some(&tx.id)).await;
    // Long enough for the steps above on a loaded machine (50 ms once expired before them).
    tokio::time::sleep(std::time::Duration::from_millis(1_300)).await;
    assert!(!s.is_master_transaction(&tx.id).await.unwrap());
    assert!(!s.is_master_transaction(&nested).await.unwrap());
    let err = s.ping_master_transaction(&tx.id).await.unwrap_err();
    assert!(matches!(err, Error::NoSuchTransaction { .. }), "{err}");
    // Its lock on the child key no longer blocks, and its change never happened.
    s.set_node("//tmp/x", &yson("2"), false, None)
        .await
        .unwrap();
    assert_eq!(s.get_node("//tmp/x", None).await.unwrap(), yson("2"));
    assert!(s
        .list_node("//sys/transactions", None)
        .await
        .unwrap()
        .is_empty());
    // Timeouts are cut to an hour.
    let long = s
        .start_master_transaction(None, 7_200_000, None)
        .await
        .unwrap();
    assert_eq!(long.timeout_ms, 3_600_000);
    assert_eq!(
        s.list_node("//sys/topmost_transactions", None)
            .await
            .unwrap(),
        [long.id.clone()]
    );
}

/// What a step of the property test does.
#[derive(Clone, Debug)]
enum Op {
    /// Start a transaction, nested in the live one of this index (if any).
    Start(Option<usize>),
    /// Set node `name` to `value`, in the live transaction of this index or outside.
    Set(Option<usize>, usize, i64),
    Remove(Option<usize>, usize),
    Commit(usize),
    Abort(usize),
}

const NAMES: [&str; 3] = ["a", "b", "c"];

fn op() -> impl Strategy<Value = Op> {
    let tx = proptest::option::weighted(0.8, 0usize..4);
    prop_oneof![
        2 => proptest::option::of(0usize..4).prop_map(Op::Start),
        4 => (tx.clone(), 0usize..3, 0i64..100).prop_map(|(t, n, v)| Op::Set(t, n, v)),
        2 => (tx, 0usize..3).prop_map(|(t, n)| Op::Remove(t, n)),
        2 => (0usize..4).prop_map(Op::Commit),
        1 => (0usize..4).prop_map(Op::Abort),
    ]
}

/// The model: committed values, and per live transaction its parent, its versions and the
/// names it holds locks on (a change locks its name: its node exclusively, or the child key
/// of its parent directory).
#[derive(Default, Debug)]
struct Model {
    committed: BTreeMap<String, i64>,
    transactions: BTreeMap<String, ModelTx>,
}

#[derive(Default, Debug, Clone)]
struct ModelTx {
    parent: Option<String>,
    changes: BTreeMap<String, Option<i64>>,
    locked: BTreeSet<String>,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Ok,
    Conflict,
    Missing,
    HasNested,
}

impl Model {
    fn chain(&self, tx: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = tx.map(str::to_string);
        while let Some(t) = at {
            at = self.transactions[&t].parent.clone();
            out.push(t);
        }
        out
    }

    fn value(&self, tx: Option<&str>, name: &str) -> Option<i64> {
        for t in self.chain(tx) {
            if let Some(v) = self.transactions[&t].changes.get(name) {
                return *v;
            }
        }
        self.committed.get(name).copied()
    }

    fn locked_by_other(&self, tx: Option<&str>, name: &str) -> bool {
        let own = self.chain(tx);
        self.transactions
            .iter()
            .any(|(id, t)| !own.contains(id) && t.locked.contains(name))
    }

    fn change(&mut self, tx: Option<&str>, name: &str, value: Option<i64>) -> Outcome {
        if value.is_none() && self.value(tx, name).is_none() {
            return Outcome::Missing;
        }
        if self.locked_by_other(tx, name) {
            return Outcome::Conflict;
        }
        match tx {
            Some(t) => {
                let t = self.transactions.get_mut(t).unwrap();
                t.changes.insert(name.to_string(), value);
                t.locked.insert(name.to_string());
            }
            None => match value {
                Some(v) => {
                    self.committed.insert(name.to_string(), v);
                }
                None => {
                    self.committed.remove(name);
                }
            },
        }
        Outcome::Ok
    }

    fn commit(&mut self, id: &str) -> Outcome {
        if self
            .transactions
            .values()
            .any(|t| t.parent.as_deref() == Some(id))
        {
            return Outcome::HasNested;
        }
        let t = self.transactions.remove(id).unwrap();
        match &t.parent {
            Some(p) => {
                let p = self.transactions.get_mut(p).unwrap();
                p.changes.extend(t.changes);
                p.locked.extend(t.locked);
            }
            None => {
                for (name, v) in t.changes {
                    match v {
                        Some(v) => self.committed.insert(name, v),
                        None => self.committed.remove(&name),
                    };
                }
            }
        }
        Outcome::Ok
    }

    fn abort(&mut self, id: &str) {
        let gone: Vec<String> = self
            .transactions
            .keys()
            .filter(|t| self.chain(Some(t)).contains(&id.to_string()))
            .cloned()
            .collect();
        for t in gone {
            self.transactions.remove(&t);
        }
    }
}

fn outcome(result: dynql_storage::Result<()>) -> Outcome {
    match result {
        Ok(()) => Outcome::Ok,
        Err(Error::LockConflict(_)) => Outcome::Conflict,
        Err(Error::NoSuchNode { .. }) => Outcome::Missing,
        // Removing an attribute that is not there.
        Err(Error::Invalid(m)) if m.contains("is not found") => Outcome::Missing,
        Err(e) if e.to_string().contains("active nested") => Outcome::HasNested,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

async fn run(ops: Vec<Op>) {
    let s = Store::open("memory://").unwrap();
    let mut model = Model::default();
    // Live transactions in start order (indexes of the ops name them).
    let mut live: Vec<String> = Vec::new();
    for op in ops {
        live.retain(|t| model.transactions.contains_key(t));
        let pick = |i: Option<usize>| i.and_then(|i| live.get(i % live.len().max(1)).cloned());
        match op {
            Op::Start(parent) => {
                let parent = pick(parent);
                let id = start(&s, parent.as_deref()).await;
                model.transactions.insert(
                    id.clone(),
                    ModelTx {
                        parent,
                        ..ModelTx::default()
                    },
                );
                live.push(id);
            }
            Op::Set(tx, n, v) => {
                let tx = pick(tx);
                let path = format!("//tmp/{}", NAMES[n]);
                let got = outcome(
                    s.set_node(&path, &Yson::Int64(v), false, tx.as_deref())
                        .await,
                );
                assert_eq!(
                    got,
                    model.change(tx.as_deref(), NAMES[n], Some(v)),
                    "set {path}"
                );
            }
            Op::Remove(tx, n) => {
                let tx = pick(tx);
                let path = format!("//tmp/{}", NAMES[n]);
                let got = outcome(s.remove_node(&path, false, false, tx.as_deref()).await);
                assert_eq!(
                    got,
                    model.change(tx.as_deref(), NAMES[n], None),
                    "remove {path}"
                );
            }
            Op::Commit(i) => {
                let Some(tx) = pick(Some(i)) else { continue };
                let got = outcome(s.commit_master_transaction(&tx).await);
                assert_eq!(got, model.commit(&tx), "commit");
            }
            Op::Abort(i) => {
                let Some(tx) = pick(Some(i)) else { continue };
                s.abort_master_transaction(&tx).await.unwrap();
                model.abort(&tx);
            }
        }
        // Every live transaction and the committed tree see what the model says.
        for tx in std::iter::once(None).chain(model.transactions.keys().map(|t| Some(t.as_str()))) {
            for name in NAMES {
                let got = match s.get_node(&format!("//tmp/{name}"), tx).await {
                    Ok(Yson::Int64(v)) => Some(v),
                    Err(Error::NoSuchNode { .. }) => None,
                    other => panic!("{other:?}"),
                };
                assert_eq!(got, model.value(tx, name), "{name} in {tx:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn nested_sequences_match_a_model_of_versioned_nodes(ops in proptest::collection::vec(op(), 1..30)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(run(ops));
    }
}
