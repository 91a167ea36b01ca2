//! Output formats of `select-rows`: json, yson, schemaful_dsv (as `yt` writes them).

use std::io::Write;

use anyhow::{bail, Result};
use dynql::{LookupResult, SelectResult, Value, Yson};

use crate::commands::InputFormat;

/// The supported output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[clap(rename_all = "snake_case")]
pub enum OutputFormat {
    Json,
    Yson,
    SchemafulDsv,
}

/// Writes a result in `format`.
pub fn write_result(
    out: &mut impl Write,
    result: &SelectResult,
    format: OutputFormat,
) -> Result<()> {
    match format {
        OutputFormat::Json => {
            for row in result.to_json_rows() {
                serde_json::to_writer(&mut *out, &row)?;
                out.write_all(b"\n")?;
            }
        }
        OutputFormat::Yson => {
            for row in &result.rows {
                let map = Yson::Map(
                    result
                        .columns
                        .iter()
                        .zip(row)
                        .map(|((n, _), v)| (n.as_bytes().to_vec(), v.to_yson()))
                        .collect(),
                );
                out.write_all(dynql::yson::to_text(&map).as_bytes())?;
                out.write_all(b";\n")?;
            }
        }
        OutputFormat::SchemafulDsv => {
            for row in &result.rows {
                let mut fields = Vec::with_capacity(row.len());
                for ((name, _), v) in result.columns.iter().zip(row) {
                    if v.is_null() {
                        bail!("Column {name:?} is in schema but missing (schemaful_dsv cannot print null; use --format json or yson)");
                    }
                    fields.push(dsv_value(v));
                }
                out.write_all(&fields.join(&b"\t"[..]))?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

fn dsv_value(v: &Value) -> Vec<u8> {
    let raw: Vec<u8> = match v {
        Value::Null => vec![],
        Value::Int64(x) => x.to_string().into_bytes(),
        Value::Uint64(x) => x.to_string().into_bytes(),
        Value::Double(x) => x.to_string().into_bytes(),
        Value::Boolean(x) => x.to_string().into_bytes(),
        Value::String(s) | Value::Any(s) => s.clone(),
    };
    let mut out = Vec::with_capacity(raw.len());
    for b in raw {
        match b {
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0 => out.extend_from_slice(b"\\0"),
            other => out.push(other),
        }
    }
    out
}

/// Writes a lookup result: rows in request order, `null`/`#` for kept missing rows.
pub fn write_lookup(
    out: &mut impl Write,
    result: &LookupResult,
    format: InputFormat,
) -> Result<()> {
    for row in &result.rows {
        let node = match row {
            None => Yson::Entity,
            Some(values) => Yson::Map(
                result
                    .columns
                    .iter()
                    .zip(values)
                    .map(|((n, _), v)| (n.as_bytes().to_vec(), v.to_yson()))
                    .collect(),
            ),
        };
        match format {
            InputFormat::Json => {
                let json = match row {
                    None => serde_json::Value::Null,
                    Some(values) => serde_json::Value::Object(
                        result
                            .columns
                            .iter()
                            .zip(values)
                            .map(|((n, _), v)| (n.clone(), v.to_json()))
                            .collect(),
                    ),
                };
                serde_json::to_writer(&mut *out, &json)?;
                out.write_all(b"\n")?;
            }
            InputFormat::Yson => {
                out.write_all(dynql::yson::to_text(&node).as_bytes())?;
                out.write_all(b";\n")?;
            }
        }
    }
    Ok(())
}
