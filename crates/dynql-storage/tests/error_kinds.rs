//! Storage errors say what kind they are (design note 0011, step 6): a bad row names its row
//! and column, a table in the wrong state names the state, what dynql does not do is
//! `Unsupported`; and each leaves the store unchanged.

use dynql_core::{TableSchema, Value};
use dynql_storage::tablets::TabletCommand;
use dynql_storage::{Error, Store, TableOptions, Timestamp, WriteKind};

fn sorted() -> TableSchema {
    TableSchema::parse(
        "[{name=k;type=int64;sort_order=ascending};{name=v;type=string;required=%true}]",
    )
    .unwrap()
}

fn row(k: i64, v: Option<Value>) -> Vec<Option<Value>> {
    vec![Some(Value::Int64(k)), v]
}

async fn store_with_table() -> Store {
    let store = Store::open("memory://").unwrap();
    store
        .create_table("//t", sorted(), TableOptions::default())
        .await
        .unwrap();
    store
        .write_rows(
            "//t",
            WriteKind::Overwrite,
            false,
            vec![row(1, Some(Value::String(b"one".to_vec())))],
        )
        .await
        .unwrap();
    store
}

async fn rows(store: &Store) -> usize {
    store.read_rows("//t", Timestamp::MAX).await.unwrap().len()
}

#[tokio::test]
async fn a_bad_row_names_its_row_and_column() {
    let store = store_with_table().await;
    let bad = vec![
        row(2, Some(Value::String(b"two".to_vec()))),
        row(3, Some(Value::Int64(3))),
    ];
    let e = store
        .write_rows("//t", WriteKind::Overwrite, false, bad)
        .await
        .unwrap_err();
    match &e {
        Error::InvalidRow {
            path, row, column, ..
        } => {
            assert_eq!((path.as_str(), *row), ("//t", 1), "{e}");
            assert_eq!(column.as_deref(), Some("v"), "{e}");
        }
        other => panic!("expected InvalidRow, got {other:?}"),
    }
    assert!(e.to_string().starts_with("row #1 for //t: "), "{e}");
    let null = vec![row(4, Some(Value::Null))];
    let e = store
        .write_rows("//t", WriteKind::Overwrite, false, null)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidRow { row: 0, column: Some(c), .. } if c == "v"),
        "{e:?}"
    );
    assert_eq!(rows(&store).await, 1, "a refused write changed the table");
}

/// Asserts that `e` is a `WrongState` error naming `state`.
fn assert_state(e: &Error, state: &str) {
    assert!(
        matches!(e, Error::WrongState { state: s, .. } if s == state),
        "expected the state {state}: {e:?}"
    );
}

async fn refused_write(store: &Store) -> Error {
    store
        .write_rows("//t", WriteKind::Overwrite, false, vec![row(5, None)])
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_table_in_the_wrong_state_names_the_state() {
    let store = store_with_table().await;
    store
        .set_tablet_state("//t", TabletCommand::Freeze)
        .await
        .unwrap();
    let e = refused_write(&store).await;
    assert_state(&e, "frozen");
    assert!(e.to_string().contains("unfreeze-table first"), "{e}");
    store
        .set_tablet_state("//t", TabletCommand::Unmount)
        .await
        .unwrap();
    assert_state(&refused_write(&store).await, "unmounted");
    let e = store
        .set_tablet_state("//t", TabletCommand::Freeze)
        .await
        .unwrap_err();
    assert_state(&e, "unmounted");
    store
        .set_tablet_state("//t", TabletCommand::Mount)
        .await
        .unwrap();
    assert_eq!(rows(&store).await, 1, "a refused write changed the table");
}

#[tokio::test]
async fn what_dynql_does_not_do_is_unsupported() {
    let store = Store::open("memory://").unwrap();
    let ordered = TableSchema::parse("[{name=v;type=int64}]").unwrap();
    store
        .create_table("//q", ordered, TableOptions::default())
        .await
        .unwrap();
    let e = store
        .write_rows(
            "//q",
            WriteKind::Delete,
            false,
            vec![vec![Some(Value::Int64(1))]],
        )
        .await
        .unwrap_err();
    assert!(matches!(&e, Error::Unsupported(_)), "{e:?}");
    assert!(e.to_string().contains("ordered table //q"), "{e}");
}
