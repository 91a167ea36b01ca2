//! Bounds on the work a query text can ask for, checked before binding starts.
//!
//! Aliases are visible in every clause and may use each other, so an alias is bound (and
//! evaluated, per row) once per reference: `v as a0, a0+a0 as a1, a1+a1 as a2, …` doubles the
//! tree with every alias, and 25 of them ask for 2^25 nodes. The *expanded* size of every
//! expression (aliases counted as if copied, which is what binding and evaluation cost) is
//! computed first in linear time, memoised per alias, and a query above
//! [`MAX_EXPRESSION_NODES`] is refused with its position. Literal lists (`IN`, `BETWEEN`,
//! `TRANSFORM`) are capped at [`MAX_LIST_ITEMS`].

use std::collections::HashMap;

use crate::ast::{Expr, ExprKind, JoinCondition, Query};
use crate::error::{Error, Result};

use super::Binder;

/// The most nodes one expression may have once its aliases are expanded.
pub const MAX_EXPRESSION_NODES: u64 = 100_000;

/// The most items of one `IN` list, `BETWEEN` range list or `TRANSFORM` list.
pub const MAX_LIST_ITEMS: usize = 100_000;

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
        for e in exprs {
            check_lists(e)?;
            let nodes = self.expanded_size(e, &mut memo, &mut Vec::new());
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

    /// Nodes of `e` with aliases expanded as the binder expands them (an alias is not expanded
    /// inside its own definition); saturating.
    fn expanded_size(
        &self,
        e: &Expr,
        memo: &mut HashMap<String, u64>,
        stack: &mut Vec<String>,
    ) -> u64 {
        match &e.kind {
            ExprKind::Column { table: None, name } if !stack.contains(name) => {
                let Some(def) = self.aliases.get(name) else {
                    return 1;
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
            _ => e.children().into_iter().fold(1u64, |sum, c| {
                sum.saturating_add(self.expanded_size(c, memo, stack))
            }),
        }
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
