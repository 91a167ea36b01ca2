//! DuckDB's FROM-first queries: `FROM t [WHERE …] [ORDER BY …] [LIMIT …]` is `SELECT * FROM t …`.
//!
//! sqlparser reads `FROM t` and `FROM t LIMIT 1` as a select without a projection, which
//! DataFusion plans as zero columns (an Arrow error when it runs), and it stops at a WHERE
//! after such a FROM. [`select_every_column`] gives the parsed selects their `*`;
//! [`with_select_star`] spells `SELECT *` before each FROM that begins a statement or a
//! subquery and has no SELECT after it, for a text that does not parse as it is.

use std::ops::ControlFlow;

use datafusion::sql::parser::{CopyToSource, Statement};
use datafusion::sql::sqlparser::ast::{
    Query, SelectFlavor, SelectItem, SetExpr, VisitMut, VisitorMut, WildcardAdditionalOptions,
};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};

/// Gives every FROM-first select without a projection (`FROM t`) the projection `*`, in the
/// statement and the queries inside it.
pub(super) fn select_every_column(statement: &mut Statement) {
    let mut stars = Stars;
    match statement {
        Statement::Statement(s) => {
            let _ = s.visit(&mut stars);
        }
        Statement::CopyTo(copy) => {
            if let CopyToSource::Query(query) = &mut copy.source {
                let _ = query.visit(&mut stars);
            }
        }
        Statement::Explain(explain) => select_every_column(&mut explain.statement),
        Statement::CreateExternalTable(_) | Statement::Reset(_) => {}
    }
}

/// Visits every query (subqueries, CTEs and set operations' sides included).
struct Stars;

impl VisitorMut for Stars {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        star_selects(&mut query.body);
        ControlFlow::Continue(())
    }
}

/// The selects of a query's body; a nested query is visited on its own.
fn star_selects(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select)
            if select.flavor == SelectFlavor::FromFirstNoSelect && select.projection.is_empty() =>
        {
            select
                .projection
                .push(SelectItem::Wildcard(WildcardAdditionalOptions::default()));
        }
        SetExpr::SetOperation { left, right, .. } => {
            star_selects(left);
            star_selects(right);
        }
        _ => {}
    }
}

/// `sql` with `SELECT * ` before each FROM that begins a statement, a parenthesised subquery
/// or a side of UNION/INTERSECT/EXCEPT and has no SELECT of its own after it (`FROM t WHERE
/// k > 1`); `None` when there is no such FROM or the text does not tokenize.
pub(super) fn with_select_star(sql: &str, dialect: &dyn Dialect) -> Option<String> {
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    // Per parenthesis depth: where the FROM beginning that level's query is, while no
    // SELECT of the same level followed it.
    let mut open: Vec<Option<Location>> = vec![None];
    let mut starts = Vec::new();
    let mut at_start = true;
    for token in &tokens {
        let depth = open.len() - 1;
        match &token.token {
            Token::Whitespace(_) => continue,
            Token::Word(w) if w.keyword == Keyword::FROM && at_start => {
                open[depth] = Some(token.span.start);
            }
            Token::Word(w) if w.keyword == Keyword::SELECT => open[depth] = None,
            Token::Word(w)
                if matches!(
                    w.keyword,
                    Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT
                ) =>
            {
                starts.extend(open[depth].take());
                at_start = true;
                continue;
            }
            // UNION ALL, UNION DISTINCT: the next query begins after the quantifier.
            Token::Word(w) if at_start && matches!(w.keyword, Keyword::ALL | Keyword::DISTINCT) => {
                continue;
            }
            Token::LParen => {
                open.push(None);
                at_start = true;
                continue;
            }
            // An unbalanced `)` is the parser's to report.
            Token::RParen if depth > 0 => starts.extend(open.pop().flatten()),
            Token::SemiColon => starts.extend(open[depth].take()),
            _ => {}
        }
        at_start = matches!(token.token, Token::SemiColon);
    }
    starts.extend(open.into_iter().flatten());
    if starts.is_empty() {
        return None;
    }
    let mut offsets: Vec<usize> = starts
        .iter()
        .map(|at| byte_offset(sql, *at))
        .collect::<Option<_>>()?;
    offsets.sort_unstable();
    let mut out = String::with_capacity(sql.len() + 9 * offsets.len());
    let mut from = 0;
    for at in offsets {
        out.push_str(&sql[from..at]);
        out.push_str("SELECT * ");
        from = at;
    }
    out.push_str(&sql[from..]);
    Some(out)
}

/// The byte offset of a tokenizer location (1-based line, and column in characters).
fn byte_offset(sql: &str, at: Location) -> Option<usize> {
    let (mut line, mut column) = (1, 1);
    for (i, c) in sql.char_indices() {
        if line == at.line && column == at.column {
            return Some(i);
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;

    fn rewrite(sql: &str) -> Option<String> {
        with_select_star(sql, &GenericDialect {})
    }

    #[test]
    fn select_star_goes_before_a_from_without_a_select() {
        assert_eq!(
            rewrite("FROM t WHERE k > 1").as_deref(),
            Some("SELECT * FROM t WHERE k > 1")
        );
        // After other statements, in subqueries, on both sides of a UNION, after a line
        // break and a multi-byte string.
        assert_eq!(
            rewrite("select 'é';\n  from (from u where a in (select 1)) where b").as_deref(),
            Some("select 'é';\n  SELECT * from (SELECT * from u where a in (select 1)) where b")
        );
        assert_eq!(
            rewrite("FROM a WHERE x UNION ALL FROM b WHERE y").as_deref(),
            Some("SELECT * FROM a WHERE x UNION ALL SELECT * FROM b WHERE y")
        );
        // DuckDB's FROM … SELECT and plain queries are left as they are.
        assert_eq!(rewrite("FROM t SELECT a WHERE k > 1"), None);
        assert_eq!(rewrite("SELECT a FROM t WHERE k > 1"), None);
        assert_eq!(rewrite("SELECT 'FROM x' AS a"), None);
    }
}
