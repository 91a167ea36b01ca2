//! Predicate → constraint trie (spec B.1).
//!
//! NOT is pushed down while walking: De Morgan for AND/OR, the inverse operator for a
//! comparison; NOT over IN, BETWEEN and functions is opaque. Shapes not understood constrain
//! nothing ([`Trie::Universal`]), which is always safe: the trie only has to contain every key
//! for which the predicate can be true.

use std::rc::Rc;

use dynql_core::{TableSchema, Value, ValueType};

use super::bound::{Bound, Interval};
use super::constraints::{intersect, unite, Branch, Trie};
use crate::ast::{BinaryOp, UnaryOp};
use crate::error::{Error, Result};
use crate::functions::ScalarFunction;
use crate::texpr::{TExpr, TypedExpr};

/// The constraint trie of `predicate` over `schema`'s key columns.
///
/// # Errors
/// A key column repeated in an IN tuple.
pub(crate) fn extract(predicate: &TypedExpr, schema: &TableSchema) -> Result<Rc<Trie>> {
    Extractor { schema }.walk(predicate, false)
}

struct Extractor<'a> {
    schema: &'a TableSchema,
}

impl Extractor<'_> {
    /// The constraint of `e`, or of `NOT e` when `negated`.
    fn walk(&self, e: &TypedExpr, negated: bool) -> Result<Rc<Trie>> {
        Ok(match &e.kind {
            TExpr::Literal(Value::Boolean(b)) => {
                if *b != negated {
                    Trie::universal()
                } else {
                    Trie::empty()
                }
            }
            // A null condition is never true, and neither is its negation.
            TExpr::Literal(Value::Null) => Trie::empty(),
            TExpr::Unary(UnaryOp::Not, inner) => self.walk(inner, !negated)?,
            TExpr::Binary(op @ (BinaryOp::And | BinaryOp::Or), l, r) => {
                let (l, r) = (self.walk(l, negated)?, self.walk(r, negated)?);
                if (*op == BinaryOp::And) != negated {
                    intersect(&l, &r)
                } else {
                    unite(&l, &r)
                }
            }
            TExpr::Binary(op, l, r) if op.is_comparison() => self.comparison(*op, l, r, negated),
            TExpr::In {
                operands,
                set,
                negated: not_in,
            } if *not_in == negated => self.in_list(operands, set.iter())?,
            TExpr::Between { operands, ranges } if !negated => self.between(operands, ranges),
            TExpr::Call(ScalarFunction::IsPrefix, args) if !negated => self.is_prefix(args),
            _ => Trie::universal(),
        })
    }

    /// The key column `e` reads, if `e` is a plain reference to one whose values order like
    /// the literals compared with it (not `any`).
    fn key_column(&self, e: &TypedExpr) -> Option<usize> {
        match e.kind {
            TExpr::Column(i) if i < self.schema.key_column_count() && e.ty != ValueType::Any => {
                Some(i)
            }
            _ => None,
        }
    }

    fn comparison(&self, op: BinaryOp, l: &TypedExpr, r: &TypedExpr, negated: bool) -> Rc<Trie> {
        let (column, op, column_expr, value) = match (&l.kind, &r.kind) {
            (_, TExpr::Literal(v)) => match self.key_column(l) {
                Some(c) => (c, op, l, v),
                None => return Trie::universal(),
            },
            (TExpr::Literal(v), _) => match self.key_column(r) {
                Some(c) => (c, op.mirrored(), r, v),
                None => return Trie::universal(),
            },
            _ => return Trie::universal(),
        };
        if !value.is_null() && value.value_type() != column_expr.ty {
            return Trie::universal();
        }
        let op = if negated { invert(op) } else { op };
        let v = value.clone();
        let branches = match op {
            BinaryOp::Eq => vec![Interval::exact(v)],
            BinaryOp::NotEq => vec![
                Interval::new(Bound::min(), Bound::before(v.clone())),
                Interval::new(Bound::after(v), Bound::max()),
            ],
            BinaryOp::Less => vec![Interval::new(Bound::min(), Bound::before(v))],
            BinaryOp::LessOrEq => vec![Interval::new(Bound::min(), Bound::after(v))],
            BinaryOp::Greater => vec![Interval::new(Bound::after(v), Bound::max())],
            BinaryOp::GreaterOrEq => vec![Interval::new(Bound::before(v), Bound::max())],
            _ => return Trie::universal(),
        };
        let branches = branches
            .into_iter()
            .map(|i| Branch::new(i, Trie::universal()))
            .collect();
        Trie::column(column, branches)
    }

    /// `(c1..cn) IN (...)`: exact values of the members that are key columns, as a trie in
    /// key order; other members are ignored.
    fn in_list<'v>(
        &self,
        operands: &[TypedExpr],
        set: impl Iterator<Item = &'v Vec<Value>>,
    ) -> Result<Rc<Trie>> {
        // (key column, position in the tuple), sorted by key column.
        let mut members: Vec<(usize, usize)> = operands
            .iter()
            .enumerate()
            .filter_map(|(pos, o)| self.key_column(o).map(|c| (c, pos)))
            .collect();
        members.sort();
        if let Some(w) = members.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid_query(format!(
                "Column {:?} occurs more than once in the IN tuple",
                self.schema.columns()[w[0].0].name
            )));
        }
        let mut tuples: Vec<Vec<Value>> = set
            .map(|t| members.iter().map(|&(_, pos)| t[pos].clone()).collect())
            .collect();
        tuples.sort();
        tuples.dedup();
        if tuples.is_empty() {
            return Ok(Trie::empty());
        }
        let columns: Vec<usize> = members.iter().map(|&(c, _)| c).collect();
        Ok(exact_trie(&columns, &tuples))
    }

    /// `(c1..cn) BETWEEN lo AND hi, ...`: the leading members that are key columns in
    /// strictly increasing key order, both ends inclusive, ranges united.
    fn between(&self, operands: &[TypedExpr], ranges: &[(Vec<Value>, Vec<Value>)]) -> Rc<Trie> {
        let mut columns: Vec<usize> = Vec::new();
        for o in operands {
            match self.key_column(o) {
                Some(c) if columns.last().is_none_or(|&last| last < c) => columns.push(c),
                _ => break,
            }
        }
        if columns.is_empty() {
            return Trie::universal();
        }
        let mut result = Trie::empty();
        for (lo, hi) in ranges {
            let lower = tuple_bound(&columns, &lo[..lo.len().min(columns.len())], true);
            let upper = tuple_bound(&columns, &hi[..hi.len().min(columns.len())], false);
            result = unite(&result, &intersect(&lower, &upper));
        }
        result
    }

    /// `is_prefix("lit", c)`: `c` in `["lit", successor)`.
    fn is_prefix(&self, args: &[TypedExpr]) -> Rc<Trie> {
        let [prefix, operand] = args else {
            return Trie::universal();
        };
        match (&prefix.kind, self.key_column(operand)) {
            (TExpr::Literal(Value::String(p)), Some(c)) if operand.ty == ValueType::String => {
                let upper = match prefix_successor(p) {
                    Some(s) => Bound::before(Value::String(s)),
                    None => Bound::max(),
                };
                Trie::interval(
                    c,
                    Interval::new(Bound::before(Value::String(p.clone())), upper),
                )
            }
            _ => Trie::universal(),
        }
    }
}

/// The smallest string above every string starting with `prefix`, or `None` if there is none.
///
/// Trailing 0x7F bytes are dropped first, as YT does (its bytes are signed chars, so 0x7F is
/// the largest). YT then increments a last byte 0xFF to 0x00, which would make the upper bound
/// smaller than the lower one and lose rows; we drop trailing 0xFF bytes too instead.
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0x7F && b != 0xFF)?;
    let mut s = prefix[..=keep].to_vec();
    s[keep] += 1;
    Some(s)
}

/// Exact values of `columns` (sorted) for each of the sorted, distinct `tuples`.
fn exact_trie(columns: &[usize], tuples: &[Vec<Value>]) -> Rc<Trie> {
    let Some(&column) = columns.first() else {
        return Trie::universal();
    };
    let mut branches = Vec::new();
    let mut start = 0;
    while start < tuples.len() {
        let first = &tuples[start][0];
        let end = start
            + tuples[start..]
                .iter()
                .take_while(|t| t[0] == *first)
                .count();
        let rest: Vec<Vec<Value>> = tuples[start..end].iter().map(|t| t[1..].to_vec()).collect();
        branches.push(Branch::new(
            Interval::exact(first.clone()),
            exact_trie(&columns[1..], &rest),
        ));
        start = end;
    }
    Trie::column(column, branches)
}

/// `(columns) >= values` (when `lower`) or `(columns) <= values`, lexicographically over the
/// first `values.len()` columns.
fn tuple_bound(columns: &[usize], values: &[Value], lower: bool) -> Rc<Trie> {
    let (Some(&column), Some(v)) = (columns.first(), values.first()) else {
        return Trie::universal();
    };
    let v = v.clone();
    if values.len() == 1 {
        let interval = if lower {
            Interval::new(Bound::before(v), Bound::max())
        } else {
            Interval::new(Bound::min(), Bound::after(v))
        };
        return Trie::interval(column, interval);
    }
    let tail = tuple_bound(&columns[1..], &values[1..], lower);
    let equal = Branch::new(Interval::exact(v.clone()), tail);
    let beyond = if lower {
        Interval::new(Bound::after(v), Bound::max())
    } else {
        Interval::new(Bound::min(), Bound::before(v))
    };
    let beyond = Branch::new(beyond, Trie::universal());
    let branches = if lower {
        vec![equal, beyond]
    } else {
        vec![beyond, equal]
    };
    Trie::column(column, branches)
}

/// `NOT (c op lit)` as `c op' lit`.
fn invert(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Eq => BinaryOp::NotEq,
        BinaryOp::NotEq => BinaryOp::Eq,
        BinaryOp::Less => BinaryOp::GreaterOrEq,
        BinaryOp::GreaterOrEq => BinaryOp::Less,
        BinaryOp::Greater => BinaryOp::LessOrEq,
        BinaryOp::LessOrEq => BinaryOp::Greater,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_prefix_upper_bound_increments_the_last_byte() {
        assert_eq!(prefix_successor(b"abc"), Some(b"abd".to_vec()));
        assert_eq!(prefix_successor(b"ab\x7f"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\x7f\x7f"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"a\x80"), Some(b"a\x81".to_vec()));
        assert_eq!(prefix_successor(b"\x7f"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn is_prefix_upper_bound_never_wraps_below_the_prefix() {
        for p in [&b"a\xff"[..], b"a\xff\x7f", b"\xfe\xff"] {
            let s = prefix_successor(p).unwrap();
            assert!(s.as_slice() > p, "{p:?} -> {s:?}");
            let extended = [p, b"\xff\xff"].concat();
            assert!(s > extended, "{p:?} -> {s:?}");
        }
        assert_eq!(prefix_successor(b"\xff"), None);
    }

    #[test]
    fn inversion_and_mirroring_are_involutions() {
        use BinaryOp::*;
        for op in [Eq, NotEq, Less, LessOrEq, Greater, GreaterOrEq] {
            assert_eq!(invert(invert(op)), op);
            assert_eq!(op.mirrored().mirrored(), op);
        }
    }
}
