//! The binder: resolves names against the tables, applies YT v1 typing (reference §4) and
//! clause rules (§2.2), and produces a [`QueryPlan`].
//!
//! Typing runs in two passes per expression: [`Binder::infer`] computes the set of feasible
//! types bottom-up, then [`Binder::build`] fixes the chosen type top-down so that literals
//! adapt to their context (`u + 1` is uint64). Literal-only sub-expressions are folded, so
//! their errors (`-9223372036854775808 / -1`) are raised before any row is read.
//!
//! Aliases are visible in every clause and shadow columns; inside its own definition a name
//! means the column. After GROUP BY an expression is either a group item (matched by alias or
//! by its canonical text), an aggregate (registered on first use) or built from those.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dynql_core::{TableSchema, Value, ValueType, Yson};

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::eval::{compile_like, convert_literal, evaluate, EvalOptions};
use crate::functions::{lookup, AggregateFunction, Function, Param, ScalarFunction, Signature};
use crate::lexer::tokenize;
use crate::parser::parse_query;
use crate::placeholders::expand_placeholders;
use crate::plan::*;
use crate::texpr::{TExpr, TypedExpr};
use crate::types::TypeSet;

/// The most joins a query may have.
pub const MAX_JOINS: usize = 200;
/// The deepest expression accepted.
pub const MAX_EXPRESSION_DEPTH: usize = 100;

/// What the binder needs to know about tables.
pub trait Catalog {
    /// The schema of the table at `path`, or `None` when there is no such table.
    fn table_schema(&self, path: &str) -> Option<TableSchema>;
}

/// Options that change binding.
#[derive(Debug, Clone, Copy, Default)]
pub struct BindOptions {
    pub allow_join_without_index: bool,
    pub canonical_null_relations: bool,
}

/// Parses (after placeholder expansion) and binds a query.
///
/// # Errors
/// Syntax errors with positions; YT's validation and typing errors.
pub fn bind_query(
    text: &str,
    placeholders: Option<&Yson>,
    catalog: &dyn Catalog,
    options: BindOptions,
) -> Result<QueryPlan> {
    let tokens = expand_placeholders(tokenize(text)?, placeholders)?;
    let query = parse_query(&tokens)?;
    bind_parsed(&query, catalog, options)
}

/// Binds an already parsed query.
pub fn bind_parsed(
    query: &Query,
    catalog: &dyn Catalog,
    options: BindOptions,
) -> Result<QueryPlan> {
    check_clause_rules(query)?;
    let mut b = Binder::new(options);
    b.collect_aliases(query)?;

    // Sources and joins.
    let main = table_schema(catalog, &query.from)?;
    let mut sources = vec![SourceTable {
        path: query.from.path.clone(),
        schema: main.clone(),
        offset: 0,
    }];
    b.ns = namespace(&main, query.from.alias.as_deref(), 0);
    if query.joins.len() > MAX_JOINS {
        return Err(Error::invalid_query(format!(
            "The number of joins exceeds the limit: {} > {MAX_JOINS}",
            query.joins.len()
        )));
    }
    let mut joins = Vec::new();
    for join in &query.joins {
        let schema = table_schema(catalog, &join.table)?;
        let offset = b.ns.len();
        let plan = b.bind_join(join, &schema, sources.len(), catalog)?;
        let mut cols = namespace(&schema, join.table.alias.as_deref(), offset);
        if let JoinCondition::Using(using) = &join.condition {
            for c in cols.iter_mut() {
                if using.iter().any(|(n, _)| *n == c.name) {
                    c.hidden = true;
                }
            }
        }
        b.ns.extend(cols);
        sources.push(SourceTable {
            path: join.table.path.clone(),
            schema,
            offset,
        });
        joins.push(plan);
    }

    let where_clause = match &query.where_clause {
        Some(w) => Some(b.bind_predicate(w, "WHERE-clause")?),
        None => None,
    };

    let mut group = None;
    if let Some(g) = &query.group_by {
        let mut keys = Vec::new();
        let mut ctx = GroupContext::default();
        for item in &g.items {
            if let Some(a) = &item.alias {
                b.alias_stack.push(a.clone());
            }
            let typed = b.bind_scalar(&item.expr, "group key");
            if item.alias.is_some() {
                b.alias_stack.pop();
            }
            let typed = typed?;
            let canon = b.canonical(&item.expr, item.alias.as_deref());
            ctx.keys.push(GroupKey {
                canon,
                alias: item.alias.clone(),
                ty: typed.ty,
            });
            keys.push(typed);
        }
        b.group = Some(ctx);
        group = Some(GroupPlan {
            keys,
            aggregates: vec![],
            having: None,
            totals: g.totals,
        });
    }

    // Projections (in the grouped scope when grouping).
    let mut projections = Vec::new();
    match &query.projections {
        None => {
            if b.group.is_some() {
                return Err(Error::invalid_query(
                    "* cannot be used with GROUP BY: name the group keys and aggregates",
                ));
            }
            for c in b.ns.iter().filter(|c| !c.hidden) {
                projections.push(OutputColumn {
                    name: c.name.clone(),
                    expr: TypedExpr::new(TExpr::Column(c.index), c.ty),
                });
            }
        }
        Some(items) => {
            for item in items {
                let name = item
                    .alias
                    .clone()
                    .unwrap_or_else(|| derived_name(&item.expr));
                if let Some(a) = &item.alias {
                    b.alias_stack.push(a.clone());
                }
                let expr = b.bind_scalar(&item.expr, &format!("projection {name:?}"));
                if item.alias.is_some() {
                    b.alias_stack.pop();
                }
                projections.push(OutputColumn { name, expr: expr? });
            }
        }
    }

    if let (Some(g), Some(plan)) = (&query.group_by, group.as_mut()) {
        if let Some(h) = &g.having {
            plan.having = Some(b.bind_predicate(h, "HAVING-clause")?);
        }
    }
    let mut order_by = Vec::new();
    for item in &query.order_by {
        order_by.push((b.bind_scalar(&item.expr, "ORDER BY item")?, item.descending));
    }
    if let (Some(plan), Some(ctx)) = (group.as_mut(), b.group.take()) {
        plan.aggregates = ctx.aggregates;
    }
    Ok(QueryPlan {
        sources,
        joins,
        where_clause,
        group,
        order_by,
        projections,
        offset: query.offset.map(|(o, _)| o as u64).unwrap_or(0),
        limit: query.limit.map(|(l, _)| l as u64),
    })
}

fn check_clause_rules(q: &Query) -> Result<()> {
    if let Some(span) = q.having_without_group {
        return Err(Error::invalid("Expected GROUP BY before HAVING", span));
    }
    if !q.order_by.is_empty() && q.limit.is_none() {
        return Err(Error::invalid(
            "ORDER BY used without LIMIT",
            q.order_by[0].expr.span,
        ));
    }
    if let (Some((_, span)), None) = (q.offset, q.limit) {
        return Err(Error::invalid("OFFSET used without LIMIT", span));
    }
    if let Some(g) = &q.group_by {
        if g.having.is_some() && q.order_by.is_empty() {
            if let Some((_, span)) = q.limit {
                return Err(Error::invalid("HAVING with LIMIT is not allowed", span));
            }
            if let Some((_, span)) = q.offset {
                return Err(Error::invalid("HAVING with OFFSET is not allowed", span));
            }
        }
    }
    let mut exprs: Vec<&Expr> = Vec::new();
    if let Some(p) = &q.projections {
        exprs.extend(p.iter().map(|p| &p.expr));
    }
    exprs.extend(q.where_clause.iter());
    if let Some(g) = &q.group_by {
        exprs.extend(g.items.iter().map(|p| &p.expr));
        exprs.extend(g.having.iter());
    }
    exprs.extend(q.order_by.iter().map(|o| &o.expr));
    for e in exprs {
        if depth(e) > MAX_EXPRESSION_DEPTH {
            return Err(Error::invalid("Maximum expression depth exceeded", e.span));
        }
    }
    Ok(())
}

fn depth(e: &Expr) -> usize {
    let children: Vec<&Expr> = match &e.kind {
        ExprKind::Literal(_) | ExprKind::Column { .. } => vec![],
        ExprKind::Call { args, .. } => args.iter().collect(),
        ExprKind::Unary { operand, .. } | ExprKind::IsNull { operand, .. } => vec![operand],
        ExprKind::Binary { left, right, .. } => vec![left, right],
        ExprKind::Tuple(items) => items.iter().collect(),
        ExprKind::In { operand, .. } | ExprKind::Between { operand, .. } => vec![operand],
        ExprKind::Like {
            operand, pattern, ..
        } => vec![operand, pattern],
        ExprKind::Case {
            operand,
            whens,
            otherwise,
        } => {
            let mut v: Vec<&Expr> = operand.iter().map(|b| b.as_ref()).collect();
            for (w, t) in whens {
                v.push(w);
                v.push(t);
            }
            v.extend(otherwise.iter().map(|b| b.as_ref()));
            v
        }
        ExprKind::Transform {
            operand, default, ..
        } => {
            let mut v: Vec<&Expr> = vec![operand];
            v.extend(default.iter().map(|b| b.as_ref()));
            v
        }
        ExprKind::Alias { expr, .. } => vec![expr],
    };
    1 + children.into_iter().map(depth).max().unwrap_or(0)
}

fn table_schema(catalog: &dyn Catalog, t: &TableRef) -> Result<TableSchema> {
    catalog
        .table_schema(&t.path)
        .ok_or_else(|| Error::invalid(format!("Table {:?} does not exist", t.path), t.span))
}

/// A column visible to name resolution.
#[derive(Debug, Clone)]
struct NsColumn {
    qualifier: Option<String>,
    name: String,
    index: usize,
    ty: ValueType,
    /// A foreign USING column: reachable only by its qualified name.
    hidden: bool,
}

fn namespace(schema: &TableSchema, alias: Option<&str>, offset: usize) -> Vec<NsColumn> {
    schema
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| NsColumn {
            qualifier: alias.map(str::to_string),
            name: c.name.clone(),
            index: offset + i,
            ty: c.wire_type(),
            hidden: false,
        })
        .collect()
}

#[derive(Debug, Clone)]
struct GroupKey {
    canon: String,
    alias: Option<String>,
    ty: ValueType,
}

#[derive(Debug, Default)]
struct GroupContext {
    keys: Vec<GroupKey>,
    aggregates: Vec<AggregateCall>,
    aggregate_texts: Vec<String>,
}

/// Name resolution and typing state.
pub(crate) struct Binder {
    ns: Vec<NsColumn>,
    aliases: HashMap<String, Expr>,
    alias_stack: Vec<String>,
    group: Option<GroupContext>,
    options: BindOptions,
}

fn mismatch(what: String, span: Span) -> Error {
    Error::invalid(what, span)
}

impl Binder {
    fn new(options: BindOptions) -> Binder {
        Binder {
            ns: vec![],
            aliases: HashMap::new(),
            alias_stack: vec![],
            group: None,
            options,
        }
    }

    /// A binder over one table's columns (computed-column expressions).
    pub(crate) fn for_table(schema: &TableSchema) -> Binder {
        let mut b = Binder::new(BindOptions::default());
        b.ns = namespace(schema, None, 0);
        b
    }

    fn collect_aliases(&mut self, q: &Query) -> Result<()> {
        fn walk(e: &Expr, out: &mut Vec<(String, Expr, Span)>) {
            if let ExprKind::Alias { expr, name } = &e.kind {
                out.push((name.clone(), (**expr).clone(), e.span));
            }
            match &e.kind {
                ExprKind::Alias { expr, .. } => walk(expr, out),
                ExprKind::Call { args, .. } => args.iter().for_each(|a| walk(a, out)),
                ExprKind::Unary { operand, .. } | ExprKind::IsNull { operand, .. } => {
                    walk(operand, out)
                }
                ExprKind::Binary { left, right, .. } => {
                    walk(left, out);
                    walk(right, out)
                }
                ExprKind::Tuple(items) => items.iter().for_each(|a| walk(a, out)),
                ExprKind::In { operand, .. } | ExprKind::Between { operand, .. } => {
                    walk(operand, out)
                }
                ExprKind::Like {
                    operand, pattern, ..
                } => {
                    walk(operand, out);
                    walk(pattern, out)
                }
                ExprKind::Case {
                    operand,
                    whens,
                    otherwise,
                } => {
                    if let Some(o) = operand {
                        walk(o, out)
                    }
                    for (w, t) in whens {
                        walk(w, out);
                        walk(t, out)
                    }
                    if let Some(o) = otherwise {
                        walk(o, out)
                    }
                }
                ExprKind::Transform {
                    operand, default, ..
                } => {
                    walk(operand, out);
                    if let Some(d) = default {
                        walk(d, out)
                    }
                }
                ExprKind::Literal(_) | ExprKind::Column { .. } => {}
            }
        }
        let mut found = Vec::new();
        let items = q
            .projections
            .iter()
            .flatten()
            .chain(q.group_by.iter().flat_map(|g| g.items.iter()));
        for p in items {
            if let Some(a) = &p.alias {
                found.push((a.clone(), p.expr.clone(), p.expr.span));
            }
            walk(&p.expr, &mut found);
        }
        for (name, expr, span) in found {
            if self.aliases.insert(name.clone(), expr).is_some() {
                return Err(Error::invalid(
                    format!("Alias {name:?} has been already used"),
                    span,
                ));
            }
        }
        Ok(())
    }

    /// Canonical text of an expression with aliases expanded (used to match group items).
    fn canonical(&self, e: &Expr, own_alias: Option<&str>) -> String {
        let mut stack = self.alias_stack.clone();
        if let Some(a) = own_alias {
            stack.push(a.to_string());
        }
        format_expr(&self.expand(e, &mut stack))
    }

    fn expand(&self, e: &Expr, stack: &mut Vec<String>) -> Expr {
        let mut out = e.clone();
        match &mut out.kind {
            ExprKind::Column { table: None, name } => {
                if !stack.contains(name) {
                    if let Some(def) = self.aliases.get(name.as_str()) {
                        stack.push(name.clone());
                        let r = self.expand(def, stack);
                        stack.pop();
                        return r;
                    }
                }
            }
            ExprKind::Alias { expr, name } => {
                stack.push(name.clone());
                let r = self.expand(expr, stack);
                stack.pop();
                return r;
            }
            _ => {}
        }
        self.map_children(&mut out, &mut |b, c| *c = b.expand(c, stack));
        out
    }

    fn map_children(&self, e: &mut Expr, f: &mut dyn FnMut(&Binder, &mut Expr)) {
        match &mut e.kind {
            ExprKind::Literal(_) | ExprKind::Column { .. } => {}
            ExprKind::Call { args, .. } => args.iter_mut().for_each(|a| f(self, a)),
            ExprKind::Unary { operand, .. } | ExprKind::IsNull { operand, .. } => f(self, operand),
            ExprKind::Binary { left, right, .. } => {
                f(self, left);
                f(self, right)
            }
            ExprKind::Tuple(items) => items.iter_mut().for_each(|a| f(self, a)),
            ExprKind::In { operand, .. } | ExprKind::Between { operand, .. } => f(self, operand),
            ExprKind::Like {
                operand,
                pattern,
                escape,
                ..
            } => {
                f(self, operand);
                f(self, pattern);
                if let Some(e) = escape {
                    f(self, e)
                }
            }
            ExprKind::Case {
                operand,
                whens,
                otherwise,
            } => {
                if let Some(o) = operand {
                    f(self, o)
                }
                for (w, t) in whens {
                    f(self, w);
                    f(self, t)
                }
                if let Some(o) = otherwise {
                    f(self, o)
                }
            }
            ExprKind::Transform {
                operand, default, ..
            } => {
                f(self, operand);
                if let Some(d) = default {
                    f(self, d)
                }
            }
            ExprKind::Alias { expr, .. } => f(self, expr),
        }
    }

    fn eval_options(&self) -> EvalOptions {
        EvalOptions {
            canonical_null_relations: self.options.canonical_null_relations,
        }
    }

    // ------------------------------------------------------------------ entry points

    /// Binds a scalar expression whose type nothing constrains.
    pub(crate) fn bind_scalar(&mut self, e: &Expr, what: &str) -> Result<TypedExpr> {
        let set = self.infer(e)?;
        let ty = set
            .pick(&format!("{what} {}", quote_expr(e)))
            .map_err(|err| with_span(err, e.span))?;
        let built = self.build(e, ty)?;
        fold(built, self.eval_options())
    }

    fn bind_predicate(&mut self, e: &Expr, clause: &str) -> Result<TypedExpr> {
        let set = self.infer(e)?;
        if !set.contains(ValueType::Boolean) {
            return Err(Error::invalid(
                format!("{clause} is not a boolean expression"),
                e.span,
            ));
        }
        fold(self.build(e, ValueType::Boolean)?, self.eval_options())
    }

    // ------------------------------------------------------------------ names

    fn resolve_column(&self, table: Option<&str>, name: &str, span: Span) -> Result<&NsColumn> {
        let found = match table {
            Some(t) => self
                .ns
                .iter()
                .find(|c| c.qualifier.as_deref() == Some(t) && c.name == name)
                .or_else(|| {
                    // `a.b` that is not table.column may be a column literally named "a.b".
                    let full = format!("{t}.{name}");
                    self.ns.iter().find(|c| !c.hidden && c.name == full)
                }),
            None => self.ns.iter().find(|c| !c.hidden && c.name == name),
        };
        found.ok_or_else(|| {
            let full = match table {
                Some(t) => format!("{t}.{name}"),
                None => name.to_string(),
            };
            Error::invalid(format!("Undefined reference {full:?}"), span)
        })
    }

    /// In the grouped scope: the grouped-row slot an expression stands for, if any.
    fn grouped_slot(&mut self, e: &Expr) -> Result<Option<(usize, ValueType)>> {
        let Some(ctx) = &self.group else {
            return Ok(None);
        };
        if let ExprKind::Column { table: None, name } = &e.kind {
            if let Some(i) = ctx
                .keys
                .iter()
                .position(|k| k.alias.as_deref() == Some(name.as_str()))
            {
                return Ok(Some((i, ctx.keys[i].ty)));
            }
        }
        let canon = self.canonical(e, None);
        let ctx = self
            .group
            .as_ref()
            .ok_or_else(|| Error::invalid_query("internal: no group"))?;
        if let Some(i) = ctx.keys.iter().position(|k| k.canon == canon) {
            return Ok(Some((i, ctx.keys[i].ty)));
        }
        if let ExprKind::Call { name, args } = &e.kind {
            if let Some(Function::Aggregate(f)) = lookup(name) {
                let key_count = ctx.keys.len();
                if let Some(i) = ctx.aggregate_texts.iter().position(|t| *t == canon) {
                    return Ok(Some((key_count + i, ctx.aggregates[i].ty)));
                }
                // Aggregate arguments read the joined row.
                let saved = self.group.take();
                let call = self.bind_aggregate(f, name, args, e.span);
                self.group = saved;
                let call = call?;
                let ctx = self
                    .group
                    .as_mut()
                    .ok_or_else(|| Error::invalid_query("internal: no group"))?;
                let ty = call.ty;
                ctx.aggregates.push(call);
                ctx.aggregate_texts.push(canon);
                return Ok(Some((key_count + ctx.aggregates.len() - 1, ty)));
            }
        }
        Ok(None)
    }

    fn bind_aggregate(
        &mut self,
        f: AggregateFunction,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<AggregateCall> {
        let sig = f.signature();
        let (result_set, _) = self.infer_signature(&sig, name, args, span)?;
        let ty = result_set
            .pick(&format!("function {name:?}"))
            .map_err(|e| with_span(e, span))?;
        let args = self.build_signature(&sig, args, ty)?;
        let args = args
            .into_iter()
            .map(|a| fold(a, self.eval_options()))
            .collect::<Result<Vec<_>>>()?;
        Ok(AggregateCall {
            function: f,
            args,
            ty,
        })
    }

    // ------------------------------------------------------------------ inference

    /// The set of feasible types of `e`.
    pub(crate) fn infer(&mut self, e: &Expr) -> Result<TypeSet> {
        if let Some((_, ty)) = self.grouped_slot(e)? {
            return Ok(TypeSet::of(ty));
        }
        match &e.kind {
            ExprKind::Literal(l) => Ok(literal_types(l)),
            ExprKind::Column { table, name } => {
                if let Some(def) = self.alias_target(table.as_deref(), name) {
                    self.alias_stack.push(name.clone());
                    let r = self.infer(&def);
                    self.alias_stack.pop();
                    return r;
                }
                if self.group.is_some() {
                    return Err(self.not_grouped(table.as_deref(), name, e.span));
                }
                Ok(TypeSet::of(
                    self.resolve_column(table.as_deref(), name, e.span)?.ty,
                ))
            }
            ExprKind::Alias { expr, name } => {
                self.alias_stack.push(name.clone());
                let r = self.infer(expr);
                self.alias_stack.pop();
                r
            }
            ExprKind::Unary { op, operand } => {
                let s = self.infer(operand)?;
                let domain = match op {
                    UnaryOp::Plus | UnaryOp::Minus => TypeSet::NUMERIC,
                    UnaryOp::BitNot => TypeSet::INTEGER,
                    UnaryOp::Not => TypeSet::BOOLEAN,
                };
                let r = s.restrict(domain);
                if r.is_empty() {
                    return Err(mismatch(
                        format!("Type mismatch in expression {}", quote_expr(e)),
                        e.span,
                    ));
                }
                Ok(r)
            }
            ExprKind::Binary { op, left, right } => {
                if op.is_comparison() {
                    self.comparison_pairs(left, right, e.span)?;
                    return Ok(TypeSet::BOOLEAN);
                }
                let l = self.infer(left)?;
                let r = self.infer(right)?;
                let domain = binary_domain(*op);
                let s = l.intersect(r).restrict(domain);
                if s.is_empty() {
                    return Err(mismatch(
                        format!(
                            "Type mismatch in expression {}: {} and {}",
                            quote_expr(e),
                            l.describe(),
                            r.describe()
                        ),
                        e.span,
                    ));
                }
                Ok(s)
            }
            ExprKind::Tuple(_) => Err(Error::invalid("Expecting scalar expression", e.span)),
            ExprKind::In { .. }
            | ExprKind::Between { .. }
            | ExprKind::Like { .. }
            | ExprKind::IsNull { .. } => Ok(TypeSet::BOOLEAN),
            ExprKind::Case {
                operand,
                whens,
                otherwise,
            } => {
                for (w, _) in whens {
                    match operand {
                        Some(o) => {
                            let common = self.infer(o)?.intersect(self.infer(w)?);
                            if common.is_empty() {
                                return Err(mismatch(
                                    "Types mismatch in CASE WHEN expression".into(),
                                    w.span,
                                ));
                            }
                        }
                        None => {
                            if !self.infer(w)?.contains(ValueType::Boolean) {
                                return Err(mismatch(
                                    "Types mismatch in CASE WHEN expression: expected boolean"
                                        .into(),
                                    w.span,
                                ));
                            }
                        }
                    }
                }
                let mut set = TypeSet::NULL;
                for (_, t) in whens {
                    let next = set.intersect(self.infer(t)?);
                    if next.is_empty() {
                        return Err(mismatch(
                            "Types mismatch in CASE THEN expression".into(),
                            t.span,
                        ));
                    }
                    set = next;
                }
                if let Some(o) = otherwise {
                    let next = set.intersect(self.infer(o)?);
                    if next.is_empty() {
                        return Err(mismatch(
                            "Types mismatch in CASE ELSE expression".into(),
                            o.span,
                        ));
                    }
                    set = next;
                }
                Ok(set)
            }
            ExprKind::Transform { to, default, .. } => {
                let mut set = TypeSet::NULL;
                for t in to {
                    set = set.intersect(self.infer(t)?);
                }
                if let Some(d) = default {
                    set = set.intersect(self.infer(d)?);
                }
                if set.is_empty() {
                    return Err(mismatch(
                        "Types mismatch in TRANSFORM result values".into(),
                        e.span,
                    ));
                }
                Ok(set)
            }
            ExprKind::Call { name, args } => {
                if name.eq_ignore_ascii_case("is_null") {
                    if args.len() != 1 {
                        return Err(arity_error(name, 1, args.len(), e.span));
                    }
                    return Ok(TypeSet::BOOLEAN);
                }
                match lookup(name) {
                    Some(Function::Scalar(f)) => {
                        Ok(self.infer_signature(&f.signature(), name, args, e.span)?.0)
                    }
                    Some(Function::Aggregate(_)) => Err(Error::invalid(
                        format!("Misuse of aggregate function {name:?}"),
                        e.span,
                    )),
                    None => Err(unknown_function(name, e.span)),
                }
            }
        }
    }

    fn alias_target(&self, table: Option<&str>, name: &str) -> Option<Expr> {
        if table.is_some() || self.alias_stack.iter().any(|a| a == name) {
            return None;
        }
        self.aliases.get(name).cloned()
    }

    fn not_grouped(&self, table: Option<&str>, name: &str, span: Span) -> Error {
        let full = match table {
            Some(t) => format!("{t}.{name}"),
            None => name.to_string(),
        };
        Error::invalid(
            format!("Undefined reference {full:?}: after GROUP BY only group items and aggregates can be used"),
            span,
        )
    }

    /// Infers a call against a signature: returns the result set and the type variable's set.
    fn infer_signature(
        &mut self,
        sig: &Signature,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<(TypeSet, TypeSet)> {
        if !sig.accepts(args.len()) {
            return Err(arity_error(name, sig.params.len(), args.len(), span));
        }
        let mut var = TypeSet::NULL;
        if let Param::T(d) = sig.result {
            var = var.restrict(d);
        }
        for (i, a) in args.iter().enumerate() {
            let set = self.infer(a)?;
            match sig.param(i) {
                Some(Param::T(domain)) => {
                    var = var.restrict(domain).intersect(set);
                    if var.is_empty() {
                        return Err(mismatch(
                            format!("Type mismatch in function {name:?}"),
                            a.span,
                        ));
                    }
                }
                Some(Param::Fixed(domain)) => {
                    if set.restrict(domain).is_empty() {
                        return Err(mismatch(
                            format!(
                                "Type mismatch in function {name:?}: argument {} has type {}, expected {}",
                                i + 1,
                                set.describe(),
                                domain.describe()
                            ),
                            a.span,
                        ));
                    }
                }
                None => return Err(arity_error(name, sig.params.len(), args.len(), span)),
            }
        }
        let result = match sig.result {
            Param::T(_) => var,
            Param::Fixed(s) => s,
        };
        Ok((result, var))
    }

    fn build_signature(
        &mut self,
        sig: &Signature,
        args: &[Expr],
        result: ValueType,
    ) -> Result<Vec<TypedExpr>> {
        let var_type = match sig.result {
            Param::T(_) => Some(result),
            Param::Fixed(_) => None,
        };
        // When the result does not carry the type variable, choose it from the arguments.
        let var_type = match var_type {
            Some(t) => t,
            None => {
                let mut var = TypeSet::NULL;
                for (i, a) in args.iter().enumerate() {
                    if let Some(Param::T(d)) = sig.param(i) {
                        var = var.restrict(d).intersect(self.infer(a)?);
                    }
                }
                if args
                    .iter()
                    .enumerate()
                    .any(|(i, _)| matches!(sig.param(i), Some(Param::T(_))))
                {
                    var.pick("function argument")?
                } else {
                    ValueType::Null
                }
            }
        };
        let mut out = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let t = match sig.param(i) {
                Some(Param::T(_)) => var_type,
                Some(Param::Fixed(domain)) => {
                    let s = self.infer(a)?.restrict(domain);
                    s.first().ok_or_else(|| {
                        mismatch("Type mismatch in function argument".into(), a.span)
                    })?
                }
                None => return Err(mismatch("Too many arguments".into(), a.span)),
            };
            out.push(self.build(a, t)?);
        }
        Ok(out)
    }

    /// Pairs of a (possibly tuple) comparison, each with its common type set.
    fn comparison_pairs<'e>(
        &mut self,
        left: &'e Expr,
        right: &'e Expr,
        span: Span,
    ) -> Result<Vec<(&'e Expr, &'e Expr, ValueType)>> {
        let ls = tuple_items(left);
        let rs = tuple_items(right);
        if ls.len() != rs.len() {
            return Err(Error::invalid(
                format!(
                    "Tuples of same size are expected but got {} vs {}",
                    ls.len(),
                    rs.len()
                ),
                span,
            ));
        }
        let mut out = Vec::new();
        for (l, r) in ls.into_iter().zip(rs) {
            let ltypes = self.infer(l)?;
            let rtypes = self.infer(r)?;
            let common = ltypes.intersect(rtypes);
            if common.is_empty() {
                return Err(mismatch(
                    format!(
                        "Type mismatch in expression {}: {} and {}",
                        quote_expr(&Expr {
                            kind: ExprKind::Tuple(vec![l.clone(), r.clone()]),
                            span
                        }),
                        ltypes.describe(),
                        rtypes.describe()
                    ),
                    span,
                ));
            }
            let t = common.pick("comparison").map_err(|e| with_span(e, span))?;
            out.push((l, r, t));
        }
        Ok(out)
    }

    // ------------------------------------------------------------------ building

    /// Builds `e` with result type `ty` (which `infer(e)` admits).
    pub(crate) fn build(&mut self, e: &Expr, ty: ValueType) -> Result<TypedExpr> {
        if let Some((slot, slot_ty)) = self.grouped_slot(e)? {
            return Ok(TypedExpr::new(TExpr::Column(slot), slot_ty));
        }
        match &e.kind {
            ExprKind::Literal(l) => {
                let v = literal_value(l);
                let v = convert_literal(&v, ty).ok_or_else(|| {
                    mismatch(
                        format!(
                            "Type mismatch: literal {} cannot be {ty}",
                            format_literal(l)
                        ),
                        e.span,
                    )
                })?;
                Ok(TypedExpr::literal(v, ty))
            }
            ExprKind::Column { table, name } => {
                if let Some(def) = self.alias_target(table.as_deref(), name) {
                    self.alias_stack.push(name.clone());
                    let r = self.build(&def, ty);
                    self.alias_stack.pop();
                    return r;
                }
                let c = self.resolve_column(table.as_deref(), name, e.span)?;
                Ok(TypedExpr::new(TExpr::Column(c.index), c.ty))
            }
            ExprKind::Alias { expr, name } => {
                self.alias_stack.push(name.clone());
                let r = self.build(expr, ty);
                self.alias_stack.pop();
                r
            }
            ExprKind::Unary { op, operand } => {
                let inner = self.build(operand, ty)?;
                Ok(TypedExpr::new(TExpr::Unary(*op, Box::new(inner)), ty))
            }
            ExprKind::Binary { op, left, right } => {
                if op.is_comparison() {
                    return self.build_comparison(*op, left, right, e.span);
                }
                let l = self.build(left, ty)?;
                let r = self.build(right, ty)?;
                Ok(TypedExpr::new(
                    TExpr::Binary(*op, Box::new(l), Box::new(r)),
                    ty,
                ))
            }
            ExprKind::Tuple(_) => Err(Error::invalid("Expecting scalar expression", e.span)),
            ExprKind::IsNull { operand, negated } => {
                let inner = self.bind_scalar(operand, "IS NULL operand")?;
                let is_null = TypedExpr::new(TExpr::IsNull(Box::new(inner)), ValueType::Boolean);
                Ok(if *negated {
                    TypedExpr::new(
                        TExpr::Unary(UnaryOp::Not, Box::new(is_null)),
                        ValueType::Boolean,
                    )
                } else {
                    is_null
                })
            }
            ExprKind::In {
                operand,
                items,
                negated,
            } => self.build_in(operand, items, *negated, e.span),
            ExprKind::Between { operand, ranges } => self.build_between(operand, ranges, e.span),
            ExprKind::Like {
                operand,
                pattern,
                escape,
                kind,
                negated,
            } => self.build_like(operand, pattern, escape.as_deref(), *kind, *negated),
            ExprKind::Case {
                operand,
                whens,
                otherwise,
            } => {
                let mut built = Vec::new();
                for (w, t) in whens {
                    let cond = match operand {
                        Some(o) => self.build_comparison(BinaryOp::Eq, o, w, w.span)?,
                        None => self.build(w, ValueType::Boolean)?,
                    };
                    built.push((cond, self.build(t, ty)?));
                }
                let otherwise = match otherwise {
                    Some(o) => Some(Box::new(self.build(o, ty)?)),
                    None => None,
                };
                Ok(TypedExpr::new(
                    TExpr::Case {
                        whens: built,
                        otherwise,
                    },
                    ty,
                ))
            }
            ExprKind::Transform {
                operand,
                from,
                to,
                default,
            } => self.build_transform(operand, from, to, default.as_deref(), ty, e.span),
            ExprKind::Call { name, args } => {
                if name.eq_ignore_ascii_case("is_null") {
                    let inner = self.bind_scalar(&args[0], "is_null argument")?;
                    return Ok(TypedExpr::new(
                        TExpr::IsNull(Box::new(inner)),
                        ValueType::Boolean,
                    ));
                }
                match lookup(name) {
                    Some(Function::Scalar(f)) => {
                        let args = self.build_signature(&f.signature(), args, ty)?;
                        Ok(TypedExpr::new(TExpr::Call(f, args), ty))
                    }
                    Some(Function::Aggregate(_)) => Err(Error::invalid(
                        format!("Misuse of aggregate function {name:?}"),
                        e.span,
                    )),
                    None => Err(unknown_function(name, e.span)),
                }
            }
        }
    }

    fn build_comparison(
        &mut self,
        op: BinaryOp,
        left: &Expr,
        right: &Expr,
        span: Span,
    ) -> Result<TypedExpr> {
        let pairs = self.comparison_pairs(left, right, span)?;
        let mut built = Vec::new();
        for (l, r, t) in pairs {
            built.push((self.build(l, t)?, self.build(r, t)?));
        }
        Ok(expand_tuple_comparison(op, built))
    }

    /// Binds a constant (literal or literal tuple) converted to `types`.
    fn constant_tuple(
        &mut self,
        e: &Expr,
        types: &[ValueType],
        context: &str,
        prefix_ok: bool,
    ) -> Result<Vec<Value>> {
        let items = tuple_items(e);
        if items.len() != types.len() && !(prefix_ok && items.len() <= types.len()) {
            return Err(Error::invalid(
                format!(
                    "Tuples of same size are expected but got {} vs {}",
                    types.len(),
                    items.len()
                ),
                e.span,
            ));
        }
        let mut out = Vec::with_capacity(items.len());
        for (item, t) in items.into_iter().zip(types) {
            let set = self.infer(item)?;
            if !set.contains(*t) {
                return Err(mismatch(
                    format!(
                        "Types mismatch in {context}: expected {t}, got {}",
                        set.describe()
                    ),
                    item.span,
                ));
            }
            let built = fold(self.build(item, *t)?, self.eval_options())?;
            match built.kind {
                TExpr::Literal(v) => out.push(v),
                _ => {
                    return Err(Error::invalid(
                        format!("{context} must consist of literals"),
                        item.span,
                    ));
                }
            }
        }
        Ok(out)
    }

    fn operands(&mut self, operand: &Expr) -> Result<Vec<TypedExpr>> {
        let mut out = Vec::new();
        for item in tuple_items(operand) {
            let t = self.bind_scalar(item, "operand")?;
            if t.ty == ValueType::Any {
                return Err(Error::invalid(
                    "Operands of type any are not supported here",
                    item.span,
                ));
            }
            out.push(t);
        }
        Ok(out)
    }

    fn build_in(
        &mut self,
        operand: &Expr,
        items: &[Expr],
        negated: bool,
        _span: Span,
    ) -> Result<TypedExpr> {
        let operands = self.operands(operand)?;
        let types: Vec<ValueType> = operands.iter().map(|o| o.ty).collect();
        let mut set = HashSet::with_capacity(items.len());
        for item in items {
            set.insert(self.constant_tuple(item, &types, "IN list", false)?);
        }
        Ok(TypedExpr::new(
            TExpr::In {
                operands,
                set: Arc::new(set),
                negated,
            },
            ValueType::Boolean,
        ))
    }

    fn build_between(
        &mut self,
        operand: &Expr,
        ranges: &[(Expr, Expr)],
        _span: Span,
    ) -> Result<TypedExpr> {
        let operands = self.operands(operand)?;
        let types: Vec<ValueType> = operands.iter().map(|o| o.ty).collect();
        let mut out = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            let lo = self.constant_tuple(lo, &types, "BETWEEN bound", true)?;
            let hi = self.constant_tuple(hi, &types, "BETWEEN bound", true)?;
            out.push((lo, hi));
        }
        Ok(TypedExpr::new(
            TExpr::Between {
                operands,
                ranges: out,
            },
            ValueType::Boolean,
        ))
    }

    fn build_like(
        &mut self,
        operand: &Expr,
        pattern: &Expr,
        escape: Option<&Expr>,
        kind: LikeKind,
        negated: bool,
    ) -> Result<TypedExpr> {
        let string_arg = |b: &mut Binder, e: &Expr, what: &str| -> Result<TypedExpr> {
            if !b.infer(e)?.contains(ValueType::String) {
                return Err(mismatch(format!("Types mismatch in {what}"), e.span));
            }
            fold(b.build(e, ValueType::String)?, b.eval_options())
        };
        let op = string_arg(self, operand, "LIKE matching expression")?;
        let pat = string_arg(self, pattern, "LIKE pattern")?;
        let esc = match escape {
            Some(e) => {
                if kind == LikeKind::Rlike {
                    return Err(Error::invalid(
                        "ESCAPE is not supported with RLIKE/REGEXP",
                        e.span,
                    ));
                }
                Some(Box::new(string_arg(self, e, "LIKE escape character")?))
            }
            None => None,
        };
        let compiled = match (pat.as_literal(), esc.as_ref().map(|e| e.as_literal())) {
            (Some(Value::String(p)), None) => Some(Arc::new(compile_like(p, None, kind)?)),
            (Some(Value::String(p)), Some(Some(Value::String(e)))) => {
                Some(Arc::new(compile_like(p, Some(e), kind)?))
            }
            _ => None,
        };
        Ok(TypedExpr::new(
            TExpr::Like {
                operand: Box::new(op),
                pattern: Box::new(pat),
                escape: esc,
                kind,
                negated,
                compiled,
            },
            ValueType::Boolean,
        ))
    }

    fn build_transform(
        &mut self,
        operand: &Expr,
        from: &[Expr],
        to: &[Expr],
        default: Option<&Expr>,
        ty: ValueType,
        span: Span,
    ) -> Result<TypedExpr> {
        if from.len() != to.len() {
            return Err(Error::invalid(
                format!(
                    "Size mismatch for source and result arrays in TRANSFORM: {} vs {}",
                    from.len(),
                    to.len()
                ),
                span,
            ));
        }
        let operands = self.operands(operand)?;
        let types: Vec<ValueType> = operands.iter().map(|o| o.ty).collect();
        let mut map = HashMap::with_capacity(from.len());
        for (f, t) in from.iter().zip(to) {
            let key = self.constant_tuple(f, &types, "TRANSFORM source list", false)?;
            let value = self.constant_tuple(t, &[ty], "TRANSFORM result list", false)?;
            map.entry(key)
                .or_insert_with(|| value.into_iter().next().unwrap_or(Value::Null));
        }
        let default = match default {
            Some(d) => Some(Box::new(self.build(d, ty)?)),
            None => None,
        };
        Ok(TypedExpr::new(
            TExpr::Transform {
                operands,
                map: Arc::new(map),
                default,
            },
            ty,
        ))
    }

    // ------------------------------------------------------------------ joins

    fn bind_join(
        &mut self,
        join: &Join,
        foreign: &TableSchema,
        source: usize,
        catalog: &dyn Catalog,
    ) -> Result<JoinPlan> {
        let _ = catalog;
        let foreign_ns = namespace(foreign, join.table.alias.as_deref(), 0);
        let mut self_keys = Vec::new();
        let mut foreign_keys = Vec::new();
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
                            Error::invalid(
                                format!(
                                    "Undefined reference {column:?} in joined table {:?}",
                                    join.table.path
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
                let (sk, fk) = match attempt(self, left, right) {
                    Ok(r) => r,
                    Err(first) => match attempt(self, right, left) {
                        Ok(r) => r,
                        Err(_) => return Err(first),
                    },
                };
                self_keys = sk;
                foreign_keys = fk;
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
        Ok(JoinPlan {
            source,
            left_outer: join.left,
            self_keys,
            foreign_keys,
            foreign_predicate,
        })
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

fn tuple_items(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Tuple(items) => items.iter().collect(),
        _ => vec![e],
    }
}

/// `(a1, a2) < (b1, b2)` = `a1 < b1 OR (a1 = b1 AND a2 < b2)`; `=` is a conjunction, `!=` a
/// disjunction.
fn expand_tuple_comparison(op: BinaryOp, pairs: Vec<(TypedExpr, TypedExpr)>) -> TypedExpr {
    let cmp = |op: BinaryOp, l: TypedExpr, r: TypedExpr| {
        TypedExpr::new(
            TExpr::Binary(op, Box::new(l), Box::new(r)),
            ValueType::Boolean,
        )
    };
    let join = |op: BinaryOp, l: TypedExpr, r: TypedExpr| cmp(op, l, r);
    let mut pairs = pairs;
    if pairs.len() == 1 {
        let (l, r) = pairs.pop().unwrap_or_else(|| unreachable_pair());
        return cmp(op, l, r);
    }
    match op {
        BinaryOp::Eq | BinaryOp::NotEq => {
            let link = if op == BinaryOp::Eq {
                BinaryOp::And
            } else {
                BinaryOp::Or
            };
            let mut it = pairs.into_iter().map(|(l, r)| cmp(op, l, r));
            let first = it
                .next()
                .unwrap_or_else(|| TypedExpr::literal(Value::Boolean(true), ValueType::Boolean));
            it.fold(first, |acc, e| join(link, acc, e))
        }
        _ => {
            let strict = match op {
                BinaryOp::LessOrEq => BinaryOp::Less,
                BinaryOp::GreaterOrEq => BinaryOp::Greater,
                other => other,
            };
            let (last_l, last_r) = pairs.pop().unwrap_or_else(|| unreachable_pair());
            let mut acc = cmp(op, last_l, last_r);
            while let Some((l, r)) = pairs.pop() {
                let eq = cmp(BinaryOp::Eq, l.clone(), r.clone());
                acc = join(
                    BinaryOp::Or,
                    cmp(strict, l, r),
                    join(BinaryOp::And, eq, acc),
                );
            }
            acc
        }
    }
}

fn unreachable_pair() -> (TypedExpr, TypedExpr) {
    let t = TypedExpr::literal(Value::Boolean(true), ValueType::Boolean);
    (t.clone(), t)
}

fn binary_domain(op: BinaryOp) -> TypeSet {
    match op {
        BinaryOp::Plus | BinaryOp::Minus | BinaryOp::Multiply | BinaryOp::Divide => {
            TypeSet::NUMERIC
        }
        BinaryOp::Modulo
        | BinaryOp::LeftShift
        | BinaryOp::RightShift
        | BinaryOp::BitAnd
        | BinaryOp::BitOr => TypeSet::INTEGER,
        BinaryOp::Concat => TypeSet::STRING,
        BinaryOp::And | BinaryOp::Or => TypeSet::BOOLEAN,
        _ => TypeSet::SCALAR,
    }
}

fn literal_types(l: &Literal) -> TypeSet {
    match l {
        Literal::Null => TypeSet::NULL,
        Literal::Int(_) => TypeSet::NUMERIC,
        Literal::Uint(_) => TypeSet::UINT64.union(TypeSet::DOUBLE),
        Literal::Double(_) => TypeSet::DOUBLE,
        Literal::Boolean(_) => TypeSet::BOOLEAN,
        Literal::String(_) => TypeSet::STRING,
    }
}

fn literal_value(l: &Literal) -> Value {
    match l {
        Literal::Null => Value::Null,
        Literal::Int(v) => Value::Int64(*v),
        Literal::Uint(v) => Value::Uint64(*v),
        Literal::Double(v) => Value::Double(*v),
        Literal::Boolean(v) => Value::Boolean(*v),
        Literal::String(s) => Value::String(s.clone()),
    }
}

fn quote_expr(e: &Expr) -> String {
    format!("{:?}", format_expr(e))
}

fn with_span(e: Error, span: Span) -> Error {
    match e {
        Error::Invalid {
            message,
            span: None,
        } => Error::Invalid {
            message,
            span: Some(span),
        },
        other => other,
    }
}

fn arity_error(name: &str, expected: usize, got: usize, span: Span) -> Error {
    Error::invalid(
        format!("Wrong number of arguments to function {name:?}: expected {expected}, got {got}"),
        span,
    )
}

fn unknown_function(name: &str, span: Span) -> Error {
    let lower = name.to_ascii_lowercase();
    if crate::functions::NOT_YET_SUPPORTED.contains(&lower.as_str()) {
        return Error::invalid(
            format!("Function {name:?} is not supported by dynql yet"),
            span,
        );
    }
    Error::invalid(format!("Undefined function {name:?}"), span)
}

/// Folds literal-only sub-expressions (their errors surface here, before any row is read).
pub(crate) fn fold(mut e: TypedExpr, opts: EvalOptions) -> Result<TypedExpr> {
    fold_in_place(&mut e, opts)?;
    Ok(e)
}

fn fold_in_place(e: &mut TypedExpr, opts: EvalOptions) -> Result<()> {
    match &mut e.kind {
        TExpr::Literal(_) | TExpr::Column(_) => return Ok(()),
        TExpr::Unary(_, x) | TExpr::IsNull(x) => fold_in_place(x, opts)?,
        TExpr::Binary(_, l, r) => {
            fold_in_place(l, opts)?;
            fold_in_place(r, opts)?;
        }
        TExpr::In { operands, .. } | TExpr::Between { operands, .. } => {
            for o in operands {
                fold_in_place(o, opts)?;
            }
        }
        TExpr::Like {
            operand,
            pattern,
            escape,
            ..
        } => {
            fold_in_place(operand, opts)?;
            fold_in_place(pattern, opts)?;
            if let Some(x) = escape {
                fold_in_place(x, opts)?;
            }
        }
        // CASE and TRANSFORM branches run lazily; fold them only as a whole.
        TExpr::Case { .. } | TExpr::Transform { .. } => {}
        TExpr::Call(ScalarFunction::If, _) => {}
        TExpr::Call(_, args) => {
            for a in args {
                fold_in_place(a, opts)?;
            }
        }
    }
    if e.is_constant() {
        let v = evaluate(e, &[], opts)?;
        e.kind = TExpr::Literal(v);
    }
    Ok(())
}
