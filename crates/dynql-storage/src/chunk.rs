//! Chunks: immutable Parquet files holding a table's rows (key-sorted for sorted tables).

use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use crate::error::{Error, Result};

/// Encodes record batches as one Parquet file with page statistics.
pub fn encode_chunk(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Bytes> {
    let props = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(64 * 1024))
        .build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, schema.clone(), Some(props))?;
    for b in batches {
        writer.write(b)?;
    }
    writer.close()?;
    Ok(Bytes::from(buf))
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
