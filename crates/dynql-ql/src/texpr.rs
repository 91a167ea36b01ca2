//! Typed expressions: the binder's output, evaluated by [`eval`](crate::eval) and analysed by
//! range inference. Column references are positions in the input row of the operator that
//! evaluates the expression.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dynql_core::{Value, ValueType};

use crate::ast::{BinaryOp, LikeKind, UnaryOp};
use crate::functions::ScalarFunction;

/// A typed expression.
#[derive(Debug, Clone)]
pub struct TypedExpr {
    pub kind: TExpr,
    /// The type of the result (never `Null`).
    pub ty: ValueType,
}

/// Typed expression forms.
#[derive(Debug, Clone)]
pub enum TExpr {
    Literal(Value),
    /// The value at this position of the input row.
    Column(usize),
    Unary(UnaryOp, Box<TypedExpr>),
    /// Both operands have the same type (comparisons yield boolean).
    Binary(BinaryOp, Box<TypedExpr>, Box<TypedExpr>),
    /// `(operands) [NOT] IN set`; values converted to the operand types.
    In {
        operands: Vec<TypedExpr>,
        set: Arc<HashSet<Vec<Value>>>,
        negated: bool,
    },
    /// True when the operand tuple lies in one of the inclusive ranges; bounds may be shorter
    /// than the operand tuple (then only that prefix is compared).
    Between {
        operands: Vec<TypedExpr>,
        ranges: Vec<(Vec<Value>, Vec<Value>)>,
    },
    Like {
        operand: Box<TypedExpr>,
        pattern: Box<TypedExpr>,
        escape: Option<Box<TypedExpr>>,
        kind: LikeKind,
        negated: bool,
        /// The compiled pattern when pattern and escape are literals.
        compiled: Option<Arc<regex::bytes::Regex>>,
    },
    IsNull(Box<TypedExpr>),
    /// Searched CASE (the operand form is rewritten into comparisons by the binder).
    Case {
        whens: Vec<(TypedExpr, TypedExpr)>,
        otherwise: Option<Box<TypedExpr>>,
    },
    Transform {
        operands: Vec<TypedExpr>,
        map: Arc<HashMap<Vec<Value>, Value>>,
        default: Option<Box<TypedExpr>>,
    },
    Call(ScalarFunction, Vec<TypedExpr>),
}

impl TypedExpr {
    pub fn new(kind: TExpr, ty: ValueType) -> TypedExpr {
        TypedExpr { kind, ty }
    }

    pub fn literal(v: Value, ty: ValueType) -> TypedExpr {
        TypedExpr {
            kind: TExpr::Literal(v),
            ty,
        }
    }

    /// The literal value, if this is a literal.
    pub fn as_literal(&self) -> Option<&Value> {
        match &self.kind {
            TExpr::Literal(v) => Some(v),
            _ => None,
        }
    }

    /// Direct sub-expressions.
    pub fn children(&self) -> Vec<&TypedExpr> {
        match &self.kind {
            TExpr::Literal(_) | TExpr::Column(_) => vec![],
            TExpr::Unary(_, e) | TExpr::IsNull(e) => vec![e],
            TExpr::Binary(_, l, r) => vec![l, r],
            TExpr::In { operands, .. } | TExpr::Between { operands, .. } => {
                operands.iter().collect()
            }
            TExpr::Like {
                operand,
                pattern,
                escape,
                ..
            } => {
                let mut v: Vec<&TypedExpr> = vec![operand, pattern];
                if let Some(e) = escape {
                    v.push(e);
                }
                v
            }
            TExpr::Case { whens, otherwise } => {
                let mut v = Vec::new();
                for (w, t) in whens {
                    v.push(w);
                    v.push(t);
                }
                if let Some(o) = otherwise {
                    v.push(o);
                }
                v
            }
            TExpr::Transform {
                operands, default, ..
            } => {
                let mut v: Vec<&TypedExpr> = operands.iter().collect();
                if let Some(d) = default {
                    v.push(d);
                }
                v
            }
            TExpr::Call(_, args) => args.iter().collect(),
        }
    }

    /// Row positions this expression reads.
    pub fn referenced_columns(&self, out: &mut Vec<usize>) {
        if let TExpr::Column(i) = self.kind {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        for c in self.children() {
            c.referenced_columns(out);
        }
    }

    /// True when the expression reads no column and calls nothing impure.
    pub fn is_constant(&self) -> bool {
        match &self.kind {
            TExpr::Column(_) => false,
            TExpr::Call(f, _) if !f.is_pure() => false,
            _ => self.children().iter().all(|c| c.is_constant()),
        }
    }

    /// Rewrites column positions through `map` (old position -> new position).
    pub fn remap_columns(&mut self, map: &dyn Fn(usize) -> usize) {
        match &mut self.kind {
            TExpr::Column(i) => *i = map(*i),
            TExpr::Literal(_) => {}
            TExpr::Unary(_, e) | TExpr::IsNull(e) => e.remap_columns(map),
            TExpr::Binary(_, l, r) => {
                l.remap_columns(map);
                r.remap_columns(map);
            }
            TExpr::In { operands, .. } | TExpr::Between { operands, .. } => {
                operands.iter_mut().for_each(|o| o.remap_columns(map))
            }
            TExpr::Like {
                operand,
                pattern,
                escape,
                ..
            } => {
                operand.remap_columns(map);
                pattern.remap_columns(map);
                if let Some(e) = escape {
                    e.remap_columns(map);
                }
            }
            TExpr::Case { whens, otherwise } => {
                for (w, t) in whens {
                    w.remap_columns(map);
                    t.remap_columns(map);
                }
                if let Some(o) = otherwise {
                    o.remap_columns(map);
                }
            }
            TExpr::Transform {
                operands, default, ..
            } => {
                operands.iter_mut().for_each(|o| o.remap_columns(map));
                if let Some(d) = default {
                    d.remap_columns(map);
                }
            }
            TExpr::Call(_, args) => args.iter_mut().for_each(|a| a.remap_columns(map)),
        }
    }
}
