//! Static tables through the command line, as a YT user types them: `write-table` and
//! `read-table` with rich paths, inside master transactions with shared and exclusive
//! locks, and snapshot locks reading a table as it was.

use crate::TestStore;

const SORTED: &str = r#"{schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}"#;

fn line(out: String) -> String {
    out.trim().to_string()
}

#[test]
fn write_table_replaces_or_appends_and_read_table_reads_ranges_and_columns() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//s", "--attributes", SORTED], None);
    assert_eq!(line(s.ok(&["get", "//s/@dynamic"], None)), "%false");
    s.ok(
        &["write-table", "//s", "--format", "json"],
        Some("{\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"v\":\"b\"}\n"),
    );
    s.ok(&["write-table", "<append=%true>//s"], Some("{k=3;v=c};"));
    s.ok(&["write-table", "//s", "--append"], Some("{k=4}"));
    assert_eq!(
        s.ok(&["read-table", "//s", "--format", "json"], None),
        "{\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"v\":\"b\"}\n{\"k\":3,\"v\":\"c\"}\n{\"k\":4,\"v\":null}\n"
    );
    assert_eq!(
        s.ok(&["read-table", "//s{v}[#1:#3]", "--format", "json"], None),
        "{\"v\":\"b\"}\n{\"v\":\"c\"}\n"
    );
    assert_eq!(
        s.ok(&["read-table", "//s[#3]"], None),
        "{\"k\"=4;\"v\"=#;};\n"
    );
    assert_eq!(line(s.ok(&["get", "//s/@row_count"], None)), "4");
    // Keys out of order, or not after the last row when appending: refused, nothing changes.
    let err = s.fails(&["write-table", "//s"], Some("{k=2};{k=1}"));
    assert!(err.contains("Sort order violation"), "{err}");
    let err = s.fails(&["write-table", "<append=%true>//s"], Some("{k=4}"));
    assert!(err.contains("Duplicate key"), "{err}");
    assert_eq!(line(s.ok(&["get", "//s/@row_count"], None)), "4");
    // What the schema refuses, and what a static table is not for.
    let err = s.fails(&["write-table", "//s"], Some("{k=\"x\"}"));
    assert!(err.contains("Row #0") && err.contains("int64"), "{err}");
    let err = s.fails(&["write-table", "//s"], Some("{k=1;extra=1}"));
    assert!(err.contains("No such column \"extra\""), "{err}");
    let err = s.fails(&["select-rows", "* from [//s]"], None);
    assert!(err.contains("it is static"), "{err}");
    let err = s.fails(&["insert-rows", "//s"], Some("{k=9}"));
    assert!(err.contains("it is static"), "{err}");
    let err = s.fails(&["read-table", "//s[(1):(2)]"], None);
    assert!(err.contains("row index ranges only"), "{err}");
    s.ok(
        &[
            "create",
            "table",
            "//d",
            "--attributes",
            &SORTED.replacen('{', "{dynamic=%true;", 1),
        ],
        None,
    );
    let err = s.fails(&["write-table", "//d"], Some("{k=1}"));
    assert!(err.contains("it is a dynamic table"), "{err}");
    // export writes a static table's rows as Parquet, like a dynamic table's.
    let exported = tempfile::tempdir().unwrap();
    let dir = exported.path().to_str().unwrap();
    s.ok(&["export", "//s", "--to", dir, "--force"], None);
    let query = format!("SELECT count(*) AS n FROM \"file:{dir}/*.parquet\"");
    assert_eq!(
        s.ok(&["sql", &query, "--format", "json"], None),
        "{\"n\":4}\n"
    );
    // An overwrite with no rows empties the table.
    s.ok(&["write-table", "//s"], Some(""));
    assert_eq!(s.ok(&["read-table", "//s"], None), "");
}

#[test]
fn writes_in_master_transactions_share_or_hold_the_table() {
    let s = TestStore::new();
    s.ok(
        &[
            "create",
            "table",
            "//u",
            "--attributes",
            "{schema=[{name=a;type=int64}]}",
        ],
        None,
    );
    let t1 = line(s.ok(&["start-tx"], None));
    let t2 = line(s.ok(&["start-tx"], None));
    s.ok(
        &["write-table", "<append=%true>//u", "--tx", &t1],
        Some("{a=1}"),
    );
    s.ok(
        &["write-table", "<append=%true>//u", "--tx", &t2],
        Some("{a=2}"),
    );
    // Staged rows show in their transaction only.
    assert_eq!(
        s.ok(&["read-table", "//u", "--tx", &t1], None),
        "{\"a\"=1;};\n"
    );
    assert_eq!(s.ok(&["read-table", "//u"], None), "");
    let err = s.fails(&["write-table", "//u"], Some("{a=9}"));
    assert!(err.contains("\"shared\" lock is taken"), "{err}");
    s.ok(&["commit-tx", &t2], None);
    s.ok(&["commit-tx", &t1], None);
    assert_eq!(
        s.ok(&["read-table", "//u", "--format", "json"], None),
        "{\"a\":2}\n{\"a\":1}\n"
    );
    // An overwrite holds the table alone; its abort leaves it as it was.
    let t3 = line(s.ok(&["start-tx"], None));
    s.ok(&["write-table", "//u", "--tx", &t3], Some("{a=7}"));
    let err = s.fails(&["write-table", "--append", "//u"], Some("{a=8}"));
    assert!(err.contains("\"exclusive\" lock is taken"), "{err}");
    assert_eq!(
        line(s.ok(&["get", "//u/@row_count", "--tx", &t3], None)),
        "1"
    );
    s.ok(&["abort-tx", &t3], None);
    assert_eq!(line(s.ok(&["get", "//u/@row_count"], None)), "2");
    // A table created, written and moved in a transaction appears at its commit.
    let t4 = line(s.ok(&["start-tx"], None));
    s.ok(
        &[
            "create",
            "table",
            "//tmp/new",
            "--tx",
            &t4,
            "--attributes",
            "{schema=[{name=a;type=int64}]}",
        ],
        None,
    );
    s.ok(&["write-table", "//tmp/new", "--tx", &t4], Some("{a=5}"));
    s.ok(&["move", "//tmp/new", "//tmp/moved", "--tx", &t4], None);
    assert_eq!(line(s.ok(&["exists", "//tmp/new"], None)), "false");
    s.ok(&["commit-tx", &t4], None);
    assert_eq!(s.ok(&["read-table", "//tmp/moved"], None), "{\"a\"=5;};\n");
}

#[test]
fn snapshot_locks_read_tables_as_they_were() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//s", "--attributes", SORTED], None);
    s.ok(&["write-table", "//s"], Some("{k=1;v=old}"));
    let id = line(s.ok(&["get", "//s/@id"], None)).replace('"', "");
    let tx = line(s.ok(&["start-tx"], None));
    s.ok(&["lock", "//s", "--tx", &tx, "--mode", "snapshot"], None);
    s.ok(&["write-table", "//s"], Some("{k=2;v=new}"));
    assert_eq!(
        s.ok(
            &["read-table", "//s", "--tx", &tx, "--format", "json"],
            None
        ),
        "{\"k\":1,\"v\":\"old\"}\n"
    );
    s.ok(&["remove", "//s"], None);
    let by_id = format!("#{id}");
    assert_eq!(
        s.ok(
            &["read-table", &by_id, "--tx", &tx, "--format", "json"],
            None
        ),
        "{\"k\":1,\"v\":\"old\"}\n"
    );
    // A dynamic table's rows at the lock's timestamp, through a compaction.
    let dynamic = SORTED.replacen('{', "{dynamic=%true;", 1);
    s.ok(&["create", "table", "//d", "--attributes", &dynamic], None);
    s.ok(&["insert-rows", "//d"], Some("{k=1;v=old}"));
    s.ok(&["lock", "//d", "--tx", &tx, "--mode", "snapshot"], None);
    s.ok(&["insert-rows", "//d"], Some("{k=1;v=new};{k=2;v=x}"));
    s.ok(&["compact", "//d"], None);
    assert_eq!(
        s.ok(
            &["read-table", "//d", "--tx", &tx, "--format", "json"],
            None
        ),
        "{\"k\":1,\"v\":\"old\"}\n"
    );
    assert_eq!(
        s.ok(&["read-table", "//d", "--format", "json"], None),
        "{\"k\":1,\"v\":\"new\"}\n{\"k\":2,\"v\":\"x\"}\n"
    );
}
