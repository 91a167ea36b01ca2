//! Computed key columns in range inference (spec B.4): from one constraint row, the values of
//! computed key columns are evaluated when their inputs are fixed by the predicate, or
//! enumerated, so that the key prefix of a range can extend past them.
//!
//! Two ways to enumerate a computed column whose inputs are not all fixed:
//!
//! * **quotients**: when the expression reads an integer column `l` only through `l / d`,
//!   `l >> s` (divisor `2^s`) or `l` itself (divisor 1), the expression is constant between
//!   two points where some quotient changes, so evaluating it at the lower bound of `l` and
//!   at every such point covers every value it takes over `l`'s interval;
//! * **modulo**: a column `X % N` takes at most the values null, `0..N-1` (uint64) or
//!   `-(N-1)..N-1` (int64), whatever `X` reads.
//!
//! Whichever is cheaper is used, as long as the product of enumeration sizes along the key
//! stays within the range expansion limit. Unlike YT, quotient points are exact for
//! truncating division of negative numbers, and a column read in any other way (`l * 2`
//! next to `l / 3`) is never enumerated by quotients: every satisfying row stays in a range.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use dynql_core::{TableSchema, Value, ValueType};

use super::bound::{Interval, KeyBoundValue};
use super::expand::prefix_range;
use super::range::KeyRange;
use crate::ast::BinaryOp;
use crate::computed::ComputedColumns;
use crate::error::Result;
use crate::eval::{evaluate, EvalOptions};
use crate::texpr::{TExpr, TypedExpr};

/// What range inference knows about a table's key columns.
#[derive(Debug)]
pub(crate) struct KeyColumns {
    /// Wire types of the key columns.
    types: Vec<ValueType>,
    /// Width of a full row of the table.
    row_width: usize,
    /// Per key column: its computed expression, if any.
    computed: Vec<Option<ComputedKey>>,
}

#[derive(Debug)]
struct ComputedKey {
    expr: TypedExpr,
    /// The key columns the expression reads, and how.
    inputs: Vec<(usize, Reading)>,
    /// The divisor of a top-level `X % N`.
    modulo: Option<Modulo>,
}

/// How an expression reads one input column.
#[derive(Debug, Clone, PartialEq)]
enum Reading {
    /// Only through quotients by these divisors (1: the value itself).
    Quotients(BTreeSet<u64>),
    /// Some other way: the expression may change at any value.
    Opaque,
}

/// The literal `N` of a computed column `X % N` (int64 or uint64, not zero).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Modulo(Value);

impl Modulo {
    fn of(expr: &TypedExpr) -> Option<Modulo> {
        match &expr.kind {
            TExpr::Binary(BinaryOp::Modulo, _, r) => match r.as_literal() {
                Some(v @ Value::Int64(n)) if *n != 0 => Some(Modulo(v.clone())),
                Some(v @ Value::Uint64(n)) if *n != 0 => Some(Modulo(v.clone())),
                _ => None,
            },
            _ => None,
        }
    }

    /// The factor by which this column may multiply the number of ranges: `N + 1` (uint64) or
    /// `2N` (int64; YT takes no absolute value, a negative `N` counts as huge).
    pub fn expansion(&self) -> u64 {
        match self.0 {
            Value::Uint64(n) => n.saturating_add(1),
            Value::Int64(n) if n > 0 => (n as u64).saturating_mul(2),
            _ => u64::MAX,
        }
    }

    /// How many non-null values `X % N` can take: `N` (uint64) or `2|N| - 1` (int64).
    pub fn cardinality(&self) -> u64 {
        match self.0 {
            Value::Uint64(n) => n,
            Value::Int64(n) => n.unsigned_abs().saturating_mul(2) - 1,
            _ => u64::MAX,
        }
    }

    /// Every value `X % N` can take, null first, ascending.
    pub fn values(&self) -> Vec<Value> {
        let mut out = vec![Value::Null];
        match self.0 {
            Value::Uint64(n) => out.extend((0..n).map(Value::Uint64)),
            Value::Int64(n) => {
                let m = (n.unsigned_abs() - 1) as i64;
                out.extend((-m..=m).map(Value::Int64));
            }
            _ => {}
        }
        out
    }
}

/// How a key column gets its value in the ranges of one constraint row.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    /// Fixed by the predicate.
    Exact,
    /// A computed column evaluated from its (fixed or enumerated) inputs.
    Evaluated,
    /// A computed `X % N` column enumerated over its possible values.
    Modulo,
}

/// Schemas whose key columns were analysed last, at most this many: their computed columns
/// are compiled once, not per query.
const RECENT_SCHEMAS: usize = 32;

static RECENT: Mutex<Vec<(TableSchema, Arc<KeyColumns>)>> = Mutex::new(Vec::new());

impl KeyColumns {
    /// [`KeyColumns::new`], remembered for the schemas used last.
    ///
    /// # Errors
    /// A computed column whose expression does not compile.
    pub fn of(schema: &TableSchema) -> Result<Arc<KeyColumns>> {
        let recent = || RECENT.lock().unwrap_or_else(PoisonError::into_inner);
        let found = recent()
            .iter()
            .find(|(s, _)| s == schema)
            .map(|(_, k)| k.clone());
        if let Some(found) = found {
            return Ok(found);
        }
        // Compiled outside the lock; a schema compiled twice at once is kept twice, harmlessly.
        let made = Arc::new(KeyColumns::new(schema)?);
        let mut recent = recent();
        if recent.len() >= RECENT_SCHEMAS {
            recent.remove(0);
        }
        recent.push((schema.clone(), made.clone()));
        Ok(made)
    }

    /// Analyses `schema`'s key columns.
    ///
    /// # Errors
    /// A computed column whose expression does not compile.
    pub fn new(schema: &TableSchema) -> Result<KeyColumns> {
        let key_count = schema.key_column_count();
        let types: Vec<ValueType> = schema.columns()[..key_count]
            .iter()
            .map(|c| c.wire_type())
            .collect();
        let compiled = if schema.columns()[..key_count]
            .iter()
            .any(|c| c.is_computed())
        {
            ComputedColumns::compile(schema)?
        } else {
            ComputedColumns::default()
        };
        let computed = (0..key_count)
            .map(|i| {
                compiled.expression(i).map(|expr| {
                    let mut readings = Vec::new();
                    collect_readings(expr, &types, &mut readings);
                    ComputedKey {
                        expr: expr.clone(),
                        inputs: readings,
                        modulo: Modulo::of(expr),
                    }
                })
            })
            .collect();
        Ok(KeyColumns {
            types,
            row_width: schema.columns().len(),
            computed,
        })
    }

    pub fn key_count(&self) -> usize {
        self.types.len()
    }

    /// Product of the modulo expansions of all computed `X % N` key columns (saturating).
    pub fn modulo_expansion(&self) -> u64 {
        self.computed
            .iter()
            .flatten()
            .filter_map(|c| c.modulo.as_ref())
            .fold(1u64, |p, m| p.saturating_mul(m.expansion()))
    }

    /// Appends the key ranges of one constraint row, enumerating computed columns within
    /// `limit` combinations.
    ///
    /// # Errors
    /// A computed column's evaluation error (e.g. `Division by zero`).
    pub fn row_ranges(&self, row: &[Interval], limit: u64, out: &mut Vec<KeyRange>) -> Result<()> {
        let key_count = self.key_count();
        let mut accepted: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); key_count];
        let mut sources: Vec<Source> = Vec::with_capacity(key_count);
        let mut estimation: u64 = 1;
        for (i, interval) in row.iter().enumerate() {
            let own_exact = interval.exact_value().is_some();
            let Some(computed) = &self.computed[i] else {
                if !own_exact {
                    break;
                }
                sources.push(Source::Exact);
                continue;
            };
            let Some(mut cost) = self.evaluation_cost(computed, row, &accepted) else {
                // Some input holds no integer: no row can satisfy the predicate here.
                return Ok(());
            };
            let mut source = Source::Evaluated;
            if let (Some(m), false) = (&computed.modulo, own_exact) {
                if cost.is_none_or(|c| m.cardinality() < c) {
                    cost = Some(m.cardinality());
                    source = Source::Modulo;
                }
            }
            match cost {
                Some(c) if c <= limit / estimation => {
                    estimation = estimation.saturating_mul(c);
                    if source == Source::Evaluated {
                        for (input, reading) in &computed.inputs {
                            if let (Reading::Quotients(ds), None) =
                                (reading, row[*input].exact_value())
                            {
                                accepted[*input].extend(ds);
                            }
                        }
                    }
                    sources.push(source);
                }
                _ if own_exact => sources.push(Source::Exact),
                _ => break,
            }
        }
        let mut prefix = sources.len();
        // Enumerating trailing modulo columns before an unconstrained column only splits one
        // range into many.
        if row.get(prefix).is_some_and(Interval::is_universal) {
            while prefix > 0 && sources[prefix - 1] == Source::Modulo {
                prefix -= 1;
            }
        }
        self.enumerate(row, &sources[..prefix], &accepted, out)
    }

    /// The number of evaluations the computed column needs: `Some(Some(n))`, `Some(None)` when
    /// it cannot be enumerated, `None` when some integer input's interval holds no value.
    #[allow(clippy::option_option)]
    fn evaluation_cost(
        &self,
        computed: &ComputedKey,
        row: &[Interval],
        accepted: &[BTreeSet<u64>],
    ) -> Option<Option<u64>> {
        let mut cost = Some(1u64);
        for (input, reading) in &computed.inputs {
            let interval = &row[*input];
            if interval.exact_value().is_some() {
                continue;
            }
            let span = IntegerSpan::of(interval, self.types[*input]);
            if span.as_ref().is_some_and(IntegerSpan::is_empty) {
                return None;
            }
            cost = match (reading, span, cost) {
                (Reading::Quotients(ds), Some(span), Some(c)) => {
                    // Null is one more point to evaluate, but YT counts only the integers.
                    let count = span.integer_count();
                    Some(
                        ds.difference(&accepted[*input])
                            .fold(c, |c, d| c.saturating_mul(count.div_ceil(*d).max(1))),
                    )
                }
                _ => None,
            };
        }
        Some(cost.filter(|&c| c != u64::MAX))
    }

    /// Emits one range per combination of quotient points (outer) and modulo values (inner).
    fn enumerate(
        &self,
        row: &[Interval],
        sources: &[Source],
        accepted: &[BTreeSet<u64>],
        out: &mut Vec<KeyRange>,
    ) -> Result<()> {
        let mut values = vec![Value::Null; self.row_width];
        for (i, interval) in row.iter().enumerate() {
            if let Some(v) = interval.exact_value() {
                values[i] = v.clone();
            }
        }
        let mut choices: Vec<(usize, Choice)> = Vec::new();
        for (i, divisors) in accepted.iter().enumerate() {
            if divisors.is_empty() {
                continue;
            }
            if let Some(span) = IntegerSpan::of(&row[i], self.types[i]) {
                let points = QuotientPoints::new(span, divisors, self.types[i]);
                choices.push((i, Choice::Points(points)));
            }
        }
        for (i, source) in sources.iter().enumerate() {
            if *source != Source::Modulo {
                continue;
            }
            let m = self.computed[i].as_ref().and_then(|c| c.modulo.as_ref());
            let allowed: Vec<Value> = m
                .map(Modulo::values)
                .unwrap_or_default()
                .into_iter()
                .filter(|v| row[i].contains(v))
                .collect();
            choices.push((i, Choice::Listed(allowed)));
        }
        let Some(mut pick) = choices
            .iter()
            .map(|(_, c)| c.first())
            .collect::<Option<Vec<Position>>>()
        else {
            return Ok(());
        };
        // When every enumerated value lies past the prefix and every evaluated prefix column
        // is fixed by its own constraint (and cannot fail), every combination that passes
        // gives the same range: enumerating only checks that one exists, so the first one
        // ends it (e.g. `hash = 7 and id between 1 and 100000` with `hash = farm_hash(id) %
        // 64` stops at the first id that hashes to 7 instead of hashing 100000).
        let prefix = sources.len();
        let first_is_enough = choices.iter().all(|(column, _)| *column >= prefix)
            && sources.iter().enumerate().all(|(i, source)| {
                *source != Source::Evaluated
                    || (row[i].exact_value().is_some()
                        && self.computed[i]
                            .as_ref()
                            .is_some_and(|c| cannot_fail(&c.expr)))
            });
        loop {
            for ((column, choice), &at) in choices.iter().zip(&pick) {
                values[*column] = choice.value(at);
            }
            if self.evaluate_prefix(row, sources, &mut values)? {
                out.push(prefix_range(&values[..prefix], row));
                if first_is_enough {
                    return Ok(());
                }
            }
            // Odometer over the choices, the last one fastest.
            let mut d = choices.len();
            loop {
                if d == 0 {
                    return Ok(());
                }
                d -= 1;
                let choice = &choices[d].1;
                if let Some(next) = choice.next(pick[d]) {
                    pick[d] = next;
                    break;
                }
                // Every choice has a first value (checked above).
                let Some(first) = choice.first() else {
                    return Ok(());
                };
                pick[d] = first;
            }
        }
    }

    /// Evaluates the evaluated columns of the prefix into `values`; false when a value falls
    /// outside its column's own constraint.
    fn evaluate_prefix(
        &self,
        row: &[Interval],
        sources: &[Source],
        values: &mut [Value],
    ) -> Result<bool> {
        for (i, source) in sources.iter().enumerate() {
            if *source != Source::Evaluated {
                continue;
            }
            let Some(computed) = &self.computed[i] else {
                continue;
            };
            let v = evaluate(&computed.expr, values, EvalOptions::default())?;
            if !row[i].contains(&v) {
                return Ok(false);
            }
            values[i] = v;
        }
        Ok(true)
    }
}

/// Whether evaluating `e` can never fail: column references, literals, `farm_hash`, wrapping
/// `+ - *`, bitwise operators, and division or remainder by a literal other than 0 and -1.
fn cannot_fail(e: &TypedExpr) -> bool {
    use crate::functions::ScalarFunction;
    match &e.kind {
        TExpr::Literal(_) | TExpr::Column(_) => true,
        TExpr::Binary(op, l, r) => {
            let op_is_safe = match op {
                BinaryOp::Plus
                | BinaryOp::Minus
                | BinaryOp::Multiply
                | BinaryOp::BitAnd
                | BinaryOp::BitOr => true,
                BinaryOp::Divide | BinaryOp::Modulo => {
                    matches!(
                        r.as_literal(),
                        Some(Value::Int64(d)) if *d != 0 && *d != -1
                    ) || matches!(r.as_literal(), Some(Value::Uint64(d)) if *d != 0)
                }
                _ => false,
            };
            op_is_safe && cannot_fail(l) && cannot_fail(r)
        }
        TExpr::Call(ScalarFunction::FarmHash, args) => args.iter().all(cannot_fail),
        _ => false,
    }
}

/// Records how `e` reads each key column (spec B.4 "divisors").
fn collect_readings(e: &TypedExpr, types: &[ValueType], out: &mut Vec<(usize, Reading)>) {
    let mut note =
        |column: usize, reading: Reading| match out.iter_mut().find(|(c, _)| *c == column) {
            Some((_, existing)) => match (existing, reading) {
                (Reading::Quotients(ds), Reading::Quotients(more)) => ds.extend(more),
                (existing, _) => *existing = Reading::Opaque,
            },
            None => out.push((column, reading)),
        };
    let integral = |t: ValueType| matches!(t, ValueType::Int64 | ValueType::Uint64);
    match &e.kind {
        TExpr::Column(c) if *c < types.len() => {
            if integral(types[*c]) {
                note(*c, Reading::Quotients(BTreeSet::from([1])));
            } else {
                note(*c, Reading::Opaque);
            }
        }
        TExpr::Binary(op, l, r) if integral(e.ty) => match (&l.kind, r.as_literal()) {
            (TExpr::Column(c), Some(lit)) if *c < types.len() && integral(types[*c]) => {
                let divisor = match (op, lit) {
                    (BinaryOp::Divide, Value::Uint64(d)) => Some(*d),
                    (BinaryOp::Divide, Value::Int64(d)) => Some(d.unsigned_abs()),
                    // The evaluator takes shift counts modulo 64.
                    (BinaryOp::RightShift, Value::Uint64(s)) => Some(1u64 << (*s & 63)),
                    (BinaryOp::RightShift, Value::Int64(s)) => Some(1u64 << (*s & 63)),
                    _ => None,
                };
                // Division by zero is an evaluation error: enumerate every value so it surfaces.
                let reading = match divisor {
                    Some(d) => Reading::Quotients(BTreeSet::from([d.max(1)])),
                    None => Reading::Opaque,
                };
                note(*c, reading);
            }
            _ => {
                collect_readings(l, types, out);
                collect_readings(r, types, out);
            }
        },
        _ => {
            for child in e.children() {
                collect_readings(child, types, out);
            }
        }
    }
}

/// The values of an integer column inside an interval: maybe null, then `lo..=hi`.
#[derive(Debug, Clone, PartialEq)]
struct IntegerSpan {
    null: bool,
    lo: i128,
    hi: i128,
}

impl IntegerSpan {
    /// `None` for non-integer columns or bounds of another type.
    fn of(interval: &Interval, ty: ValueType) -> Option<IntegerSpan> {
        let (min, max) = match ty {
            ValueType::Int64 => (i64::MIN as i128, i64::MAX as i128),
            ValueType::Uint64 => (0, u64::MAX as i128),
            _ => return None,
        };
        let int = |v: &Value| match (v, ty) {
            (Value::Int64(x), ValueType::Int64) => Some(*x as i128),
            (Value::Uint64(x), ValueType::Uint64) => Some(*x as i128),
            _ => None,
        };
        // An exclusive null lower bound still admits null (YT's quirk; harmless).
        let (null, lo) = match &interval.lower.value {
            KeyBoundValue::Min | KeyBoundValue::Value(Value::Null) => (true, min),
            KeyBoundValue::Value(v) => (false, int(v)? + i128::from(interval.lower.after)),
            KeyBoundValue::Max => (false, max + 1),
        };
        let hi = match &interval.upper.value {
            KeyBoundValue::Max => max,
            KeyBoundValue::Value(Value::Null) | KeyBoundValue::Min => min - 1,
            KeyBoundValue::Value(v) => int(v)? - i128::from(!interval.upper.after),
        };
        Some(IntegerSpan { null, lo, hi })
    }

    /// Number of integers (saturating; null not counted).
    fn integer_count(&self) -> u64 {
        u64::try_from((self.hi - self.lo + 1).max(0)).unwrap_or(u64::MAX)
    }

    /// True when neither null nor any integer lies inside.
    fn is_empty(&self) -> bool {
        !self.null && self.hi < self.lo
    }

    /// Null (if inside), the lower bound, then every point inside where `x / d` (truncating)
    /// or `x >> log2(d)` (flooring) changes for some divisor `d`, ascending.
    #[cfg(test)]
    fn quotient_points(&self, divisors: &BTreeSet<u64>, ty: ValueType) -> Vec<Value> {
        let choice = Choice::Points(QuotientPoints::new(self.clone(), divisors, ty));
        let mut out = Vec::new();
        let mut at = choice.first();
        while let Some(p) = at {
            out.push(choice.value(p));
            at = choice.next(p);
        }
        out
    }
}

/// The values one enumerated key column takes, walked lazily: a span's quotient points can
/// number in the millions, and enumeration often stops at the first that passes.
enum Choice {
    Listed(Vec<Value>),
    Points(QuotientPoints),
}

/// A position in a [`Choice`].
#[derive(Clone, Copy, Debug)]
enum Position {
    Index(usize),
    Null,
    At(i128),
}

impl Choice {
    fn first(&self) -> Option<Position> {
        match self {
            Choice::Listed(vs) => (!vs.is_empty()).then_some(Position::Index(0)),
            Choice::Points(q) if q.span.null => Some(Position::Null),
            Choice::Points(q) => (q.span.lo <= q.span.hi).then_some(Position::At(q.span.lo)),
        }
    }

    fn next(&self, at: Position) -> Option<Position> {
        match (self, at) {
            (Choice::Listed(vs), Position::Index(i)) => {
                (i + 1 < vs.len()).then_some(Position::Index(i + 1))
            }
            (Choice::Points(q), Position::Null) => {
                (q.span.lo <= q.span.hi).then_some(Position::At(q.span.lo))
            }
            (Choice::Points(q), Position::At(x)) => q.next_point(x).map(Position::At),
            _ => None,
        }
    }

    fn value(&self, at: Position) -> Value {
        match (self, at) {
            (Choice::Listed(vs), Position::Index(i)) => vs[i].clone(),
            (Choice::Points(q), Position::At(x)) => match q.ty {
                ValueType::Uint64 => Value::Uint64(x as u64),
                _ => Value::Int64(x as i64),
            },
            _ => Value::Null,
        }
    }
}

/// The points of a span where a quotient by one of `divisors` may change (spec B.4): null
/// first when the span admits it, then `lo` and each next such point up to `hi`.
struct QuotientPoints {
    span: IntegerSpan,
    divisors: Vec<i128>,
    ty: ValueType,
}

impl QuotientPoints {
    fn new(span: IntegerSpan, divisors: &BTreeSet<u64>, ty: ValueType) -> QuotientPoints {
        QuotientPoints {
            span,
            divisors: divisors.iter().map(|&d| d as i128).collect(),
            ty,
        }
    }

    fn next_point(&self, x: i128) -> Option<i128> {
        self.divisors
            .iter()
            .map(|&d| {
                if d == 1 {
                    x + 1
                } else {
                    next_quotient_point(x, d)
                }
            })
            .min()
            .filter(|&next| next <= self.span.hi)
    }
}

/// The smallest `t > x` where the quotient by `d` may change: a multiple of `d` (floor
/// division and positive truncating division), or for `t <= 0` one past a multiple of `d`
/// (truncating division of negative numbers: `-3 / 3 = -1` but `-2 / 3 = 0`).
fn next_quotient_point(x: i128, d: i128) -> i128 {
    let next_multiple = (x.div_euclid(d) + 1) * d;
    let multiple_at_or_after = x + (d - x.rem_euclid(d)) % d;
    let past_multiple = multiple_at_or_after + 1;
    if past_multiple <= 0 {
        next_multiple.min(past_multiple)
    } else {
        next_multiple
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranges::bound::Bound;

    fn span(lo: i64, hi: i64) -> IntegerSpan {
        IntegerSpan::of(
            &Interval::new(
                Bound::before(Value::Int64(lo)),
                Bound::after(Value::Int64(hi)),
            ),
            ValueType::Int64,
        )
        .unwrap()
    }

    fn points(s: &IntegerSpan, ds: &[u64]) -> Vec<i64> {
        s.quotient_points(&ds.iter().copied().collect(), ValueType::Int64)
            .into_iter()
            .map(|v| match v {
                Value::Int64(x) => x,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn quotient_points_tick_at_multiples_for_positive_ranges() {
        assert_eq!(points(&span(3, 5), &[2]), vec![3, 4]);
        assert_eq!(points(&span(4, 5), &[2]), vec![4]);
        assert_eq!(points(&span(0, 9), &[3]), vec![0, 3, 6, 9]);
        assert_eq!(points(&span(1, 12), &[3, 4]), vec![1, 3, 4, 6, 8, 9, 12]);
        assert_eq!(points(&span(7, 10), &[1]), vec![7, 8, 9, 10]);
    }

    #[test]
    fn quotient_points_cover_every_truncated_and_floored_quotient() {
        for lo in -20i64..5 {
            for hi in lo..8 {
                for d in 1i64..6 {
                    let got = points(&span(lo, hi), &[d as u64]);
                    let trunc: BTreeSet<i64> = got.iter().map(|x| x / d).collect();
                    let floor: BTreeSet<i64> = got.iter().map(|x| x.div_euclid(d)).collect();
                    let all_trunc: BTreeSet<i64> = (lo..=hi).map(|x| x / d).collect();
                    let all_floor: BTreeSet<i64> = (lo..=hi).map(|x| x.div_euclid(d)).collect();
                    assert_eq!(trunc, all_trunc, "[{lo},{hi}] / {d}: {got:?}");
                    assert_eq!(floor, all_floor, "[{lo},{hi}] >> {d}: {got:?}");
                }
            }
        }
        // YT's enumeration visits only -5 and -3 here and never produces quotient 0.
        assert_eq!(points(&span(-5, -1), &[3]), vec![-5, -3, -2]);
    }

    #[test]
    fn integer_spans_step_exclusive_bounds_and_admit_null_below() {
        let open = Interval::new(
            Bound::after(Value::Int64(1)),
            Bound::before(Value::Int64(2)),
        );
        assert!(IntegerSpan::of(&open, ValueType::Int64).unwrap().is_empty());
        let below = Interval::new(Bound::min(), Bound::before(Value::Uint64(3)));
        let s = IntegerSpan::of(&below, ValueType::Uint64).unwrap();
        assert_eq!((s.null, s.lo, s.hi, s.integer_count()), (true, 0, 2, 3));
        assert!(!s.is_empty());
        assert_eq!(
            s.quotient_points(&BTreeSet::from([2]), ValueType::Uint64),
            vec![Value::Null, Value::Uint64(0), Value::Uint64(2)]
        );
        assert_eq!(
            IntegerSpan::of(&Interval::universal(), ValueType::Int64)
                .unwrap()
                .integer_count(),
            u64::MAX
        );
        assert_eq!(
            IntegerSpan::of(&Interval::universal(), ValueType::String),
            None
        );
    }

    #[test]
    fn modulo_cardinality_and_values_follow_the_literal_type() {
        let u = Modulo(Value::Uint64(3));
        assert_eq!((u.cardinality(), u.expansion()), (3, 4));
        assert_eq!(
            u.values(),
            vec![
                Value::Null,
                Value::Uint64(0),
                Value::Uint64(1),
                Value::Uint64(2)
            ]
        );
        let i = Modulo(Value::Int64(3));
        assert_eq!((i.cardinality(), i.expansion()), (5, 6));
        assert_eq!(i.values().len(), 6);
        assert_eq!(i.values()[1], Value::Int64(-2));
        let negative = Modulo(Value::Int64(-3));
        assert_eq!(negative.cardinality(), 5);
        assert_eq!(negative.expansion(), u64::MAX);
        assert_eq!(negative.values(), i.values());
    }

    fn readings(schema: &str) -> Vec<(usize, Reading)> {
        let s = TableSchema::parse(schema).unwrap();
        let k = KeyColumns::new(&s).unwrap();
        k.computed[0].as_ref().unwrap().inputs.clone()
    }

    fn q(ds: &[u64]) -> Reading {
        Reading::Quotients(ds.iter().copied().collect())
    }

    #[test]
    fn readings_find_divisors_and_refuse_other_arithmetic() {
        let schema = |e: &str| {
            format!(
                "[{{name=h;type=int64;sort_order=ascending;expression=\"{e}\"}};\
                  {{name=l;type=int64;sort_order=ascending}};{{name=s;type=string;sort_order=ascending}}]"
            )
        };
        assert_eq!(readings(&schema("l / 3")), vec![(1, q(&[3]))]);
        assert_eq!(readings(&schema("l / -4")), vec![(1, q(&[4]))]);
        assert_eq!(readings(&schema("l >> 2")), vec![(1, q(&[4]))]);
        assert_eq!(readings(&schema("2 * l")), vec![(1, q(&[1]))]);
        assert_eq!(readings(&schema("l / 3 + l / 5")), vec![(1, q(&[3, 5]))]);
        assert_eq!(readings(&schema("(l / 3) % 7")), vec![(1, q(&[3]))]);
        assert_eq!(readings(&schema("l * 2")), vec![(1, Reading::Opaque)]);
        assert_eq!(
            readings(&schema("l / 3 + l * 2")),
            vec![(1, Reading::Opaque)]
        );
        assert_eq!(readings(&schema("length(s)")), vec![(2, Reading::Opaque)]);
    }
}
