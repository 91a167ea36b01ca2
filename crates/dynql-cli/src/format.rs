//! Output formats of `select-rows`: json, yson, schemaful_dsv (as `yt` writes them), named
//! as `yt` names them, YSON attributes included (`<format=pretty>yson`,
//! `<columns=[a;b]>schemaful_dsv`, `<encode_utf8=%false>json`).

use std::io::Write;

use anyhow::{bail, Result};
use dynql::{LookupResult, SelectResult, Value, ValueType, Yson};

use crate::commands::InputFormat;

/// The supported output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// JSON with strings as UTF-8 text (also spelled `<encode_utf8=%false>json`).
    Json,
    /// YT's `encode_utf8` JSON: every byte of a string is the code point of the same number
    /// (U+0000..U+00FF), so any byte string round-trips.
    JsonBytes,
    /// JSON indented, a row over several lines (`<format=pretty>json`).
    JsonPretty,
    /// Text YSON, a row per line (`<format=text>yson`).
    Yson,
    /// YSON indented, a row over several lines (`<format=pretty>yson`).
    YsonPretty,
    SchemafulDsv,
    /// Comma-separated values with a header line (RFC 4180 quoting; null is an empty field):
    /// not a YT format, for spreadsheets and the tools that read them.
    Csv,
    /// Tab-separated values with a header line (escapes as schemaful_dsv's; null is empty).
    Tsv,
}

/// A format as `select-rows --format` takes it: the format and, for schemaful_dsv, the
/// columns to print in their order (`<columns=[a;b]>schemaful_dsv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatSpec {
    pub format: OutputFormat,
    pub columns: Option<Vec<String>>,
}

/// The formats' names, for messages.
pub const FORMAT_NAMES: &str =
    "json, <encode_utf8=%true>json, <format=pretty>json, yson, <format=pretty>yson, schemaful_dsv, <columns=[…]>schemaful_dsv, csv, tsv";

impl OutputFormat {
    /// The format's name as `--format` and `\format` take it.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Json => "json",
            OutputFormat::JsonBytes => "<encode_utf8=%true>json",
            OutputFormat::JsonPretty => "<format=pretty>json",
            OutputFormat::Yson => "yson",
            OutputFormat::YsonPretty => "<format=pretty>yson",
            OutputFormat::SchemafulDsv => "schemaful_dsv",
            OutputFormat::Csv => "csv",
            OutputFormat::Tsv => "tsv",
        }
    }
}

/// Parses a format as `yt` spells it: a name with optional YSON attributes in front.
/// Attributes dynql would not honour are refused, never ignored.
pub fn parse_format(text: &str) -> std::result::Result<FormatSpec, String> {
    let unknown = || format!("unknown format {text:?}: use one of {FORMAT_NAMES}");
    let node = dynql::yson::parse(text.trim().as_bytes()).map_err(|_| unknown())?;
    let (attributes, name) = match &node {
        Yson::Attributed { attributes, value } => (attributes.as_slice(), value.as_str()),
        other => (&[][..], other.as_str()),
    };
    let name = name.ok_or_else(unknown)?;
    let mut spec = FormatSpec {
        format: match name {
            "json" => OutputFormat::Json,
            "yson" => OutputFormat::Yson,
            "schemaful_dsv" => OutputFormat::SchemafulDsv,
            "csv" => OutputFormat::Csv,
            "tsv" => OutputFormat::Tsv,
            _ => return Err(unknown()),
        },
        columns: None,
    };
    for (key, value) in attributes {
        let key = String::from_utf8_lossy(key);
        match (spec.format, key.as_ref(), value) {
            (OutputFormat::Json, "encode_utf8", Yson::Boolean(true)) => {
                spec.format = OutputFormat::JsonBytes
            }
            (OutputFormat::Json, "encode_utf8", Yson::Boolean(false)) => {}
            // YT's JSON takes `format=text|pretty` too (as `get` does).
            (OutputFormat::Json | OutputFormat::JsonPretty, "format", v) => match v.as_str() {
                Some("text") => spec.format = OutputFormat::Json,
                Some("pretty") => spec.format = OutputFormat::JsonPretty,
                _ => return Err("the json format attribute takes text or pretty".into()),
            },
            (OutputFormat::Yson, "format", v) => match v.as_str() {
                Some("text") => {}
                Some("pretty") => spec.format = OutputFormat::YsonPretty,
                Some("binary") => {
                    return Err("binary YSON is not supported by dynql: use <format=text>yson or <format=pretty>yson".into())
                }
                _ => return Err("the yson format attribute takes text, pretty or binary".into()),
            },
            (OutputFormat::SchemafulDsv, "columns", Yson::List(items)) => {
                let columns = items
                    .iter()
                    .map(|c| c.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("schemaful_dsv's columns must be a list of column names")?;
                spec.columns = Some(columns);
            }
            _ => {
                return Err(format!(
                    "the format attribute {key} of {name} is not supported by dynql (it takes encode_utf8 and format for json, format for yson, columns for schemaful_dsv)"
                ))
            }
        }
    }
    Ok(spec)
}

/// [`parse_format`] for the places that take no column list (the shell, `sql`).
pub fn parse_output_format(text: &str) -> std::result::Result<OutputFormat, String> {
    let spec = parse_format(text)?;
    if spec.columns.is_some() {
        return Err("a column list (<columns=[…]>schemaful_dsv) is for select-rows only".into());
    }
    Ok(spec.format)
}

/// A `--format` value parser: `parse` checks the text, `names` are what help and the shell's
/// completion offer (clap's possible values; any other spelling `parse` takes is accepted too).
#[derive(Clone)]
pub struct FormatParser<T> {
    parse: fn(&str) -> std::result::Result<T, String>,
    names: &'static [&'static str],
}

/// The row formats commands read, as completion offers them.
pub const INPUT_FORMAT_NAMES: &[&str] = &[
    "yson",
    "<format=pretty>yson",
    "json",
    "<encode_utf8=%true>json",
];

/// The `--format` parser of the commands that read rows.
pub fn input_format_parser() -> FormatParser<InputFormat> {
    FormatParser {
        parse: parse_input_format,
        names: INPUT_FORMAT_NAMES,
    }
}

impl<T> FormatParser<T> {
    /// A parser checking with `parse` and offering `names`.
    pub fn new(
        parse: fn(&str) -> std::result::Result<T, String>,
        names: &'static [&'static str],
    ) -> FormatParser<T> {
        FormatParser { parse, names }
    }
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for FormatParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<T, clap::Error> {
        // The function parser words the error as clap does for every option.
        clap::builder::TypedValueParser::parse_ref(&self.parse, cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.names
                .iter()
                .map(|n| clap::builder::PossibleValue::new(*n)),
        ))
    }
}

/// [`parse_format`] for rows read from stdin: yson or json.
pub fn parse_input_format(text: &str) -> std::result::Result<InputFormat, String> {
    match parse_format(text)?.format {
        OutputFormat::Json | OutputFormat::JsonPretty => Ok(InputFormat::Json),
        OutputFormat::JsonBytes => Ok(InputFormat::JsonBytes),
        OutputFormat::Yson => Ok(InputFormat::Yson),
        OutputFormat::YsonPretty => Ok(InputFormat::YsonPretty),
        other => Err(format!(
            "rows are read as yson or json (with their attributes), not {}",
            other.name()
        )),
    }
}

/// The row format of a command that reads rows: `--format`, else `YT_FORMAT` (as `yt` reads
/// it), else yson.
pub fn input_format(given: Option<InputFormat>) -> Result<InputFormat> {
    if let Some(format) = given {
        return Ok(format);
    }
    match std::env::var("YT_FORMAT") {
        Ok(text) if !text.trim().is_empty() => {
            parse_input_format(&text).map_err(|e| anyhow::anyhow!("YT_FORMAT: {e}"))
        }
        _ => Ok(InputFormat::Yson),
    }
}

/// The format of a `select-rows`: `--format`, else `YT_FORMAT` (as `yt` reads it), else yson.
pub fn select_format(given: Option<FormatSpec>) -> Result<FormatSpec> {
    if let Some(spec) = given {
        return Ok(spec);
    }
    match std::env::var("YT_FORMAT") {
        Ok(text) if !text.trim().is_empty() => {
            parse_format(&text).map_err(|e| anyhow::anyhow!("YT_FORMAT: {e}"))
        }
        _ => Ok(FormatSpec {
            format: OutputFormat::Yson,
            columns: None,
        }),
    }
}

/// The columns a format prints of a result: `spec`'s column list in its order, or all.
pub struct Projection {
    /// The printed columns (name, type).
    pub columns: Vec<(String, ValueType)>,
    /// Where each printed column is in the result's rows; `None`: all, as they are.
    positions: Option<Vec<usize>>,
}

impl Projection {
    /// # Errors
    /// A listed column the result does not have.
    pub fn new(spec: &FormatSpec, columns: &[(String, ValueType)]) -> Result<Projection> {
        let Some(wanted) = &spec.columns else {
            return Ok(Projection {
                columns: columns.to_vec(),
                positions: None,
            });
        };
        let mut positions = Vec::with_capacity(wanted.len());
        for name in wanted {
            match columns.iter().position(|(n, _)| n == name) {
                Some(p) => positions.push(p),
                None => bail!("schemaful_dsv column {name:?} is not in the result"),
            }
        }
        Ok(Projection {
            columns: positions.iter().map(|&p| columns[p].clone()).collect(),
            positions: Some(positions),
        })
    }

    /// `rows` cut to the printed columns.
    pub fn rows(&self, rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
        match &self.positions {
            None => rows,
            Some(positions) => rows
                .into_iter()
                .map(|row| positions.iter().map(|&p| row[p].clone()).collect())
                .collect(),
        }
    }
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
    write_header(out, &result.columns, format)?;
    write_rows(out, &result.columns, &result.rows, format)
}

/// The header line of the formats that have one (csv, tsv): the column names. Written once,
/// before the rows (which may come in several parts).
pub fn write_header(
    out: &mut impl Write,
    columns: &[(String, ValueType)],
    format: OutputFormat,
) -> Result<()> {
    let names = columns
        .iter()
        .map(|(n, _)| Value::String(n.clone().into_bytes()));
    match format {
        OutputFormat::Csv => {
            let fields: Vec<Vec<u8>> = names.map(|v| csv_field(&v)).collect();
            out.write_all(&fields.join(&b","[..]))?;
            out.write_all(b"\n")?;
        }
        OutputFormat::Tsv => {
            let fields: Vec<Vec<u8>> = names.map(|v| dsv_value(&v)).collect();
            out.write_all(&fields.join(&b"\t"[..]))?;
            out.write_all(b"\n")?;
        }
        _ => {}
    }
    Ok(())
}

/// A value as a CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(v: &Value) -> Vec<u8> {
    let raw: Vec<u8> = match v {
        Value::Null => return Vec::new(),
        Value::String(s) => s.clone(),
        Value::Any(_) => v.to_string().into_bytes(),
        other => dsv_value(other),
    };
    if !raw.iter().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        return raw;
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    for b in raw {
        if b == b'"' {
            quoted.push(b'"');
        }
        quoted.push(b);
    }
    quoted.push(b'"');
    quoted
}

/// Writes rows of a result with `columns` in `format`, one line each.
pub fn write_rows(
    out: &mut impl Write,
    columns: &[(String, ValueType)],
    rows: &[Vec<Value>],
    format: OutputFormat,
) -> Result<()> {
    match format {
        OutputFormat::Json | OutputFormat::JsonPretty => {
            for row in rows {
                let object: serde_json::Map<String, serde_json::Value> = columns
                    .iter()
                    .zip(row)
                    .map(|((name, _), v)| (name.clone(), v.to_json()))
                    .collect();
                if format == OutputFormat::JsonPretty {
                    serde_json::to_writer_pretty(&mut *out, &object)?;
                } else {
                    serde_json::to_writer(&mut *out, &object)?;
                }
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
        OutputFormat::Yson | OutputFormat::YsonPretty => {
            for row in rows {
                let map = Yson::Map(
                    columns
                        .iter()
                        .zip(row)
                        .map(|((n, _), v)| (n.as_bytes().to_vec(), v.to_yson()))
                        .collect(),
                );
                let text = if format == OutputFormat::Yson {
                    dynql::yson::to_text(&map)
                } else {
                    crate::output::pretty_yson(&map)
                };
                out.write_all(text.as_bytes())?;
                out.write_all(b";\n")?;
            }
        }
        OutputFormat::Csv => {
            for row in rows {
                let fields: Vec<Vec<u8>> = row.iter().map(csv_field).collect();
                out.write_all(&fields.join(&b","[..]))?;
                out.write_all(b"\n")?;
            }
        }
        OutputFormat::Tsv => {
            for row in rows {
                let fields: Vec<Vec<u8>> = row.iter().map(dsv_value).collect();
                out.write_all(&fields.join(&b"\t"[..]))?;
                out.write_all(b"\n")?;
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
            InputFormat::YsonPretty => {
                out.write_all(crate::output::pretty_yson(&node).as_bytes())?;
                out.write_all(b";\n")?;
            }
        }
    }
    Ok(())
}
