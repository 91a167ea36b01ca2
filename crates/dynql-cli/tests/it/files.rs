//! Batch analytics over exported Parquet through the command line: `[file:…]` tables,
//! `--table NAME=LOCATION`, `--key`, pruning shown by `--print-statistics` and
//! `explain-query`, and `dynql sql` over dynamic tables and files.

use crate::TestStore;

const SCHEMA: &str = "{dynamic=%true; schema=[{name=host;type=string;sort_order=ascending};{name=ts;type=int64;sort_order=ascending};{name=bytes;type=int64}]}";

/// A store with `//logs` (3 hosts × 2000 timestamps) exported to `exports/`.
fn exported() -> (TestStore, String) {
    let s = TestStore::new();
    s.ok(&["create", "table", "//logs", "--attributes", SCHEMA], None);
    let mut rows = String::new();
    for host in ["a", "b", "c"] {
        for ts in 0..2000 {
            rows.push_str(&format!(
                "{{\"host\": \"{host}\", \"ts\": {ts}, \"bytes\": {}}}\n",
                ts % 100
            ));
        }
    }
    s.ok(&["insert-rows", "//logs", "--format", "json"], Some(&rows));
    let dir = s.dir.path().join("exports");
    s.ok(
        &[
            "export",
            "//logs",
            "--to",
            dir.to_str().unwrap(),
            "--rows-per-file",
            "2000",
        ],
        None,
    );
    (s, format!("{}/*.parquet", dir.display()))
}

#[test]
fn queries_over_exported_files_read_what_the_key_selects() {
    let (s, glob) = exported();
    let q = format!("bytes from [file:{glob}] where host = \"b\" and ts = 1234");
    let out = s.run(
        &["select-rows", &q, "--format", "json", "--print-statistics"],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"bytes\":34}\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"rows_read\"=1;"), "{stderr}");
    assert!(
        stderr.contains("\"chunks_read\"=1;\"chunks\"=3;"),
        "{stderr}"
    );
    let explained = s.ok(&["explain-query", &q, "--format", "json"], None);
    let e: serde_json::Value = serde_json::from_str(&explained).unwrap();
    assert_eq!(e["read"]["chunks"], serde_json::json!([1, 3]));
    // The same files under a name, grouped.
    let mapping = format!("//exported={glob}");
    let out = s.ok(
        &[
            "select-rows",
            "host, sum(bytes) as total from [//exported] group by host order by host limit 5",
            "--table",
            &mapping,
            "--format",
            "json",
        ],
        None,
    );
    let total: i64 = (0..2000).map(|t| t % 100).sum();
    assert_eq!(
        out,
        format!(
            "{{\"host\":\"a\",\"total\":{total}}}\n{{\"host\":\"b\",\"total\":{total}}}\n{{\"host\":\"c\",\"total\":{total}}}\n"
        )
    );
    // The files declare their key; --key overrides it (here: by bytes, which they are not
    // sorted by, so reading is refused rather than answered wrongly).
    let err = s.fails(
        &[
            "select-rows",
            &format!("* from [file:{glob}] where bytes = 3"),
            "--key",
            "bytes",
        ],
        None,
    );
    assert!(err.contains("not sorted by the key (bytes)"), "{err}");
    let err = s.fails(&["select-rows", "* from [//x]", "--table", "oops"], None);
    assert!(err.contains("--table takes NAME=LOCATION"), "{err}");
    let err = s.fails(
        &["select-rows", "* from [file:/no/such/dir/*.parquet]"],
        None,
    );
    assert!(err.contains("No Parquet files match"), "{err}");
}

#[test]
fn sql_reads_dynamic_tables_and_files() {
    let (s, glob) = exported();
    let out = s.ok(
        &[
            "sql",
            r#"SELECT host, count(*) AS n FROM "//logs" WHERE ts < 10 GROUP BY host ORDER BY host"#,
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(
        out,
        "{\"host\":\"a\",\"n\":10}\n{\"host\":\"b\",\"n\":10}\n{\"host\":\"c\",\"n\":10}\n"
    );
    let out = s.ok(
        &[
            "sql",
            "SELECT max(ts) AS m, upper(min(host)) AS h FROM files",
            "--table",
            &format!("files={glob}"),
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"m\":1999,\"h\":\"A\"}\n");
    let out = s.ok(
        &[
            "sql",
            &format!(r#"SELECT count(*) AS n FROM "file:{glob}" f JOIN "//logs" l ON f.host = l.host AND f.ts = l.ts"#),
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"n\":6000}\n");
    let err = s.fails(&["sql", "SELECT * FROM nowhere"], None);
    assert!(err.contains("nowhere"), "{err}");
}

#[test]
fn sql_writes_files_only_when_allowed() {
    let s = TestStore::new();
    let out = s.dir.path().join("out.csv");
    let copy = format!("COPY (SELECT 1 AS a) TO '{}' STORED AS CSV", out.display());
    let err = s.fails(&["sql", &copy], None);
    assert!(err.contains("--allow-writes"), "{err}");
    assert!(!out.exists(), "the refused COPY wrote its file");
    s.ok(&["sql", "--allow-writes", &copy], None);
    assert!(out.exists());
}

#[test]
fn sql_reads_a_quoted_parquet_path_as_duckdb_does() {
    let (s, glob) = exported();
    let q = format!("SELECT count(*) AS n FROM '{glob}' WHERE host = 'b'");
    assert_eq!(
        s.ok(&["sql", &q, "--format", "json"], None),
        "{\"n\":2000}\n"
    );
    let one = glob.replace("*.parquet", "part-00000.parquet");
    let q = format!("SELECT count(*) AS n FROM '{one}'");
    assert_eq!(
        s.ok(&["sql", &q, "--format", "json"], None),
        "{\"n\":2000}\n"
    );
}
