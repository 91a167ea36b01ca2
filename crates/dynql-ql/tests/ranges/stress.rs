//! The property behind range inference, in the spirit of YT's `Stress` test: for random
//! predicates over keys with computed columns, every row for which the predicate is true lies
//! in an inferred range, whatever the range expansion limit.

use dynql_core::{TableSchema, Value};
use dynql_ql::eval::{evaluate_predicate, EvalOptions};
use dynql_ql::ComputedColumns;
use proptest::prelude::*;

use super::{bind, infer};

/// The first key column: computed from `k`, or absent.
#[derive(Debug, Clone, Copy)]
enum Head {
    Hash,
    HashModulo,
    HashQuotientModulo,
    None,
}

impl Head {
    fn expression(self) -> Option<&'static str> {
        match self {
            Head::Hash => Some("farm_hash(k)"),
            Head::HashModulo => Some("farm_hash(k) % 10"),
            Head::HashQuotientModulo => Some("farm_hash(k / 3) % 10"),
            Head::None => None,
        }
    }
}

/// Keys `[h,] k, l, m`, value column `n`.
fn schema(head: Head, k_unsigned: bool) -> TableSchema {
    let k_type = if k_unsigned { "uint64" } else { "int64" };
    let h = head
        .expression()
        .map(|e| format!("{{name=h;type=uint64;sort_order=ascending;expression=\"{e}\"}};"))
        .unwrap_or_default();
    TableSchema::parse(&format!(
        "[{h}{{name=k;type={k_type};sort_order=ascending}};{{name=l;type=int64;sort_order=ascending}};\
         {{name=m;type=string;sort_order=ascending}};{{name=n;type=boolean}}]"
    ))
    .expect("stress schema")
}

const STRINGS: &[&str] = &["", "a", "ab", "abc", "b", "ba", "c"];
const OPS: &[&str] = &["=", "!=", "<", "<=", ">", ">="];

fn k_literal(unsigned: bool) -> BoxedStrategy<String> {
    if unsigned {
        (0u64..12).prop_map(|x| x.to_string()).boxed()
    } else {
        (-6i64..6).prop_map(|x| x.to_string()).boxed()
    }
}

fn l_literal() -> BoxedStrategy<String> {
    (-6i64..6).prop_map(|x| x.to_string()).boxed()
}

fn m_literal() -> BoxedStrategy<String> {
    proptest::sample::select(STRINGS)
        .prop_map(|s| format!("\"{s}\""))
        .boxed()
}

fn op() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(OPS)
}

/// `column op literal`, sometimes written `literal op' column`.
fn comparison(column: &'static str, literal: BoxedStrategy<String>) -> BoxedStrategy<String> {
    (op(), literal, any::<bool>())
        .prop_map(move |(op, lit, mirrored)| {
            if mirrored {
                let mirrored_op = match op {
                    "<" => ">",
                    "<=" => ">=",
                    ">" => "<",
                    ">=" => "<=",
                    same => same,
                };
                format!("{lit} {mirrored_op} {column}")
            } else {
                format!("{column} {op} {lit}")
            }
        })
        .boxed()
}

fn leaf(with_h: bool, k_unsigned: bool) -> BoxedStrategy<String> {
    let k = move || k_literal(k_unsigned);
    let mut leaves: Vec<BoxedStrategy<String>> = vec![
        comparison("k", k()),
        comparison("l", l_literal()),
        comparison("m", m_literal()),
        comparison("k", Just("null".to_string()).boxed()),
        proptest::collection::vec(k(), 1..4)
            .prop_map(|xs| format!("k in ({})", xs.join(", ")))
            .boxed(),
        proptest::collection::vec((k(), l_literal()), 1..4)
            .prop_map(|xs| {
                let items: Vec<String> = xs.iter().map(|(a, b)| format!("({a}, {b})")).collect();
                format!("(k, l) in ({})", items.join(", "))
            })
            .boxed(),
        proptest::collection::vec((l_literal(), m_literal()), 1..3)
            .prop_map(|xs| {
                let items: Vec<String> = xs.iter().map(|(a, b)| format!("({a}, {b})")).collect();
                format!("(l, m) in ({})", items.join(", "))
            })
            .boxed(),
        (k(), k())
            .prop_map(|(a, b)| format!("k between {a} and {b}"))
            .boxed(),
        (k(), l_literal(), k(), l_literal())
            .prop_map(|(a, b, c, d)| format!("(k, l) between ({a}, {b}) and ({c}, {d})"))
            .boxed(),
        (k(), k(), l_literal())
            .prop_map(|(a, c, d)| format!("(k, l) between ({a}) and ({c}, {d})"))
            .boxed(),
        (l_literal(), l_literal(), l_literal(), l_literal())
            .prop_map(|(a, b, c, d)| format!("l between ({a} and {b}, {c} and {d})"))
            .boxed(),
        // Members out of key order: only the leading ordered ones may be used.
        (l_literal(), k(), l_literal(), k())
            .prop_map(|(a, b, c, d)| format!("(l, k) between ({a}, {b}) and ({c}, {d})"))
            .boxed(),
        (m_literal(), l_literal(), m_literal(), l_literal())
            .prop_map(|(a, b, c, d)| format!("(m, l) between ({a}, {b}) and ({c}, {d})"))
            .boxed(),
        (op(), k(), l_literal())
            .prop_map(|(op, a, b)| format!("(k, l) {op} ({a}, {b})"))
            .boxed(),
        (op(), l_literal(), m_literal())
            .prop_map(|(op, a, b)| format!("(l, m) {op} ({a}, {b})"))
            .boxed(),
        m_literal()
            .prop_map(|p| format!("is_prefix({p}, m)"))
            .boxed(),
        (k(), any::<bool>())
            .prop_map(|(a, b)| format!("k / 3 = {a} or n = {b}"))
            .boxed(),
        Just("is_null(l)".to_string()).boxed(),
        Just("n".to_string()).boxed(),
        Just("true".to_string()).boxed(),
        Just("false".to_string()).boxed(),
    ];
    if with_h {
        leaves.push(comparison(
            "h",
            (0u64..10).prop_map(|x| x.to_string()).boxed(),
        ));
        leaves.push(
            (0u64..10, 0u64..10)
                .prop_map(|(a, b)| format!("h between {a} and {b}"))
                .boxed(),
        );
        leaves.push(
            proptest::collection::vec(0u64..10, 1..4)
                .prop_map(|xs| {
                    let xs: Vec<String> = xs.iter().map(u64::to_string).collect();
                    format!("h in ({})", xs.join(", "))
                })
                .boxed(),
        );
    }
    proptest::strategy::Union::new(leaves).boxed()
}

fn predicate(with_h: bool, k_unsigned: bool) -> BoxedStrategy<String> {
    leaf(with_h, k_unsigned)
        .prop_recursive(4, 24, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) or ({b})")),
                inner.prop_map(|a| format!("not ({a})")),
            ]
        })
        .boxed()
}

/// Values of `k, l, m, n`; small ones near the literals, sometimes null or extreme.
type RowValues = (Option<i64>, Option<i64>, Option<&'static str>, Option<bool>);

fn row_values(k_unsigned: bool) -> impl Strategy<Value = RowValues> {
    let k = if k_unsigned {
        prop_oneof![8 => 0i64..16, 1 => Just(-1i64)].boxed()
    } else {
        prop_oneof![8 => -8i64..8, 1 => Just(i64::MIN), 1 => Just(i64::MAX)].boxed()
    };
    (
        proptest::option::weighted(0.9, k),
        proptest::option::weighted(0.9, -8i64..8),
        proptest::option::weighted(0.9, proptest::sample::select(STRINGS)),
        proptest::option::of(any::<bool>()),
    )
}

fn table_row(
    schema: &TableSchema,
    with_h: bool,
    k_unsigned: bool,
    values: &RowValues,
) -> Vec<Value> {
    let (k, l, m, n) = values;
    let k = match (k, k_unsigned) {
        (None, _) => Value::Null,
        (Some(x), true) => Value::Uint64(*x as u64),
        (Some(x), false) => Value::Int64(*x),
    };
    let mut row = Vec::new();
    if with_h {
        row.push(Value::Null);
    }
    row.push(k);
    row.push(l.map_or(Value::Null, Value::Int64));
    row.push(m.map_or(Value::Null, Value::string));
    row.push(n.map_or(Value::Null, Value::Boolean));
    ComputedColumns::compile(schema)
        .and_then(|c| c.fill(schema, &mut row))
        .expect("computed columns");
    row
}

fn case() -> impl Strategy<Value = (Head, bool, String, Vec<RowValues>, u64)> {
    let heads = prop_oneof![
        Just(Head::Hash),
        Just(Head::HashModulo),
        Just(Head::HashQuotientModulo),
        Just(Head::None),
    ];
    (heads, any::<bool>()).prop_flat_map(|(head, k_unsigned)| {
        let with_h = head.expression().is_some();
        (
            Just(head),
            Just(k_unsigned),
            predicate(with_h, k_unsigned),
            proptest::collection::vec(row_values(k_unsigned), 40..80),
            prop_oneof![Just(1u64), Just(5), Just(50), Just(1000)],
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_satisfying_row_lies_in_an_inferred_range(
        (head, k_unsigned, predicate, rows, limit) in case()
    ) {
        let with_h = head.expression().is_some();
        let schema = schema(head, k_unsigned);
        let plan = bind(&schema, &predicate).map_err(|e| TestCaseError::fail(format!("bind {predicate}: {e}")))?;
        let ranges = infer(&schema, &predicate, limit)
            .map_err(|e| TestCaseError::fail(format!("infer {predicate}: {e}")))?;
        for r in &ranges {
            prop_assert!(!r.is_empty(), "empty range {r} for {predicate}");
        }
        for w in ranges.windows(2) {
            prop_assert!(w[0].upper.compare(&w[1].lower).is_lt(), "ranges {} and {} overlap, touch or are unsorted", w[0], w[1]);
        }
        let key_count = schema.key_column_count();
        let Some(where_clause) = plan.where_clause.as_ref() else {
            return Err(TestCaseError::fail("no WHERE"));
        };
        for values in &rows {
            let row = table_row(&schema, with_h, k_unsigned, values);
            if let Ok(true) = evaluate_predicate(where_clause, &row, EvalOptions::default()) {
                let key = &row[..key_count];
                let shown: Vec<String> = ranges.iter().map(|r| r.to_string()).collect();
                prop_assert!(
                    ranges.iter().any(|r| r.contains(key)),
                    "row {key:?} satisfies {predicate} (limit {limit}) but lies in none of {shown:?}"
                );
            }
        }
    }
}

/// Computed key expressions over `k` and their type.
const EXPRESSIONS: &[(&str, &str)] = &[
    ("k / 3", "int64"),
    ("k / -2", "int64"),
    ("k >> 1", "int64"),
    ("k % 4", "int64"),
    ("k % -3", "int64"),
    ("(k / 3) % 4", "int64"),
    ("k / 3 + k / 5", "int64"),
    ("k / 3 + k * 2", "int64"),
    ("farm_hash(k / 3) % 10", "uint64"),
    ("farm_hash(k)", "uint64"),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, ..ProptestConfig::default() })]

    /// Quotient and modulo enumeration over an interval of `k` (negative ones included) leave
    /// no value of `k` outside the ranges.
    #[test]
    fn computed_keys_cover_every_input_of_an_interval(
        (expr, ty) in proptest::sample::select(EXPRESSIONS),
        lo in -20i64..20,
        len in 0i64..15,
        strict in (any::<bool>(), any::<bool>()),
        limit in prop_oneof![Just(1u64), Just(5), Just(50), Just(1000)],
    ) {
        let schema = TableSchema::parse(&format!(
            "[{{name=h;type={ty};sort_order=ascending;expression=\"{expr}\"}};\
              {{name=k;type=int64;sort_order=ascending}};{{name=v;type=int64}}]"
        ))
        .expect("schema");
        let hi = lo + len;
        let predicate = format!(
            "k {} {lo} and k {} {hi}",
            if strict.0 { ">" } else { ">=" },
            if strict.1 { "<" } else { "<=" }
        );
        let ranges = infer(&schema, &predicate, limit)
            .map_err(|e| TestCaseError::fail(format!("infer {predicate}: {e}")))?;
        let computed = ComputedColumns::compile(&schema).expect("computed");
        for k in (lo - 1)..=(hi + 1) {
            let inside = (k > lo || (!strict.0 && k == lo)) && (k < hi || (!strict.1 && k == hi));
            if !inside {
                continue;
            }
            let mut row = vec![Value::Null, Value::Int64(k), Value::Null];
            computed.fill(&schema, &mut row).expect("fill");
            let shown: Vec<String> = ranges.iter().map(|r| r.to_string()).collect();
            prop_assert!(
                ranges.iter().any(|r| r.contains(&row[..2])),
                "k = {k} with h = {expr} satisfies {predicate} (limit {limit}) but lies in none of {shown:?}"
            );
        }
    }
}
