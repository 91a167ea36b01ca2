//! `transform(operands, (keys), (values) [, default])` over arrays (issue 41), with the row
//! evaluator's semantics: a row's tuple of values is looked up in the map in YT's value
//! equality (null equals null, -0.0 equals 0.0, NaN equals NaN — no NaN check, unlike IN —
//! and a value of another type equals nothing); a row found gets its value, any other row
//! the default, evaluated on those rows only (so a default that fails where a key matched
//! does not fail), or null without one.
//!
//! The map's keys get ids per operand position as IN's list does ([`super::in_list`]), built
//! once per batch; each row is then one lookup of its ids.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, UInt32Array};
use arrow::buffer::BooleanBuffer;

use dynql_core::arrow_convert::{arrow_type, values_to_array};
use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::value_limits::value_bytes;
use dynql_ql::Result;

use super::conditional::{charge_picked, evaluate_on};
use super::evaluate::{arrow_error, evaluate, row_by_row, Batch};
use super::in_list::{Members, ABSENT};

/// Whether `transform(operands, …)` of type `ty` runs here: operands of the scalar types IN
/// takes ([`super::in_list::applies`]), a result with an Arrow encoding.
pub(super) fn applies(ty: ValueType, operands: &[TypedExpr]) -> bool {
    ty != ValueType::Null && super::in_list::applies(operands)
}

/// The transform `e` over every row of `input` (see [`applies`]).
pub(super) fn transform(
    e: &TypedExpr,
    operands: &[TypedExpr],
    map: &HashMap<Vec<Value>, Value>,
    default: Option<&TypedExpr>,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    // The map's values become one array of the result's type; a value of another type (which
    // the binder does not make) keeps the row path, whatever it does with it.
    if !map.values().all(|v| v.is_null() || v.value_type() == e.ty) {
        return row_by_row(e, input, opts);
    }
    let arrays = operands
        .iter()
        .map(|o| evaluate(o, input, opts))
        .collect::<Result<Vec<_>>>()?;
    let mut positions: Vec<Members<'_>> =
        operands.iter().map(|o| Members::new(o.ty, true)).collect();
    // Each usable key as its ids, with the index of its value; a key of another length or
    // holding a value of another type matches no row.
    let mut results: Vec<&Value> = Vec::with_capacity(map.len());
    let mut keys: HashMap<Vec<u32>, u32, foldhash::fast::FixedState> = HashMap::default();
    for (key, value) in map {
        if key.len() != operands.len() {
            continue;
        }
        let ids = key
            .iter()
            .zip(positions.iter_mut())
            .map(|(v, m)| m.insert(v))
            .collect::<Option<Vec<u32>>>();
        if let Some(ids) = ids {
            keys.insert(ids, results.len() as u32);
            results.push(value);
        }
    }
    let ids: Vec<Vec<u32>> = positions
        .iter()
        .zip(&arrays)
        .map(|(m, a)| m.ids(a))
        .collect();
    let found: Vec<Option<u32>> = if let [only] = ids.as_slice() {
        // One operand: the ids are dense, so a table from id to value index.
        let mut table = vec![ABSENT; positions[0].len()];
        for (k, &index) in &keys {
            if let Some(slot) = k.first().and_then(|&id| table.get_mut(id as usize)) {
                *slot = index;
            }
        }
        only.iter()
            .map(|&id| table.get(id as usize).copied().filter(|&x| x != ABSENT))
            .collect()
    } else {
        let mut key = Vec::with_capacity(ids.len());
        (0..input.rows)
            .map(|i| {
                key.clear();
                key.extend(ids.iter().map(|column| column[i]));
                if key.contains(&ABSENT) {
                    None
                } else {
                    keys.get(key.as_slice()).copied()
                }
            })
            .collect()
    };
    // The values kept are charged, as the row path charges each result, before they are
    // copied into the result.
    let bytes: u64 = found
        .iter()
        .flatten()
        .map(|&i| value_bytes(results[i as usize]) as u64)
        .sum();
    if bytes > 0 {
        input.budget.charge(bytes)?;
    }
    let values = values_to_array(e.ty, &results).map_err(arrow_error)?;
    let indices: UInt32Array = found.iter().copied().collect();
    let picked = arrow::compute::take(values.as_ref(), &indices, None).map_err(arrow_error)?;
    let matched = BooleanBuffer::collect_bool(input.rows, |i| found[i].is_some());
    let unmatched = !&matched;
    let Some(default) = default else {
        return Ok(picked);
    };
    if unmatched.count_set_bits() == 0 {
        return Ok(picked);
    }
    let mut otherwise = evaluate_on(default, &unmatched, input, opts)?;
    let target = arrow_type(e.ty);
    if otherwise.data_type() != &target {
        otherwise = arrow::compute::cast(&otherwise, &target).map_err(arrow_error)?;
    }
    charge_picked(&otherwise, &unmatched, input)?;
    super::pick::pick(&matched, &picked, &otherwise)
}

#[cfg(test)]
mod tests {
    use super::super::budget::Budget;
    use super::super::kernel_tests::{agree, column, rows, value_of, Domain, TYPES};
    use super::*;
    use dynql_core::arrow_convert::array_value;
    use dynql_ql::ast::BinaryOp;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// Values from a small domain (so rows hit the keys), edge values included.
    const DOMAIN: Domain = Domain {
        int64_edges: &[i64::MIN],
        int64: -2..3,
        uint64: 0..3,
        doubles: &[-0.0, 0.0, f64::INFINITY, 1.5, f64::NAN, -f64::NAN],
        with_edge_doubles: false,
        strings: &[b"", b"a", b"\xff"],
        values_per_null: 4,
    };

    /// Operand columns, a map of their tuples (now and then a key of another type or length)
    /// to int64 or string values, and which default to use.
    type Case = (Vec<usize>, Vec<(Vec<Value>, Value)>, bool, u8);

    fn case() -> impl Strategy<Value = Case> {
        proptest::collection::vec(0..TYPES.len(), 1..3).prop_flat_map(|columns| {
            let n = columns.len();
            let key: Vec<BoxedStrategy<Value>> = columns
                .iter()
                .map(|&c| value_of(TYPES[c], &DOMAIN))
                .collect();
            let odd = prop_oneof![
                Just(vec![Value::Int64(1); n]),
                Just(vec![Value::string("a"); n]),
                Just(vec![Value::Null; n + 1]),
            ];
            let key = prop_oneof![6 => key, 1 => odd];
            let value = prop_oneof![1 => Just(Value::Null), 4 => (-5i64..5).prop_map(Value::Int64)];
            (
                Just(columns),
                proptest::collection::vec((key, value), 0..6),
                any::<bool>(),
                0u8..3,
            )
        })
    }

    /// The transform with int64 values (or their text, when `strings`) and a default: none,
    /// `100 / c0` (failing on a zero c0 where no key matches) or a column.
    fn transform_of(case: &Case, strings: bool) -> TypedExpr {
        let (columns, map, _, default) = case;
        let ty = if strings {
            ValueType::String
        } else {
            ValueType::Int64
        };
        let as_ty = |v: &Value| match (v, strings) {
            (Value::Int64(x), true) => Value::string(x.to_string()),
            (v, _) => v.clone(),
        };
        let map: HashMap<Vec<Value>, Value> =
            map.iter().map(|(k, v)| (k.clone(), as_ty(v))).collect();
        let i = ValueType::Int64;
        let default = match (default, strings) {
            (0, _) => None,
            (1, false) => Some(TypedExpr::new(
                TExpr::Binary(
                    BinaryOp::Divide,
                    Box::new(TypedExpr::literal(Value::Int64(100), i)),
                    Box::new(column(0, i)),
                ),
                i,
            )),
            (_, false) => Some(column(0, i)),
            (_, true) => Some(column(4, ValueType::String)),
        };
        TypedExpr::new(
            TExpr::Transform {
                operands: columns.iter().map(|&c| column(c, TYPES[c])).collect(),
                map: Arc::new(map),
                default: default.map(Box::new),
            },
            ty,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Invariant: TRANSFORM gives what the row evaluator gives, row by row: nulls, NaN,
        /// -0.0 and 0.0, keys of other types or lengths, and a default that fails only where
        /// no key matched.
        #[test]
        fn transform_agrees_with_the_row_evaluator(rows in rows(&DOMAIN), case in case()) {
            let strings = case.2;
            let e = transform_of(&case, strings);
            let TExpr::Transform { operands, .. } = &e.kind else { unreachable!() };
            prop_assert!(applies(e.ty, operands));
            agree(&e, &TYPES, &rows, EvalOptions::default());
        }
    }

    #[test]
    fn the_kernel_matches_nan_and_zeroes_and_skips_the_default_where_a_key_matched() {
        let d = ValueType::Double;
        let i = ValueType::Int64;
        let rows = [f64::NAN, -0.0, 2.0, 3.0];
        let columns: Vec<ArrayRef> =
            vec![Arc::new(arrow::array::Float64Array::from(rows.to_vec()))];
        let budget = Budget::new(u64::MAX, rows.len());
        let input = Batch {
            columns: &columns,
            types: &[d],
            rows: rows.len(),
            budget: &budget,
        };
        let map: HashMap<Vec<Value>, Value> = [
            (vec![Value::Double(f64::NAN)], Value::Int64(1)),
            (vec![Value::Double(0.0)], Value::Int64(2)),
            (vec![Value::Double(2.0)], Value::Null),
        ]
        .into_iter()
        .collect();
        // The default fails on every row it runs on: only row 3 has no key.
        let failing = TypedExpr::new(
            TExpr::Binary(
                BinaryOp::Divide,
                Box::new(TypedExpr::literal(Value::Int64(1), i)),
                Box::new(TypedExpr::literal(Value::Int64(0), i)),
            ),
            i,
        );
        let operands = [column(0, d)];
        let e = TypedExpr::literal(Value::Null, i);
        let err = transform(
            &e,
            &operands,
            &map,
            Some(&failing),
            input,
            EvalOptions::default(),
        );
        assert_eq!(err.unwrap_err().to_string(), "Division by zero");
        let got = transform(
            &e,
            &operands[..],
            &map,
            Some(&TypedExpr::literal(Value::Int64(9), i)),
            input,
            EvalOptions::default(),
        )
        .unwrap();
        let got: Vec<Value> = (0..rows.len())
            .map(|r| array_value(got.as_ref(), i, r))
            .collect();
        assert_eq!(
            got,
            [
                Value::Int64(1),
                Value::Int64(2),
                Value::Null,
                Value::Int64(9)
            ]
        );
    }
}
