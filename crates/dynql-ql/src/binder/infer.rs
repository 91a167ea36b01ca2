//! Type inference: the feasible type set of an expression, bottom-up (YT v1, reference §4.2).

use dynql_core::ValueType;

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::functions::{lookup, Function, Param, Signature};
use crate::texpr::TypedExpr;
use crate::types::TypeSet;

use super::*;

impl Binder {
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
                        "Types mismatch in tuple: TRANSFORM result values have no common type"
                            .into(),
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

    pub(super) fn alias_target(&self, table: Option<&str>, name: &str) -> Option<Expr> {
        if table.is_some() || self.alias_stack.iter().any(|a| a == name) {
            return None;
        }
        self.aliases.get(name).cloned()
    }

    pub(super) fn not_grouped(&self, table: Option<&str>, name: &str, span: Span) -> Error {
        let full = match table {
            Some(t) => format!("{t}.{name}"),
            None => name.to_string(),
        };
        Error::invalid(
            format!("Undefined reference {}: after GROUP BY only group items and aggregates can be used", dynql_core::error::shown(&full)),
            span,
        )
    }

    /// Infers a call against a signature: returns the result set and the type variable's set.
    pub(super) fn infer_signature(
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

    pub(super) fn build_signature(
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
    pub(super) fn comparison_pairs<'e>(
        &mut self,
        left: &'e Expr,
        right: &'e Expr,
        span: Span,
    ) -> Result<Vec<(&'e Expr, &'e Expr, ValueType, ValueType)>> {
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
            // `any` compares with any scalar: the YSON value is compared as that scalar.
            let any_side = |a: TypeSet, b: TypeSet| {
                a == TypeSet::ANY && !b.is_weak() && !b.restrict(TypeSet::SCALAR).is_empty()
            };
            if common.is_empty() && (any_side(ltypes, rtypes) || any_side(rtypes, ltypes)) {
                let lt = ltypes.pick("comparison").map_err(|e| with_span(e, span))?;
                let rt = rtypes.pick("comparison").map_err(|e| with_span(e, span))?;
                out.push((l, r, lt, rt));
                continue;
            }
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
            out.push((l, r, t, t));
        }
        Ok(out)
    }
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
