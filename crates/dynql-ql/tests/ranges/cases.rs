//! Fixed cases: `testdata/conformance/ranges-public.jsonl`, the spec's table B.7 and more
//! shapes the spec describes.

use dynql_core::TableSchema;
use dynql_ql::ranges::{used_key_width, KeyRange};
use serde_json::Value as Json;

use super::{infer, key_schema};

fn notation(ranges: &[KeyRange]) -> Vec<String> {
    ranges.iter().map(KeyRange::to_string).collect()
}

// ------------------------------------------------------------------ public conformance cases

/// JSON equality with numbers compared by value (int64 and uint64 print alike).
fn same_json(want: &Json, got: &Json) -> bool {
    match (want, got) {
        (Json::Number(a), Json::Number(b)) => {
            match (a.as_i64(), a.as_u64(), b.as_i64(), b.as_u64()) {
                (Some(x), _, Some(y), _) => x == y,
                (_, Some(x), _, Some(y)) => x == y,
                _ => a.as_f64() == b.as_f64() && a.as_f64().is_some(),
            }
        }
        (Json::Array(a), Json::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_json(x, y))
        }
        (Json::Object(a), Json::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => want == got,
    }
}

#[test]
fn public_conformance_cases_pass() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/conformance/ranges-public.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("ranges-public.jsonl");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Json = serde_json::from_str(line).expect("case JSON");
        let id = case["id"].as_str().unwrap_or("?").to_string();
        count += 1;
        let schema = TableSchema::parse(&case["schema"].to_string()).expect("case schema");
        let predicate = case["predicate"].as_str().expect("predicate");
        let limit = case["range_expansion_limit"].as_u64().unwrap_or(1000);
        let result = infer(&schema, predicate, limit);
        match (&case["expect"]["ranges"], &case["expect"]["error"], result) {
            (Json::Array(want), _, Ok(got)) => {
                let got: Vec<Json> = got.iter().map(KeyRange::to_json).collect();
                let want = Json::Array(want.clone());
                if !same_json(&want, &Json::Array(got.clone())) {
                    failures.push(format!("{id} [{predicate}]: expected {want}, got {got:?}"));
                }
            }
            (_, Json::String(want), Err(e)) => {
                if !e.to_string().to_lowercase().contains(&want.to_lowercase()) {
                    failures.push(format!("{id}: expected error {want:?}, got {e}"));
                }
            }
            (_, _, Ok(got)) => {
                failures.push(format!("{id}: expected an error, got {:?}", notation(&got)))
            }
            (_, _, Err(e)) => failures.push(format!("{id} [{predicate}]: unexpected error {e}")),
        }
    }
    assert!(count >= 21, "only {count} cases read from {path}");
    assert!(
        failures.is_empty(),
        "{} of {count} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ------------------------------------------------------------------ spec table B.7

const S3: &str = "k:int64, l:int64, m:int64";

/// (case, schema, predicate, expected ranges in the spec's notation); limit 1000.
const SPEC_CASES: &[(&str, &str, &str, &[&str])] = &[
    ("C1", S3, "k = 50 and l = 50", &["[50,50]..[50,50,MAX]"]),
    (
        "C2",
        S3,
        "k = 50 and l >= 10 and l < 90 and m = 50",
        &["[50,10]..[50,90]"],
    ),
    ("C3", S3, "k = 50 and m = 50", &["[50]..[50,MAX]"]),
    ("C4a", S3, "k >= 90 and k < 10", &[]),
    ("C4b", S3, "false", &[]),
    (
        "C5",
        S3,
        "k = 50 and m = 50 or k = 75 and m = 50",
        &["[50]..[50,MAX]", "[75]..[75,MAX]"],
    ),
    (
        "C6",
        S3,
        "(k = 50 and l != 50) and (l > 40 and l < 60)",
        &["[50,40,MAX]..[50,50]", "[50,50,MAX]..[50,60]"],
    ),
    (
        "C8",
        S3,
        "(k, m) in ((2, 3), (4, 6)) and l in (2, 3)",
        &[
            "[2,2,3]..[2,2,3,MAX]",
            "[2,3,3]..[2,3,3,MAX]",
            "[4,2,6]..[4,2,6,MAX]",
            "[4,3,6]..[4,3,6,MAX]",
        ],
    ),
    (
        "C10",
        S3,
        "(k, l) >= (1, 2) and (k, l) < (1, 4)",
        &["[1,2]..[1,4]"],
    ),
    (
        "C13",
        "k:int64, l:int64, m:int64, s:string",
        "k = 50 and l = 50 and m = 50 and is_prefix(\"abc\", s)",
        &["[50,50,50,\"abc\"]..[50,50,50,\"abd\"]"],
    ),
    (
        "C15a",
        "k:int64=l*2, l:int64, m:int64",
        "a = 10",
        &["<>..[MAX]"],
    ),
    (
        "C15b",
        "k:int64=l*2, l:int64, m:int64",
        "l < 10",
        &["<>..[MAX]"],
    ),
    (
        "C16a",
        "k:int64=l*2, l:int64, m:int64",
        "l = 10",
        &["[20,10]..[20,10,MAX]"],
    ),
    (
        "C16b",
        "k:int64=l*2, l:int64, m:int64",
        "l in (1,2,3)",
        &["[2,1]..[2,1,MAX]", "[4,2]..[4,2,MAX]", "[6,3]..[6,3,MAX]"],
    ),
    (
        "C17",
        "k:int64=l*2, l:int64, m:int64",
        "l = 10 and m > 0 and m < 50",
        &["[20,10,0,MAX]..[20,10,50]"],
    ),
    (
        "C20",
        "k:int64=n+1, l:int64, m:int64, n:int64",
        "n in (10,30) and l in (20,40)",
        &[
            "[11,20]..[11,20,MAX]",
            "[11,40]..[11,40,MAX]",
            "[31,20]..[31,20,MAX]",
            "[31,40]..[31,40,MAX]",
        ],
    ),
    (
        "C24a",
        "k:int64=l/2, l:int64",
        "l >= 3 and l < 6",
        &["[1,3]..[1,6]", "[2,3]..[2,6]"],
    ),
    (
        "C24b",
        "k:int64=l/2, l:int64",
        "l > 3 and l < 6",
        &["[2,3,MAX]..[2,6]"],
    ),
    (
        "C27",
        "h:uint64=farm_hash(k)%10, k:int64, l:int64",
        "k between 1 and 15 and h between 2 and 5",
        &[
            "[2u,1]..[2u,15,MAX]",
            "[3u,1]..[3u,15,MAX]",
            "[4u,1]..[4u,15,MAX]",
            "[5u,1]..[5u,15,MAX]",
        ],
    ),
    // Dividing is cheaper than enumerating the modulo: no NULL.
    (
        "C30a",
        "k:uint64=(l/3)%2, l:uint64",
        "l >= 0 and l < 5",
        &["[0u,0u]..[0u,5u]", "[1u,0u]..[1u,5u]"],
    ),
    // The modulo is cheaper: NULL, 0u, 1u.
    (
        "C30b",
        "k:uint64=(l/3)%2, l:uint64",
        "l >= 0 and l < 10",
        &[
            "[NULL,0u]..[NULL,10u]",
            "[0u,0u]..[0u,10u]",
            "[1u,0u]..[1u,10u]",
        ],
    ),
];

fn check_table(cases: &[(&str, &str, &str, &[&str])], limit: u64) {
    let mut failures = Vec::new();
    for (id, schema, predicate, want) in cases {
        match infer(&key_schema(schema), predicate, limit) {
            Ok(got) => {
                let got = notation(&got);
                if got != *want {
                    failures.push(format!(
                        "{id} [{predicate}]: expected {want:?}, got {got:?}"
                    ));
                }
            }
            Err(e) => failures.push(format!("{id} [{predicate}]: error {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn spec_table_cases_match_exactly() {
    check_table(SPEC_CASES, 1000);
}

// ------------------------------------------------------------------ more shapes of the spec

#[test]
fn not_is_pushed_down_through_and_or_and_comparisons() {
    check_table(
        &[
            ("not-or", S3, "not (k < 5 or k > 10)", &["[5]..[10,MAX]"]),
            (
                "not-and",
                S3,
                "not (k != 5 and k != 7)",
                &["[5]..[5,MAX]", "[7]..[7,MAX]"],
            ),
            ("not-not", S3, "not not (k = 3)", &["[3]..[3,MAX]"]),
            ("not-false", S3, "k = 3 and not false", &["[3]..[3,MAX]"]),
            ("not-in-opaque", S3, "not (k in (1, 2))", &["<>..[MAX]"]),
            ("not-in", S3, "k not in (1, 2)", &["<>..[MAX]"]),
            (
                "not-not-in",
                S3,
                "not (k not in (1, 2))",
                &["[1]..[1,MAX]", "[2]..[2,MAX]"],
            ),
            ("not-between", S3, "not (k between 1 and 2)", &["<>..[MAX]"]),
            (
                "not-is-prefix",
                "s:string",
                "not is_prefix(\"a\", s)",
                &["<>..[MAX]"],
            ),
        ],
        1000,
    );
}

#[test]
fn null_is_the_smallest_value() {
    check_table(
        &[
            ("lt-null", S3, "k < null", &[]),
            ("le-null", S3, "k <= null", &["<>..[NULL,MAX]"]),
            ("eq-null", S3, "k = null", &["[NULL]..[NULL,MAX]"]),
            ("ne-null", S3, "k != null", &["[NULL,MAX]..[MAX]"]),
            ("ge-null", S3, "k >= null and k < 3", &["[NULL]..[3]"]),
        ],
        1000,
    );
}

#[test]
fn literal_on_the_left_and_non_key_columns() {
    check_table(
        &[
            ("mirror", S3, "5 < k and 7 >= k", &["[5,MAX]..[7,MAX]"]),
            ("non-key", S3, "a = 1 and k = 2", &["[2]..[2,MAX]"]),
            ("non-key-or", S3, "a = 1 or k = 2", &["<>..[MAX]"]),
            ("column-vs-column", S3, "k = l", &["<>..[MAX]"]),
            ("function", S3, "k + 1 = 2", &["<>..[MAX]"]),
            ("is-null", S3, "is_null(k)", &["<>..[MAX]"]),
            ("open-upper", S3, "k > 10", &["[10,MAX]..[MAX]"]),
        ],
        1000,
    );
}

#[test]
fn in_and_between_tuples() {
    check_table(
        &[
            // Members are sorted into key order; non-key members are ignored.
            (
                "in-reordered",
                S3,
                "(l, k) in ((1, 2), (3, 4))",
                &["[2,1]..[2,1,MAX]", "[4,3]..[4,3,MAX]"],
            ),
            (
                "in-non-key",
                S3,
                "(k, a) in ((1, 2), (1, 3))",
                &["[1]..[1,MAX]"],
            ),
            (
                "in-duplicates",
                S3,
                "k in (3, 1, 3)",
                &["[1]..[1,MAX]", "[3]..[3,MAX]"],
            ),
            (
                "between-tuple",
                S3,
                "(k, l) between (1, 2) and (3, 4)",
                &["[1,2]..[3,4,MAX]"],
            ),
            (
                "between-short",
                S3,
                "(k, l) between (1) and (3, 4)",
                &["[1]..[3,4,MAX]"],
            ),
            (
                "between-gap",
                S3,
                "(k, m) between (1, 2) and (1, 5)",
                &["[1]..[1,MAX]"],
            ),
            (
                "between-multi",
                S3,
                "k between (1 and 2, 5 and 6)",
                &["[1]..[2,MAX]", "[5]..[6,MAX]"],
            ),
            // Members stop at the first one out of key order.
            (
                "between-order",
                S3,
                "(l, k) between (1, 2) and (3, 4)",
                &["<>..[MAX]"],
            ),
            (
                "tuple-ne",
                S3,
                "k = 1 and (k, l) != (1, 2)",
                &["[1]..[1,2]", "[1,2,MAX]..[1,MAX]"],
            ),
        ],
        1000,
    );
}

#[test]
fn is_prefix_ranges() {
    let s = "s:string, t:string";
    check_table(
        &[
            ("prefix", s, "is_prefix(\"ab\", s)", &["[\"ab\"]..[\"ac\"]"]),
            ("prefix-empty", s, "is_prefix(\"\", s)", &["[\"\"]..[MAX]"]),
            (
                "prefix-second",
                s,
                "s = \"x\" and is_prefix(\"ab\", t)",
                &["[\"x\",\"ab\"]..[\"x\",\"ac\"]"],
            ),
        ],
        1000,
    );
}

#[test]
fn the_limit_only_coarsens() {
    let p = "k in (1, 2, 3) and l in (5, 9)";
    let per_limit: &[(u64, &[&str])] = &[
        (
            7,
            &[
                "[1,5]..[1,5,MAX]",
                "[1,9]..[1,9,MAX]",
                "[2,5]..[2,5,MAX]",
                "[2,9]..[2,9,MAX]",
                "[3,5]..[3,5,MAX]",
                "[3,9]..[3,9,MAX]",
            ],
        ),
        (
            6,
            &["[1,5]..[1,9,MAX]", "[2,5]..[2,9,MAX]", "[3,5]..[3,9,MAX]"],
        ),
        (3, &["[1]..[3,MAX]"]),
        (1, &["[1]..[3,MAX]"]),
    ];
    for (limit, want) in per_limit {
        let got = notation(&infer(&key_schema(S3), p, *limit).unwrap());
        assert_eq!(got, *want, "limit {limit}");
    }
}

#[test]
fn computed_columns_beyond_the_table() {
    check_table(
        &[
            // Truncating division of negative numbers: quotient 0 (l = -2, -1) is not lost.
            (
                "negative-quotients",
                "k:int64=l/3, l:int64",
                "l >= -5 and l <= -1",
                &["[-1,-5]..[-1,-1,MAX]", "[0,-5]..[0,-1,MAX]"],
            ),
            (
                "shift",
                "k:int64=l>>1, l:int64",
                "l between 3 and 6",
                &["[1,3]..[1,6,MAX]", "[2,3]..[2,6,MAX]", "[3,3]..[3,6,MAX]"],
            ),
            // `l * 2` changes at every `l`, whatever else reads `l`.
            (
                "mixed-reading",
                "k:int64=l/3+l*2, l:int64",
                "l between 1 and 2",
                &["<>..[MAX]"],
            ),
            (
                "empty-integers",
                "k:int64=l/2, l:int64",
                "l > 1 and l < 2",
                &[],
            ),
            // The hash of a fixed input is computed.
            (
                "hash",
                "h:uint64=farm_hash(k), k:int64",
                "k = 42",
                &["[8164349598829955404u,42]..[8164349598829955404u,42,MAX]"],
            ),
            (
                "hash-open",
                "h:uint64=farm_hash(k), k:int64",
                "k > 42",
                &["<>..[MAX]"],
            ),
            // A hash fixed by its own equality over an input range: the inputs only show that
            // the hash is reached (the first one that reaches it is enough), one range.
            (
                "hash-fixed-input-range",
                "h:uint64=farm_hash(k)%64, k:int64",
                "h = 7 and k between 1000000 and 1100000",
                &["[7u,1000000]..[7u,1100000,MAX]"],
            ),
            // No input of the range reaches the fixed hash: nothing to read.
            (
                "hash-fixed-unreached",
                "h:uint64=farm_hash(k)%64, k:int64",
                "h = 100 and k between 1 and 1000",
                &[],
            ),
            // Hash values not fixed: each reached one is a range.
            (
                "hash-set-input-range",
                "h:uint64=farm_hash(k)%64, k:int64",
                "h in (7, 8) and k between 1 and 1000",
                &["[7u,1]..[7u,1000,MAX]", "[8u,1]..[8u,1000,MAX]"],
            ),
            // A modulo column before an unconstrained column is not enumerated.
            (
                "modulo-before-universal",
                "h:uint64=farm_hash(k)%10, k:int64, l:int64",
                "h between 2 and 5",
                &["[2u]..[5u,MAX]"],
            ),
            (
                "modulo-exact",
                "h:uint64=farm_hash(k)%10, k:int64, l:int64",
                "h = 3",
                &["[3u]..[3u,MAX]"],
            ),
            // An input that may only be null is evaluated at null.
            (
                "null-input",
                "k:int64=l/2, l:int64",
                "l <= null",
                &["[NULL]..[NULL,NULL,MAX]"],
            ),
            // An unbounded lower end enumerates null, then from the type's minimum.
            (
                "from-type-minimum",
                "k:uint64=l/3, l:uint64",
                "l < 5",
                &["[NULL]..[NULL,5u]", "[0u]..[0u,5u]", "[1u]..[1u,5u]"],
            ),
            // Values not satisfying the computed column's own constraint are skipped.
            (
                "own-constraint",
                "k:int64=l/2, l:int64",
                "l between 3 and 6 and k = 2",
                &["[2,3]..[2,6,MAX]"],
            ),
            (
                "int-modulo",
                "k:int64=l%3, l:int64",
                "l > 0 and l < 10",
                &[
                    "[NULL,0,MAX]..[NULL,10]",
                    "[-2,0,MAX]..[-2,10]",
                    "[-1,0,MAX]..[-1,10]",
                    "[0,0,MAX]..[0,10]",
                    "[1,0,MAX]..[1,10]",
                    "[2,0,MAX]..[2,10]",
                ],
            ),
        ],
        1000,
    );
}

#[test]
fn the_enumeration_budget_applies_per_computed_column() {
    // Dividing 2000 values by 2 needs 1000 evaluations: within 1000, not within 999.
    let schema = key_schema("k:int64=l/2, l:int64");
    assert_eq!(
        infer(&schema, "l >= 0 and l < 2000", 1000).unwrap().len(),
        1000
    );
    assert_eq!(
        notation(&infer(&schema, "l >= 0 and l < 2000", 999).unwrap()),
        vec!["<>..[MAX]"]
    );
}

#[test]
fn evaluation_errors_of_computed_columns_propagate() {
    let by_zero = infer(&key_schema("k:int64=l/0, l:int64"), "l = 5", 1000).unwrap_err();
    assert!(
        by_zero.to_string().contains("Division by zero"),
        "{by_zero}"
    );
    let int_min = infer(
        &key_schema("k:int64=l/-1, l:int64"),
        "l between -9223372036854775808 and -9223372036854775807",
        1000,
    )
    .unwrap_err();
    assert!(
        int_min.to_string().contains("Division of INT_MIN by -1"),
        "{int_min}"
    );
}

#[test]
fn bad_tuples_are_errors() {
    let e = infer(&key_schema(S3), "(k, l) = (1, 2, 3)", 1000).unwrap_err();
    assert!(
        e.to_string()
            .contains("Tuples of same size are expected but got 2 vs 3"),
        "{e}"
    );
    let e = infer(&key_schema(S3), "(k, k) in ((1, 2))", 1000).unwrap_err();
    assert!(e.to_string().contains("\"k\" occurs more than once"), "{e}");
}

#[test]
fn used_key_width_sees_full_scans() {
    let width = |p: &str| used_key_width(&infer(&key_schema(S3), p, 1000).unwrap());
    assert_eq!(width("k = 1 and l = 2"), 2);
    assert_eq!(width("k = 1 and l > 2"), 1);
    assert_eq!(width("k > 10"), 0);
    assert_eq!(width("a = 1"), 0);
    assert_eq!(width("false"), usize::MAX);
}

#[test]
fn ordered_table_pseudo_key() {
    // The schema an ordered table's scan uses; `$` names are not valid in user schemas, so it
    // is built without validation.
    let schema: TableSchema = serde_json::from_value(serde_json::json!({"columns": [
        {"name": "$tablet_index", "logical_type": "int64", "sort_ascending": true},
        {"name": "$row_index", "logical_type": "int64", "sort_ascending": true},
        {"name": "v", "logical_type": "string"},
    ]}))
    .unwrap();
    check_ordered(
        &schema,
        "[$tablet_index] = 0 and [$row_index] between 0 and 2",
        &["[0,0]..[0,2,MAX]"],
    );
    check_ordered(
        &schema,
        "[$tablet_index] in (0, 2)",
        &["[0]..[0,MAX]", "[2]..[2,MAX]"],
    );
    check_ordered(&schema, "v = \"x\"", &["<>..[MAX]"]);
    let keyless = TableSchema::parse("[{name=v;type=string}]").unwrap();
    check_ordered(&keyless, "v = \"x\"", &["<>..[MAX]"]);
}

fn check_ordered(schema: &TableSchema, predicate: &str, want: &[&str]) {
    let got = notation(&infer(schema, predicate, 1000).unwrap());
    assert_eq!(got, want, "{predicate}");
}
