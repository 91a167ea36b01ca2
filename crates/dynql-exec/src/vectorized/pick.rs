//! Picking each row from one of two arrays by a mask, as `if`, CASE, `transform` and
//! `if_null` do. Arrow's `zip` copies one slice per run of equal mask bits, which costs a call
//! per row when the mask alternates (`if(amount > 100.0, amount, 0.0)` over random amounts);
//! here primitive and boolean arrays are picked a 64-row word at a time with no branch per
//! row, and other types go through `zip`.

use std::sync::Arc;

use arrow::array::{
    downcast_primitive_array, Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray,
    PrimitiveArray,
};
use arrow::buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};

use dynql_ql::Result;

use super::evaluate::arrow_error;

/// Row `i` of `then` where bit `i` of `mask` is set, else row `i` of `otherwise` (values and
/// validity both). The arrays have `mask`'s length and one data type.
pub(super) fn pick(
    mask: &BooleanBuffer,
    then: &ArrayRef,
    otherwise: &ArrayRef,
) -> Result<ArrayRef> {
    let ones = mask.count_set_bits();
    if ones == mask.len() {
        return Ok(then.clone());
    }
    if ones == 0 {
        return Ok(otherwise.clone());
    }
    if then.data_type() == otherwise.data_type() {
        if let (Some(a), Some(b)) = (then.as_boolean_opt(), otherwise.as_boolean_opt()) {
            let values = &(mask & a.values()) | &(&!mask & b.values());
            let nulls = picked_nulls(mask, a.logical_nulls(), b.logical_nulls());
            return Ok(Arc::new(BooleanArray::new(values, nulls)));
        }
        downcast_primitive_array!(
            then => {
                let b = otherwise.as_primitive();
                return Ok(Arc::new(pick_primitive(mask, then, b)));
            }
            _ => {}
        );
    }
    let mask = BooleanArray::new(mask.clone(), None);
    arrow::compute::kernels::zip::zip(&mask, then, otherwise).map_err(arrow_error)
}

/// [`pick`] for two primitive arrays of one type: a select per row the compiler turns into
/// vector blends, over the 64 rows of each mask word.
fn pick_primitive<T: ArrowPrimitiveType>(
    mask: &BooleanBuffer,
    a: &PrimitiveArray<T>,
    b: &PrimitiveArray<T>,
) -> PrimitiveArray<T> {
    let (x, y) = (a.values(), b.values());
    let mut values: Vec<T::Native> = Vec::with_capacity(mask.len());
    let chunks = mask.inner().bit_chunks(mask.offset(), mask.len());
    let mut row = 0;
    for word in chunks.iter() {
        let (x, y) = (&x[row..row + 64], &y[row..row + 64]);
        // A word's rows picked into a fixed-size block first: a loop of known length with
        // no capacity check, which the compiler turns into blends.
        let mut picked = [T::Native::default(); 64];
        for (j, out) in picked.iter_mut().enumerate() {
            *out = if word >> j & 1 == 1 { x[j] } else { y[j] };
        }
        values.extend_from_slice(&picked);
        row += 64;
    }
    let rest = chunks.remainder_bits();
    values.extend((0..chunks.remainder_len()).map(|j| {
        if rest >> j & 1 == 1 {
            x[row + j]
        } else {
            y[row + j]
        }
    }));
    let nulls = picked_nulls(mask, a.nulls().cloned(), b.nulls().cloned());
    PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls)
        .with_data_type(a.data_type().clone())
}

/// The validity of a pick: `then`'s where the mask is set, `otherwise`'s elsewhere; `None`
/// when every picked row is valid.
fn picked_nulls(
    mask: &BooleanBuffer,
    then: Option<NullBuffer>,
    otherwise: Option<NullBuffer>,
) -> Option<NullBuffer> {
    let valid = match (then, otherwise) {
        (None, None) => return None,
        (Some(t), None) => &(mask & t.inner()) | &!mask,
        (None, Some(o)) => mask | &(&!mask & o.inner()),
        (Some(t), Some(o)) => &(mask & t.inner()) | &(&!mask & o.inner()),
    };
    Some(NullBuffer::new(valid)).filter(|n| n.null_count() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BinaryViewArray, Float64Array, Int64Array, TimestampMicrosecondArray};
    use arrow::datatypes::DataType;
    use proptest::prelude::*;

    /// What Arrow's `zip` makes of the same mask and arrays: the model.
    fn zipped(mask: &[bool], then: &ArrayRef, otherwise: &ArrayRef) -> ArrayRef {
        let mask = BooleanArray::from(mask.to_vec());
        arrow::compute::kernels::zip::zip(&mask, then, otherwise).unwrap()
    }

    fn picked(mask: &[bool], then: &ArrayRef, otherwise: &ArrayRef) -> ArrayRef {
        pick(&BooleanBuffer::from(mask.to_vec()), then, otherwise).unwrap()
    }

    fn rows() -> impl Strategy<Value = Vec<(bool, Option<i64>, Option<i64>)>> {
        // Past 64 rows, so that whole mask words and a remainder are both met.
        proptest::collection::vec(
            (
                any::<bool>(),
                proptest::option::of(-5i64..5),
                proptest::option::of(-5i64..5),
            ),
            0..200,
        )
    }

    proptest! {
        #[test]
        fn primitive_picks_are_zips(rows in rows(), offset in 0usize..70) {
            let mask: Vec<bool> = rows.iter().map(|r| r.0).collect();
            let a: ArrayRef = Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>());
            let b: ArrayRef = Arc::new(rows.iter().map(|r| r.2).collect::<Int64Array>());
            let (got, want) = (picked(&mask, &a, &b), zipped(&mask, &a, &b));
            prop_assert_eq!(&got, &want);
            // Sliced arrays and a mask not starting on a word.
            let offset = offset.min(rows.len());
            let n = rows.len() - offset;
            let (a, b) = (a.slice(offset, n), b.slice(offset, n));
            let full = BooleanBuffer::from(mask.clone());
            let got = pick(&full.slice(offset, n), &a, &b).unwrap();
            let want = zipped(&mask[offset..], &a, &b);
            prop_assert_eq!(&got, &want);
        }

        #[test]
        fn boolean_picks_are_zips(rows in rows()) {
            let mask: Vec<bool> = rows.iter().map(|r| r.0).collect();
            let a: ArrayRef =
                Arc::new(rows.iter().map(|r| r.1.map(|v| v > 0)).collect::<BooleanArray>());
            let b: ArrayRef =
                Arc::new(rows.iter().map(|r| r.2.map(|v| v > 0)).collect::<BooleanArray>());
            let (got, want) = (picked(&mask, &a, &b), zipped(&mask, &a, &b));
            prop_assert_eq!(&got, &want);
        }

        #[test]
        fn byte_string_picks_are_zips(rows in rows()) {
            let mask: Vec<bool> = rows.iter().map(|r| r.0).collect();
            let text = |v: Option<i64>| v.map(|v| format!("value number {v}").into_bytes());
            let a: ArrayRef = Arc::new(BinaryViewArray::from_iter(rows.iter().map(|r| text(r.1))));
            let b: ArrayRef = Arc::new(BinaryViewArray::from_iter(rows.iter().map(|r| text(r.2))));
            let (got, want) = (picked(&mask, &a, &b), zipped(&mask, &a, &b));
            prop_assert_eq!(&got, &want);
        }
    }

    #[test]
    fn a_pick_keeps_the_arrays_data_type() {
        let a: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![1, 2, 3]).with_timezone("UTC"));
        let b: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![4, 5, 6]).with_timezone("UTC"));
        let got = picked(&[true, false, true], &a, &b);
        assert_eq!(got.data_type(), a.data_type());
        assert_eq!(got.as_ref(), zipped(&[true, false, true], &a, &b).as_ref());
    }

    #[test]
    fn a_mask_all_one_way_gives_that_array() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![1.0, f64::NAN]));
        let b: ArrayRef = Arc::new(Float64Array::from(vec![Some(3.0), None]));
        assert!(Arc::ptr_eq(&picked(&[true, true], &a, &b), &a));
        assert!(Arc::ptr_eq(&picked(&[false, false], &a, &b), &b));
        assert_eq!(
            picked(&[false, true], &a, &b).data_type(),
            &DataType::Float64
        );
    }
}
