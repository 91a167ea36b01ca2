//! Schema changes of sorted tables: rows in chunks, in the dynamic store and written later
//! all read in the new layout (new columns null), before and after a reopen and a
//! compaction; refused changes leave the table as it was.

use dynql_core::{TableSchema, Value};
use dynql_storage::{Store, TableOptions, TabletCommand, Timestamp, WriteKind};

const V1: &str = "[{name=k;type=int32;sort_order=ascending};{name=v;type=utf8}]";
/// A value column added, `v` widened to string, `k` to int64.
const V2: &str =
    "[{name=k;type=int64;sort_order=ascending};{name=v;type=string};{name=n;type=int64}]";
/// A key column added at the end of the key, a value column between the others.
const V3: &str = "[{name=k;type=int64;sort_order=ascending};{name=k2;type=string;sort_order=ascending};{name=v;type=string};{name=m;type=double};{name=n;type=int64}]";

fn schema(text: &str) -> TableSchema {
    TableSchema::parse(text).unwrap()
}

fn text(s: &str) -> Value {
    Value::String(s.as_bytes().to_vec())
}

async fn alter(s: &Store, to: &str) -> Result<(), dynql_storage::Error> {
    s.set_tablet_state("//t", TabletCommand::Unmount).await?;
    let result = s.alter_table("//t", Some(schema(to)), None).await;
    s.set_tablet_state("//t", TabletCommand::Mount).await?;
    result
}

async fn all_rows(s: &Store) -> Vec<Vec<Value>> {
    let rows = s.read_rows("//t", Timestamp::MAX).await.unwrap();
    let (tablets, _) = s.scan_ranges("//t", None, Timestamp::MAX).await.unwrap();
    let scanned: Vec<Vec<Value>> = tablets.into_iter().flat_map(|t| t.rows).collect();
    assert_eq!(rows, scanned);
    let batches = s.scan_batches("//t", None, Timestamp::MAX).await.unwrap().0;
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).sum::<usize>(),
        rows.len()
    );
    for b in &batches {
        assert_eq!(b.num_columns(), rows[0].len());
    }
    rows
}

#[tokio::test]
async fn old_rows_read_in_the_new_layout_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let s = Store::open(&url).unwrap();
    s.create_table("//t", schema(V1), TableOptions::default())
        .await
        .unwrap();
    let v1 = |k: i64| vec![Some(Value::Int64(k)), Some(text(&format!("v{k}")))];
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        (0..300).map(v1).collect(),
    )
    .await
    .unwrap();
    s.flush_table("//t").await.unwrap();
    // Some rows stay in the dynamic store, one as an update of a flushed row.
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        (300..320).map(v1).collect(),
    )
    .await
    .unwrap();
    let update = vec![Some(Value::Int64(5)), Some(text("updated"))];
    s.write_rows("//t", WriteKind::Update, false, vec![update])
        .await
        .unwrap();

    alter(&s, V2).await.unwrap();
    let rows = all_rows(&s).await;
    assert_eq!(rows.len(), 320);
    assert_eq!(rows[5], vec![Value::Int64(5), text("updated"), Value::Null]);
    assert_eq!(
        rows[310],
        vec![Value::Int64(310), text("v310"), Value::Null]
    );
    // New rows use the new column; an update of an old row sets it alone.
    let n = vec![Some(Value::Int64(7)), None, Some(Value::Int64(70))];
    s.write_rows("//t", WriteKind::Update, false, vec![n])
        .await
        .unwrap();
    assert_eq!(
        all_rows(&s).await[7],
        vec![Value::Int64(7), text("v7"), Value::Int64(70)]
    );

    alter(&s, V3).await.unwrap();
    let rows = all_rows(&s).await;
    assert_eq!(rows.len(), 320);
    assert_eq!(
        rows[7],
        vec![
            Value::Int64(7),
            Value::Null,
            text("v7"),
            Value::Null,
            Value::Int64(70)
        ]
    );
    // The old rows' keys now end in null: a row with the same k and a k2 is another row.
    let new_row = vec![
        Some(Value::Int64(7)),
        Some(text("b")),
        Some(text("new")),
        Some(Value::Double(1.5)),
        None,
    ];
    s.write_rows("//t", WriteKind::Overwrite, false, vec![new_row])
        .await
        .unwrap();
    let found = s
        .lookup_rows(
            "//t",
            &[
                vec![Value::Int64(7), Value::Null],
                vec![Value::Int64(7), text("b")],
            ],
            Timestamp::MAX,
        )
        .await
        .unwrap();
    assert_eq!(found[0].as_ref().unwrap()[2], text("v7"));
    assert_eq!(found[1].as_ref().unwrap()[3], Value::Double(1.5));
    let before = all_rows(&s).await;
    assert_eq!(before.len(), 321);

    // The same after a reopen (replayed from the log) and after a compaction.
    let reopened = Store::open(&url).unwrap();
    assert_eq!(all_rows(&reopened).await, before);
    reopened.compact("//t").await.unwrap();
    assert_eq!(all_rows(&reopened).await, before);
    assert_eq!(all_rows(&Store::open(&url).unwrap()).await, before);
}

#[tokio::test]
async fn refused_changes_leave_the_table_as_it_was() {
    let s = Store::open("memory://").unwrap();
    s.create_table("//t", schema(V1), TableOptions::default())
        .await
        .unwrap();
    s.write_rows(
        "//t",
        WriteKind::Overwrite,
        false,
        vec![vec![Some(Value::Int64(1)), Some(text("a"))]],
    )
    .await
    .unwrap();
    s.flush_table("//t").await.unwrap();
    let e = s
        .alter_table("//t", Some(schema(V2)), None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("unmount-table first"), "{e}");
    for (to, why) in [
        (
            "[{name=k;type=int32;sort_order=ascending}]",
            "cannot be removed",
        ),
        (
            "[{name=k;type=int32;sort_order=ascending};{name=v;type=int64}]",
            "from utf8 to int64",
        ),
    ] {
        let e = alter(&s, to).await.unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
    }
    assert_eq!(s.table("//t").await.unwrap().schema, schema(V1));
    assert_eq!(all_rows(&s).await, vec![vec![Value::Int64(1), text("a")]]);
}
