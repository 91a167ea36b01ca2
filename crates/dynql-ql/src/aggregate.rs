//! Aggregate states: update with the rows of a group, merge (for WITH TOTALS), finish.
//!
//! `sum/min/max/avg/argmin/argmax` skip rows whose arguments are null and give null for a
//! group of nulls; integer sums wrap. `first` keeps the first non-null value in scan order.
//! `cardinality` is exact here (YT estimates it with HyperLogLog; exact counts lie within any
//! HyperLogLog error bound), at the cost of memory proportional to the distinct values.

use std::collections::HashSet;

use dynql_core::{compare_values, Value};

use crate::ast::BinaryOp;
use crate::error::Result;
use crate::eval::{apply_binary, EvalOptions};
use crate::functions::AggregateFunction;

/// The running state of one aggregate in one group.
#[derive(Debug, Clone)]
pub enum AggregateState {
    Sum(Value),
    Min(Value),
    Max(Value),
    Avg { sum: f64, count: u64 },
    Cardinality(HashSet<Value>),
    Arg { min: bool, value: Value, key: Value },
    First(Value),
}

impl AggregateState {
    /// An empty state.
    pub fn new(f: AggregateFunction) -> AggregateState {
        match f {
            AggregateFunction::Sum => AggregateState::Sum(Value::Null),
            AggregateFunction::Min => AggregateState::Min(Value::Null),
            AggregateFunction::Max => AggregateState::Max(Value::Null),
            AggregateFunction::Avg => AggregateState::Avg { sum: 0.0, count: 0 },
            AggregateFunction::Cardinality => AggregateState::Cardinality(HashSet::new()),
            AggregateFunction::Argmin => AggregateState::Arg {
                min: true,
                value: Value::Null,
                key: Value::Null,
            },
            AggregateFunction::Argmax => AggregateState::Arg {
                min: false,
                value: Value::Null,
                key: Value::Null,
            },
            AggregateFunction::First => AggregateState::First(Value::Null),
        }
    }

    /// Adds one row's argument values.
    pub fn update(&mut self, args: &[Value]) -> Result<()> {
        let v = &args[0];
        match self {
            AggregateState::Sum(acc) => {
                if !v.is_null() {
                    *acc = if acc.is_null() {
                        v.clone()
                    } else {
                        apply_binary(
                            BinaryOp::Plus,
                            acc.clone(),
                            v.clone(),
                            EvalOptions::default(),
                        )?
                    };
                }
            }
            AggregateState::Min(acc) => {
                if !v.is_null() && (acc.is_null() || compare_values(v, acc).is_lt()) {
                    *acc = v.clone();
                }
            }
            AggregateState::Max(acc) => {
                if !v.is_null() && (acc.is_null() || compare_values(v, acc).is_gt()) {
                    *acc = v.clone();
                }
            }
            AggregateState::Avg { sum, count } => match v {
                Value::Int64(x) => {
                    *sum += *x as f64;
                    *count += 1;
                }
                Value::Uint64(x) => {
                    *sum += *x as f64;
                    *count += 1;
                }
                Value::Double(x) => {
                    *sum += x;
                    *count += 1;
                }
                _ => {}
            },
            AggregateState::Cardinality(set) => {
                set.insert(v.clone());
            }
            AggregateState::Arg { min, value, key } => {
                let k = &args[1];
                if !k.is_null() {
                    let better = key.is_null()
                        || if *min {
                            compare_values(k, key).is_lt()
                        } else {
                            compare_values(k, key).is_gt()
                        };
                    if better {
                        *key = k.clone();
                        *value = v.clone();
                    }
                }
            }
            AggregateState::First(acc) => {
                if acc.is_null() {
                    *acc = v.clone();
                }
            }
        }
        Ok(())
    }

    /// Folds another state of the same function into this one (`other` came later in scan
    /// order).
    pub fn merge(&mut self, other: &AggregateState) -> Result<()> {
        match other {
            AggregateState::Sum(v)
            | AggregateState::Min(v)
            | AggregateState::Max(v)
            | AggregateState::First(v) => self.update(std::slice::from_ref(v)),
            AggregateState::Avg { sum, count } => {
                if let AggregateState::Avg { sum: s, count: c } = self {
                    *s += sum;
                    *c += count;
                }
                Ok(())
            }
            AggregateState::Cardinality(values) => {
                if let AggregateState::Cardinality(set) = self {
                    set.extend(values.iter().cloned());
                }
                Ok(())
            }
            AggregateState::Arg { value, key, .. } => self.update(&[value.clone(), key.clone()]),
        }
    }

    /// The aggregate's value.
    pub fn finish(&self) -> Value {
        match self {
            AggregateState::Sum(v)
            | AggregateState::Min(v)
            | AggregateState::Max(v)
            | AggregateState::First(v) => v.clone(),
            AggregateState::Avg { sum, count } => {
                if *count == 0 {
                    Value::Null
                } else {
                    Value::Double(sum / *count as f64)
                }
            }
            AggregateState::Cardinality(set) => Value::Uint64(set.len() as u64),
            AggregateState::Arg { value, .. } => value.clone(),
        }
    }
}

/// The byte form of a state (`AggregateState::encode`): a tag, then the state's numbers and
/// values. It only travels between the parts of one query (partial aggregates merged by an
/// engine), so it carries no version.
mod encoding {
    use super::*;

    fn put_value(out: &mut Vec<u8>, v: &Value) {
        match v {
            Value::Null => out.push(0),
            Value::Int64(x) => {
                out.push(1);
                out.extend(x.to_le_bytes());
            }
            Value::Uint64(x) => {
                out.push(2);
                out.extend(x.to_le_bytes());
            }
            Value::Double(x) => {
                out.push(3);
                out.extend(x.to_le_bytes());
            }
            Value::Boolean(x) => out.extend([4, *x as u8]),
            Value::String(b) | Value::Any(b) => {
                out.push(if matches!(v, Value::String(_)) { 5 } else { 6 });
                out.extend((b.len() as u64).to_le_bytes());
                out.extend(b);
            }
        }
    }

    pub(super) struct Reader<'a>(pub(super) &'a [u8]);

    fn corrupt() -> crate::Error {
        crate::Error::Runtime("corrupt partial aggregate state".into())
    }

    impl Reader<'_> {
        fn take(&mut self, n: usize) -> Result<&[u8]> {
            if self.0.len() < n {
                return Err(corrupt());
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(head)
        }

        pub(super) fn byte(&mut self) -> Result<u8> {
            Ok(self.take(1)?[0])
        }

        pub(super) fn u64(&mut self) -> Result<u64> {
            let b = self.take(8)?;
            Ok(u64::from_le_bytes(b.try_into().map_err(|_| corrupt())?))
        }

        pub(super) fn value(&mut self) -> Result<Value> {
            Ok(match self.byte()? {
                0 => Value::Null,
                1 => Value::Int64(self.u64()? as i64),
                2 => Value::Uint64(self.u64()?),
                3 => Value::Double(f64::from_bits(self.u64()?)),
                4 => Value::Boolean(self.byte()? != 0),
                tag @ (5 | 6) => {
                    let n = usize::try_from(self.u64()?).map_err(|_| corrupt())?;
                    let b = self.take(n)?.to_vec();
                    if tag == 5 {
                        Value::String(b)
                    } else {
                        Value::Any(b)
                    }
                }
                _ => return Err(corrupt()),
            })
        }
    }

    impl AggregateState {
        /// The state as bytes, for merging partial aggregates ([`AggregateState::decode`]).
        pub fn encode(&self) -> Vec<u8> {
            let mut out = Vec::new();
            match self {
                AggregateState::Sum(v) => {
                    out.push(0);
                    put_value(&mut out, v);
                }
                AggregateState::Min(v) => {
                    out.push(1);
                    put_value(&mut out, v);
                }
                AggregateState::Max(v) => {
                    out.push(2);
                    put_value(&mut out, v);
                }
                AggregateState::Avg { sum, count } => {
                    out.push(3);
                    out.extend(sum.to_le_bytes());
                    out.extend(count.to_le_bytes());
                }
                AggregateState::Cardinality(set) => {
                    out.push(4);
                    out.extend((set.len() as u64).to_le_bytes());
                    for v in set {
                        put_value(&mut out, v);
                    }
                }
                AggregateState::Arg { min, value, key } => {
                    out.extend([5, *min as u8]);
                    put_value(&mut out, value);
                    put_value(&mut out, key);
                }
                AggregateState::First(v) => {
                    out.push(6);
                    put_value(&mut out, v);
                }
            }
            out
        }

        /// A state from [`AggregateState::encode`]'s bytes.
        ///
        /// # Errors
        /// When the bytes are not an encoded state.
        pub fn decode(bytes: &[u8]) -> Result<AggregateState> {
            let mut r = Reader(bytes);
            let state = match r.byte()? {
                0 => AggregateState::Sum(r.value()?),
                1 => AggregateState::Min(r.value()?),
                2 => AggregateState::Max(r.value()?),
                3 => AggregateState::Avg {
                    sum: f64::from_bits(r.u64()?),
                    count: r.u64()?,
                },
                4 => {
                    let n = r.u64()?;
                    let mut set = HashSet::new();
                    for _ in 0..n {
                        set.insert(r.value()?);
                    }
                    AggregateState::Cardinality(set)
                }
                5 => AggregateState::Arg {
                    min: r.byte()? != 0,
                    value: r.value()?,
                    key: r.value()?,
                },
                6 => AggregateState::First(r.value()?),
                _ => return Err(corrupt()),
            };
            if !r.0.is_empty() {
                return Err(corrupt());
            }
            Ok(state)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: AggregateFunction, rows: &[Vec<Value>]) -> Value {
        let mut s = AggregateState::new(f);
        for r in rows {
            s.update(r).unwrap();
        }
        s.finish()
    }

    #[test]
    fn aggregates_skip_nulls_and_wrap() {
        let rows = vec![
            vec![Value::Int64(i64::MAX)],
            vec![Value::Null],
            vec![Value::Int64(1)],
        ];
        assert_eq!(run(AggregateFunction::Sum, &rows), Value::Int64(i64::MIN));
        assert_eq!(run(AggregateFunction::Min, &rows), Value::Int64(1));
        assert_eq!(
            run(
                AggregateFunction::Avg,
                &[vec![Value::Int64(1)], vec![Value::Int64(2)]]
            ),
            Value::Double(1.5)
        );
        assert_eq!(
            run(AggregateFunction::Sum, &[vec![Value::Null]]),
            Value::Null
        );
        assert_eq!(
            run(
                AggregateFunction::First,
                &[
                    vec![Value::Null],
                    vec![Value::Int64(3)],
                    vec![Value::Int64(4)]
                ]
            ),
            Value::Int64(3)
        );
        let arg = vec![
            vec![Value::string("a"), Value::Int64(5)],
            vec![Value::string("b"), Value::Int64(2)],
        ];
        assert_eq!(run(AggregateFunction::Argmin, &arg), Value::string("b"));
        assert_eq!(run(AggregateFunction::Argmax, &arg), Value::string("a"));
    }

    #[test]
    fn merge_equals_one_pass() {
        for f in [
            AggregateFunction::Sum,
            AggregateFunction::Max,
            AggregateFunction::Avg,
            AggregateFunction::Cardinality,
            AggregateFunction::First,
        ] {
            let rows: Vec<Vec<Value>> = (0..10).map(|i| vec![Value::Int64(i % 4)]).collect();
            let mut a = AggregateState::new(f);
            let mut b = AggregateState::new(f);
            for r in &rows[..4] {
                a.update(r).unwrap();
            }
            for r in &rows[4..] {
                b.update(r).unwrap();
            }
            a.merge(&b).unwrap();
            assert_eq!(a.finish(), run(f, &rows), "{f:?}");
            let decoded = AggregateState::decode(&a.encode()).unwrap();
            assert_eq!(decoded.finish(), a.finish(), "{f:?} through its bytes");
        }
    }
}
