//! Predicates over byte-string arrays: any predicate a value at a time, and `is_prefix` of a
//! literal and equality with a short value decided on the views themselves.
//!
//! A `BinaryView` value's view is 16 bytes: its length (4), then either the whole value (up
//! to 12 bytes, zero-padded) or its first 4 bytes and where the rest lies (buffer index and
//! offset, 4 each). A prefix of up to 4 bytes, or any prefix of a value of up to 12, is
//! therefore compared with the view alone: one masked comparison of two integers per row,
//! no call into the value's buffer.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, BinaryViewArray, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::DataType;

use dynql_core::arrow_convert::array_value;
use dynql_core::{Value, ValueType};

/// The longest value a view holds inline.
const INLINE: usize = 12;

/// A boolean array holding `f` of each byte string (null where the string is null).
pub(super) fn bytes_predicate(array: &ArrayRef, f: impl Fn(&[u8]) -> bool) -> ArrayRef {
    let rows = array.len();
    let values = match array.data_type() {
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            BooleanBuffer::collect_bool(rows, |i| f(a.value(i)))
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            BooleanBuffer::collect_bool(rows, |i| f(a.value(i)))
        }
        DataType::Null => return new_null_array(&DataType::Boolean, rows),
        _ => {
            // Other encodings (foreign files): through values.
            BooleanBuffer::collect_bool(rows, |i| {
                match array_value(array.as_ref(), ValueType::String, i) {
                    Value::String(b) => f(&b),
                    _ => false,
                }
            })
        }
    };
    Arc::new(BooleanArray::new(values, array.logical_nulls()))
}

/// Whether each byte string starts with `prefix` (null where the string is null).
pub(super) fn starts_with(array: &ArrayRef, prefix: &[u8]) -> ArrayRef {
    match array.data_type() {
        DataType::BinaryView if prefix.len() <= INLINE => {
            let a = array.as_binary_view();
            Arc::new(BooleanArray::new(
                views_start_with(a, prefix),
                a.logical_nulls(),
            ))
        }
        _ => bytes_predicate(array, |b| b.starts_with(prefix)),
    }
}

/// The view of `value` when a view holds it inline (at most [`INLINE`] bytes): its length,
/// then its bytes, zero-padded (Arrow requires the padding). Two inline values are equal
/// exactly when their views are, and a longer value's view never equals an inline one (its
/// length differs), so equality with a short value is one integer comparison per row.
pub(super) fn inline_view(value: &[u8]) -> Option<u128> {
    (value.len() <= INLINE).then(|| {
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&(value.len() as u32).to_le_bytes());
        bytes[4..4 + value.len()].copy_from_slice(value);
        u128::from_le_bytes(bytes)
    })
}

/// Whether each value of `array` equals the value whose view is `view` (an
/// [`inline_view`]), 64 rows to a word; a null slot's bit means nothing.
pub(super) fn views_equal(array: &BinaryViewArray, view: u128) -> BooleanBuffer {
    views_bits(array.views(), move |v| v == view)
}

/// A bit of `f` per view, 64 views to a word. `f` is taken by value and called over
/// fixed-size chunks, so what it captures stays in registers and no row is bounds-checked
/// (`BooleanBuffer::collect_bool` with a closure capturing by reference reloaded every
/// capture for every row).
fn views_bits(views: &[u128], f: impl Fn(u128) -> bool + Copy) -> BooleanBuffer {
    let words = view_words(views, f);
    BooleanBuffer::new(arrow::buffer::Buffer::from_vec(words), 0, views.len())
}

/// The words of [`views_bits`].
fn view_words(views: &[u128], f: impl Fn(u128) -> bool + Copy) -> Vec<u64> {
    let word = |chunk: &[u128]| {
        chunk.iter().enumerate().fold(0u64, |word, (bit, &view)| {
            word | (u64::from(f(view)) << bit)
        })
    };
    let chunks = views.chunks_exact(64);
    let rest = chunks.remainder();
    let mut words: Vec<u64> = chunks.map(word).collect();
    if !rest.is_empty() {
        words.push(word(rest));
    }
    words
}

/// `starts_with` over views, for a prefix of at most [`INLINE`] bytes.
///
/// A prefix of at most 4 bytes is decided from each view's low 64 bits alone. A longer one
/// takes two passes: the first decides every row from its view alone, 64 rows to a word and
/// without branches (the compiler keeps it in registers): a short value compares its inline
/// bytes, a long value its first 4; the second compares the rest of the prefix in the
/// buffers, only for long values that passed.
fn views_start_with(array: &BinaryViewArray, prefix: &[u8]) -> BooleanBuffer {
    let n = prefix.len();
    debug_assert!(n <= INLINE);
    let views = array.views();
    if n <= 4 {
        // Every view holds its value's first 4 bytes right after the length, inline or not:
        // the low 64 bits of a view (length, first 4 bytes) decide its row.
        let mut bytes = [0u8; 8];
        bytes[4..4 + n].copy_from_slice(prefix);
        let want = u64::from_le_bytes(bytes);
        let (mask, n) = (((1u64 << (8 * n)) - 1) << 32, n as u32);
        return views_bits(views, move |view| {
            let view = view as u64;
            (view as u32 >= n) & (view & mask == want)
        });
    }
    // The prefix where it sits in a view (after the 4 length bytes), and the mask of its
    // bytes; `head` masks the bytes a view of a long value holds (its first 4).
    let mut bytes = [0u8; 16];
    bytes[4..4 + n].copy_from_slice(prefix);
    let want = u128::from_le_bytes(bytes);
    let mask = ((1u128 << (8 * n)) - 1) << 32;
    let head = mask & (u128::from(u32::MAX) << 32);
    let mut words = view_words(views, move |view| {
        let len = view as u32 as usize;
        let long = len > INLINE;
        // Branch-free choice of the mask: the head of a long value, else the whole prefix.
        let m = if long { head } else { mask };
        (len >= n) & (view & m == want & m)
    });
    // Long values whose first 4 bytes matched: the rest of the prefix from the buffer.
    let buffers = array.data_buffers();
    for (i, &view) in views.iter().enumerate() {
        let (word, bit) = (i / 64, i % 64);
        if view as u32 as usize > INLINE && words[word] & (1 << bit) != 0 {
            let buffer = (view >> 64) as u32 as usize;
            let offset = (view >> 96) as u32 as usize;
            if buffers[buffer][offset + 4..offset + n] != prefix[4..] {
                words[word] &= !(1 << bit);
            }
        }
    }
    BooleanBuffer::new(arrow::buffer::Buffer::from_vec(words), 0, views.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::BinaryViewBuilder;

    /// Every string over {a, b} of length 0..=15 (long ones spread over several buffers),
    /// and nulls, against every prefix over {a, b} of length 0..=13.
    #[test]
    fn views_agree_with_starts_with_on_every_short_string() {
        fn strings(max: usize) -> Vec<Vec<u8>> {
            let mut all = vec![vec![]];
            let mut last = vec![vec![]];
            for _ in 0..max {
                last = last
                    .iter()
                    .flat_map(|s: &Vec<u8>| {
                        [b'a', b'b'].map(|c| {
                            let mut t = s.clone();
                            t.push(c);
                            t
                        })
                    })
                    .collect();
                all.extend(last.iter().cloned());
            }
            all
        }
        let values = strings(15);
        let mut builder = BinaryViewBuilder::new().with_fixed_block_size(1024);
        for (i, v) in values.iter().enumerate() {
            builder.append_value(v);
            if i % 7 == 0 {
                builder.append_null();
            }
        }
        let array: ArrayRef = Arc::new(builder.finish());
        assert!(array.as_binary_view().data_buffers().len() > 1);
        for prefix in strings(13) {
            let got = starts_with(&array, &prefix);
            let got = got.as_boolean();
            let strings = array.as_binary_view();
            for i in 0..array.len() {
                let expected = strings
                    .is_valid(i)
                    .then(|| strings.value(i).starts_with(&prefix));
                let actual = got.is_valid(i).then(|| got.value(i));
                assert_eq!(
                    actual,
                    expected,
                    "{:?} starts with {:?}",
                    strings.value(i),
                    prefix
                );
            }
        }
    }

    #[test]
    fn views_equal_a_short_value_exactly_when_the_values_are_equal() {
        let values: [&[u8]; 7] = [
            b"",
            b"a",
            b"ab",
            b"a\0",
            b"twelve bytes",
            b"twelve bytes!",
            b"a value longer than twelve bytes",
        ];
        let mut builder = BinaryViewBuilder::new().with_fixed_block_size(64);
        for v in values {
            builder.append_value(v);
        }
        builder.append_null();
        let array = builder.finish();
        for wanted in values {
            let Some(view) = inline_view(wanted) else {
                assert!(wanted.len() > INLINE);
                continue;
            };
            let got = views_equal(&array, view);
            for (i, v) in values.iter().enumerate() {
                assert_eq!(got.value(i), *v == wanted, "{v:?} = {wanted:?}");
            }
        }
    }

    #[test]
    fn other_arrays_and_long_prefixes_take_the_general_path() {
        let binary: ArrayRef = Arc::new(arrow::array::BinaryArray::from(vec![
            Some(&b"delivery"[..]),
            None,
            Some(&b"de"[..]),
        ]));
        let got = starts_with(&binary, b"del");
        let got = got.as_boolean();
        assert!(got.value(0) && got.is_null(1) && !got.value(2));
        let views: ArrayRef = Arc::new(BinaryViewArray::from(vec![
            &b"a value longer than twelve bytes"[..],
            &b"a value longer than twelve"[..],
        ]));
        let got = starts_with(&views, b"a value longer than twelve b");
        let got = got.as_boolean();
        assert!(got.value(0) && !got.value(1));
    }
}
