//! A property test of random concurrent master transactions (nested too, and changes made
//! outside transactions) that set and remove attributes of a builtin directory, a map node
//! and a static table, and create, set and remove children of the map node, against a model
//! that records changes per key (an attribute of a node, a child of the directory). Two
//! transactions may change different keys of one node (shared locks with different keys):
//! both changes must land, whatever the order of their commits.

use std::collections::{BTreeMap, BTreeSet};

use dynql_core::{TableSchema, Yson};
use dynql_storage::{Error, Store, TableOptions};
use proptest::prelude::*;

use super::{map_node, outcome, start, yson, Outcome};

/// The nodes whose attributes change: a builtin directory, a map node, a static table.
const TARGETS: [&str; 3] = ["//tmp", "//tmp/m", "//tmp/t"];
const ATTRS: [&str; 3] = ["p", "q", "r"];
/// The children of `//tmp/m` that change.
const CHILDREN: [&str; 3] = ["a", "b", "c"];

/// What a step does; `Option<usize>` picks a live transaction by index, `None` outside.
#[derive(Clone, Debug)]
enum Step {
    /// Start a transaction, nested in the live one of this index (if any).
    Start(Option<usize>),
    SetAttr(Option<usize>, usize, usize, i64),
    RemoveAttr(Option<usize>, usize, usize),
    SetChild(Option<usize>, usize, i64),
    RemoveChild(Option<usize>, usize),
    Commit(usize),
    Abort(usize),
}

fn step() -> impl Strategy<Value = Step> {
    // About one change in five is made outside transactions.
    let tx = proptest::option::weighted(0.8, 0usize..4);
    prop_oneof![
        2 => proptest::option::of(0usize..4).prop_map(Step::Start),
        4 => (tx.clone(), 0usize..3, 0usize..3, 0i64..100)
            .prop_map(|(t, n, a, v)| Step::SetAttr(t, n, a, v)),
        2 => (tx.clone(), 0usize..3, 0usize..3).prop_map(|(t, n, a)| Step::RemoveAttr(t, n, a)),
        3 => (tx.clone(), 0usize..3, 0i64..100).prop_map(|(t, c, v)| Step::SetChild(t, c, v)),
        2 => (tx, 0usize..3).prop_map(|(t, c)| Step::RemoveChild(t, c)),
        2 => (0usize..4).prop_map(Step::Commit),
        1 => (0usize..4).prop_map(Step::Abort),
    ]
}

/// A key a change is made to: attribute `.1` of target `.0`, or a child of `//tmp/m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Attr(usize, usize),
    Child(usize),
}

/// What a lock covers, by seed 004's rules for the locks these steps take: a shared lock on
/// an attribute key or a child key of `//tmp/m` conflicts with another on the same key; an
/// exclusive lock on a child node conflicts with any other lock on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Attr(usize, usize),
    ChildKey(usize),
    Node(u64),
}

/// A key's value: an attribute's (node id 0) or a child's (its node id and value).
type Val = (u64, i64);

#[derive(Debug, Default)]
struct Model {
    committed: BTreeMap<Key, Val>,
    txs: BTreeMap<String, ModelTx>,
    next_id: u64,
}

#[derive(Debug, Default)]
struct ModelTx {
    parent: Option<String>,
    /// Per key: the new value, `None` removed.
    changes: BTreeMap<Key, Option<Val>>,
    locks: BTreeSet<Atom>,
}

impl Model {
    fn chain(&self, tx: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = tx.map(str::to_string);
        while let Some(t) = at {
            at = self.txs[&t].parent.clone();
            out.push(t);
        }
        out
    }

    /// Per key: the transaction's own change, else its parent's, ..., else the committed.
    fn value(&self, tx: Option<&str>, key: Key) -> Option<Val> {
        for t in self.chain(tx) {
            if let Some(v) = self.txs[&t].changes.get(&key) {
                return *v;
            }
        }
        self.committed.get(&key).copied()
    }

    /// Whether a transaction that is neither `tx` nor an ancestor of it holds one of `atoms`.
    fn conflict(&self, tx: Option<&str>, atoms: &[Atom]) -> bool {
        let own = self.chain(tx);
        self.txs
            .iter()
            .any(|(id, t)| !own.contains(id) && atoms.iter().any(|a| t.locks.contains(a)))
    }

    /// A change of `key` to `new`, taking `atoms`; `missing`: what it changes is not there.
    fn change(
        &mut self,
        tx: Option<&str>,
        key: Key,
        new: Option<Val>,
        atoms: Vec<Atom>,
        missing: bool,
    ) -> Outcome {
        if missing {
            return Outcome::Missing;
        }
        if self.conflict(tx, &atoms) {
            return Outcome::Conflict;
        }
        match tx {
            Some(t) => {
                let t = self.txs.get_mut(t).unwrap();
                t.changes.insert(key, new);
                t.locks.extend(atoms);
            }
            None => match new {
                Some(v) => {
                    self.committed.insert(key, v);
                }
                None => {
                    self.committed.remove(&key);
                }
            },
        }
        Outcome::Ok
    }

    fn set_attr(
        &mut self,
        tx: Option<&str>,
        target: usize,
        attr: usize,
        v: Option<i64>,
    ) -> Outcome {
        let key = Key::Attr(target, attr);
        let missing = v.is_none() && self.value(tx, key).is_none();
        let atoms = vec![Atom::Attr(target, attr)];
        self.change(tx, key, v.map(|v| (0, v)), atoms, missing)
    }

    fn set_child(&mut self, tx: Option<&str>, child: usize, v: i64) -> Outcome {
        let key = Key::Child(child);
        let (id, atoms) = match self.value(tx, key) {
            // `set` of an existing scalar node: an exclusive lock on it.
            Some((id, _)) => (id, vec![Atom::Node(id)]),
            // A new node: a shared lock on the child key of the directory (and an exclusive
            // one on the node, which nobody else sees yet).
            None => {
                self.next_id += 1;
                let id = self.next_id;
                (id, vec![Atom::ChildKey(child), Atom::Node(id)])
            }
        };
        self.change(tx, key, Some((id, v)), atoms, false)
    }

    fn remove_child(&mut self, tx: Option<&str>, child: usize) -> Outcome {
        let key = Key::Child(child);
        match self.value(tx, key) {
            None => Outcome::Missing,
            Some((id, _)) => {
                let atoms = vec![Atom::ChildKey(child), Atom::Node(id)];
                self.change(tx, key, None, atoms, false)
            }
        }
    }

    fn commit(&mut self, id: &str) -> Outcome {
        if self.txs.values().any(|t| t.parent.as_deref() == Some(id)) {
            return Outcome::HasNested;
        }
        let t = self.txs.remove(id).unwrap();
        match &t.parent {
            Some(p) => {
                let p = self.txs.get_mut(p).unwrap();
                p.changes.extend(t.changes);
                p.locks.extend(t.locks);
            }
            None => {
                for (key, v) in t.changes {
                    match v {
                        Some(v) => self.committed.insert(key, v),
                        None => self.committed.remove(&key),
                    };
                }
            }
        }
        Outcome::Ok
    }

    fn abort(&mut self, id: &str) {
        let gone: Vec<String> = self
            .txs
            .keys()
            .filter(|t| self.chain(Some(t)).contains(&id.to_string()))
            .cloned()
            .collect();
        for t in gone {
            self.txs.remove(&t);
        }
    }
}

/// Checks that the committed tree and every live transaction see what the model says.
async fn check(s: &Store, model: &Model, step: &str) {
    let views = std::iter::once(None).chain(model.txs.keys().map(|t| Some(t.as_str())));
    for tx in views {
        for (n, target) in TARGETS.iter().enumerate() {
            let attributes = s
                .node_in(target, tx)
                .await
                .unwrap()
                .unwrap()
                .custom_attributes();
            for (a, attr) in ATTRS.iter().enumerate() {
                let got = attributes.get(*attr).map(|text| match yson(text) {
                    Yson::Int64(v) => v,
                    other => panic!("{other:?}"),
                });
                let expected = model.value(tx, Key::Attr(n, a)).map(|(_, v)| v);
                assert_eq!(got, expected, "{target}/@{attr} in {tx:?} after {step}");
            }
        }
        for (c, child) in CHILDREN.iter().enumerate() {
            let got = match s.get_node(&format!("//tmp/m/{child}"), tx).await {
                Ok(Yson::Int64(v)) => Some(v),
                Err(Error::NoSuchNode { .. }) => None,
                other => panic!("{other:?}"),
            };
            let expected = model.value(tx, Key::Child(c)).map(|(_, v)| v);
            assert_eq!(got, expected, "//tmp/m/{child} in {tx:?} after {step}");
        }
    }
}

async fn run(steps: Vec<Step>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    map_node(&s, "//tmp/m").await;
    let options = TableOptions {
        static_table: true,
        ..TableOptions::default()
    };
    let schema = TableSchema::parse("[{name=k;type=int64}]").unwrap();
    s.create_table("//tmp/t", schema, options).await.unwrap();
    let mut model = Model::default();
    for (c, child) in CHILDREN.iter().enumerate() {
        s.set_node(&format!("//tmp/m/{child}"), &Yson::Int64(0), false, None)
            .await
            .unwrap();
        model.set_child(None, c, 0);
    }
    // Live transactions in start order (the steps' indexes name them).
    let mut live: Vec<String> = Vec::new();
    for step in steps {
        live.retain(|t| model.txs.contains_key(t));
        let pick = |i: Option<usize>| i.and_then(|i| live.get(i % live.len().max(1)).cloned());
        let what = format!("{step:?}");
        match step {
            Step::Start(parent) => {
                let parent = pick(parent);
                let id = start(&s, parent.as_deref()).await;
                let tx = ModelTx {
                    parent,
                    ..ModelTx::default()
                };
                model.txs.insert(id.clone(), tx);
                live.push(id);
            }
            Step::SetAttr(tx, n, a, v) => {
                let tx = pick(tx);
                let value = Yson::Int64(v);
                let got = s
                    .set_custom_attribute(TARGETS[n], ATTRS[a], Some(&value), tx.as_deref())
                    .await;
                let expected = model.set_attr(tx.as_deref(), n, a, Some(v));
                assert_eq!(outcome(got), expected, "{what}");
            }
            Step::RemoveAttr(tx, n, a) => {
                let tx = pick(tx);
                let got = s
                    .set_custom_attribute(TARGETS[n], ATTRS[a], None, tx.as_deref())
                    .await;
                let expected = model.set_attr(tx.as_deref(), n, a, None);
                assert_eq!(outcome(got), expected, "{what}");
            }
            Step::SetChild(tx, c, v) => {
                let tx = pick(tx);
                let path = format!("//tmp/m/{}", CHILDREN[c]);
                let got = s
                    .set_node(&path, &Yson::Int64(v), false, tx.as_deref())
                    .await;
                assert_eq!(outcome(got), model.set_child(tx.as_deref(), c, v), "{what}");
            }
            Step::RemoveChild(tx, c) => {
                let tx = pick(tx);
                let path = format!("//tmp/m/{}", CHILDREN[c]);
                let got = s.remove_node(&path, false, false, tx.as_deref()).await;
                assert_eq!(outcome(got), model.remove_child(tx.as_deref(), c), "{what}");
            }
            Step::Commit(i) => {
                let Some(tx) = pick(Some(i)) else { continue };
                let got = outcome(s.commit_master_transaction(&tx).await);
                assert_eq!(got, model.commit(&tx), "{what}");
            }
            Step::Abort(i) => {
                let Some(tx) = pick(Some(i)) else { continue };
                s.abort_master_transaction(&tx).await.unwrap();
                model.abort(&tx);
            }
        }
        check(&s, &model, &what).await;
    }
    // Another process replays the same; so does one that starts from a checkpoint.
    let other = Store::open(&url).unwrap();
    check(&other, &model, "reopening").await;
    other.checkpoint().await.unwrap();
    check(&Store::open(&url).unwrap(), &model, "a checkpoint").await;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn concurrent_transactions_merge_per_key_changes(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(run(steps));
    }
}
