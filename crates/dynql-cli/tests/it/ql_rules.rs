//! YT QL rules taken from YT's own query tests (issue 39, item 11), through the binary.

use super::TestStore;

/// A store with `//s`: `k` int64 key, `s` string and `d` double, one row with nulls.
fn strings() -> TestStore {
    let store = TestStore::new();
    store.ok(
        &[
            "create",
            "table",
            "//s",
            "--attributes",
            "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=s;type=string};{name=d;type=double}]}",
        ],
        None,
    );
    store.ok(
        &["insert-rows", "//s"],
        Some("{k=1;s=\"abc\";d=9007199254740992.0};{k=2;s=#;d=#}"),
    );
    store
}

fn select(store: &TestStore, query: &str) -> String {
    store.ok(&["select-rows", query, "--format", "json"], None)
}

#[test]
fn regex_predicates_on_null_strings_are_false() {
    let store = strings();
    let rows = select(
        &store,
        "k, regex_full_match(\"a.*\", s) as f, regex_partial_match(\"b\", s) as p, \
         regex_replace_first(\"b\", s, \"x\") as r, regex_extract(\"(b)\", s, \"\\\\1\") as e \
         from [//s]",
    );
    assert_eq!(
        rows,
        "{\"k\":1,\"f\":true,\"p\":true,\"r\":\"axc\",\"e\":\"b\"}\n\
         {\"k\":2,\"f\":false,\"p\":false,\"r\":null,\"e\":null}\n"
    );
    // So NOT of them keeps the row with a null string.
    let rows = select(
        &store,
        "k from [//s] where not regex_partial_match(\"b\", s)",
    );
    assert_eq!(rows, "{\"k\":2}\n");
}

#[test]
fn integer_literals_a_double_cannot_hold_are_refused() {
    let store = strings();
    let err = store.fails(
        &["select-rows", "k from [//s] where d = 9007199254740993"],
        None,
    );
    assert!(
        err.contains("Failed to cast 9007199254740993 to double: inaccurate conversion"),
        "{err}"
    );
    // The error points at the literal.
    assert!(err.contains("^^^^^^^^^^^^^^^^"), "{err}");
    let err = store.fails(&["select-rows", "k from [//s] where k in (1.5)"], None);
    assert!(err.contains("inaccurate conversion"), "{err}");
    // 2^53 converts exactly, and so does an integral double for an integer column.
    assert_eq!(
        select(&store, "k from [//s] where d = 9007199254740992"),
        "{\"k\":1}\n"
    );
    assert_eq!(
        select(&store, "k from [//s] where k in (1.0)"),
        "{\"k\":1}\n"
    );
}

fn joined() -> TestStore {
    let store = TestStore::new();
    for (path, value) in [("//l", "a"), ("//r", "c"), ("//ra", "a")] {
        store.ok(
            &[
                "create",
                "table",
                path,
                "--attributes",
                &format!("{{dynamic=%true; schema=[{{name=k;type=int64;sort_order=ascending}};{{name={value};type=string}}]}}"),
            ],
            None,
        );
    }
    store.ok(&["insert-rows", "//l"], Some("{k=1;a=x};{k=2;a=z}"));
    store.ok(&["insert-rows", "//r"], Some("{k=1;c=y}"));
    store.ok(&["insert-rows", "//ra"], Some("{k=1;a=w}"));
    store
}

#[test]
fn star_over_aliased_tables_names_columns_with_the_alias() {
    let store = joined();
    let q = "* from [//l] as l join [//r] as r on l.k = r.k";
    assert_eq!(
        select(&store, q),
        "{\"l.k\":1,\"l.a\":\"x\",\"r.k\":1,\"r.c\":\"y\"}\n"
    );
    let yson = store.ok(&["select-rows", q, "--format", "yson"], None);
    assert_eq!(
        yson.trim(),
        "{\"l.k\"=1;\"l.a\"=\"x\";\"r.k\"=1;\"r.c\"=\"y\";};"
    );
    // Without aliases names stay bare; the join column appears once.
    for q in [
        "* from [//l] join [//r] using k",
        "* from [//l] join [//r] on k = k",
    ] {
        let yson = store.ok(&["select-rows", q, "--format", "yson"], None);
        assert_eq!(yson.trim(), "{\"k\"=1;\"a\"=\"x\";\"c\"=\"y\";};", "{q}");
    }
}

#[test]
fn errors_carry_yt_words() {
    let store = joined();
    let cases = [
        ("k from [//l] wher k = 1", "syntax error"),
        ("k from [//l] where a = 'open", "syntax error"),
        (
            "k from [//l] where k in (1, 'x')",
            "Types mismatch in tuple",
        ),
        (
            "k from [//l] where (k, a) in ((1, 2))",
            "Types mismatch in tuple",
        ),
        (
            "a from [//l] join [//ra] on k = k",
            "Ambiguous resolution for column \"a\"",
        ),
        (
            "* from [//l] join [//ra] on k = k",
            "Ambiguous resolution for column \"a\"",
        ),
    ];
    for (q, want) in cases {
        let err = store.fails(&["select-rows", q], None);
        assert!(err.contains(want), "{q}: {err}");
        // The position and the caret line stay.
        assert!(err.contains('^'), "{q}: {err}");
    }
    let err = store.fails(&["select-rows", "k from [//l] wher k = 1"], None);
    assert!(err.contains("at position 18"), "{err}");
    // A qualified name is not ambiguous.
    assert_eq!(
        select(
            &store,
            "l.a, ra.a from [//l] as l join [//ra] as ra on l.k = ra.k"
        ),
        "{\"l.a\":\"x\",\"ra.a\":\"w\"}\n"
    );
}

#[test]
fn string_matches_parse_and_match_as_in_yt() {
    let store = strings();
    store.ok(
        &["insert-rows", "//s"],
        Some("{k=3;s=\"50%\"};{k=4;s=\"500\"};{k=5;s=\"été\"};{k=6;s=\"xabcx\"}"),
    );
    let keys = |q: &str| select(&store, &format!("k from [//s] where {q}"));
    assert_eq!(keys("s like '50!%' escape '!'"), "{\"k\":3}\n");
    assert_eq!(keys("s like '50\\\\%'"), "{\"k\":3}\n");
    assert_eq!(
        keys("s not like '50!%' escape '!' and k > 2"),
        "{\"k\":4}\n{\"k\":5}\n{\"k\":6}\n"
    );
    // `_` is one character; ILIKE folds case beyond ASCII.
    assert_eq!(keys("s like '_t_'"), "{\"k\":5}\n");
    assert_eq!(keys("s ilike 'ÉTÉ'"), "{\"k\":5}\n");
    // RLIKE and REGEXP match the whole string, as YT's RE2::FullMatch.
    assert_eq!(keys("s rlike 'a.c'"), "{\"k\":1}\n");
    assert_eq!(keys("s regexp '.*abc.*'"), "{\"k\":1}\n{\"k\":6}\n");
    assert_eq!(
        keys("s not regexp '[0-9]+%?' and k > 2"),
        "{\"k\":5}\n{\"k\":6}\n"
    );
    // A null text matches nothing, negated or not.
    assert_eq!(keys("s like '%' or s not like '%'"), keys("s like '%'"));
    for (q, want) in [
        (
            "s rlike 'a' escape '!'",
            "ESCAPE should not be used together with REGEXP (RLIKE)",
        ),
        (
            "s like 'a' escape '!!'",
            "Escape string must be empty or one character",
        ),
        (
            "s like 'a!' escape '!'",
            "Incomplete escape sequence at the end of LIKE pattern",
        ),
        ("s like 'a' like 'b'", "syntax error"),
        ("k | 1 like 'b'", "syntax error"),
    ] {
        let err = store.fails(&["select-rows", &format!("k from [//s] where {q}")], None);
        assert!(err.contains(want), "{q}: {err}");
    }
}
