//! Small queries that ask for huge strings: a long literal against many rows, aliases that
//! double a string, a value past 16 MiB. Each runs in bounded memory and either answers or
//! fails with exit status 1 and an error naming its limit; none panics (exit status 101).
//!
//! Queries longer than an argument may be (128 KiB on Linux) go to `dynql shell` on stdin.

use std::process::Output;

use crate::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=s;type=string}]}";

/// A store with `//t`: 9,000 rows `{k=i; s="abcdefghij"}`, more than one batch of 8,192.
fn store_with_rows() -> TestStore {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    let rows: String = (0..9000)
        .map(|k| format!("{{\"k\":{k},\"s\":\"abcdefghij\"}}\n"))
        .collect();
    s.ok(&["insert-rows", "//t", "--format", "json"], Some(&rows));
    s
}

/// At most the first 2,000 characters of `text` (stderr may echo a long query).
fn head(text: &str) -> String {
    text.chars().take(2000).collect()
}

/// Asserts the run failed as a query error does (status 1, no panic); returns stderr.
fn fails_cleanly(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{}", head(&stderr));
    assert!(!stderr.contains("panicked"), "{}", head(&stderr));
    stderr
}

/// `concat(s, s) as a1, concat(a1, a1) as a2, …` up to `a{levels}` (or with `||`).
fn doubling(levels: usize, operator: bool) -> String {
    let double = |x: &str| {
        if operator {
            format!("({x} || {x})")
        } else {
            format!("concat({x}, {x})")
        }
    };
    let mut items = vec!["k".to_string(), format!("{} as a1", double("s"))];
    for i in 2..=levels {
        items.push(format!("{} as a{i}", double(&format!("a{}", i - 1))));
    }
    format!("{} from [//t]", items.join(", "))
}

#[test]
fn a_long_literal_compared_with_a_column_is_not_copied_per_row() {
    let s = store_with_rows();
    let long = "x".repeat(300_000);
    let high = "y".repeat(300_000);
    // Before, each of these copied the literal into every row of a batch (8,192 x 300 KB,
    // past a Binary array's 2 GiB) and died on Arrow's "offset overflow".
    let script = format!(
        "select k from [//t] where s = '{long}';\n\
         select k from [//t] where '{long}' <= s;\n\
         select k from [//t] where is_substr('{long}', s);\n\
         select k from [//t] where s between '{long}' and '{high}';\n"
    );
    let out = s.run(&["shell"], Some(&script));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}", head(&stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    // The literal still compares as a value: here it matches one row.
    let matched = format!("select k from [//t] where s = '{long}' or k = 3;\n");
    let out = s.run(&["shell"], Some(&matched));
    assert!(
        out.status.success(),
        "{}",
        head(&String::from_utf8_lossy(&out.stderr))
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"k\"=3;};\n");
}

#[test]
fn a_projected_long_literal_over_many_rows_is_refused() {
    let s = store_with_rows();
    // A result column of 9,000 copies of 300 KB: 2.7 GB.
    let script = format!("select k, '{}' as x from [//t];\n", "x".repeat(300_000));
    let stderr = fails_cleanly(&s.run(&["shell"], Some(&script)));
    assert!(
        stderr.contains("Expression result is too large"),
        "{}",
        head(&stderr)
    );
    assert!(stderr.contains("(limit 268435456)"), "{}", head(&stderr));
    // A short literal over the same rows is a column like any other.
    let out = s.ok(
        &[
            "select-rows",
            "sum(1) as n, x from [//t] group by 'abc' as x",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out, "{\"n\":9000,\"x\":\"abc\"}\n");
}

#[test]
fn aliases_that_double_a_string_fail_fast_naming_the_limit() {
    let s = store_with_rows();
    for operator in [false, true] {
        // The query: 15 levels, 2^15 copies of s per row at the last one, and every
        // level computed again for each alias that uses it.
        let query = doubling(15, operator);
        let started = std::time::Instant::now();
        let stderr = fails_cleanly(&s.run(&["select-rows", &query, "--format", "json"], None));
        assert!(
            stderr.contains("Expression result is too large"),
            "{query}: {stderr}"
        );
        assert!(stderr.contains("(limit 268435456)"), "{query}: {stderr}");
        // It used to run for a minute and reach 10 GB; the budget stops it at 256 MiB of
        // strings (about 2 s in a release build; the bound leaves room for a debug one).
        assert!(
            started.elapsed().as_secs() < 60,
            "{query}: {:?}",
            started.elapsed()
        );
        // Five levels are small and computed as before.
        let query = format!("{} where k = 7", doubling(5, operator));
        let out = s.ok(&["select-rows", &query, "--format", "json"], None);
        let row: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON row");
        assert_eq!(row["k"], 7);
        assert_eq!(row["a1"], "abcdefghij".repeat(2));
        assert_eq!(row["a5"], "abcdefghij".repeat(32));
    }
}

#[test]
fn a_value_over_16_mib_is_refused() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//t", "--attributes", SCHEMA], None);
    let row = format!("{{\"k\":1,\"s\":\"{}\"}}\n", "m".repeat(1 << 20));
    s.ok(&["insert-rows", "//t", "--format", "json"], Some(&row));
    // a5 would be 32 MiB: refused before it is allocated.
    let query = "concat(s, s) as a1, concat(a1, a1) as a2, concat(a2, a2) as a3, \
                 concat(a3, a3) as a4, concat(a4, a4) as a5 from [//t]";
    let stderr = fails_cleanly(&s.run(&["select-rows", query, "--format", "json"], None));
    assert!(
        stderr.contains("String value is too long: 33554432 bytes (limit 16777216)"),
        "{stderr}"
    );
    // a4, 16 MiB, is at the limit and allowed.
    let query = "length(concat((concat((concat((concat(s, s) as a1), a1) as a2), a2) as a3), a3)) \
                 as n from [//t]";
    let out = s.ok(&["select-rows", query, "--format", "json"], None);
    assert_eq!(out, "{\"n\":16777216}\n");
    // The same through `||`, which the row evaluator computes.
    let query = "length((((s || s) || (s || s)) || ((s || s) || (s || s))) \
                 || (((s || s) || (s || s)) || ((s || s) || (s || s)))) as n from [//t]";
    let out = s.ok(&["select-rows", query, "--format", "json"], None);
    assert_eq!(out, "{\"n\":16777216}\n");
    let query = format!(
        "length(({}) || s) as n from [//t]",
        "s || ".repeat(15) + "s"
    );
    let stderr = fails_cleanly(&s.run(&["select-rows", &query, "--format", "json"], None));
    assert!(
        stderr.contains("String value is too long: 17825792 bytes (limit 16777216)"),
        "{stderr}"
    );
}
