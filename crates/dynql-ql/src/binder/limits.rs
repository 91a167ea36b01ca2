//! Bounds on the work a query text can ask for, checked before binding starts.
//!
//! Aliases are visible in every clause and may use each other, so an alias is bound (and
//! evaluated, per row) once per reference: `v as a0, a0+a0 as a1, a1+a1 as a2, …` doubles the
//! tree with every alias, and 25 of them ask for 2^25 nodes. The *expanded* size of every
//! expression (aliases counted as if copied, which is what binding and evaluation cost) is
//! computed first in linear time, memoised per alias, and a query above
//! [`MAX_EXPRESSION_NODES`] is refused with its position. Literal lists (`IN`, `BETWEEN`,
//! `TRANSFORM`) are capped at [`MAX_LIST_ITEMS`].
//!
//! Binding copies every string literal once per use of the alias that holds it, so the same
//! walk sums the bytes of the string literals of the query's expressions, aliases expanded,
//! and refuses a query above [`MAX_QUERY_LITERAL_BYTES`]: `'<1 MB>' as a0, if(k > 0, a0, a0)
//! as a1, …` is a small text but binds to gigabytes. The sum is over the whole query, as
//! any number of projections may repeat the same alias.

use std::collections::HashMap;

use crate::ast::{Expr, ExprKind, JoinCondition, Literal, Query};
use crate::error::{Error, Result};

use super::Binder;

/// The most nodes one expression may have once its aliases are expanded.
pub const MAX_EXPRESSION_NODES: u64 = 100_000;

/// The most items of one `IN` list, `BETWEEN` range list or `TRANSFORM` list.
pub const MAX_LIST_ITEMS: usize = 100_000;

/// The most bytes of string literals in one query's expressions, aliases expanded (64 MiB).
pub const MAX_QUERY_LITERAL_BYTES: u64 = 64 * 1024 * 1024;

/// The expanded size of an expression: nodes, and bytes of string literals.
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: u64,
    literal_bytes: u64,
}

impl Size {
    fn add(self, other: Size) -> Size {
        Size {
            nodes: self.nodes.saturating_add(other.nodes),
            literal_bytes: self.literal_bytes.saturating_add(other.literal_bytes),
        }
    }
}

impl Binder {
    /// Refuses expressions above the limits (see the module docs).
    pub(super) fn check_limits(&self, query: &Query) -> Result<()> {
        let mut exprs: Vec<&Expr> = Vec::new();
        exprs.extend(query.projections.iter().flatten().map(|p| &p.expr));
        exprs.extend(query.where_clause.as_ref());
        if let Some(g) = &query.group_by {
            exprs.extend(g.items.iter().map(|p| &p.expr));
            exprs.extend(g.having.as_ref());
        }
        exprs.extend(query.order_by.iter().map(|o| &o.expr));
        for j in &query.joins {
            exprs.extend(j.predicate.as_ref());
            if let JoinCondition::On { left, right } = &j.condition {
                exprs.extend(left.iter().chain(right));
            }
        }
        let mut memo = HashMap::new();
        let mut literal_bytes = 0u64;
        for e in exprs {
            check_lists(e)?;
            let size = self.expanded_size(e, &mut memo, &mut Vec::new());
            let nodes = size.nodes;
            literal_bytes = literal_bytes.saturating_add(size.literal_bytes);
            if literal_bytes > MAX_QUERY_LITERAL_BYTES {
                return Err(Error::invalid(
                    format!(
                        "Query is too large: its expressions hold {literal_bytes} bytes of string literals once aliases are expanded (limit {MAX_QUERY_LITERAL_BYTES}); each use of an alias copies its literals"
                    ),
                    e.span,
                ));
            }
            if nodes > MAX_EXPRESSION_NODES {
                return Err(Error::invalid(
                    format!(
                        "Expression is too large: {nodes} nodes once its aliases are expanded (limit {MAX_EXPRESSION_NODES}); aliases that use each other repeatedly multiply its size"
                    ),
                    e.span,
                ));
            }
        }
        Ok(())
    }

    /// The size of `e` with aliases expanded as the binder expands them (an alias is not
    /// expanded inside its own definition); saturating.
    fn expanded_size(
        &self,
        e: &Expr,
        memo: &mut HashMap<String, Size>,
        stack: &mut Vec<String>,
    ) -> Size {
        match &e.kind {
            ExprKind::Column { table: None, name } if !stack.contains(name) => {
                let Some(def) = self.aliases.get(name) else {
                    return Size {
                        nodes: 1,
                        literal_bytes: 0,
                    };
                };
                if let Some(n) = memo.get(name) {
                    return *n;
                }
                stack.push(name.clone());
                let n = self.expanded_size(def, memo, stack);
                stack.pop();
                memo.insert(name.clone(), n);
                n
            }
            ExprKind::Alias { expr, name } => {
                stack.push(name.clone());
                let n = self.expanded_size(expr, memo, stack);
                stack.pop();
                n
            }
            _ => {
                let own = Size {
                    nodes: 1,
                    literal_bytes: literal_bytes(e),
                };
                e.children()
                    .into_iter()
                    .fold(own, |sum, c| sum.add(self.expanded_size(c, memo, stack)))
            }
        }
    }
}

/// Bytes of the string literals `e` holds itself: a string literal, or the items of its
/// literal lists (which are not among its children).
fn literal_bytes(e: &Expr) -> u64 {
    // An item is a literal or a tuple of them.
    fn all(e: &Expr) -> u64 {
        e.children()
            .into_iter()
            .fold(literal_bytes(e), |sum, c| sum.saturating_add(all(c)))
    }
    let sum = |items: &mut dyn Iterator<Item = &Expr>| {
        items.fold(0u64, |n, item| n.saturating_add(all(item)))
    };
    match &e.kind {
        ExprKind::Literal(Literal::String(b)) => b.len() as u64,
        ExprKind::In { items, .. } => sum(&mut items.iter()),
        ExprKind::Between { ranges, .. } => sum(&mut ranges.iter().flat_map(|(l, h)| [l, h])),
        ExprKind::Transform { from, to, .. } => sum(&mut from.iter().chain(to)),
        _ => 0,
    }
}

/// Refuses literal lists above [`MAX_LIST_ITEMS`] anywhere in `e`.
fn check_lists(e: &Expr) -> Result<()> {
    let items = match &e.kind {
        ExprKind::In { items, .. } => items.len(),
        ExprKind::Between { ranges, .. } => ranges.len(),
        ExprKind::Transform { from, .. } => from.len(),
        _ => 0,
    };
    if items > MAX_LIST_ITEMS {
        return Err(Error::invalid(
            format!("The list has {items} items, above the limit of {MAX_LIST_ITEMS}"),
            e.span,
        ));
    }
    e.children().into_iter().try_for_each(check_lists)
}

#[cfg(test)]
mod tests {
    use crate::ast::Query;

    fn parse(text: &str) -> Query {
        crate::parser::parse_query(&crate::lexer::tokenize(text).unwrap()).unwrap()
    }

    fn limits(text: &str) -> crate::Result<()> {
        let q = parse(text);
        let mut b = super::Binder::new(super::super::BindOptions::default());
        b.collect_aliases(&q)?;
        b.check_limits(&q)
    }

    fn chain(n: usize) -> String {
        let mut items = vec!["v as a0".to_string()];
        for i in 1..n {
            items.push(format!("a{}+a{} as a{i}", i - 1, i - 1));
        }
        format!("{} from [//t]", items.join(", "))
    }

    #[test]
    fn alias_chains_are_measured_in_linear_time_and_refused_when_huge() {
        assert!(limits(&chain(10)).is_ok());
        let started = std::time::Instant::now();
        let err = limits(&chain(25)).unwrap_err().to_string();
        assert!(err.contains("Expression is too large"), "{err}");
        assert!(err.contains("limit 100000"), "{err}");
        assert!(started.elapsed().as_secs() < 5);
        // a_i has 2^(i+1) - 1 nodes: a15 (65,535) fits, a16 (131,071) does not.
        assert!(limits(&chain(16)).is_ok());
        assert!(limits(&chain(17)).is_err());
    }

    /// `'<1 MiB>' as a0, if(true, a0, a0) as a1, …, a{n}`: a_i holds 2^i copies.
    fn literal_chain(n: usize) -> String {
        let mut items = vec![format!("'{}' as a0", "x".repeat(1 << 20))];
        for i in 1..=n {
            items.push(format!("if(true, a{}, a{}) as a{i}", i - 1, i - 1));
        }
        format!("{} from [//t]", items.join(", "))
    }

    #[test]
    fn literal_bytes_are_counted_with_aliases_expanded_over_the_query() {
        // a0..a5 hold 1 + 2 + … + 32 = 63 MiB: within 64 MiB.
        assert!(limits(&literal_chain(5)).is_ok());
        // a6 alone holds 64 MiB: the query now holds 127 MiB.
        let err = limits(&literal_chain(6)).unwrap_err().to_string();
        assert!(err.contains("Query is too large"), "{err}");
        assert!(err.contains("limit 67108864"), "{err}");
        // Projections that repeat one alias add up.
        let one = format!("'{}' as a0", "y".repeat(1 << 20));
        let repeated = |n: usize| {
            let uses: Vec<String> = (1..=n).map(|i| format!("a0 as b{i}")).collect();
            format!("{one}, {} from [//t]", uses.join(", "))
        };
        assert!(limits(&repeated(63)).is_ok());
        assert!(limits(&repeated(64)).is_err());
        // Literal lists count too.
        let list = (0..65)
            .map(|i| format!("'{i}{}'", "z".repeat(1 << 20)))
            .collect::<Vec<_>>()
            .join(", ");
        let err = limits(&format!("* from [//t] where s in ({list})")).unwrap_err();
        assert!(err.to_string().contains("limit 67108864"), "{err}");
        // Measuring stays linear however far the aliases double.
        let started = std::time::Instant::now();
        assert!(limits(&literal_chain(40)).is_err());
        assert!(started.elapsed().as_secs() < 5);
    }

    #[test]
    fn long_literal_lists_are_refused() {
        let list = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        let at = format!("* from [//t] where k in ({})", list(super::MAX_LIST_ITEMS));
        assert!(limits(&at).is_ok());
        let over = format!(
            "* from [//t] where k in ({})",
            list(super::MAX_LIST_ITEMS + 1)
        );
        let err = limits(&over).unwrap_err().to_string();
        assert!(err.contains("above the limit of 100000"), "{err}");
    }
}
