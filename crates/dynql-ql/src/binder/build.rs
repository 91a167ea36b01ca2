//! Building typed expressions top-down once a type is chosen; literals adapt to it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dynql_core::{Value, ValueType};

use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::eval::{compile_like, convert_literal};
use crate::functions::{lookup, Function};
use crate::texpr::{TExpr, TypedExpr};
use crate::types::TypeSet;

use super::*;

impl Binder {
    // ------------------------------------------------------------------ building

    /// Builds `e` with result type `ty` (which `infer(e)` admits).
    pub(crate) fn build(&mut self, e: &Expr, ty: ValueType) -> Result<TypedExpr> {
        if let Some((slot, slot_ty)) = self.grouped_slot(e)? {
            return Ok(TypedExpr::new(TExpr::Column(slot), slot_ty));
        }
        match &e.kind {
            ExprKind::Literal(l) => {
                let v = literal_value(l);
                check_exact(&v, ty, e.span)?;
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

    pub(super) fn build_comparison(
        &mut self,
        op: BinaryOp,
        left: &Expr,
        right: &Expr,
        span: Span,
    ) -> Result<TypedExpr> {
        let pairs = self.comparison_pairs(left, right, span)?;
        let mut built = Vec::new();
        for (l, r, lt, rt) in pairs {
            built.push((self.build(l, lt)?, self.build(r, rt)?));
        }
        Ok(expand_tuple_comparison(op, built))
    }

    /// Binds a constant (literal or literal tuple) converted to `types`.
    pub(super) fn constant_tuple(
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
            let numeric = |t: ValueType| {
                matches!(t, ValueType::Int64 | ValueType::Uint64 | ValueType::Double)
            };
            if !set.contains(*t)
                && numeric(*t)
                && set.restrict(TypeSet::NUMERIC) == set
                && !set.is_empty()
            {
                // YT converts numeric list literals to the operand's type (`a in (4.0)` for an
                // int64 `a`), as a C cast would.
                let own = set.pick("list item")?;
                let built = fold(self.build(item, own)?, self.eval_options())?;
                let TExpr::Literal(v) = built.kind else {
                    return Err(Error::invalid(
                        format!("{context} must consist of literals"),
                        item.span,
                    ));
                };
                check_exact(&v, *t, item.span)?;
                out.push(cast_numeric(&v, *t));
                continue;
            }
            if !set.contains(*t) {
                return Err(mismatch(
                    format!(
                        "Types mismatch in tuple: {context} item has type {}, expected {t}",
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

    pub(super) fn operands(&mut self, operand: &Expr) -> Result<Vec<TypedExpr>> {
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

    pub(super) fn build_in(
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

    pub(super) fn build_between(
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

    pub(super) fn build_like(
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
                        "ESCAPE should not be used together with REGEXP (RLIKE)",
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

    pub(super) fn build_transform(
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
        let (l, r) = pairs.pop().unwrap_or_else(unreachable_pair);
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
            let (last_l, last_r) = pairs.pop().unwrap_or_else(unreachable_pair);
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

/// YT's check on a numeric constant converted to the type its context needs
/// (`CastValueWithCheck`): the value must come through unchanged, so `d = 9007199254740993`
/// (d double) or `i in (1.5)` (i int64) is an error rather than a query for a nearby value.
/// int64 to uint64 reinterprets the bits, as in YT.
fn check_exact(v: &Value, t: ValueType, span: Span) -> Result<()> {
    let lost = |why: &str| {
        Err(Error::invalid(
            format!("Failed to cast {v} to {t}: {why}"),
            span,
        ))
    };
    // Integers go through i128 so that 2^63 (what i64::MAX rounds to) is not taken for it;
    // doubles must be whole and inside [-2^63, 2^63) or [0, 2^64), bounds a double holds.
    let integral = |x: f64, lo: f64, hi: f64| x.trunc() == x && (lo..hi).contains(&x);
    let two_63 = -(i64::MIN as f64);
    match (v, t) {
        (Value::Int64(x), ValueType::Double) if (*x as f64) as i128 != i128::from(*x) => {
            lost("inaccurate conversion")
        }
        (Value::Uint64(x), ValueType::Double) if (*x as f64) as i128 != i128::from(*x) => {
            lost("inaccurate conversion")
        }
        (Value::Uint64(x), ValueType::Int64) if i64::try_from(*x).is_err() => {
            lost("value is greater than maximum")
        }
        (Value::Double(x), ValueType::Int64) if !integral(*x, -two_63, two_63) => {
            lost("inaccurate conversion")
        }
        (Value::Double(x), ValueType::Uint64) if !integral(*x, 0.0, 2.0 * two_63) => {
            lost("inaccurate conversion")
        }
        _ => Ok(()),
    }
}

/// Conversion of a numeric literal that [`check_exact`] passed.
fn cast_numeric(v: &Value, t: ValueType) -> Value {
    match (v, t) {
        (Value::Double(x), ValueType::Int64) => Value::Int64(*x as i64),
        (Value::Double(x), ValueType::Uint64) => Value::Uint64(*x as u64),
        (Value::Int64(x), ValueType::Double) => Value::Double(*x as f64),
        (Value::Uint64(x), ValueType::Double) => Value::Double(*x as f64),
        (Value::Int64(x), ValueType::Uint64) => Value::Uint64(*x as u64),
        (Value::Uint64(x), ValueType::Int64) => Value::Int64(*x as i64),
        (v, _) => v.clone(),
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
