//! The equation values of a lookup join matched as YT compares them (nulls equal nulls,
//! -0.0 equals 0.0, NaN equals NaN). A batch's rows are hashed once: each gets the id of its
//! distinct tuple ([`LeftKeys`]), the distinct tuples name the foreign keys to read, and the
//! foreign rows are matched to those few tuples rather than to every left row. A single byte
//! string column (the usual join on a name) is hashed as bytes, whatever its Arrow layout
//! (`Binary`, `Utf8` or views); other tuples are encoded as Arrow rows.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, GenericByteViewArray, NullBufferBuilder, UInt32Array,
};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::take;
use arrow::datatypes::{ByteViewType, DataType, Float64Type, Int32Type};
use arrow::row::{Row, RowConverter, Rows, SortField};
use foldhash::fast::FixedState;

use crate::error::Result;

/// A batch's equation values as ids of their distinct tuples.
#[derive(Debug)]
pub(crate) struct LeftKeys {
    /// Per row, the id of its tuple.
    ids: Vec<u32>,
    /// Per id, the first row with that tuple.
    firsts: Vec<u32>,
}

/// The left and foreign rows of a join's output, in order: left rows in order, each with
/// every match in foreign order, or with none (a null foreign index) when unmatched in a
/// LEFT join.
pub(crate) struct Matches {
    /// The left row of each output row; `None` when the output is every left row once, in
    /// order (the usual lookup: each key has one foreign row), so the left columns are kept.
    pub(crate) left: Option<Vec<u32>>,
    /// The foreign row of each output row; null where a LEFT join's row matched nothing.
    pub(crate) foreign: UInt32Array,
}

impl Matches {
    /// The number of output rows.
    pub(crate) fn len(&self) -> usize {
        self.foreign.len()
    }
}

impl LeftKeys {
    /// The ids of `keys`' tuples (one array per equation, all of one length).
    pub(crate) fn new(keys: &[ArrayRef]) -> Result<LeftKeys> {
        if let Some(keys) = by_dictionary(keys)? {
            return Ok(keys);
        }
        let rows = keys.first().map_or(0, |a| a.len());
        let mut ids = Vec::with_capacity(rows);
        let mut firsts = Vec::new();
        // The id of a new tuple is the number of tuples seen before it.
        let mut intern = |id: u32, row: usize| {
            if id as usize == firsts.len() {
                firsts.push(row as u32);
            }
            ids.push(id);
        };
        match single_bytes(keys) {
            Some(Bytes::Utf8View(a)) => intern_views(a, intern),
            Some(Bytes::BinaryView(a)) => intern_views(a, intern),
            Some(bytes) => {
                let mut seen: HashMap<Option<&[u8]>, u32, FixedState> = HashMap::default();
                for row in 0..rows {
                    let next = seen.len() as u32;
                    intern(*seen.entry(bytes.get(row)).or_insert(next), row);
                }
            }
            None => {
                let (_, encoded) = encode(keys, None)?;
                let mut seen: HashMap<Row<'_>, u32, FixedState> = HashMap::default();
                for (row, key) in encoded.iter().enumerate() {
                    let next = seen.len() as u32;
                    intern(*seen.entry(key).or_insert(next), row);
                }
            }
        }
        Ok(LeftKeys { ids, firsts })
    }

    /// The first row of each distinct tuple, in order of first appearance.
    pub(crate) fn firsts(&self) -> &[u32] {
        &self.firsts
    }

    /// The distinct tuples of `keys` (the arrays these ids were made of), one row per id,
    /// dictionaries expanded to their values' type.
    pub(crate) fn distinct(&self, keys: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
        let firsts = UInt32Array::from(self.firsts.clone());
        keys.iter()
            .map(|a| {
                let taken = take(a.as_ref(), &firsts, None)?;
                Ok(match taken.data_type() {
                    DataType::Dictionary(_, values) => arrow::compute::cast(&taken, values)?,
                    _ => taken,
                })
            })
            .collect()
    }

    /// The pairs of rows whose tuples are equal: `left` are the arrays these ids were made
    /// of, `foreign` the foreign side's (same types, but for byte string layouts).
    #[cfg(test)]
    pub(crate) fn match_rows(
        &self,
        left: &[ArrayRef],
        foreign: &[ArrayRef],
        left_outer: bool,
    ) -> Result<Matches> {
        self.match_distinct(&self.distinct(left)?, foreign, left_outer)
    }

    /// [`LeftKeys::match_rows`] given the distinct tuples ([`LeftKeys::distinct`]).
    pub(crate) fn match_distinct(
        &self,
        distinct: &[ArrayRef],
        foreign: &[ArrayRef],
        left_outer: bool,
    ) -> Result<Matches> {
        // Per id, the foreign rows with its tuple, in foreign order.
        let mut matched: Vec<Vec<u32>> = vec![Vec::new(); self.firsts.len()];
        match (single_bytes(distinct), single_bytes(foreign)) {
            (Some(left), Some(foreign)) => {
                let ids: HashMap<Option<&[u8]>, u32, FixedState> = (0..self.firsts.len())
                    .map(|id| (left.get(id), id as u32))
                    .collect();
                for row in 0..foreign.len() {
                    if let Some(&id) = ids.get(&foreign.get(row)) {
                        matched[id as usize].push(row as u32);
                    }
                }
            }
            _ => {
                // Only the distinct tuples of the left side are encoded.
                let (converter, distinct) = encode(distinct, None)?;
                let (_, foreign) = encode(foreign, Some(converter))?;
                let ids: HashMap<Row<'_>, u32, FixedState> = distinct
                    .iter()
                    .enumerate()
                    .map(|(id, key)| (key, id as u32))
                    .collect();
                for (row, key) in foreign.iter().enumerate() {
                    if let Some(&id) = ids.get(&key) {
                        matched[id as usize].push(row as u32);
                    }
                }
            }
        }
        Ok(self.output(&matched, left_outer))
    }

    /// The output rows, given each id's foreign rows.
    fn output(&self, matched: &[Vec<u32>], left_outer: bool) -> Matches {
        if matched.iter().all(|m| m.len() <= 1) {
            return self.output_at_most_one(matched, left_outer);
        }
        let mut left = Vec::with_capacity(self.ids.len());
        let mut foreign = Vec::with_capacity(self.ids.len());
        // Allocates a bitmap only once a LEFT join's row matches nothing.
        let mut valid = NullBufferBuilder::new(self.ids.len());
        for (row, &id) in self.ids.iter().enumerate() {
            match matched[id as usize].as_slice() {
                [] if left_outer => {
                    left.push(row as u32);
                    foreign.push(0);
                    valid.append_null();
                }
                rows => {
                    for &m in rows {
                        left.push(row as u32);
                        foreign.push(m);
                    }
                    valid.append_n_non_nulls(rows.len());
                }
            }
        }
        let nulls = valid.finish();
        Matches {
            left: Some(left),
            foreign: UInt32Array::new(foreign.into(), nulls),
        }
    }

    /// [`Self::output`] where each tuple has at most one foreign row (the usual lookup, by
    /// the foreign key): at most one output row per left row, with no loop over matches.
    fn output_at_most_one(&self, matched: &[Vec<u32>], left_outer: bool) -> Matches {
        let first: Vec<u32> = matched
            .iter()
            .map(|m| m.first().map_or(0, |&r| r))
            .collect();
        let unmatched = matched.iter().any(Vec::is_empty);
        if !unmatched || left_outer {
            // Every left row once, in order: the foreign rows gathered per id, null where a
            // LEFT join's row matched nothing.
            let values: Vec<u32> = self.ids.iter().map(|&id| first[id as usize]).collect();
            let nulls = unmatched.then(|| {
                NullBuffer::from(BooleanBuffer::collect_bool(self.ids.len(), |row| {
                    !matched[self.ids[row] as usize].is_empty()
                }))
            });
            return Matches {
                left: None,
                foreign: UInt32Array::new(values.into(), nulls),
            };
        }
        // An inner join that drops the unmatched rows: each row written, then kept by
        // advancing past it, with no branch per row.
        let found: Vec<bool> = matched.iter().map(|m| !m.is_empty()).collect();
        let mut left = vec![0u32; self.ids.len()];
        let mut foreign = vec![0u32; self.ids.len()];
        let mut kept = 0;
        for (row, &id) in self.ids.iter().enumerate() {
            left[kept] = row as u32;
            foreign[kept] = first[id as usize];
            kept += usize::from(found[id as usize]);
        }
        left.truncate(kept);
        foreign.truncate(kept);
        Matches {
            left: Some(left),
            foreign: UInt32Array::from(foreign),
        }
    }
}

/// [`LeftKeys::new`] of one dictionary column (a scan gives a low-cardinality string column
/// so, see [`super::dictionary_groups::scan_giving_dictionaries`]): the dictionary's values
/// are interned once, and each row takes its key's id, numbered in order of first use.
/// `None` for anything else, and where the keys or values hold nulls (left to the general
/// path, which makes every null one tuple).
fn by_dictionary(keys: &[ArrayRef]) -> Result<Option<LeftKeys>> {
    let [column] = keys else {
        return Ok(None);
    };
    let Some(dictionary) = column.as_dictionary_opt::<Int32Type>() else {
        return Ok(None);
    };
    let values = dictionary.values();
    if dictionary.keys().null_count() > 0 || values.null_count() > 0 {
        return Ok(None);
    }
    let of_values = LeftKeys::new(std::slice::from_ref(values))?;
    let tuples = of_values.firsts.len();
    let keys = dictionary.keys().values();
    // Per value's tuple, its id among the rows, numbered in order of first use; the rows
    // are looked at until every tuple is met (within a few rows for few values).
    let mut renumbered = vec![u32::MAX; tuples];
    let mut firsts = Vec::new();
    for (row, &k) in keys.iter().enumerate() {
        if firsts.len() == tuples {
            break;
        }
        let value_id = *of_values.ids.get(k as u32 as usize).ok_or_else(|| {
            datafusion::error::DataFusionError::Internal("a dictionary key past its values".into())
        })?;
        let id = &mut renumbered[value_id as usize];
        if *id == u32::MAX {
            *id = firsts.len() as u32;
            firsts.push(row as u32);
        }
    }
    // Per key, its row id (`u32::MAX` for a value no row uses, and for keys past the
    // values, one more entry): then each row's id is a gather.
    let by_key: Vec<u32> = of_values
        .ids
        .iter()
        .map(|&v| renumbered[v as usize])
        .chain([u32::MAX])
        .collect();
    let past = values.len();
    let ids: Vec<u32> = keys
        .iter()
        .map(|&k| by_key[(k as u32 as usize).min(past)])
        .collect();
    if ids.contains(&u32::MAX) {
        return Err(datafusion::error::DataFusionError::Internal(
            "a dictionary key past its values".into(),
        )
        .into());
    }
    Ok(Some(LeftKeys { ids, firsts }))
}

/// Interns each row of a view array as [`LeftKeys::new`] does. A view names its value: an
/// inline one holds its bytes, a long one points at them, so equal views are equal values.
/// Most rows (all, when the column was decoded from a dictionary) are matched by their 16
/// bytes in a small direct-mapped cache (one multiply and one comparison); a view not there
/// is looked up by its bytes and put there.
fn intern_views<T: ByteViewType + ?Sized>(
    a: &GenericByteViewArray<T>,
    mut intern: impl FnMut(u32, usize),
) {
    const SLOTS: usize = 256;
    const EMPTY: u32 = u32::MAX;
    let slot = |view: u128| {
        let folded = (view as u64) ^ ((view >> 64) as u64);
        (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % SLOTS
    };
    let mut cache = [(0u128, EMPTY); SLOTS];
    let mut by_bytes: HashMap<Option<&[u8]>, u32, FixedState> = HashMap::default();
    let views = a.views();
    for row in 0..a.len() {
        let next = by_bytes.len() as u32;
        if a.is_null(row) {
            intern(*by_bytes.entry(None).or_insert(next), row);
            continue;
        }
        let view = views[row];
        let s = slot(view);
        let id = match cache[s] {
            (cached, id) if id != EMPTY && cached == view => id,
            _ => {
                let bytes: &[u8] = a.value(row).as_ref();
                let id = *by_bytes.entry(Some(bytes)).or_insert(next);
                cache[s] = (view, id);
                id
            }
        };
        intern(id, row);
    }
}

/// One byte string column, read as bytes whatever its layout.
#[derive(Clone, Copy)]
enum Bytes<'a> {
    Binary(&'a arrow::array::BinaryArray),
    BinaryView(&'a arrow::array::BinaryViewArray),
    Utf8(&'a arrow::array::StringArray),
    Utf8View(&'a arrow::array::StringViewArray),
}

impl<'a> Bytes<'a> {
    #[inline]
    fn get(self, row: usize) -> Option<&'a [u8]> {
        macro_rules! value {
            ($a:expr, $v:expr) => {
                match $a.is_null(row) {
                    true => None,
                    false => Some($v),
                }
            };
        }
        match self {
            Bytes::Binary(a) => value!(a, a.value(row)),
            Bytes::BinaryView(a) => value!(a, a.value(row)),
            Bytes::Utf8(a) => value!(a, a.value(row).as_bytes()),
            Bytes::Utf8View(a) => value!(a, a.value(row).as_bytes()),
        }
    }

    fn len(self) -> usize {
        match self {
            Bytes::Binary(a) => a.len(),
            Bytes::BinaryView(a) => a.len(),
            Bytes::Utf8(a) => a.len(),
            Bytes::Utf8View(a) => a.len(),
        }
    }
}

/// `keys` as [`Bytes`] when they are one byte string column.
fn single_bytes(keys: &[ArrayRef]) -> Option<Bytes<'_>> {
    let [column] = keys else {
        return None;
    };
    Some(match column.data_type() {
        DataType::Binary => Bytes::Binary(column.as_binary()),
        DataType::BinaryView => Bytes::BinaryView(column.as_binary_view()),
        DataType::Utf8 => Bytes::Utf8(column.as_string()),
        DataType::Utf8View => Bytes::Utf8View(column.as_string_view()),
        _ => return None,
    })
}

/// `keys` made canonical (see [`canonical`]) and encoded as Arrow rows, by `converter` when
/// given (the other side's), else by a new one for their types.
fn encode(keys: &[ArrayRef], converter: Option<RowConverter>) -> Result<(RowConverter, Rows)> {
    let keys = keys.iter().map(canonical).collect::<Result<Vec<_>>>()?;
    let converter = match converter {
        Some(c) => c,
        None => RowConverter::new(
            keys.iter()
                .map(|a| SortField::new(a.data_type().clone()))
                .collect(),
        )?,
    };
    let rows = converter.convert_columns(&keys)?;
    Ok((converter, rows))
}

/// Doubles with -0.0 as 0.0 and every NaN as one NaN, so that equal values (as YT compares
/// them) encode equally; byte strings as `Binary` (so that both sides encode alike whatever
/// their layout); other arrays as they are.
fn canonical(a: &ArrayRef) -> Result<ArrayRef> {
    if let Some(d) = a.as_primitive_opt::<Float64Type>() {
        return Ok(Arc::new(d.unary::<_, Float64Type>(|v| match v {
            v if v.is_nan() => f64::NAN,
            v if v == 0.0 => 0.0,
            v => v,
        })));
    }
    Ok(match a.data_type() {
        DataType::BinaryView | DataType::Utf8 | DataType::Utf8View => {
            arrow::compute::cast(a, &DataType::Binary)?
        }
        _ => a.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        BinaryArray, BinaryViewArray, Float64Array, Int64Array, StringArray, StringViewArray,
    };

    fn pairs(left: &[ArrayRef], foreign: &[ArrayRef], outer: bool) -> Vec<(u32, Option<u32>)> {
        let keys = LeftKeys::new(left).unwrap();
        let m = keys.match_rows(left, foreign, outer).unwrap();
        let rows = m
            .left
            .unwrap_or_else(|| (0..m.foreign.len() as u32).collect());
        rows.into_iter().zip(m.foreign.iter()).collect()
    }

    #[test]
    fn equal_values_match_as_yt_compares_them() {
        // -0.0 is 0.0, NaN is NaN, null is null.
        let left: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(0.0),
            Some(f64::NAN),
            None,
            Some(1.5),
        ]));
        let foreign: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(-0.0),
            None,
            Some(-f64::NAN),
            Some(2.5),
        ]));
        assert_eq!(
            pairs(&[left], &[foreign], false),
            [(0, Some(0)), (1, Some(2)), (2, Some(1))]
        );
    }

    proptest::proptest! {
        /// A dictionary column interns and matches as its rows expanded: the same ids,
        /// first rows and output pairs (nulls, in keys or values, take the general path).
        #[test]
        fn a_dictionary_interns_and_matches_as_its_rows(
            values in proptest::collection::vec("[a-c]{0,14}", 1..8),
            keys in proptest::collection::vec(0i32..8, 0..200),
            null_key in proptest::option::weighted(0.2, 0usize..200),
            null_value in proptest::option::weighted(0.2, 0usize..8),
            foreign in proptest::collection::vec(proptest::option::of("[a-c]{0,14}"), 0..6),
            outer in proptest::bool::ANY,
        ) {
            let n = values.len() as i32;
            let keys: arrow::array::Int32Array = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (null_key != Some(i)).then_some(k % n))
                .collect();
            let values: ArrayRef = Arc::new(BinaryViewArray::from_iter(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (null_value != Some(i)).then_some(v.as_bytes())),
            ));
            let dictionary: ArrayRef =
                Arc::new(arrow::array::DictionaryArray::new(keys, values.clone()));
            let rows = arrow::compute::cast(&dictionary, &DataType::BinaryView).unwrap();
            let foreign: ArrayRef = Arc::new(BinaryViewArray::from_iter(
                foreign.iter().map(|v| v.as_ref().map(|v| v.as_bytes())),
            ));
            let by_dictionary = LeftKeys::new(std::slice::from_ref(&dictionary)).unwrap();
            let by_rows = LeftKeys::new(std::slice::from_ref(&rows)).unwrap();
            proptest::prop_assert_eq!(&by_dictionary.ids, &by_rows.ids);
            proptest::prop_assert_eq!(&by_dictionary.firsts, &by_rows.firsts);
            proptest::prop_assert_eq!(
                pairs(&[dictionary], &[foreign.clone()], outer),
                pairs(&[rows], &[foreign], outer)
            );
        }
    }

    #[test]
    fn strings_match_whether_binary_utf8_or_views() {
        let left: ArrayRef = Arc::new(BinaryViewArray::from_iter([
            Some(b"a".as_slice()),
            None,
            Some(b"a long value past twelve bytes".as_slice()),
            Some(b"a".as_slice()),
        ]));
        let binary: ArrayRef = Arc::new(BinaryArray::from_iter([
            None,
            Some(b"a".as_slice()),
            Some(b"a long value past twelve bytes".as_slice()),
        ]));
        let text: ArrayRef = Arc::new(StringArray::from(vec![
            None,
            Some("a"),
            Some("a long value past twelve bytes"),
        ]));
        let expected = [(0, Some(1)), (1, Some(0)), (2, Some(2)), (3, Some(1))];
        assert_eq!(pairs(&[left.clone()], &[binary], false), expected);
        assert_eq!(pairs(&[left], &[text], false), expected);
    }

    #[test]
    fn every_match_in_foreign_order_and_left_rows_in_order() {
        let left: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![2, 1, 3, 1])),
            Arc::new(BinaryViewArray::from_iter_values([b"b", b"a", b"c", b"a"])),
        ];
        let foreign: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1, 2, 1, 2])),
            Arc::new(BinaryArray::from_iter_values([b"a", b"b", b"a", b"x"])),
        ];
        assert_eq!(
            pairs(&left, &foreign, false),
            [
                (0, Some(1)),
                (1, Some(0)),
                (1, Some(2)),
                (3, Some(0)),
                (3, Some(2))
            ]
        );
        // LEFT: the unmatched row once, with no foreign row.
        assert_eq!(
            pairs(&left, &foreign, true),
            [
                (0, Some(1)),
                (1, Some(0)),
                (1, Some(2)),
                (2, None),
                (3, Some(0)),
                (3, Some(2))
            ]
        );
    }

    /// The pairs a nested loop gives: left rows in order, each with its equal foreign rows
    /// in order (null equals null), or alone in a LEFT join when it has none.
    fn nested_loop(
        left: &[Option<u8>],
        foreign: &[Option<u8>],
        outer: bool,
    ) -> Vec<(u32, Option<u32>)> {
        let mut out = Vec::new();
        for (i, l) in left.iter().enumerate() {
            let found: Vec<_> = (0..foreign.len()).filter(|&j| foreign[j] == *l).collect();
            if found.is_empty() && outer {
                out.push((i as u32, None));
            }
            out.extend(found.into_iter().map(|j| (i as u32, Some(j as u32))));
        }
        out
    }

    /// Key `k` as text: short ones inline in their views, long ones in a data buffer.
    fn text(k: u8) -> String {
        match k % 2 {
            0 => format!("k{k}"),
            _ => format!("a key longer than twelve bytes, {k}"),
        }
    }

    /// `keys` as string views: each value written once per row, or (`shared`) taken from a
    /// dictionary of the distinct values, so that equal long values share one view.
    fn views(keys: &[Option<u8>], shared: bool) -> ArrayRef {
        let texts = keys.iter().map(|k| k.map(text));
        if !shared {
            return Arc::new(StringViewArray::from_iter(texts));
        }
        let dictionary = StringViewArray::from_iter_values((0..=u8::MAX).map(text));
        let indices = UInt32Array::from_iter(keys.iter().map(|k| k.map(u32::from)));
        take(&dictionary, &indices, None).unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Invariant: the pairs are the nested loop's, for string views (shared or not, inline
        /// or long) and for integers, in inner and LEFT joins; and the left rows are left out
        /// exactly when they are every left row once, in order.
        #[test]
        fn matches_are_the_nested_loops(
            left in proptest::collection::vec(proptest::option::weighted(0.9, 0u8..6), 0..40),
            foreign in proptest::collection::vec(proptest::option::weighted(0.9, 0u8..8), 0..8),
            shared: bool,
            outer: bool,
        ) {
            let expected = nested_loop(&left, &foreign, outer);
            let ints = |keys: &[Option<u8>]| -> ArrayRef {
                Arc::new(Int64Array::from_iter(keys.iter().map(|k| k.map(i64::from))))
            };
            let sides = [
                (views(&left, shared), views(&foreign, !shared)),
                (ints(&left), ints(&foreign)),
            ];
            for (l, f) in sides {
                let keys = LeftKeys::new(&[l.clone()]).unwrap();
                let m = keys.match_rows(&[l.clone()], &[f.clone()], outer).unwrap();
                let identity = expected.len() == left.len()
                    && expected.iter().enumerate().all(|(i, &(r, _))| r as usize == i);
                proptest::prop_assert_eq!(m.left.is_none(), identity);
                proptest::prop_assert_eq!(pairs(&[l], &[f], outer), expected.clone());
            }
        }
    }

    #[test]
    fn equal_tuples_share_an_id_and_its_first_row() {
        let keys: ArrayRef = Arc::new(BinaryViewArray::from_iter([
            Some(b"x".as_slice()),
            Some(b"y".as_slice()),
            None,
            Some(b"x".as_slice()),
            None,
        ]));
        let ids = LeftKeys::new(&[keys]).unwrap();
        assert_eq!(ids.ids, [0, 1, 2, 0, 2]);
        assert_eq!(ids.firsts(), [0, 1, 2]);
        let pair: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), Some(1), None, Some(1)])),
            Arc::new(Float64Array::from(vec![0.0, -0.0, 0.0, 1.0])),
        ];
        let ids = LeftKeys::new(&pair).unwrap();
        assert_eq!(ids.ids, [0, 0, 1, 2]);
        assert_eq!(ids.firsts(), [0, 2, 3]);
    }
}
