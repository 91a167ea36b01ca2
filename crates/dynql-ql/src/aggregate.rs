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
        }
    }
}
