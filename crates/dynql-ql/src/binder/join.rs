//! Joins: USING and ON equations, the foreign-table predicate, and the lookup-join rule
//! (the equation must pin a prefix of the foreign key unless `allow_join_without_index`).

use std::collections::HashSet;

use dynql_core::TableSchema;

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::plan::*;
use crate::texpr::{TExpr, TypedExpr};

use super::*;

impl Binder {
    // ------------------------------------------------------------------ joins

    /// The join's plan, and the foreign columns it shares with the tables before it (USING
    /// columns, and those the ON equation names the same way on both sides, as YT shares
    /// them): these are reached through the earlier table's column only.
    pub(super) fn bind_join(
        &mut self,
        join: &Join,
        foreign: &TableSchema,
        source: usize,
        catalog: &dyn Catalog,
    ) -> Result<(JoinPlan, Vec<usize>)> {
        let _ = catalog;
        let foreign_ns = namespace(foreign, join.table.alias.as_deref(), 0);
        let mut self_keys = Vec::new();
        let mut foreign_keys = Vec::new();
        let mut shared = Vec::new();
        match &join.condition {
            JoinCondition::Using(cols) => {
                for (name, span) in cols {
                    let (table, column) = match name.split_once('.') {
                        Some((t, c))
                            if self.ns.iter().any(|n| n.qualifier.as_deref() == Some(t)) =>
                        {
                            (Some(t), c)
                        }
                        _ => (None, name.as_str()),
                    };
                    let left = self.resolve_column(table, column, *span)?.clone();
                    let right = foreign_ns
                        .iter()
                        .find(|c| c.name == column)
                        .ok_or_else(|| {
                            if let Some(r) = self
                                .refused
                                .iter()
                                .find(|r| r.span == join.table.span && r.name == column)
                            {
                                return Error::invalid(
                                    format!(
                                        "Column {} of joined table {} cannot be read: {}",
                                        dynql_core::error::shown(column),
                                        dynql_core::error::shown(&join.table.path),
                                        r.why
                                    ),
                                    *span,
                                );
                            }
                            Error::invalid(
                                format!(
                                    "Undefined reference {} in joined table {}",
                                    dynql_core::error::shown(column),
                                    dynql_core::error::shown(&join.table.path)
                                ),
                                *span,
                            )
                        })?;
                    if left.ty != right.ty {
                        return Err(Error::invalid(
                            format!(
                                "Types mismatch in join equation \"{column}\": {} vs {}",
                                left.ty, right.ty
                            ),
                            *span,
                        ));
                    }
                    self_keys.push(TypedExpr::new(TExpr::Column(left.index), left.ty));
                    foreign_keys.push(TypedExpr::new(TExpr::Column(right.index), right.ty));
                    shared.push(right.index);
                }
            }
            JoinCondition::On { left, right } => {
                if left.len() != right.len() {
                    return Err(Error::invalid(
                        format!(
                            "Tuples of same size are expected but got {} vs {}",
                            left.len(),
                            right.len()
                        ),
                        join.span,
                    ));
                }
                // Each side may name either table; try "self = foreign", then the reverse.
                let attempt = |b: &mut Binder,
                               selfs: &[Expr],
                               foreigns: &[Expr]|
                 -> Result<(Vec<TypedExpr>, Vec<TypedExpr>)> {
                    let mut sk = Vec::new();
                    let mut fk = Vec::new();
                    for (s, f) in selfs.iter().zip(foreigns) {
                        let s_set = b.infer(s)?;
                        let saved = std::mem::replace(&mut b.ns, foreign_ns.clone());
                        let f_set = b.infer(f);
                        b.ns = saved;
                        let f_set = f_set?;
                        let common = s_set.intersect(f_set);
                        if common.is_empty() {
                            return Err(Error::invalid(
                                format!(
                                    "Types mismatch in join equation: {} vs {}",
                                    s_set.describe(),
                                    f_set.describe()
                                ),
                                s.span.to(f.span),
                            ));
                        }
                        let t = common.pick("join equation")?;
                        sk.push(fold(b.build(s, t)?, b.eval_options())?);
                        let saved = std::mem::replace(&mut b.ns, foreign_ns.clone());
                        let built = b.build(f, t);
                        b.ns = saved;
                        fk.push(fold(built?, b.eval_options())?);
                    }
                    Ok((sk, fk))
                };
                let ((sk, fk), (selfs, foreigns)) = match attempt(self, left, right) {
                    Ok(r) => (r, (left, right)),
                    Err(first) => match attempt(self, right, left) {
                        Ok(r) => (r, (right, left)),
                        Err(_) => return Err(first),
                    },
                };
                self_keys = sk;
                foreign_keys = fk;
                let mut self_refs = Vec::new();
                selfs.iter().for_each(|e| column_refs(e, &mut self_refs));
                let mut foreign_refs = Vec::new();
                foreigns
                    .iter()
                    .for_each(|e| column_refs(e, &mut foreign_refs));
                let saved = std::mem::replace(&mut self.ns, foreign_ns.clone());
                for (table, name, span) in foreign_refs {
                    let same = |(t, n, _): &(Option<&str>, &str, Span)| *t == table && *n == name;
                    if self_refs.iter().any(same) {
                        if let Ok(c) = self.resolve_column(table, name, span) {
                            shared.push(c.index);
                        }
                    }
                }
                self.ns = saved;
            }
        }
        let foreign_predicate = match &join.predicate {
            Some(p) => {
                let saved = std::mem::replace(&mut self.ns, foreign_ns.clone());
                let r = self.bind_predicate(p, "JOIN predicate");
                self.ns = saved;
                Some(r?)
            }
            None => None,
        };
        if !self.options.allow_join_without_index && !uses_key_prefix(foreign, &foreign_keys) {
            return Err(Error::invalid(
                "Foreign table key is not used in the join clause; the query is inefficient, consider rewriting it",
                join.span,
            ));
        }
        let plan = JoinPlan {
            source,
            left_outer: join.left,
            self_keys,
            foreign_keys,
            foreign_predicate,
        };
        Ok((plan, shared))
    }
}

/// The column references in `e`, as written.
fn column_refs<'e>(e: &'e Expr, out: &mut Vec<(Option<&'e str>, &'e str, Span)>) {
    if let ExprKind::Column { table, name } = &e.kind {
        out.push((table.as_deref(), name, e.span));
    }
    for c in e.children() {
        column_refs(c, out);
    }
}

/// Whether the join equation pins the first key column of the foreign table (directly, or as
/// a computed column whose inputs are all joined).
fn uses_key_prefix(foreign: &TableSchema, keys: &[TypedExpr]) -> bool {
    let joined: HashSet<usize> = keys
        .iter()
        .filter_map(|k| match k.kind {
            TExpr::Column(i) => Some(i),
            _ => None,
        })
        .collect();
    let Some(first) = foreign.key_columns().first() else {
        return false;
    };
    if joined.contains(&0) {
        return true;
    }
    match &first.expression {
        Some(text) => match crate::computed::expression_inputs(foreign, text) {
            Ok(inputs) => !inputs.is_empty() && inputs.iter().all(|i| joined.contains(i)),
            Err(_) => false,
        },
        None => false,
    }
}
