//! `(operands) [NOT] IN (literal tuples)` over arrays (issue 41), with the row evaluator's
//! semantics: a row is in the list when its tuple of values equals one of the list's tuples in
//! YT's value equality (null equals null, -0.0 equals 0.0, a value of another type equals
//! nothing), so the result is never null; a NaN operand fails with "Cannot compare NaN values".
//!
//! Each operand position gets a hash map from the list's distinct values there to small ids,
//! built once per batch and borrowing the list's bytes (a list of thousands of strings costs
//! no allocation per string). One operand is then one lookup per row; a tuple is the row's ids
//! looked up in the set of the list's id tuples.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};

use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::byte_kernels::inline_view;
use super::evaluate::{evaluate, runtime, Batch};

type FastMap<K> = HashMap<K, u32, foldhash::fast::FixedState>;

/// The id of a value that is not in the list at that position.
pub(super) const ABSENT: u32 = u32::MAX;

/// Lists of at most this many byte strings, each short enough for a view to hold, are
/// searched by comparing views rather than through a hash of each row's value.
const SHORT_LIST: usize = 8;

/// Whether `operands IN (…)` runs here: operands of scalar types with a Value-free
/// encoding (`any` and typed nulls keep the row path).
pub(super) fn applies(operands: &[TypedExpr]) -> bool {
    !operands.is_empty()
        && operands.iter().all(|o| {
            matches!(
                o.ty,
                ValueType::Int64
                    | ValueType::Uint64
                    | ValueType::Double
                    | ValueType::Boolean
                    | ValueType::String
            )
        })
}

/// `operands [NOT] IN set` over every row of `input` (see [`applies`]).
pub(super) fn in_list(
    operands: &[TypedExpr],
    set: &HashSet<Vec<Value>>,
    negated: bool,
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let arrays = operands
        .iter()
        .map(|o| evaluate(o, input, opts))
        .collect::<Result<Vec<_>>>()?;
    // The row evaluator checks the whole key for NaN before looking it up.
    for (o, a) in operands.iter().zip(&arrays) {
        if o.ty == ValueType::Double {
            let d = a.as_primitive::<Float64Type>();
            if (0..d.len()).any(|i| d.is_valid(i) && d.value(i).is_nan()) {
                return Err(runtime("Cannot compare NaN values"));
            }
        }
    }
    // Tuples of another length equal no key.
    let tuples: Vec<&[Value]> = set
        .iter()
        .filter(|t| t.len() == operands.len())
        .map(Vec::as_slice)
        .collect();
    let mut positions: Vec<Members<'_>> =
        operands.iter().map(|o| Members::new(o.ty, false)).collect();
    // The list's tuples as ids; one holding a value of another type can match no row.
    let id_tuples: HashSet<Vec<u32>, foldhash::fast::FixedState> = tuples
        .iter()
        .filter_map(|t| {
            t.iter()
                .zip(positions.iter_mut())
                .map(|(v, m)| m.insert(v))
                .collect::<Option<Vec<u32>>>()
        })
        .collect();
    let ids: Vec<Vec<u32>> = positions
        .iter()
        .zip(&arrays)
        .map(|(m, a)| m.ids(a))
        .collect();
    let values = if let [only] = ids.as_slice() {
        BooleanBuffer::collect_bool(input.rows, |i| (only[i] != ABSENT) != negated)
    } else {
        let mut key = Vec::with_capacity(ids.len());
        BooleanBuffer::collect_bool(input.rows, |i| {
            key.clear();
            key.extend(ids.iter().map(|column| column[i]));
            let member = !key.contains(&ABSENT) && id_tuples.contains(key.as_slice());
            member != negated
        })
    };
    Ok(Arc::new(BooleanArray::new(values, None)))
}

/// The distinct values of one operand position of the list, each with an id (also the keys
/// of TRANSFORM, [`super::transform`]).
pub(super) struct Members<'a> {
    /// The id of null, if the list holds null at this position.
    null: Option<u32>,
    values: Values<'a>,
    next: u32,
    /// Whether NaN is a value equal to every NaN (TRANSFORM's keys, looked up without a NaN
    /// check) rather than one no operand can equal (IN, whose NaN operands fail).
    nan_is_value: bool,
}

/// The non-null values of a position, keyed by the operand type's native values.
enum Values<'a> {
    Int64(FastMap<i64>),
    Uint64(FastMap<u64>),
    /// Keyed by the bits of the value with -0.0 as 0.0 and one NaN (equal values, one key).
    Double(FastMap<u64>),
    Boolean([Option<u32>; 2]),
    Bytes(FastMap<&'a [u8]>),
}

fn double_key(x: f64) -> u64 {
    if x == 0.0 {
        0
    } else if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

impl<'a> Members<'a> {
    pub(super) fn new(ty: ValueType, nan_is_value: bool) -> Members<'a> {
        let values = match ty {
            ValueType::Int64 => Values::Int64(FastMap::default()),
            ValueType::Uint64 => Values::Uint64(FastMap::default()),
            ValueType::Double => Values::Double(FastMap::default()),
            ValueType::Boolean => Values::Boolean([None; 2]),
            _ => Values::Bytes(FastMap::default()),
        };
        Members {
            null: None,
            values,
            next: 0,
            nan_is_value,
        }
    }

    /// The id of `v` at this position (a new one if it is new), or `None` if no operand value
    /// can equal it: another type, or NaN unless it is a value here (a NaN operand of IN
    /// fails before any lookup).
    pub(super) fn insert(&mut self, v: &'a Value) -> Option<u32> {
        let nan_is_value = self.nan_is_value;
        let next = self.next;
        let id = match (&mut self.values, v) {
            (_, Value::Null) => *self.null.get_or_insert(next),
            (Values::Int64(m), Value::Int64(x)) => *m.entry(*x).or_insert(next),
            (Values::Uint64(m), Value::Uint64(x)) => *m.entry(*x).or_insert(next),
            (Values::Double(_), Value::Double(x)) if x.is_nan() && !nan_is_value => return None,
            (Values::Double(m), Value::Double(x)) => *m.entry(double_key(*x)).or_insert(next),
            (Values::Boolean(b), Value::Boolean(x)) => *b[usize::from(*x)].get_or_insert(next),
            (Values::Bytes(m), Value::String(x)) => *m.entry(x.as_slice()).or_insert(next),
            _ => return None,
        };
        if id == next {
            self.next += 1;
        }
        Some(id)
    }

    /// How many distinct values (ids) it holds.
    pub(super) fn len(&self) -> usize {
        self.next as usize
    }

    /// The id of each row's value in `a` ([`ABSENT`] where the list does not hold it).
    pub(super) fn ids(&self, a: &ArrayRef) -> Vec<u32> {
        let rows = a.len();
        // Every row is looked up by its slot's value, nulls included; null rows are then
        // given the id of null, which keeps the lookup loops free of validity checks.
        let mut ids = match &self.values {
            Values::Int64(m) => lookup(m, a.as_primitive::<Int64Type>().values().iter().copied()),
            Values::Uint64(m) => lookup(m, a.as_primitive::<UInt64Type>().values().iter().copied()),
            Values::Double(m) => lookup(
                m,
                a.as_primitive::<Float64Type>()
                    .values()
                    .iter()
                    .map(|&x| double_key(x)),
            ),
            Values::Boolean(b) => {
                let p = a.as_boolean();
                let id = |v: bool| b[usize::from(v)].unwrap_or(ABSENT);
                p.values().iter().map(id).collect()
            }
            Values::Bytes(m) => match a.as_binary_opt::<i32>() {
                Some(s) => (0..rows)
                    .map(|i| m.get(s.value(i)).copied().unwrap_or(ABSENT))
                    .collect(),
                None => {
                    let s = a.as_binary_view();
                    // A few short values are their views: compared as integers, not hashed.
                    let short: Option<Vec<(u128, u32)>> = (m.len() <= SHORT_LIST)
                        .then(|| {
                            m.iter()
                                .map(|(v, &id)| inline_view(v).map(|view| (view, id)))
                                .collect()
                        })
                        .flatten();
                    match short {
                        Some(short) => find_all_short(&short, s.views().iter().copied()),
                        None => (0..rows)
                            .map(|i| m.get(s.value(i)).copied().unwrap_or(ABSENT))
                            .collect(),
                    }
                }
            },
        };
        if let Some(nulls) = a.logical_nulls() {
            let null = self.null.unwrap_or(ABSENT);
            let null_rows = !nulls.inner();
            for i in null_rows.set_indices() {
                ids[i] = null;
            }
        }
        ids
    }
}

/// The id of each key in `m` ([`ABSENT`] where it holds none): a short list is searched
/// by comparing every entry (no hash, no branch per entry), a longer one hashed.
fn lookup<K: Copy + Eq + std::hash::Hash>(
    m: &FastMap<K>,
    keys: impl Iterator<Item = K>,
) -> Vec<u32> {
    if m.len() <= SHORT_LIST {
        let short: Vec<(K, u32)> = m.iter().map(|(k, &id)| (*k, id)).collect();
        find_all_short(&short, keys)
    } else {
        keys.map(|k| m.get(&k).copied().unwrap_or(ABSENT)).collect()
    }
}

/// The id of each key in `short` (at most [`SHORT_LIST`] entries, keys distinct), or
/// [`ABSENT`]: the list is copied into an array of its exact length first, so that the
/// search of each key is unrolled into a few comparisons with no loop (a loop of a length
/// known only at run time cost 4-5 ns a row).
fn find_all_short<K: Copy + Eq>(short: &[(K, u32)], keys: impl Iterator<Item = K>) -> Vec<u32> {
    fn fixed<K: Copy + Eq, const N: usize>(
        short: &[(K, u32)],
        keys: impl Iterator<Item = K>,
    ) -> Vec<u32> {
        let short: [(K, u32); N] = short.try_into().expect("a list of N entries");
        keys.map(|k| find_short(&short, k)).collect()
    }
    match short.len() {
        0 => keys.map(|_| ABSENT).collect(),
        1 => fixed::<K, 1>(short, keys),
        2 => fixed::<K, 2>(short, keys),
        3 => fixed::<K, 3>(short, keys),
        4 => fixed::<K, 4>(short, keys),
        5 => fixed::<K, 5>(short, keys),
        6 => fixed::<K, 6>(short, keys),
        7 => fixed::<K, 7>(short, keys),
        8 => fixed::<K, 8>(short, keys),
        _ => keys.map(|k| find_short(short, k)).collect(),
    }
}

/// The id paired with `key` in `short` (keys distinct), or [`ABSENT`].
#[inline]
fn find_short<K: Copy + Eq>(short: &[(K, u32)], key: K) -> u32 {
    short
        .iter()
        .fold(ABSENT, |found, &(k, id)| if k == key { id } else { found })
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column, rows, value_of, Domain, TYPES};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    fn in_of(operands: Vec<TypedExpr>, set: Vec<Vec<Value>>, negated: bool) -> TypedExpr {
        TypedExpr::new(
            TExpr::In {
                operands,
                set: Arc::new(set.into_iter().collect()),
                negated,
            },
            ValueType::Boolean,
        )
    }

    /// Values from a small domain (so rows hit the lists), edge values included.
    const DOMAIN: Domain = Domain {
        int64_edges: &[i64::MIN, i64::MAX],
        int64: -3..3,
        uint64: 0..4,
        doubles: &[-0.0, 0.0, f64::INFINITY, 1.5, -2.0, f64::NAN],
        with_edge_doubles: false,
        strings: &[b"", b"a", b"ab", b"\xff"],
        values_per_null: 4,
    };

    /// A list for operands of `types`: tuples of their values, now and then one of another
    /// type or length (which can match nothing).
    fn list(types: Vec<ValueType>) -> BoxedStrategy<Vec<Vec<Value>>> {
        let n = types.len();
        let tuple: Vec<BoxedStrategy<Value>> =
            types.into_iter().map(|t| value_of(t, &DOMAIN)).collect();
        let odd = prop_oneof![
            Just(vec![Value::Int64(1); n]),
            Just(vec![Value::string("a"); n]),
            Just(vec![Value::Null; n + 1]),
        ];
        proptest::collection::vec(prop_oneof![6 => tuple, 1 => odd], 0..6).boxed()
    }

    fn case() -> impl Strategy<Value = (Vec<usize>, Vec<Vec<Value>>, bool)> {
        proptest::collection::vec(0..TYPES.len(), 1..3).prop_flat_map(|columns| {
            let types = columns.iter().map(|&c| TYPES[c]).collect();
            (Just(columns), list(types), any::<bool>())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Invariant: IN over one column or a tuple gives what the row evaluator gives, row
        /// by row: nulls in the rows and the list, -0.0 and 0.0, values of other types,
        /// and a NaN operand's error.
        #[test]
        fn in_lists_agree_with_the_row_evaluator(rows in rows(&DOMAIN), case in case()) {
            let (columns, set, negated) = case;
            let operands: Vec<TypedExpr> =
                columns.iter().map(|&c| column(c, TYPES[c])).collect();
            prop_assert!(applies(&operands));
            let e = in_of(operands, set, negated);
            agree(&e, &TYPES, &rows, EvalOptions::default());
        }
    }

    #[test]
    fn a_null_row_is_in_a_list_holding_null() {
        let i = ValueType::Int64;
        let rows = vec![
            vec![Value::Null],
            vec![Value::Int64(2)],
            vec![Value::Int64(3)],
        ];
        for set in [
            vec![vec![Value::Null], vec![Value::Int64(2)]],
            vec![vec![Value::Int64(3)]],
            vec![],
        ] {
            for negated in [false, true] {
                agree(
                    &in_of(vec![column(0, i)], set.clone(), negated),
                    &[i],
                    &rows,
                    EvalOptions::default(),
                );
            }
        }
    }

    #[test]
    fn lists_of_every_short_length_agree_with_the_row_evaluator() {
        // One length per unrolled search, and lengths past them (hashed).
        let (i, s) = (ValueType::Int64, ValueType::String);
        let rows: Vec<Vec<Value>> = (-2..14)
            .map(|x| vec![Value::Int64(x), Value::string(x.to_string())])
            .chain([vec![Value::Null, Value::Null]])
            .collect();
        for n in 0..=10 {
            let ints = (0..n).map(|x| vec![Value::Int64(x)]).collect();
            let strings = (0..n).map(|x| vec![Value::string(x.to_string())]).collect();
            for (operand, set) in [(column(0, i), ints), (column(1, s), strings)] {
                for negated in [false, true] {
                    let e = in_of(vec![operand.clone()], Vec::clone(&set), negated);
                    agree(&e, &[i, s], &rows, EvalOptions::default());
                }
            }
        }
    }
}
