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

mod build;
mod fold;
mod infer;
mod join;
pub mod limits;

pub(crate) use fold::fold;

use std::collections::HashMap;

use dynql_core::{TableSchema, ValueType, Yson};

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::eval::EvalOptions;
use crate::functions::{lookup, AggregateFunction, Function};
use crate::lexer::tokenize;
use crate::parser::parse_query;
use crate::placeholders::expand_placeholders;
use crate::plan::*;
use crate::texpr::{TExpr, TypedExpr};

/// The most joins a query may have.
pub const MAX_JOINS: usize = 200;
/// The deepest expression accepted.
pub const MAX_EXPRESSION_DEPTH: usize = 100;

/// What the binder needs to know about tables.
pub trait Catalog {
    /// The schema of the table at `path`, or `None` when there is no such table.
    fn table_schema(&self, path: &str) -> Option<TableSchema>;

    /// Columns of the table at `path` that queries cannot read (a file column of a type YT
    /// has no counterpart for), each with why ("its Arrow type is …"). They are not in
    /// [`Catalog::table_schema`]; naming one, or `*` over its table, is an error with the
    /// reason, rather than an undefined reference or a silently missing column.
    fn refused_columns(&self, path: &str) -> Vec<(String, String)> {
        let _ = path;
        Vec::new()
    }
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

/// The tables a query reads: its `FROM` table, then its joined tables, as written.
///
/// # Example
/// ```
/// let tables = dynql_ql::binder::query_tables(
///     "* from [//a] join [//b] using k", None).unwrap();
/// assert_eq!(tables, ["//a", "//b"]);
/// ```
pub fn query_tables(text: &str, placeholders: Option<&Yson>) -> Result<Vec<String>> {
    let tokens = expand_placeholders(tokenize(text)?, placeholders)?;
    let query = parse_query(&tokens)?;
    Ok(std::iter::once(query.from.path.clone())
        .chain(query.joins.iter().map(|j| j.table.path.clone()))
        .collect())
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
    b.check_limits(query)?;

    // Sources and joins.
    let main = table_schema(catalog, &query.from)?;
    let mut sources = vec![SourceTable {
        path: query.from.path.clone(),
        schema: main.clone(),
        offset: 0,
    }];
    b.ns = namespace(&main, query.from.alias.as_deref(), 0);
    b.add_refused(catalog, &query.from);
    if query.joins.len() > MAX_JOINS {
        return Err(Error::invalid_query(format!(
            "The number of joins exceeds the limit: {} > {MAX_JOINS}",
            query.joins.len()
        )));
    }
    let mut joins = Vec::new();
    for join in &query.joins {
        let schema = table_schema(catalog, &join.table)?;
        b.add_refused(catalog, &join.table);
        let offset = b.ns.len();
        let (plan, shared) = b.bind_join(join, &schema, sources.len(), catalog)?;
        let mut cols = namespace(&schema, join.table.alias.as_deref(), offset);
        for i in shared {
            cols[i].hidden = true;
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
            if typed.ty == ValueType::Any {
                return Err(Error::invalid(
                    format!(
                        "Type mismatch in expression {}: cannot group by a value of type any",
                        quote_expr(&item.expr)
                    ),
                    item.expr.span,
                ));
            }
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
            if let Some(r) = b.refused.first() {
                return Err(Error::invalid(
                    format!(
                        "* includes column {}, which cannot be read: {}; name the columns to read instead of *",
                        dynql_core::error::shown(&r.shown()),
                        r.why
                    ),
                    r.span,
                ));
            }
            // YT names the columns of an aliased table `alias.column`, as a reference to
            // them is written; two columns of one name are ambiguous, as their references.
            for c in b.ns.iter().filter(|c| !c.hidden) {
                let name = match &c.qualifier {
                    Some(q) => format!("{q}.{}", c.name),
                    None => c.name.clone(),
                };
                if projections.iter().any(|p: &OutputColumn| p.name == name) {
                    // Point at the joined table that brings the second one.
                    let source = sources.iter().rposition(|s| s.offset <= c.index);
                    let span = match source {
                        Some(j) if j > 0 => query.joins[j - 1].table.span,
                        _ => query.from.span,
                    };
                    return Err(ambiguous(&name, span));
                }
                projections.push(OutputColumn {
                    name,
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
    1 + e.children().into_iter().map(depth).max().unwrap_or(0)
}

fn table_schema(catalog: &dyn Catalog, t: &TableRef) -> Result<TableSchema> {
    catalog
        .table_schema(&t.path)
        .ok_or_else(|| Error::invalid(format!("Table {:?} does not exist", t.path), t.span))
}

/// A column of a source table that queries cannot read ([`Catalog::refused_columns`]).
#[derive(Debug, Clone)]
struct RefusedColumn {
    qualifier: Option<String>,
    name: String,
    why: String,
    /// The table reference that brings it.
    span: Span,
}

impl RefusedColumn {
    /// The column as a reference to it is written.
    fn shown(&self) -> String {
        match &self.qualifier {
            Some(q) => format!("{q}.{}", self.name),
            None => self.name.clone(),
        }
    }
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
    refused: Vec<RefusedColumn>,
    aliases: HashMap<String, Expr>,
    alias_stack: Vec<String>,
    group: Option<GroupContext>,
    options: BindOptions,
}

fn mismatch(what: String, span: Span) -> Error {
    Error::invalid(what, span)
}

fn ambiguous(name: &str, span: Span) -> Error {
    Error::invalid(
        format!(
            "Ambiguous resolution for column {}",
            dynql_core::error::shown(name)
        ),
        span,
    )
}

impl Binder {
    fn new(options: BindOptions) -> Binder {
        Binder {
            ns: vec![],
            refused: vec![],
            aliases: HashMap::new(),
            alias_stack: vec![],
            group: None,
            options,
        }
    }

    /// Records the columns of `table` that cannot be read.
    fn add_refused(&mut self, catalog: &dyn Catalog, table: &TableRef) {
        for (name, why) in catalog.refused_columns(&table.path) {
            self.refused.push(RefusedColumn {
                qualifier: table.alias.clone(),
                name,
                why,
                span: table.span,
            });
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
            for c in e.children() {
                walk(c, out);
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
            ExprKind::Column { table: None, name } if !stack.contains(name) => {
                if let Some(def) = self.aliases.get(name.as_str()) {
                    stack.push(name.clone());
                    let r = self.expand(def, stack);
                    stack.pop();
                    return r;
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

    /// The column `table.name` (or `name`) stands for. A bare name is looked up, as in YT,
    /// among the tables without an alias; dynql also finds it in an aliased table when no
    /// other table has it. A name two tables answer is YT's "Ambiguous resolution".
    fn resolve_column(&self, table: Option<&str>, name: &str, span: Span) -> Result<&NsColumn> {
        let visible = |c: &&NsColumn| !c.hidden;
        let found: Vec<&NsColumn> = match table {
            Some(t) => {
                let qualified: Vec<&NsColumn> = self
                    .ns
                    .iter()
                    .filter(|c| c.qualifier.as_deref() == Some(t) && c.name == name)
                    .collect();
                if qualified.is_empty() {
                    // `a.b` that is not table.column may be a column literally named "a.b".
                    let full = format!("{t}.{name}");
                    self.ns
                        .iter()
                        .filter(visible)
                        .filter(|c| c.name == full)
                        .collect()
                } else {
                    qualified
                }
            }
            None => {
                let named: Vec<&NsColumn> = self
                    .ns
                    .iter()
                    .filter(visible)
                    .filter(|c| c.name == name)
                    .collect();
                let bare: Vec<&NsColumn> = named
                    .iter()
                    .copied()
                    .filter(|c| c.qualifier.is_none())
                    .collect();
                if bare.is_empty() {
                    named
                } else {
                    bare
                }
            }
        };
        let full = || match table {
            Some(t) => format!("{t}.{name}"),
            None => name.to_string(),
        };
        match found.as_slice() {
            [one] => Ok(one),
            [] => {
                let refused = self.refused.iter().find(|r| match table {
                    Some(t) => {
                        (r.qualifier.as_deref() == Some(t) && r.name == name) || r.name == full()
                    }
                    None => r.name == name,
                });
                if let Some(r) = refused {
                    return Err(Error::invalid(
                        format!(
                            "Column {} cannot be read: {}",
                            dynql_core::error::shown(&full()),
                            r.why
                        ),
                        span,
                    ));
                }
                Err(Error::invalid(
                    format!("Undefined reference {}", dynql_core::error::shown(&full())),
                    span,
                ))
            }
            _ => Err(ambiguous(&full(), span)),
        }
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
}

fn tuple_items(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Tuple(items) => items.iter().collect(),
        _ => vec![e],
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
            hint,
        } => Error::Invalid {
            message,
            span: Some(span),
            hint,
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
    let error = Error::invalid(format!("Undefined function {name:?}"), span);
    if lower == "count" {
        return error.with_hint(crate::parser::COUNT_HINT);
    }
    error
}
