//! `(operands) BETWEEN` tuple bounds over arrays (issue 41): the forms single-column BETWEEN
//! ([`super::compare::between`]) leaves, tuples and bounds of any length, with the row
//! evaluator's semantics: any NaN in a row's tuple fails ("Cannot compare NaN values"),
//! otherwise a row is inside a range when its tuple, cut to the bound's length, is not below
//! the lower bound and, cut likewise, not above the upper one, in YT's value order (null the
//! least, values of different types ordered by type, -0.0 equal to 0.0, a bound longer than
//! the tuple above it where they agree). The result is never null.
//!
//! Each row's cells are compared in place with the bound values, without building a value
//! per cell.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BinaryViewArray, BooleanArray, Float64Array, Int64Array,
    UInt64Array,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};

use dynql_core::value::compare_doubles;
use dynql_core::{compare_values, Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{arrow_error, evaluate, runtime, Batch};

/// Whether `operands BETWEEN …` runs here: operands of the scalar types with a Value-free
/// encoding (`any` and typed nulls keep the row path), as for IN.
pub(super) fn applies(operands: &[TypedExpr]) -> bool {
    super::in_list::applies(operands)
}

/// `operands BETWEEN ranges` (ORed) over every row of `input` (see [`applies`]).
pub(super) fn tuple_between(
    operands: &[TypedExpr],
    ranges: &[(Vec<Value>, Vec<Value>)],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let cells = operands
        .iter()
        .map(|o| Cells::of(o.ty, evaluate(o, input, opts)?))
        .collect::<Result<Vec<_>>>()?;
    // The row evaluator checks the whole tuple for NaN before comparing.
    if cells.iter().any(Cells::has_nan) {
        return Err(runtime("Cannot compare NaN values"));
    }
    // The tuple cut to a bound's length, compared with it (`compare_rows` of the prefix).
    let compare = |row: usize, bound: &[Value]| -> Ordering {
        for (c, v) in cells.iter().zip(bound) {
            let o = c.compare(row, v);
            if o != Ordering::Equal {
                return o;
            }
        }
        cells.len().min(bound.len()).cmp(&bound.len())
    };
    let values = BooleanBuffer::collect_bool(input.rows, |row| {
        ranges.iter().any(|(lo, hi)| {
            compare(row, lo) != Ordering::Less && compare(row, hi) != Ordering::Greater
        })
    });
    Ok(Arc::new(BooleanArray::new(values, None)))
}

/// One operand's evaluated values, by type.
enum Cells {
    Int64(Int64Array),
    Uint64(UInt64Array),
    Double(Float64Array),
    Boolean(BooleanArray),
    Binary(BinaryArray),
    View(BinaryViewArray),
}

impl Cells {
    fn of(ty: ValueType, a: ArrayRef) -> Result<Cells> {
        Ok(match ty {
            ValueType::Int64 => Cells::Int64(a.as_primitive::<Int64Type>().clone()),
            ValueType::Uint64 => Cells::Uint64(a.as_primitive::<UInt64Type>().clone()),
            ValueType::Double => Cells::Double(a.as_primitive::<Float64Type>().clone()),
            ValueType::Boolean => Cells::Boolean(a.as_boolean().clone()),
            _ => match a.data_type() {
                DataType::BinaryView => Cells::View(a.as_binary_view().clone()),
                DataType::Binary => Cells::Binary(a.as_binary::<i32>().clone()),
                // Other encodings (foreign files): as bytes.
                _ => {
                    let b = arrow::compute::cast(&a, &DataType::Binary).map_err(arrow_error)?;
                    Cells::Binary(b.as_binary::<i32>().clone())
                }
            },
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            Cells::Int64(a) => a,
            Cells::Uint64(a) => a,
            Cells::Double(a) => a,
            Cells::Boolean(a) => a,
            Cells::Binary(a) => a,
            Cells::View(a) => a,
        }
    }

    fn ty(&self) -> ValueType {
        match self {
            Cells::Int64(_) => ValueType::Int64,
            Cells::Uint64(_) => ValueType::Uint64,
            Cells::Double(_) => ValueType::Double,
            Cells::Boolean(_) => ValueType::Boolean,
            Cells::Binary(_) | Cells::View(_) => ValueType::String,
        }
    }

    fn has_nan(&self) -> bool {
        match self {
            Cells::Double(d) => (0..d.len()).any(|i| d.is_valid(i) && d.value(i).is_nan()),
            _ => false,
        }
    }

    /// Row `row`'s value against `v` in YT's value order ([`compare_values`]).
    fn compare(&self, row: usize, v: &Value) -> Ordering {
        if self.array().is_null(row) {
            return compare_values(&Value::Null, v);
        }
        match (self, v) {
            (Cells::Int64(a), Value::Int64(x)) => a.value(row).cmp(x),
            (Cells::Uint64(a), Value::Uint64(x)) => a.value(row).cmp(x),
            (Cells::Double(a), Value::Double(x)) => compare_doubles(a.value(row), *x),
            (Cells::Boolean(a), Value::Boolean(x)) => a.value(row).cmp(x),
            (Cells::Binary(a), Value::String(x)) => a.value(row).cmp(x.as_slice()),
            (Cells::View(a), Value::String(x)) => a.value(row).cmp(x.as_slice()),
            // Values of different types are ordered by their types.
            _ => self.ty().cmp(&v.value_type()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::budget::Budget;
    use super::super::kernel_tests::{agree, column, rows, value_of, Domain, TYPES};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    /// Values from a small domain (so rows meet the bounds), now and then NaN.
    const DOMAIN: Domain = Domain {
        int64_edges: &[i64::MIN, i64::MAX],
        int64: -2..3,
        uint64: 0..3,
        doubles: &[-0.0, 0.0, 1.5, f64::NEG_INFINITY],
        with_edge_doubles: true,
        strings: &[b"", b"a", b"ab"],
        values_per_null: 5,
    };

    /// A bound for operands of `types`: a prefix of a tuple of their values (or one value
    /// longer), now and then a value of another type.
    fn bound(types: Vec<ValueType>) -> BoxedStrategy<Vec<Value>> {
        let n = types.len();
        let mut tuple: Vec<BoxedStrategy<Value>> =
            types.into_iter().map(|t| value_of(t, &DOMAIN)).collect();
        tuple.push(value_of(ValueType::Int64, &DOMAIN));
        let odd = prop_oneof![
            Just(Value::string("a")),
            Just(Value::Int64(0)),
            Just(Value::Null)
        ];
        (
            tuple,
            0..=n + 1,
            proptest::option::weighted(0.2, (odd, 0..n)),
        )
            .prop_map(|(mut t, len, swap)| {
                if let Some((v, at)) = swap {
                    t[at] = v;
                }
                t.truncate(len);
                t
            })
            .boxed()
    }

    type Case = (Vec<usize>, Vec<(Vec<Value>, Vec<Value>)>);

    fn case() -> impl Strategy<Value = Case> {
        proptest::collection::vec(0..TYPES.len(), 1..4).prop_flat_map(|columns| {
            let types: Vec<ValueType> = columns.iter().map(|&c| TYPES[c]).collect();
            let range = (bound(types.clone()), bound(types));
            (Just(columns), proptest::collection::vec(range, 0..4))
        })
    }

    fn between_of(columns: &[usize], ranges: Vec<(Vec<Value>, Vec<Value>)>) -> TypedExpr {
        TypedExpr::new(
            TExpr::Between {
                operands: columns.iter().map(|&c| column(c, TYPES[c])).collect(),
                ranges,
            },
            ValueType::Boolean,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Invariant: tuple BETWEEN gives what the row evaluator gives, row by row: nulls,
        /// bounds shorter and longer than the tuple, values of other types, -0.0 and 0.0,
        /// and NaN's error, whatever the null relations.
        #[test]
        fn tuple_between_agrees_with_the_row_evaluator(
            rows in rows(&DOMAIN),
            case in case(),
            canonical in any::<bool>(),
        ) {
            let (columns, ranges) = case;
            let e = between_of(&columns, ranges);
            let TExpr::Between { operands, .. } = &e.kind else { unreachable!() };
            prop_assert!(applies(operands));
            let opts = EvalOptions { canonical_null_relations: canonical };
            agree(&e, &TYPES, &rows, opts);
        }
    }

    #[test]
    fn the_kernel_cuts_the_tuple_to_each_bound() {
        let (i, s) = (ValueType::Int64, ValueType::String);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), Some(1), None, Some(2)])),
            Arc::new(BinaryArray::from(vec![
                Some(b"a".as_slice()),
                Some(b"c".as_slice()),
                Some(b"a".as_slice()),
                None,
            ])),
        ];
        let budget = Budget::new(0, 4);
        let input = Batch {
            columns: &columns,
            types: &[i, s],
            rows: 4,
            budget: &budget,
        };
        // (1, "b") <= (x, y) <= (2): the upper bound is cut to one column; a null is least.
        let ranges = vec![(
            vec![Value::Int64(1), Value::string("b")],
            vec![Value::Int64(2)],
        )];
        let operands = [column(0, i), column(1, s)];
        let got = tuple_between(&operands, &ranges, input, EvalOptions::default()).unwrap();
        let got: Vec<Option<bool>> = got.as_boolean().iter().collect();
        assert_eq!(got, [Some(false), Some(true), Some(false), Some(true)]);
    }
}
