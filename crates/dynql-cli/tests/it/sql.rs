//! `dynql sql` as DuckDB and datafusion-cli users type it: several statements per call,
//! tables of the session (`CREATE TABLE … AS SELECT`), `read_parquet`, `COPY … TO` Parquet,
//! and clear refusals of what SQL may not do to dynamic tables.

use crate::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";

fn with_table() -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    s.ok(
        &["insert-rows", "//t", "--format", "json"],
        Some("{\"k\": 1, \"v\": \"a\"}\n{\"k\": 2, \"v\": \"b\"}\n{\"k\": 3, \"v\": \"c\"}\n"),
    );
    s
}

#[test]
fn statements_run_in_order_and_session_tables_last_until_the_call_ends() {
    let s = with_table();
    let script = r#"CREATE TABLE c AS SELECT k * 10 AS a, v FROM "//t" WHERE k > 1;
        SELECT count(*) AS n FROM c;
        INSERT INTO c VALUES (40, 'd');
        SELECT upper(v) AS u FROM c ORDER BY a DESC LIMIT 2"#;
    let out = s.ok(&["sql", script, "--format", "json"], None);
    // CREATE returns nothing; INSERT into a session table returns its count.
    assert_eq!(
        out,
        "{\"n\":2}\n{\"count\":1}\n{\"u\":\"D\"}\n{\"u\":\"C\"}\n"
    );
    // The session ended with the call.
    let err = s.fails(&["sql", "SELECT * FROM c"], None);
    assert!(err.contains(".c' not found"), "{err}");
    // An error names its statement; the results before it were printed.
    let out = s.run(
        &[
            "sql",
            "SELECT 1 AS a; SELECT nope; SELECT 3 AS c",
            "--format",
            "json",
        ],
        None,
    );
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"a\":1}\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("statement 2 of 3") && err.contains("nope"),
        "{err}"
    );
    // A script that does not parse runs nothing.
    let err = s.fails(&["sql", "CREATE TABLE x AS SELECT 1; SELEC 2"], None);
    assert!(err.contains("SELEC"), "{err}");
}

#[test]
fn query_results_go_to_parquet_and_read_back_with_read_parquet() {
    let s = with_table();
    let out = s.dir.path().join("result.parquet");
    let copy = format!(
        r#"COPY (SELECT k, v FROM "//t" WHERE k >= 2) TO '{}'"#,
        out.display()
    );
    let err = s.fails(&["sql", &copy], None);
    assert!(err.contains("--allow-writes"), "{err}");
    assert!(!out.exists(), "the refused COPY wrote its file");
    assert_eq!(
        s.ok(&["sql", "--allow-writes", &copy, "--format", "json"], None),
        "{\"count\":2}\n"
    );
    let read = format!(
        "SELECT sum(k) AS s, max(v) AS m FROM read_parquet('{}')",
        out.display()
    );
    assert_eq!(
        s.ok(&["sql", &read, "--format", "json"], None),
        "{\"s\":5,\"m\":\"c\"}\n"
    );
    // A glob, joined with the dynamic table, and a whole table copied by name with options.
    let all = s.dir.path().join("all.parquet");
    let copy = format!(
        r#"COPY "//t" TO '{}' STORED AS PARQUET OPTIONS (compression 'uncompressed')"#,
        all.display()
    );
    s.ok(&["sql", "--allow-writes", &copy], None);
    let join = format!(
        r#"SELECT count(*) AS n FROM read_parquet('{}/*.parquet') f JOIN "//t" t ON f.k = t.k"#,
        s.dir.path().display()
    );
    assert_eq!(
        s.ok(&["sql", &join, "--format", "json"], None),
        "{\"n\":5}\n"
    );
    // Every codec writes (DuckDB's COMPRESSION and COMPRESSION_LEVEL) and reads back.
    for (name, options) in [
        ("z", "compression 'zstd', compression_level 9"),
        ("g", "compression 'gzip'"),
        ("l", "compression 'lz4'"),
        ("b", "compression 'brotli'"),
    ] {
        let file = s.dir.path().join("codecs").join(format!("{name}.parquet"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let copy = format!(r#"COPY "//t" TO '{}' OPTIONS ({options})"#, file.display());
        s.ok(&["sql", "--allow-writes", &copy], None);
        let read = format!(
            "SELECT count(*) AS n, sum(k) AS s FROM read_parquet('{}')",
            file.display()
        );
        assert_eq!(
            s.ok(&["sql", &read, "--format", "json"], None),
            "{\"n\":3,\"s\":6}\n",
            "{options}"
        );
    }
    // What the writer cannot do is refused, and nothing is left behind.
    let lzo = format!(
        r#"COPY "//t" TO '{}' OPTIONS (compression 'lzo')"#,
        s.dir.path().join("z.parquet").display()
    );
    let err = s.fails(&["sql", "--allow-writes", &lzo], None);
    assert!(err.contains("unknown compression \"lzo\""), "{err}");
    assert!(!s.dir.path().join("z.parquet").exists());
    let err = s.fails(&["sql", "SELECT * FROM read_parquet(1)"], None);
    assert!(err.contains("read_parquet takes one location"), "{err}");
    let err = s.fails(
        &["sql", "SELECT * FROM read_parquet('nowhere/*.parquet')"],
        None,
    );
    assert!(err.contains("nowhere"), "{err}");
}

#[test]
fn sql_reads_dynamic_tables_and_says_how_to_change_them() {
    let s = with_table();
    for (sql, expected) in [
        (r#"INSERT INTO "//t" VALUES (5, 'x')"#, "insert-rows"),
        (r#"DROP TABLE "//t""#, "remove"),
        (r#"CREATE TABLE "//x" AS SELECT 1 AS a"#, "create table"),
        (
            r#"CREATE VIEW w AS SELECT * FROM "//t""#,
            "CREATE TABLE w AS SELECT",
        ),
    ] {
        let err = s.fails(&["sql", sql], None);
        assert!(err.contains(expected), "{sql}: {err}");
    }
    // Nothing changed.
    assert_eq!(
        s.ok(
            &[
                "sql",
                r#"SELECT count(*) AS n FROM "//t""#,
                "--format",
                "json"
            ],
            None
        ),
        "{\"n\":3}\n"
    );
    assert!(s.fails(&["get", "//x/@schema"], None).contains("//x"));
}

#[test]
fn the_shell_keeps_sql_tables_and_sees_writes_between_statements() {
    let s = with_table();
    let script = r#"\format json
sql CREATE TABLE c AS SELECT k FROM "//t";
insert-rows //t --format json
{"k": 4, "v": "d"}

sql SELECT (SELECT count(*) FROM c) AS copied, (SELECT count(*) FROM "//t") AS now;
"#;
    let out = s.ok(&["shell"], Some(script));
    assert_eq!(out, "{\"copied\":3,\"now\":4}\n");
}

#[test]
fn print_statistics_shows_what_each_statement_read() {
    let s = with_table();
    let out = s.run(
        &[
            "sql",
            r#"SELECT count(*) AS n FROM "//t"; SELECT v FROM "//t" WHERE k = 2"#,
            "--format",
            "json",
            "--print-statistics",
        ],
        None,
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"n\":3}\n{\"v\":\"b\"}\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let maps: Vec<&str> = err.lines().filter(|l| l.contains("rows_read")).collect();
    assert_eq!(maps.len(), 2, "{err}");
    assert!(maps[0].contains("\"rows_read\"=3"), "{err}");
    assert!(maps[1].contains("\"rows_read\"=1"), "{err}");
    assert!(maps[0].contains("\"row_groups_read\""), "{err}");
}

/// A dynamic table's `date`, `datetime`, `timestamp` and `interval` columns are SQL dates,
/// timestamps and durations in YT's units (issue 73, item 4): `date_trunc` works on them
/// (it failed with DataFusion's internal error over the plain integers), they print as
/// dates and instants, and a filter on a date key with a DATE literal still reads one row.
#[test]
fn temporal_columns_are_dates_and_timestamps_in_sql() {
    let s = TestStore::new();
    s.ok(
        &[
            "create", "table", "//sales", "--attributes",
            "{dynamic=%true; schema=[{name=d;type=date;sort_order=ascending};{name=ts;type=timestamp};{name=dt;type=datetime};{name=iv;type=interval};{name=amount;type=double}]}",
        ],
        None,
    );
    s.ok(
        &["insert-rows", "//sales"],
        Some("{d=19875u;ts=1717200000000000u;dt=1717200000u;iv=3600000000;amount=1.5};{d=19905u;ts=1719800000000000u;dt=1719800000u;iv=-5;amount=2.0};{d=19906u;ts=1719900000000000u;dt=1719900000u;iv=7;amount=4.0}"),
    );
    let out = s.ok(
        &["sql", "SELECT date_trunc('month', ts) AS m, sum(amount) AS s FROM \"//sales\" GROUP BY 1 ORDER BY 1", "--format", "json"],
        None,
    );
    assert_eq!(
        out,
        "{\"m\":\"2024-06-01T00:00:00Z\",\"s\":1.5}\n{\"m\":\"2024-07-01T00:00:00Z\",\"s\":6.0}\n"
    );
    let out = s.ok(
        &["sql", "SELECT d, dt, arrow_typeof(ts) AS t, arrow_typeof(iv) AS i FROM \"//sales\" WHERE d = DATE '2024-06-01'", "--format", "json", "--print-statistics"],
        None,
    );
    let first = out.lines().next().unwrap();
    assert!(first.contains("\"d\":\"2024-06-01\""), "{out}");
    assert!(first.contains("\"dt\":\"2024-06-01T00:00:00Z\""), "{out}");
    assert!(
        first.contains("Timestamp(µs, \\\"UTC\\\")") || first.contains("Timestamp(Microsecond"),
        "{out}"
    );
    assert!(first.contains("Duration"), "{out}");
    // The DATE literal fixes the key: one row read of three.
    let out = s.run(
        &[
            "sql",
            "SELECT d FROM \"//sales\" WHERE d = DATE '2024-06-01'",
            "--format",
            "json",
            "--print-statistics",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"rows_read\"=1;"), "{stderr}");
    // YT QL still reads the stored integers.
    let ql = s.ok(
        &[
            "select-rows",
            "d from [//sales] where d = 19875u",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(ql, "{\"d\":19875}\n");
}

#[test]
fn statements_come_from_stdin_with_a_dash_or_from_a_file() {
    let s = with_table();
    let script = "SELECT count(*) AS n FROM \"//t\";\nSELECT max(v) AS m FROM \"//t\"\n";
    let both = "{\"n\":3}\n{\"m\":\"c\"}\n";
    assert_eq!(s.ok(&["sql", "-", "--format", "json"], Some(script)), both);
    let file = s.dir.path().join("q.sql");
    std::fs::write(&file, script).unwrap();
    let path = file.to_str().unwrap();
    assert_eq!(
        s.ok(&["sql", "--file", path, "--format", "json"], None),
        both
    );
    // One source at a time; a missing file is named.
    let err = s.fails(&["sql", "SELECT 1", "--file", path], None);
    assert!(err.contains("cannot be used with"), "{err}");
    let err = s.fails(&["sql"], None);
    assert!(err.contains("--file"), "{err}");
    let err = s.fails(&["sql", "--file", "nowhere.sql"], None);
    assert!(err.contains("nowhere.sql"), "{err}");
    // The shell's stdin is its script: `sql -` there is refused, `--file` runs.
    let err = s.fails(&["shell"], Some("sql -;\n"));
    assert!(err.contains("sql -") && err.contains("--file"), "{err}");
    let out = s.ok(
        &["shell"],
        Some(&format!("\\format json\nsql --file '{path}';\n")),
    );
    assert_eq!(out, both);
}

#[test]
fn duckdb_s_from_first_queries_select_every_column() {
    let s = with_table();
    let file = s.dir.path().join("f.parquet");
    let f = file.display();
    s.ok(
        &[
            "sql",
            "--allow-writes",
            &format!(r#"COPY (SELECT * FROM "//t") TO '{f}'"#),
        ],
        None,
    );
    let json = |sql: &str| s.ok(&["sql", sql, "--format", "json"], None);
    assert_eq!(
        json(&format!("FROM '{f}' LIMIT 1")),
        "{\"k\":1,\"v\":\"a\"}\n"
    );
    assert_eq!(
        json(&format!("from '{f}' WHERE k > 1 ORDER BY k DESC")),
        "{\"k\":3,\"v\":\"c\"}\n{\"k\":2,\"v\":\"b\"}\n"
    );
    assert_eq!(
        json(r#"FROM "//t" WHERE v = 'b'"#),
        "{\"k\":2,\"v\":\"b\"}\n"
    );
    // In a subquery, after another statement, and FROM … SELECT as before.
    assert_eq!(
        json(&format!(
            "SELECT 1 AS a; SELECT count(*) AS n FROM (FROM '{f}' WHERE k >= 2)"
        )),
        "{\"a\":1}\n{\"n\":2}\n"
    );
    assert_eq!(
        json(&format!("FROM '{f}' SELECT k * 10 AS t WHERE k = 3")),
        "{\"t\":30}\n"
    );
    // A FROM-first query that is wrong is still an error of its own.
    let err = s.fails(&["sql", &format!("FROM '{f}' WHERE nope = 1")], None);
    assert!(err.contains("nope"), "{err}");
}
