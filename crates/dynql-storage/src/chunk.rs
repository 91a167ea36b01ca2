//! Chunks: immutable Parquet files holding a table's row versions.
//!
//! A *versioned chunk* holds the schema columns plus `$timestamp` (commit timestamp), `$kind`
//! (0 overwrite, 1 update, 2 delete), `$aggregate` and `$written` (one bit per column: YT tells
//! "not written" from null). Chunks of sorted tables are sorted by key, then by commit order, and
//! are written with page statistics; a [`ChunkRef`] records what the chunk covers (key and
//! timestamp bounds) so that reads can skip it without opening it.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, BinaryArray, BooleanArray, UInt64Array, UInt8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Encoding;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use dynql_core::arrow_convert::{array_value, table_arrow_schema, values_to_array};
use dynql_core::{TableSchema, Value, ValueType};

use crate::error::{Error, Result};
use crate::kernel::checksum::ChunkChecksum;
use crate::kernel::chunk_ref::{
    clean_since, compare_version_keys, nan_columns, version_key, ChunkRef, Cleanliness, RowGroupRef,
};
use crate::kernel::codec::CompressionCodec;
use crate::kernel::mvcc::{RowDelta, WriteKind};
use crate::kernel::timestamp::Timestamp;

/// Versions per Parquet row group of a chunk: the unit a pruned scan decodes.
pub const ROW_GROUP_ROWS: usize = 16 * 1024;

/// Rows per Parquet data page at most: the unit a narrow scan of a row group decodes (see
/// the page index pruning in `page_index.rs`).
pub const PAGE_ROWS: usize = 1024;

/// Encodes record batches as one Parquet file with page statistics, compressed with `codec`
/// (the table's `compression_codec`), and the checksum its references record (see
/// [`crate::kernel::checksum`]).
pub fn encode_chunk(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    codec: CompressionCodec,
) -> Result<(Bytes, ChunkChecksum)> {
    let mut encoder = ChunkEncoder::new(schema, codec)?;
    for b in batches {
        encoder.write(b)?;
    }
    encoder.finish()
}

/// The largest dictionary of a row group's column of fixed-width values (2,048 eight-byte
/// values, an eighth of [`ROW_GROUP_ROWS`]) before its pages fall back to plain ones.
const FIXED_DICTIONARY_BYTES: usize = 16 << 10;

/// The largest dictionary of a row group's column of byte strings (about 4,000 short
/// strings: the most distinct values for which a decoded column stays a dictionary, see
/// `row_group_decode::few_values_as_dictionary`).
const STRING_DICTIONARY_BYTES: usize = 64 << 10;

/// The columns of a sorted table's chunks written delta-encoded: its int64 and uint64 key
/// columns. Key order makes neighbouring values close (the first key column ascends, the
/// next ones ascend within equal prefixes), so the differences bit-pack into a few bits and
/// decode without a dictionary lookup or a decompression of eight bytes a row
/// (`benches/peers.rs`: a filter on the `id` key reads its column about twice as fast as from
/// dictionary pages, and the chunk is a third of the size).
pub(crate) fn delta_key_columns(table: &TableSchema) -> Vec<&str> {
    table
        .key_columns()
        .iter()
        .filter(|c| matches!(c.wire_type(), ValueType::Int64 | ValueType::Uint64))
        .map(|c| c.name.as_str())
        .collect()
}

/// A chunk being encoded batch by batch (a bulk write streams a tablet's rows into one): the
/// Parquet file of [`encode_chunk`], a row group every [`ROW_GROUP_ROWS`] rows.
pub(crate) struct ChunkEncoder {
    writer: ArrowWriter<Vec<u8>>,
}

impl ChunkEncoder {
    /// An encoder of a table's chunk, its pages compressed with `codec` (the table's
    /// `compression_codec`).
    pub(crate) fn new(schema: &SchemaRef, codec: CompressionCodec) -> Result<ChunkEncoder> {
        ChunkEncoder::with_encodings(schema, &[], &[], 0, codec)
    }

    /// An encoder of a versioned chunk of a table of `table`'s schema ([`versioned_schema`]):
    /// the columns named in `plain` without a dictionary (for mostly distinct values, where
    /// building one only costs time), the integer key columns delta-encoded
    /// ([`delta_key_columns`]), into a buffer of `capacity` bytes to begin with.
    pub(crate) fn for_table(
        table: &TableSchema,
        plain: &[&str],
        capacity: usize,
        codec: CompressionCodec,
    ) -> Result<ChunkEncoder> {
        let delta = delta_key_columns(table);
        let plain: Vec<&str> = plain
            .iter()
            .copied()
            .filter(|c| !delta.contains(c))
            .collect();
        ChunkEncoder::with_encodings(&versioned_schema(table), &plain, &delta, capacity, codec)
    }

    fn with_encodings(
        schema: &SchemaRef,
        plain: &[&str],
        delta: &[&str],
        capacity: usize,
        codec: CompressionCodec,
    ) -> Result<ChunkEncoder> {
        let mut props = WriterProperties::builder()
            .set_compression(codec.compression())
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_data_page_row_count_limit(PAGE_ROWS)
            .set_write_batch_size(PAGE_ROWS);
        // Statistics prune by table columns only: none for the version columns (their
        // min/max would cost a comparison per row, the byte strings a `memcmp` each).
        for name in VERSION_COLUMNS {
            props = props
                .set_column_statistics_enabled(ColumnPath::from(name), EnabledStatistics::None);
        }
        // A dictionary pays while values repeat: past these sizes a row group's pages fall
        // back to plain ones (a column of mostly distinct values then decodes straight into
        // its array, with no dictionary gather and no expansion of a dictionary to views).
        for field in schema.fields() {
            let limit = match field.data_type() {
                DataType::Binary | DataType::Utf8 => STRING_DICTIONARY_BYTES,
                _ => FIXED_DICTIONARY_BYTES,
            };
            props = props.set_column_dictionary_page_size_limit(
                ColumnPath::from(field.name().as_str()),
                limit,
            );
        }
        for name in plain {
            props = props.set_column_dictionary_enabled(ColumnPath::from(*name), false);
        }
        for name in delta {
            props = props
                .set_column_dictionary_enabled(ColumnPath::from(*name), false)
                .set_column_encoding(ColumnPath::from(*name), Encoding::DELTA_BINARY_PACKED);
        }
        Ok(ChunkEncoder {
            writer: ArrowWriter::try_new(
                Vec::with_capacity(capacity),
                schema.clone(),
                Some(props.build()),
            )?,
        })
    }

    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Ok(self.writer.write(batch)?)
    }

    /// Ends the row group in progress (if any): what is written next starts a new one.
    pub(crate) fn end_row_group(&mut self) -> Result<()> {
        Ok(self.writer.flush()?)
    }

    /// The file and its checksum: the hashes of the data blocks go into the footer before it
    /// is written, the hash of the tail is computed after.
    pub(crate) fn finish(mut self) -> Result<(Bytes, ChunkChecksum)> {
        let writer = &mut self.writer;
        // Close the last row group and push parquet's buffer into ours: everything written
        // so far is the data region; the page index and the footer follow at close.
        writer.flush()?;
        writer.sync().map_err(parquet::errors::ParquetError::from)?;
        let data_end = writer.inner().len();
        let hashes = crate::kernel::checksum::block_hashes_text(writer.inner());
        writer.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
            crate::kernel::checksum::BLOCK_HASHES_KEY.to_string(),
            hashes,
        ));
        let buf = self.writer.into_inner()?;
        let checksum = ChunkChecksum {
            data_end: data_end as u64,
            tail: crate::kernel::checksum::hash(&buf[data_end..]),
        };
        Ok((Bytes::from(buf), checksum))
    }
}

/// Decodes a chunk; `path` names it in errors.
pub fn decode_chunk(path: &str, data: Bytes) -> Result<Vec<RecordBatch>> {
    let corrupt = |e: parquet::errors::ParquetError| Error::Corrupt {
        path: path.to_string(),
        message: e.to_string(),
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(data)
        .map_err(corrupt)?
        .with_batch_size(8192)
        .build()
        .map_err(corrupt)?;
    reader
        .map(|b| {
            b.map_err(|e| Error::Corrupt {
                path: path.to_string(),
                message: e.to_string(),
            })
        })
        .collect()
}

pub(crate) fn kind_code(k: WriteKind) -> u8 {
    match k {
        WriteKind::Overwrite => 0,
        WriteKind::Update => 1,
        WriteKind::Delete => 2,
    }
}

/// The columns a chunk adds to the table's to describe each version of a row.
const VERSION_COLUMNS: [&str; 4] = ["$timestamp", "$kind", "$aggregate", "$written"];

pub(crate) fn versioned_schema(schema: &TableSchema) -> SchemaRef {
    let mut fields: Vec<Field> = table_arrow_schema(schema)
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let [timestamp, kind, aggregate, written] = VERSION_COLUMNS;
    fields.push(Field::new(timestamp, DataType::UInt64, false));
    fields.push(Field::new(kind, DataType::UInt8, false));
    fields.push(Field::new(aggregate, DataType::Boolean, false));
    fields.push(Field::new(written, DataType::Binary, false));
    Arc::new(Schema::new(fields))
}

/// Encodes versioned rows (key order, then commit order) as one record batch.
pub(crate) fn encode_versions(schema: &TableSchema, deltas: &[&RowDelta]) -> Result<RecordBatch> {
    let width = schema.columns().len();
    let mut columns = Vec::with_capacity(width + 4);
    for (i, c) in schema.columns().iter().enumerate() {
        let values: Vec<Value> = deltas
            .iter()
            .map(|d| d.values[i].clone().unwrap_or(Value::Null))
            .collect();
        let refs: Vec<&Value> = values.iter().collect();
        columns.push(values_to_array(c.wire_type(), &refs)?);
    }
    columns.push(Arc::new(UInt64Array::from_iter_values(
        deltas.iter().map(|d| d.timestamp.0),
    )) as _);
    columns.push(Arc::new(UInt8Array::from_iter_values(
        deltas.iter().map(|d| kind_code(d.kind)),
    )) as _);
    columns.push(Arc::new(BooleanArray::from(
        deltas.iter().map(|d| d.aggregate).collect::<Vec<_>>(),
    )) as _);
    let bitmaps: Vec<Vec<u8>> = deltas
        .iter()
        .map(|d| {
            let mut bits = vec![0u8; width.div_ceil(8)];
            for (i, v) in d.values.iter().enumerate() {
                if v.is_some() {
                    bits[i / 8] |= 1 << (i % 8);
                }
            }
            bits
        })
        .collect();
    columns.push(Arc::new(BinaryArray::from_iter_values(bitmaps.iter())) as _);
    Ok(RecordBatch::try_new(versioned_schema(schema), columns)?)
}

/// The version columns of a versioned chunk's batch (after the table's columns).
pub(crate) struct VersionColumns<'a> {
    pub(crate) timestamps: &'a UInt64Array,
    pub(crate) kinds: &'a UInt8Array,
    pub(crate) aggregates: &'a BooleanArray,
    pub(crate) written: &'a BinaryArray,
}

/// Finds and type-checks the version columns of `batch`.
pub(crate) fn version_columns<'a>(
    path: &str,
    schema: &TableSchema,
    batch: &'a RecordBatch,
) -> Result<VersionColumns<'a>> {
    let corrupt = |m: &str| Error::Corrupt {
        path: path.to_string(),
        message: m.to_string(),
    };
    let width = schema.columns().len();
    if batch.num_columns() != width + 4 {
        return Err(corrupt(
            "versioned chunk has an unexpected number of columns",
        ));
    }
    Ok(VersionColumns {
        timestamps: batch
            .column(width)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| corrupt("bad $timestamp"))?,
        kinds: batch
            .column(width + 1)
            .as_any()
            .downcast_ref::<UInt8Array>()
            .ok_or_else(|| corrupt("bad $kind"))?,
        aggregates: batch
            .column(width + 2)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| corrupt("bad $aggregate"))?,
        written: batch
            .column(width + 3)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .ok_or_else(|| corrupt("bad $written"))?,
    })
}

pub(crate) fn decode_versions(
    path: &str,
    schema: &TableSchema,
    batch: &RecordBatch,
) -> Result<Vec<RowDelta>> {
    let corrupt = |m: &str| Error::Corrupt {
        path: path.to_string(),
        message: m.to_string(),
    };
    let VersionColumns {
        timestamps: ts,
        kinds,
        aggregates: aggs,
        written,
    } = version_columns(path, schema, batch)?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        let bits = written.value(r);
        let kind = match kinds.value(r) {
            0 => WriteKind::Overwrite,
            1 => WriteKind::Update,
            2 => WriteKind::Delete,
            _ => return Err(corrupt("bad $kind value")),
        };
        let values = schema
            .columns()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let set = bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
                set.then(|| array_value(batch.column(i).as_ref(), c.wire_type(), r))
            })
            .collect();
        out.push(RowDelta {
            timestamp: Timestamp(ts.value(r)),
            kind,
            values,
            aggregate: aggs.value(r) && !aggs.is_null(r),
        });
    }
    Ok(out)
}

/// Decodes every version of a versioned chunk, checking that keys are sorted when the table
/// is sorted (`key_count > 0`).
pub(crate) fn decode_versioned_chunk(
    path: &str,
    schema: &TableSchema,
    data: Bytes,
) -> Result<Vec<RowDelta>> {
    let mut out = Vec::new();
    for batch in decode_chunk(path, data)? {
        out.extend(decode_versions(path, schema, &batch)?);
    }
    check_key_order(path, schema, &out)?;
    Ok(out)
}

/// Checks that decoded versions of a sorted table are in key order (the merge relies on it).
pub(crate) fn check_key_order(
    path: &str,
    schema: &TableSchema,
    versions: &[RowDelta],
) -> Result<()> {
    let key_count = schema.key_column_count();
    if key_count > 0
        && versions
            .windows(2)
            .any(|w| compare_version_keys(&w[0], &w[1], key_count) == Ordering::Greater)
    {
        return Err(Error::Corrupt {
            path: path.to_string(),
            message: "versions of a sorted chunk are out of key order".into(),
        });
    }
    Ok(())
}

/// Writes versions (key order, then commit order) as a new chunk at `path`, with the key
/// filters `key_filters` asks for and compressed with `codec`, and returns its reference;
/// `None` when there is nothing to write.
pub(crate) async fn write_versioned_chunk(
    objects: &dyn ObjectStore,
    path: String,
    schema: &TableSchema,
    versions: &[&RowDelta],
    key_filters: Vec<(usize, u8)>,
    codec: CompressionCodec,
) -> Result<Option<ChunkRef>> {
    let (Some(first), Some(last)) = (versions.first(), versions.last()) else {
        return Ok(None);
    };
    let key_count = schema.key_column_count();
    let batch = encode_versions(schema, versions)?;
    // The writer cuts a row group every ROW_GROUP_ROWS rows, so these are its row groups.
    let row_groups = versions
        .chunks(ROW_GROUP_ROWS)
        .map(|g| RowGroupRef {
            rows: g.len() as u64,
            min_key: version_key(g[0], key_count),
            max_key: version_key(g[g.len() - 1], key_count),
            clean: match clean_since(schema, g) {
                Some(t) => Cleanliness::Since(t),
                None => Cleanliness::Dirty,
            },
            nan_columns: Some(nan_columns(schema, g)),
        })
        .collect();
    let key_filter = match crate::key_filter::KeyFilterBuilder::new(key_filters) {
        Some(mut filter) => {
            for group in versions.chunks(ROW_GROUP_ROWS) {
                for d in group {
                    filter.add(&version_key(d, key_count));
                }
                filter.finish_group();
            }
            Some(filter.upload(objects, &path).await?)
        }
        None => None,
    };
    let (size, checksum) = put_chunk(objects, &path, schema, batch, codec).await?;
    Ok(Some(ChunkRef {
        path,
        rows: versions.len() as u64,
        min_key: version_key(first, key_count),
        max_key: version_key(last, key_count),
        min_timestamp: versions.iter().map(|d| d.timestamp.0).min().unwrap_or(0),
        max_timestamp: versions.iter().map(|d| d.timestamp.0).max().unwrap_or(0),
        bytes: size,
        row_groups,
        checksum: Some(checksum),
        commit_timestamp: None,
        key_filter,
    }))
}

/// Encodes a versioned batch of a table of `schema` as a chunk file at `path`
/// ([`ChunkEncoder::for_table`]), compressed with `codec`; returns its size and checksum.
pub(crate) async fn put_chunk(
    objects: &dyn ObjectStore,
    path: &str,
    schema: &TableSchema,
    batch: RecordBatch,
    codec: CompressionCodec,
) -> Result<(u64, ChunkChecksum)> {
    let mut encoder = ChunkEncoder::for_table(schema, &[], 0, codec)?;
    encoder.write(&batch)?;
    let (bytes, checksum) = encoder.finish()?;
    let size = bytes.len() as u64;
    put_encoded(objects, path, bytes).await?;
    Ok((size, checksum))
}

/// Uploads an encoded chunk file to `path`.
pub(crate) async fn put_encoded(objects: &dyn ObjectStore, path: &str, bytes: Bytes) -> Result<()> {
    objects
        .put(&ObjectPath::from(path), PutPayload::from(bytes))
        .await?;
    Ok(())
}

/// The object path for a new chunk of table `table_id`; `kind` says what wrote it (`flush`,
/// `compact`, `write`, `tail`) and the creation time lets garbage collection spare chunks that
/// are still being committed; both the time and the id come from the store's `fresh`.
pub(crate) fn new_chunk_path(table_id: &str, kind: &str, fresh: &crate::clock::Fresh) -> String {
    format!(
        "tables/{table_id}/{kind}-{}-{}.parquet",
        fresh.now_ms(),
        fresh.id()
    )
}

/// The creation time (Unix ms) encoded in a chunk name by [`new_chunk_path`].
pub(crate) fn chunk_created_ms(name: &str) -> Option<u64> {
    name.split('-').nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(key_type: &str) -> TableSchema {
        TableSchema::parse(&format!(
            "[{{name=k;type={key_type};sort_order=ascending}};{{name=v;type=string}}]"
        ))
        .unwrap()
    }

    fn version(k: Value, ts: u64, kind: WriteKind, v: Option<&str>) -> RowDelta {
        RowDelta {
            timestamp: Timestamp(ts),
            kind,
            values: vec![Some(k), v.map(|v| Value::String(v.into()))],
            aggregate: false,
        }
    }

    fn overwrite(k: i64, ts: u64) -> RowDelta {
        version(Value::Int64(k), ts, WriteKind::Overwrite, Some("x"))
    }

    #[test]
    fn only_whole_row_overwrites_of_distinct_keys_are_clean() {
        let ints = schema("int64");
        let check = |versions: &[RowDelta]| {
            let refs: Vec<&RowDelta> = versions.iter().collect();
            clean_since(&ints, &refs)
        };
        assert_eq!(
            check(&[overwrite(1, 5), overwrite(2, 9), overwrite(3, 7)]),
            Some(9)
        );
        // A key with two versions.
        assert_eq!(check(&[overwrite(1, 5), overwrite(1, 9)]), None);
        // A delete, an update, an aggregate delta, an unwritten column.
        let delete = version(Value::Int64(2), 6, WriteKind::Delete, None);
        assert_eq!(check(&[overwrite(1, 5), delete]), None);
        let update = version(Value::Int64(2), 6, WriteKind::Update, Some("y"));
        assert_eq!(check(&[overwrite(1, 5), update]), None);
        let mut aggregate = overwrite(2, 6);
        aggregate.aggregate = true;
        assert_eq!(check(&[overwrite(1, 5), aggregate]), None);
        let partial = version(Value::Int64(2), 6, WriteKind::Overwrite, None);
        assert_eq!(check(&[overwrite(1, 5), partial]), None);
        // Double keys are left to the merge.
        let doubles = schema("double");
        let d = version(Value::Double(1.0), 5, WriteKind::Overwrite, Some("x"));
        assert_eq!(clean_since(&doubles, &[&d]), None);
    }

    #[test]
    fn nan_columns_are_the_double_columns_with_a_nan_in_some_version() {
        let schema = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=a;type=double};{name=b;type=double};{name=c;type=string}]",
        )
        .unwrap();
        let row = |k: i64, a: Option<f64>, b: Option<f64>| RowDelta {
            timestamp: Timestamp(1),
            kind: WriteKind::Overwrite,
            values: vec![
                Some(Value::Int64(k)),
                a.map(Value::Double),
                b.map(Value::Double),
                Some(Value::String("NaN".into())),
            ],
            aggregate: false,
        };
        let rows = [
            row(1, Some(1.0), Some(-0.0)),
            row(2, None, Some(f64::NAN)),
            row(3, Some(f64::INFINITY), None),
        ];
        let refs: Vec<&RowDelta> = rows.iter().collect();
        assert_eq!(nan_columns(&schema, &refs), vec![2]);
        assert_eq!(nan_columns(&schema, &refs[..1]), Vec::<usize>::new());
    }

    #[test]
    fn references_without_cleanliness_read_as_unknown() {
        let text = r#"{"rows":1,"min_key":"[1]","max_key":"[1]"}"#;
        let group: RowGroupRef = serde_json::from_str(text).unwrap();
        assert_eq!(group.clean, Cleanliness::Unknown);
        assert_eq!(group.nan_columns, None);
        let clean = RowGroupRef {
            clean: Cleanliness::Since(7),
            nan_columns: Some(vec![]),
            ..group
        };
        let back: RowGroupRef =
            serde_json::from_str(&serde_json::to_string(&clean).unwrap()).unwrap();
        assert_eq!(back, clean);
    }

    #[test]
    fn integer_key_columns_are_delta_encoded_and_read_back_exactly() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let schema = TableSchema::parse(
            "[{name=h;type=uint64;sort_order=ascending};{name=k;type=int64;sort_order=ascending};\
              {name=s;type=string;sort_order=ascending};{name=v;type=int64}]",
        )
        .unwrap();
        assert_eq!(delta_key_columns(&schema), vec!["h", "k"]);
        // Across row groups and pages; extreme values, nulls and jumps back where `h` steps.
        let mut versions = Vec::new();
        for (i, h) in [0u64, 1, u64::MAX].into_iter().enumerate() {
            for j in 0..(ROW_GROUP_ROWS as i64 + 7) {
                let k = match j {
                    0 => None,
                    1 => Some(Value::Int64(i64::MIN)),
                    j if j + 1 == ROW_GROUP_ROWS as i64 + 7 => Some(Value::Int64(i64::MAX)),
                    j => Some(Value::Int64(j * 1000 - i as i64)),
                };
                versions.push(RowDelta {
                    timestamp: Timestamp(10),
                    kind: WriteKind::Overwrite,
                    values: vec![
                        Some(Value::Uint64(h)),
                        k,
                        Some(Value::String(format!("s{j}").into_bytes())),
                        Some(Value::Int64(j % 3)),
                    ],
                    aggregate: false,
                });
            }
        }
        let refs: Vec<&RowDelta> = versions.iter().collect();
        let batch = encode_versions(&schema, &refs).unwrap();
        let mut encoder = ChunkEncoder::for_table(&schema, &[], 0, Default::default()).unwrap();
        encoder.write(&batch).unwrap();
        let (bytes, _) = encoder.finish().unwrap();
        let reader = SerializedFileReader::new(bytes.clone()).unwrap();
        let group = reader.metadata().row_group(0);
        let encodings = |c: usize| group.column(c).encodings().collect::<Vec<_>>();
        for c in [0, 1] {
            assert!(encodings(c).contains(&Encoding::DELTA_BINARY_PACKED), "{c}");
            assert!(!encodings(c).contains(&Encoding::RLE_DICTIONARY), "{c}");
        }
        for c in [2, 3] {
            assert!(
                !encodings(c).contains(&Encoding::DELTA_BINARY_PACKED),
                "{c}"
            );
        }
        // Distinct strings outgrow their dictionary and fall back to plain pages; three
        // distinct values keep theirs.
        let dictionary = crate::row_group_decode::all_pages_dictionary_encoded;
        assert!(!dictionary(group.column(2)));
        assert!(dictionary(group.column(3)));
        let back = decode_versioned_chunk("c", &schema, bytes).unwrap();
        assert_eq!(back, versions);
    }
}
