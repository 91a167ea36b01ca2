//! How a columnar scan hands on the clean pieces it reads: byte strings as `Binary`, views
//! or dictionaries of views ([`ByteStrings`]), a piece's rows in key order or not
//! ([`Columnar`]), and a piece's columns made into a batch named as the table's
//! ([`projected_batch`]).

use arrow::record_batch::RecordBatch;

use crate::error::Result;

/// How a columnar scan hands on clean row groups: its byte strings, and whether a piece's
/// rows may come out of key order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Columnar {
    pub(crate) strings: ByteStrings,
    /// Where layers of clean row groups overlap, each layer's newest versions as a batch
    /// of their own (in the layer's key order), not gathered into one in key order: for a
    /// reader the order does not matter to (a hash aggregation), which then reads every
    /// layer's columns as they are, dictionaries and all.
    pub(crate) any_order: bool,
}

impl From<ByteStrings> for Columnar {
    fn from(strings: ByteStrings) -> Columnar {
        Columnar {
            strings,
            any_order: false,
        }
    }
}

/// How a columnar scan gives the byte-string columns of clean row groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ByteStrings {
    /// `Binary`, as the table's Arrow schema has them.
    Binary,
    /// `BinaryView`, which DataFusion groups and hashes much faster.
    Views,
    /// `BinaryView`, except where a single clean row group gives a slice of a column the
    /// chunk cache keeps as a dictionary of few values
    /// ([`crate::row_group_decode::few_values_as_dictionary`]): that slice stays a
    /// `Dictionary(Int32, BinaryView)`, for a reader that works once per distinct value (a
    /// grouping by the column) and would only pay for expanding it.
    ViewsOrDictionaries,
}

impl ByteStrings {
    /// `Views` or `Binary`.
    pub(crate) fn views_when(views: bool) -> ByteStrings {
        if views {
            ByteStrings::Views
        } else {
            ByteStrings::Binary
        }
    }

    /// Whether byte strings are views (or dictionaries of views).
    pub(crate) fn views(self) -> bool {
        self != ByteStrings::Binary
    }
}

/// Rows `rows` of columns `columns` of a row group (`arrays`, as cached: dictionaries are
/// expanded unless `dictionaries`, see [`ByteStrings::ViewsOrDictionaries`]) as a batch, named as in `names` (the table's Arrow schema).
/// `last` is the schema of the batch made before, used again when the columns' types are
/// the same (a scan of many small pieces would otherwise build one per piece).
pub(crate) fn projected_batch(
    names: &arrow::datatypes::Schema,
    columns: &[usize],
    arrays: &[arrow::array::ArrayRef],
    rows: std::ops::Range<usize>,
    dictionaries: bool,
    last: &mut Option<arrow::datatypes::SchemaRef>,
) -> Result<RecordBatch> {
    use arrow::datatypes::{Field, Schema};
    let arrays = arrays
        .iter()
        .map(|a| {
            let a = a.slice(rows.start, rows.len());
            if dictionaries {
                Ok(a)
            } else {
                crate::row_group_decode::expanded(&a)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let rows = rows.len();
    let schema = match last {
        Some(s)
            if s.fields()
                .iter()
                .zip(&arrays)
                .all(|(f, a)| f.data_type() == a.data_type()) =>
        {
            s.clone()
        }
        _ => {
            let fields: Vec<Field> = columns
                .iter()
                .zip(&arrays)
                .map(|(&c, a)| Field::new(names.field(c).name(), a.data_type().clone(), true))
                .collect();
            let schema = std::sync::Arc::new(Schema::new(fields));
            *last = Some(schema.clone());
            schema
        }
    };
    Ok(RecordBatch::try_new_with_options(
        schema,
        arrays,
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}
