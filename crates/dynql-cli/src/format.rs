//! Output formats of `select-rows`: json, yson, schemaful_dsv (as `yt` writes them).

use std::io::Write;

use anyhow::{bail, Result};
use dynql::{LookupResult, SelectResult, Value, ValueType, Yson};

use crate::commands::InputFormat;

/// The supported output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[clap(rename_all = "snake_case")]
pub enum OutputFormat {
    /// JSON with strings as UTF-8 text (also spelled `<encode_utf8=%false>json`).
    #[value(alias = "<encode_utf8=%false>json")]
    Json,
    /// YT's `encode_utf8` JSON: every byte of a string is the code point of the same number
    /// (U+0000..U+00FF), so any byte string round-trips.
    #[value(name = "<encode_utf8=%true>json")]
    JsonBytes,
    Yson,
    SchemafulDsv,
}

/// YT's `encode_utf8` rule for output: every byte of every string (map keys aside) becomes
/// the character of the same code point, so the JSON text holds any bytes.
pub fn bytes_as_code_points(y: &Yson) -> Yson {
    match y {
        Yson::String(b) => Yson::String(b.iter().map(|&c| c as char).collect::<String>().into()),
        Yson::List(items) => Yson::List(items.iter().map(bytes_as_code_points).collect()),
        Yson::Map(entries) => Yson::Map(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), bytes_as_code_points(v)))
                .collect(),
        ),
        Yson::Attributed { attributes, value } => Yson::Attributed {
            attributes: attributes
                .iter()
                .map(|(k, v)| (k.clone(), bytes_as_code_points(v)))
                .collect(),
            value: Box::new(bytes_as_code_points(value)),
        },
        other => other.clone(),
    }
}

/// YT's `encode_utf8` rule for input: every character of a string must be a code point up
/// to 255 and becomes that byte.
pub fn code_points_as_bytes(y: Yson) -> std::result::Result<Yson, String> {
    Ok(match y {
        Yson::String(b) => {
            let text = String::from_utf8(b).map_err(|e| e.to_string())?;
            let mut bytes = Vec::with_capacity(text.len());
            for c in text.chars() {
                let Ok(byte) = u8::try_from(u32::from(c)) else {
                    return Err(format!(
                        "the character {c:?} (U+{:04X}) is above U+00FF: with <encode_utf8=%true>json every character stands for one byte; use json for UTF-8 text",
                        u32::from(c)
                    ));
                };
                bytes.push(byte);
            }
            Yson::String(bytes)
        }
        Yson::List(items) => Yson::List(
            items
                .into_iter()
                .map(code_points_as_bytes)
                .collect::<std::result::Result<_, _>>()?,
        ),
        Yson::Map(entries) => Yson::Map(
            entries
                .into_iter()
                .map(|(k, v)| code_points_as_bytes(v).map(|v| (k, v)))
                .collect::<std::result::Result<_, _>>()?,
        ),
        Yson::Attributed { attributes, value } => Yson::Attributed {
            attributes: attributes
                .into_iter()
                .map(|(k, v)| code_points_as_bytes(v).map(|v| (k, v)))
                .collect::<std::result::Result<_, _>>()?,
            value: Box::new(code_points_as_bytes(*value)?),
        },
        other => other,
    })
}

/// A row as a JSON object in YT's `encode_utf8` form.
fn json_bytes_row<'a>(
    columns: impl Iterator<Item = &'a String>,
    values: &[Value],
) -> serde_json::Value {
    serde_json::Value::Object(
        columns
            .zip(values)
            .map(|(n, v)| (n.clone(), bytes_as_code_points(&v.to_yson()).to_json()))
            .collect(),
    )
}

/// Writes a result in `format`.
pub fn write_result(
    out: &mut impl Write,
    result: &SelectResult,
    format: OutputFormat,
) -> Result<()> {
    write_rows(out, &result.columns, &result.rows, format)
}

/// Writes rows of a result with `columns` in `format`, one line each.
pub fn write_rows(
    out: &mut impl Write,
    columns: &[(String, ValueType)],
    rows: &[Vec<Value>],
    format: OutputFormat,
) -> Result<()> {
    match format {
        OutputFormat::Json => {
            for row in rows {
                let object: serde_json::Map<String, serde_json::Value> = columns
                    .iter()
                    .zip(row)
                    .map(|((name, _), v)| (name.clone(), v.to_json()))
                    .collect();
                serde_json::to_writer(&mut *out, &object)?;
                out.write_all(b"\n")?;
            }
        }
        OutputFormat::JsonBytes => {
            for row in rows {
                let json = json_bytes_row(columns.iter().map(|(n, _)| n), row);
                serde_json::to_writer(&mut *out, &json)?;
                out.write_all(b"\n")?;
            }
        }
        OutputFormat::Yson => {
            for row in rows {
                let map = Yson::Map(
                    columns
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
            for row in rows {
                let mut fields = Vec::with_capacity(row.len());
                for ((name, _), v) in columns.iter().zip(row) {
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
            InputFormat::JsonBytes => {
                let json = match row {
                    None => serde_json::Value::Null,
                    Some(values) => json_bytes_row(result.columns.iter().map(|(n, _)| n), values),
                };
                serde_json::to_writer(&mut *out, &json)?;
                out.write_all(b"\n")?;
            }
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
