//! Binding rules of YT QL (reference §2.2, §4): each validation error with YT's wording, and
//! the typing decisions that differ from SQL.

use dynql_core::{TableSchema, ValueType};
use dynql_ql::{bind_query, BindOptions, Catalog, QueryPlan};

struct Tables;

impl Catalog for Tables {
    fn table_schema(&self, path: &str) -> Option<TableSchema> {
        let text = match path {
            "//t" => "[{name=k;type=int64;sort_order=ascending};{name=i;type=int64};{name=u;type=uint64};{name=d;type=double};{name=s;type=string};{name=b;type=boolean}]",
            "//h" => "[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k)\"};{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]",
            "//o" => "[{name=a;type=int64};{name=b;type=int64}]",
            "//l" => "[{name=k;type=int64;sort_order=ascending};{name=a;type=string}]",
            "//r" => "[{name=k;type=int64;sort_order=ascending};{name=c;type=string}]",
            "//ra" => "[{name=k;type=int64;sort_order=ascending};{name=a;type=string}]",
            "//dec" => "[{name=k;type=int64;sort_order=ascending};{name=a;type=string}]",
            _ => return None,
        };
        Some(TableSchema::parse(text).unwrap())
    }

    fn refused_columns(&self, path: &str) -> Vec<(String, String)> {
        match path {
            "//dec" => vec![("price".into(), "its Arrow type is Decimal128(10, 2)".into())],
            _ => vec![],
        }
    }
}

fn bind(q: &str) -> Result<QueryPlan, String> {
    bind_query(q, None, &Tables, BindOptions::default()).map_err(|e| e.to_string())
}

fn error(q: &str) -> String {
    match bind(q) {
        Ok(_) => panic!("{q} should fail"),
        Err(e) => e,
    }
}

#[test]
fn clause_rules_use_yt_messages() {
    let cases = [
        ("* from [//t] order by k", "ORDER BY used without LIMIT"),
        ("* from [//t] offset 5", "OFFSET used without LIMIT"),
        (
            "* from [//t] having k > 1",
            "Expected GROUP BY before HAVING",
        ),
        (
            "k from [//t] group by k having k > 1 limit 5",
            "HAVING with LIMIT is not allowed",
        ),
        (
            "k from [//t] group by k having k > 1 offset 1 limit 5 ",
            "HAVING with LIMIT is not allowed",
        ),
        (
            "* from [//t] limit 9223372036854775806",
            "Maximum LIMIT exceeded",
        ),
        ("sum(i) from [//t]", "Misuse of aggregate function \"sum\""),
        (
            "sum(sum(i)) as x from [//t] group by k",
            "Misuse of aggregate function \"sum\"",
        ),
        (
            "* from [//t] where i",
            "WHERE-clause is not a boolean expression",
        ),
        (
            "k from [//t] group by k having sum(i)",
            "HAVING-clause is not a boolean expression",
        ),
        (
            "i as x, u as x from [//t]",
            "Alias \"x\" has been already used",
        ),
        ("nope from [//t]", "Undefined reference \"nope\""),
        ("* from [//missing]", "does not exist"),
        ("i + u from [//t]", "Type mismatch"),
        ("i = 1.5 from [//t]", "Type mismatch"),
        (
            "(1, 2) = (1, 2, 3) as x from [//t]",
            "Tuples of same size are expected but got 2 vs 3",
        ),
        ("null from [//t]", "Type inference failed"),
        (
            "if(null, null, null) as x from [//t]",
            "Type inference failed",
        ),
        (
            "avg(s) from [//t] group by 1",
            "Type mismatch in function \"avg\"",
        ),
        ("s like 1 as x from [//t]", "Types mismatch in LIKE pattern"),
        (
            "case when i > 1 then 1 else 'a' end as x from [//t]",
            "Types mismatch in CASE ELSE expression",
        ),
        ("count(*) from [//t]", "Error while parsing query"),
        ("nope(i) from [//t]", "Undefined function \"nope\""),
        ("split(s, ',') from [//t]", "not supported by dynql yet"),
        (
            "i from [//t] join [//o] on i = a",
            "Foreign table key is not used in the join clause",
        ),
        (
            "* from [//t] where k = -9223372036854775808 / -1",
            "Division of INT_MIN by -1",
        ),
        ("* from [//t] where k = 1 / 0", "Division by zero"),
    ];
    for (q, want) in cases {
        let got = error(q);
        assert!(got.contains(want), "{q}: expected {want:?}, got {got:?}");
    }
    let deep = format!(
        "* from [//t] where {}k{} = 1",
        "(".repeat(150),
        ")".repeat(150)
    );
    let got = error(&deep);
    assert!(
        got.contains("Maximum expression depth exceeded")
            || got.contains("Error while parsing query"),
        "{got}"
    );
}

#[test]
fn literals_adapt_and_columns_do_not_mix() {
    let p = bind("u + 1 as a, 1 + 2 as b, 1 / 2.0 as c, d > 1 as e from [//t]").unwrap();
    let types: Vec<ValueType> = p.projections.iter().map(|c| c.expr.ty).collect();
    assert_eq!(
        types,
        [
            ValueType::Uint64,
            ValueType::Int64,
            ValueType::Double,
            ValueType::Boolean
        ]
    );
    assert!(bind("int64(u) + i as x from [//t]").is_ok());
}

#[test]
fn aliases_are_visible_everywhere_and_shadow_columns() {
    let p = bind("i / 1000 as i, k from [//t] where i > 5 order by i limit 3").unwrap();
    assert_eq!(p.projections[0].name, "i");
    // WHERE filters on the expression: it reads column 1 (i) through the alias.
    let mut cols = Vec::new();
    p.where_clause
        .as_ref()
        .unwrap()
        .referenced_columns(&mut cols);
    assert_eq!(cols, [1]);
    let p = bind("x, sum(i) + x as t from [//t] group by k % 2 as x").unwrap();
    let g = p.group.unwrap();
    assert_eq!(g.keys.len(), 1);
    assert_eq!(g.aggregates.len(), 1);
}

#[test]
fn derived_names_follow_yt() {
    let p = bind("k, SUM(i), i + 1, -i, [k] from [//t] group by k, i").unwrap();
    let names: Vec<&str> = p.projections.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["k", "SUM(i)", "(i)+(1)", "-(i)", "k"]);
}

#[test]
fn computed_key_joins_count_as_indexed() {
    assert!(bind("v from [//t] join [//h] using k").is_ok());
    assert!(bind_query(
        "i from [//t] join [//o] on i = a",
        None,
        &Tables,
        BindOptions {
            allow_join_without_index: true,
            ..Default::default()
        }
    )
    .is_ok());
}

#[test]
fn placeholders_splice_values() {
    let values = dynql_core::yson::parse(b"{lo=1; pair=[2; \"x\"]}").unwrap();
    let p = bind_query(
        "k from [//t] where k > {lo} and (i, s) < {pair}",
        Some(&values),
        &Tables,
        BindOptions::default(),
    );
    assert!(p.is_ok(), "{p:?}");
    let e = bind_query(
        "k from [//t] where k > {nope}",
        Some(&values),
        &Tables,
        BindOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("Placeholder was not found"));
}

/// YT's `TPrepareExpressionTest.Negative1`: numeric constants convert to the operand's type
/// only when their value survives.
#[test]
fn constants_that_lose_their_value_are_refused() {
    let cases = [
        (
            "k from [//t] where d = 9007199254740993",
            "Failed to cast 9007199254740993 to double: inaccurate conversion",
        ),
        (
            "k from [//t] where d = 4611686018427387903",
            "to double: inaccurate conversion",
        ),
        (
            "k from [//t] where d = 9223372036854775807u",
            "Failed to cast 9223372036854775807u to double: inaccurate conversion",
        ),
        (
            "k from [//t] where d > 9223372036854775807",
            "to double: inaccurate conversion",
        ),
        (
            "k from [//t] where d in (1, 9007199254740993)",
            "to double: inaccurate conversion",
        ),
        (
            "k from [//t] where i in (1.5)",
            "Failed to cast 1.5 to int64: inaccurate conversion",
        ),
        (
            "k from [//t] where u in (-1.0)",
            "to uint64: inaccurate conversion",
        ),
        (
            "k from [//t] where i = 18446744073709551606u",
            "Type mismatch",
        ),
        ("k from [//t] where u = 1.5", "Type mismatch"),
    ];
    for (q, want) in cases {
        let got = error(q);
        assert!(got.contains(want), "{q}: expected {want:?}, got {got:?}");
    }
    // Values a double holds exactly keep working, as do integral doubles in integer lists.
    for q in [
        "k from [//t] where d = 9007199254740992",
        "k from [//t] where d = -9007199254740992",
        "k from [//t] where d = 1 or d = 2u",
        "k from [//t] where d in (1, 2u, 3.5)",
        "k from [//t] where i in (4.0, -2.0)",
        "k from [//t] where d > 9223372036854775808u",
    ] {
        assert!(bind(q).is_ok(), "{q}: {:?}", bind(q).err());
    }
}

fn names(q: &str) -> Vec<String> {
    let p = bind(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    p.projections.into_iter().map(|c| c.name).collect()
}

#[test]
fn star_names_columns_by_table_alias() {
    assert_eq!(
        names("* from [//l] as l join [//r] as r on l.k = r.k"),
        ["l.k", "l.a", "r.k", "r.c"]
    );
    assert_eq!(names("* from [//l] as l"), ["l.k", "l.a"]);
    // Without aliases columns keep their names; a USING column, or one the ON equation names
    // alike on both sides, appears once (YT shares it).
    assert_eq!(names("* from [//l] join [//r] using k"), ["k", "a", "c"]);
    assert_eq!(names("* from [//l] join [//r] on k = k"), ["k", "a", "c"]);
    assert_eq!(
        names("* from [//l] as l join [//r] as r using k"),
        ["l.k", "l.a", "r.c"]
    );
}

#[test]
fn a_name_two_joined_tables_answer_is_ambiguous() {
    for q in [
        "a from [//l] join [//ra] on k = k",
        "k from [//l] as l join [//r] as r on l.k = r.k",
        "* from [//l] join [//ra] on k = k",
    ] {
        let got = error(q);
        assert!(
            got.contains("Ambiguous resolution for column"),
            "{q}: {got}"
        );
    }
    // Qualified names, USING columns and shared ON columns are not ambiguous.
    for q in [
        "l.a, ra.a from [//l] as l join [//ra] as ra on l.k = ra.k",
        "k, a from [//l] join [//ra] using k, a",
        "k from [//l] join [//r] on k = k",
        "k from [//l] as l join [//r] on l.k = k",
    ] {
        assert!(bind(q).is_ok(), "{q}: {:?}", bind(q).err());
    }
}

#[test]
fn mixed_literal_lists_are_a_types_mismatch_in_tuple() {
    for q in [
        "k from [//t] where i in (1, 'x')",
        "k from [//t] where i in (1, 2u, \"abc\")",
        "k from [//t] where (i, s) in ((1, 'a'), (2, 3))",
        "k from [//t] where i between 1 and 'x'",
        "transform(i, (1, 'a'), (2, 3)) as x from [//t]",
        "transform(i, (1, 2), (2, 'x')) as x from [//t]",
    ] {
        let got = error(q);
        assert!(got.contains("Types mismatch in tuple"), "{q}: {got}");
    }
}

#[test]
fn refused_columns_fail_by_name_when_named_or_under_star() {
    let why = "cannot be read: its Arrow type is Decimal128(10, 2)";
    assert!(error("price from [//dec]").contains(&format!("Column \"price\" {why}")));
    assert!(error("k from [//dec] as r where r.price > 1")
        .contains(&format!("Column \"r.price\" {why}")));
    assert!(error("* from [//dec]").contains(&format!(
        "* includes column \"price\", which {why}; name the columns to read instead of *"
    )));
    assert!(error("* from [//l] join [//dec] as r using k").contains("column \"r.price\""));
    let e = error("k from [//l] join [//dec] using price");
    assert!(e.contains("\"price\"") && e.contains(why), "{e}");
    // The other columns bind; a name no table has stays an undefined reference.
    assert!(bind("k, a from [//dec]").is_ok());
    assert!(error("nope from [//dec]").contains("Undefined reference \"nope\""));
}
