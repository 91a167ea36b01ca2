//! Tests of [`crate::parser`].

use super::*;
use crate::lexer::tokenize;

fn parse(s: &str) -> Result<Query> {
    parse_query(&tokenize(s)?)
}

fn where_text(s: &str) -> String {
    format_expr(
        &parse(&format!("* from [//t] where {s}"))
            .unwrap()
            .where_clause
            .unwrap(),
    )
}

#[test]
fn follows_yt_precedence() {
    assert_eq!(
        where_text("a + b * c = d or e and f"),
        "(((a)+((b)*(c)))=(d))OR((e)AND(f))"
    );
    assert_eq!(
        where_text("k & a + b << c | l >> m"),
        "((k)&(((a)+(b))<<(c)))|((l)>>(m))"
    );
    assert_eq!(where_text("not a < b = c > b"), "NOT(((a)<(b))=((c)>(b)))");
    assert_eq!(where_text("-a * +b"), "(-(a))*(+(b))");
}

#[test]
fn string_matches_follow_yt_grammar() {
    assert_eq!(
        where_text("s || 't' not like 'a!%' || '%' escape '!' || ''"),
        "((s)||(\"t\")) NOT LIKE ((\"a!%\")||(\"%\")) ESCAPE ((\"!\")||(\"\"))"
    );
    assert_eq!(where_text("s ilike 'A%'"), "(s) ILIKE (\"A%\")");
    assert_eq!(where_text("s not rlike 'a.*'"), "(s) NOT RLIKE (\"a.*\")");
    // REGEXP is RLIKE.
    assert_eq!(where_text("s regexp 'a.*'"), "(s) RLIKE (\"a.*\")");
    // A comparison may follow; `=` and AND bind looser.
    assert_eq!(
        where_text("s like 'a' < b = c and d"),
        "((((s) LIKE (\"a\"))<(b))=(c))AND(d)"
    );
    assert_eq!(where_text("(a | b) like 'x'"), "((a)|(b)) LIKE (\"x\")");
    for bad in [
        "a | b like 'x'",
        "a << 1 like 'x'",
        "a < b like 'x'",
        "a like 'x' like 'y'",
        "a like 'x' not like 'y'",
        "a like 'x' in ('y')",
        "a like 'x' not in ('y')",
        "a like 'x' between 'a' and 'b'",
        "a like 'x' | 'y'",
        "a like 'x' escape '!' & 'y'",
    ] {
        let e = parse(&format!("* from [//t] where {bad}")).unwrap_err();
        assert!(e.to_string().contains("syntax error"), "{bad}: {e}");
    }
}

#[test]
fn parses_clauses() {
    let q = parse("select a as x, sum(b) from [//t] t left join [//u] as u using a and u.c = 1 \
                   where x > 1 group by x with totals having sum(b) > 2 order by x desc offset 1 limit 2")
        .unwrap();
    assert_eq!(q.projections.as_ref().unwrap().len(), 2);
    assert_eq!(q.from.alias.as_deref(), Some("t"));
    assert!(q.joins[0].left && q.joins[0].predicate.is_some());
    assert_eq!(
        q.group_by.as_ref().unwrap().totals,
        TotalsMode::BeforeHaving
    );
    assert!(q.order_by[0].descending);
    assert_eq!(q.offset.unwrap().0, 1);
    assert_eq!(q.limit.unwrap().0, 2);
}

#[test]
fn multi_range_between_and_single() {
    let q = parse("* from [//t] where (a, b) between ((1) and (1, 3), 5 and 6)").unwrap();
    match q.where_clause.unwrap().kind {
        ExprKind::Between { ranges, .. } => assert_eq!(ranges.len(), 2),
        other => panic!("{other:?}"),
    }
    let q = parse("* from [//t] where a between (1) and (5)").unwrap();
    match q.where_clause.unwrap().kind {
        ExprKind::Between { ranges, .. } => assert_eq!(ranges.len(), 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn rejects_limit_before_offset_with_position() {
    let e = parse("* from [//t] limit 5 offset 2").unwrap_err();
    assert!(e.to_string().contains("Error while parsing query"));
    assert_eq!(e.span().unwrap().start, 21);
    // YT's tests match "syntax error", from the parser and the lexer alike.
    for bad in [
        "* from [//t] limit 5 offset 2",
        "k from [//t] wher k = 1",
        "k from [//t] where k = 'open",
        "k from [//t] where k = ?",
    ] {
        let e = parse(bad).unwrap_err().to_string();
        assert!(e.contains("syntax error, "), "{bad}: {e}");
        assert!(e.contains(" at position "), "{bad}: {e}");
    }
    assert!(parse("case x end as m from [//t]").is_err());
    assert!(parse("* from [//t] limit 9223372036854775807")
        .unwrap_err()
        .to_string()
        .contains("Maximum LIMIT exceeded"));
}

#[test]
fn hostile_nesting_is_an_error_not_a_crash() {
    let parens = format!(
        "* from [//t] where {}a{}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert!(parse(&parens)
        .unwrap_err()
        .to_string()
        .contains("Maximum expression depth exceeded"));
    let minus = format!("* from [//t] where {}a", "-".repeat(10_000));
    assert!(parse(&minus).is_err());
    let chain = format!("* from [//t] where a{}", " + a".repeat(100_000));
    assert!(parse(&chain)
        .unwrap_err()
        .to_string()
        .contains("Maximum expression depth exceeded"));
}

#[test]
fn aliases_nest() {
    let q = parse("((1 as x) + x) as y from [//t]").unwrap();
    assert_eq!(q.projections.unwrap()[0].alias.as_deref(), Some("y"));
}

#[test]
fn count_star_is_yt_s_syntax_error_with_a_hint_of_sum_1() {
    let e = parse("count(*) from [//t]").unwrap_err();
    assert!(e.to_string().contains("unexpected \"*\""), "{e}");
    assert_eq!(e.span().map(|s| s.start), Some(6));
    assert!(e.hint().is_some_and(|h| h.contains("sum(1)")), "{e:?}");
    // Elsewhere `*` is still only YT's error.
    assert_eq!(parse("f(*) from [//t]").unwrap_err().hint(), None);
}
