//! `dynql import` and `dynql export`: summaries, rejected rows, exit status, the Parquet
//! file contract and the round trip through files.

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::TestStore;

const SCHEMA: &str = "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=name;type=string};{name=age;type=uint32}]; tablet_count=2}";

fn store_with_table(path: &str) -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", path, "--attributes", SCHEMA], None);
    s
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn select_json(s: &TestStore, table: &str) -> String {
    s.ok(
        &[
            "select-rows",
            &format!("* from [{table}]"),
            "--format",
            "json",
        ],
        None,
    )
}

#[test]
fn import_prints_one_summary_line_and_no_progress_when_piped() {
    let s = store_with_table("//t");
    let csv = write(
        s.dir.path(),
        "users.csv",
        "id,name,age\n3,carol,41\n1,alice,30\n2,bob,\n1,alice2,31\n",
    );
    let json = write(
        s.dir.path(),
        "more.jsonl",
        "{\"id\": 4, \"name\": \"dave\", \"age\": 25}\n",
    );
    let out = s.run(&["import", "//t", "--from", &csv, &json], None);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "only the summary, no progress bar: {stderr:?}"
    );
    assert!(
        lines[0].starts_with("imported 4 rows (1 duplicates folded, 0 rejected) in "),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "no terminal escapes when piped");
    assert_eq!(
        select_json(&s, "//t"),
        "{\"id\":1,\"name\":\"alice2\",\"age\":31}\n{\"id\":2,\"name\":\"bob\",\"age\":null}\n\
         {\"id\":3,\"name\":\"carol\",\"age\":41}\n{\"id\":4,\"name\":\"dave\",\"age\":25}\n"
    );
}

#[test]
fn rejected_rows_fail_with_status_1_and_leave_the_table_unchanged() {
    let s = store_with_table("//t");
    s.ok(
        &["insert-rows", "//t", "--format", "json"],
        Some("{\"id\": 100, \"name\": \"old\"}\n"),
    );
    let before = select_json(&s, "//t");
    let json = write(
        s.dir.path(),
        "bad.jsonl",
        "{\"id\": 1, \"name\": \"ok\"}\n{\"id\": \"five\"}\n{\"id\": 6, \"age\": 300000000000}\n{\"name\": \"no key\"}\n",
    );
    let err = s.fails(&["import", "//t", "--from", &json], None);
    assert!(
        err.contains("3 input rows rejected (no rejected rows allowed); nothing was imported:"),
        "{err}"
    );
    assert!(err.contains("bad.jsonl:2: Invalid value for column \"id\": cannot store string \"five\" in a column of type int64"), "{err}");
    assert!(err.contains("bad.jsonl:3: Invalid value for column \"age\": value 300000000000 is out of range for type uint32"), "{err}");
    assert!(
        err.contains("bad.jsonl:4: Missing key column \"id\""),
        "{err}"
    );
    assert!(err.contains("--max-rejected N"), "{err}");
    assert_eq!(select_json(&s, "//t"), before);
}

#[test]
fn max_rejected_imports_the_rest_and_writes_the_rejected_file() {
    let s = store_with_table("//t");
    let csv = write(s.dir.path(), "rows.csv", "id,name\n1,a\nx,b\n2,c\n");
    let rejected = s.dir.path().join("rejected.jsonl");
    let out = s.run(
        &[
            "import",
            "//t",
            "--from",
            &csv,
            "--max-rejected",
            "1",
            "--rejected-file",
            &rejected.display().to_string(),
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("1 input row rejected:\n  "), "{stderr}");
    assert!(
        stderr.contains("rows.csv:3: Invalid value for column \"id\": cannot parse \"x\" as int64"),
        "{stderr}"
    );
    assert!(
        stderr.contains("imported 2 rows (0 duplicates folded, 1 rejected) in "),
        "{stderr}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&rejected)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["row"], 2);
    assert_eq!(lines[0]["line"], 3);
    assert_eq!(
        lines[0]["input"],
        serde_json::json!({"id": "x", "name": "b"})
    );
    assert_eq!(select_json(&s, "//t").lines().count(), 2);
}

#[test]
fn import_and_export_errors_are_clear() {
    let s = store_with_table("//t");
    let csv = write(s.dir.path(), "rows.csv", "id\n1\n");
    let err = s.fails(&["import", "//missing", "--from", &csv], None);
    assert!(err.contains("//missing: no such table"), "{err}");
    let missing = s.dir.path().join("nope.parquet").display().to_string();
    let err = s.fails(&["import", "//t", "--from", &missing], None);
    assert!(
        err.contains("cannot read") && err.contains("No such file"),
        "{err}"
    );
    let txt = write(s.dir.path(), "rows.txt", "id\n1\n");
    let err = s.fails(&["import", "//t", "--from", &txt], None);
    assert!(err.contains("cannot tell the format"), "{err}");
    s.ok(&["import", "//t", "--from", &txt, "--format", "csv"], None);
    let err = s.fails(&["import", "//t"], None);
    assert!(err.contains("--from"), "{err}");
    let err = s.fails(&["export", "//missing", "--to", "x"], None);
    assert!(err.contains("no such table"), "{err}");
    let dir = s.dir.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("other"), "").unwrap();
    let err = s.fails(&["export", "//t", "--to", &dir.display().to_string()], None);
    assert!(err.contains("is not empty (1 entry)"), "{err}");
    let err = s.fails(
        &[
            "export",
            "//t",
            "--to",
            &dir.display().to_string(),
            "--rows-per-file",
            "0",
        ],
        None,
    );
    assert!(err.contains("rows_per_file must be positive"), "{err}");
}

#[test]
fn export_then_import_reproduces_select_rows_output() {
    let s = store_with_table("//src");
    s.ok(&["create", "table", "//dst", "--attributes", SCHEMA], None);
    let rows: String = (0..40)
        .map(|i| {
            format!(
                "{{\"id\": {}, \"name\": \"n{i}\", \"age\": {}}}\n",
                39 - i,
                i % 5
            )
        })
        .collect();
    s.ok(&["insert-rows", "//src", "--format", "json"], Some(&rows));
    let dir = s.dir.path().join("export");
    let out = s.run(
        &[
            "export",
            "//src",
            "--to",
            &dir.display().to_string(),
            "--rows-per-file",
            "15",
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("exported 40 rows to 3 files ("),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // The files as another tool sees them: sorting columns and the schema.
    let schema = s.ok(&["get", "//src/@schema"], None);
    for n in 0..3 {
        let file = std::fs::File::open(dir.join(format!("part-0000{n}.parquet"))).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        let meta = reader.metadata();
        let kv = meta.file_metadata().key_value_metadata().unwrap();
        let stored = kv.iter().find(|e| e.key == "dynql.schema").unwrap();
        assert_eq!(stored.value.as_deref(), Some(schema.trim_end()));
        for rg in meta.row_groups() {
            let sorting = rg.sorting_columns().unwrap();
            assert_eq!(sorting.len(), 1);
            assert_eq!(
                (
                    sorting[0].column_idx,
                    sorting[0].descending,
                    sorting[0].nulls_first
                ),
                (0, false, true)
            );
        }
    }
    let glob = format!("{}/*.parquet", dir.display());
    s.ok(&["import", "//dst", "--from", &glob], None);
    assert_eq!(select_json(&s, "//src"), select_json(&s, "//dst"));
}

/// A sort budget far below the input: the import spills sorted runs to temporary files and
/// merges them; with no usable temporary directory it fails clearly and writes nothing.
#[test]
fn a_small_sort_budget_spills_and_an_unusable_temp_dir_fails_cleanly() {
    let s = store_with_table("//t");
    let dir = tempfile::tempdir().unwrap();
    // 60,000 rows in descending key order, every tenth key given twice (the later wins).
    let mut csv = String::from("id,name,age\n");
    for id in (0..60_000).rev() {
        csv.push_str(&format!("{id},name-{id:0>40},1\n"));
        if id % 10 == 0 {
            csv.push_str(&format!("{id},again-{id},2\n"));
        }
    }
    let input = write(dir.path(), "rows.csv", &csv);
    let args = [
        "import",
        "//t",
        "--from",
        input.as_str(),
        "--sort-memory-mib",
        "1",
    ];
    let missing = dir.path().join("no-such-dir").display().to_string();
    let out = s.run_with_env(&args, None, &[("TMPDIR", missing.as_str())]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("spill file error"), "{stderr}");
    assert!(stderr.contains("no-such-dir"), "{stderr}");
    assert_eq!(select_json(&s, "//t"), "");
    let out = s.run(&args, None);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(
        summary.starts_with("imported 60000 rows (6000 duplicates folded, 0 rejected)"),
        "{summary}"
    );
    let count = s.ok(
        &[
            "select-rows",
            "sum(1) as n, sum(age) as a, min(id) as lo, max(id) as hi from [//t] group by 1",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(count.trim(), r#"{"n":60000,"a":66000,"lo":0,"hi":59999}"#);
}
