//! Input rows: YSON/JSON maps checked against a table schema and converted to values in
//! schema order.

use crate::error::{Error, Result};
use crate::schema::{ColumnSchema, TableSchema};
use crate::types::{LogicalType, ValueType};
use crate::value::Value;
use crate::yson::Yson;

/// A row as written by a client: one slot per schema column, `None` where the column was not
/// given (YT tells "not written" from "written null").
#[derive(Debug, Clone, PartialEq)]
pub struct InputRow {
    /// Values in schema order.
    pub values: Vec<Option<Value>>,
    /// The `$tablet_index` the row names, for ordered tables.
    pub tablet_index: Option<i64>,
}

/// Converts a row map (YSON, or JSON read as YSON) to schema order.
///
/// # Errors
/// [`Error::InvalidRow`] for a non-map row, an unknown column, a computed column written or a
/// duplicate column; [`Error::InvalidValue`] for a value that does not fit its column.
pub fn row_from_yson(schema: &TableSchema, node: &Yson) -> Result<InputRow> {
    let entries = match node {
        Yson::Map(entries) => entries,
        Yson::Attributed { value, .. } => return row_from_yson(schema, value),
        _ => {
            return Err(Error::InvalidRow(
                "a row must be a map of column names to values".into(),
            ))
        }
    };
    let mut values = vec![None; schema.columns().len()];
    let mut tablet_index = None;
    for (name, v) in entries {
        let name = String::from_utf8_lossy(name);
        if name == "$tablet_index" && !schema.is_sorted() {
            tablet_index = Some(match v {
                Yson::Int64(i) => *i,
                Yson::Uint64(u) if *u <= i64::MAX as u64 => *u as i64,
                _ => return Err(Error::InvalidRow("$tablet_index must be an integer".into())),
            });
            continue;
        }
        let index = schema.column_index(&name).ok_or_else(|| {
            Error::InvalidRow(format!(
                "No such column {} in table schema",
                crate::error::shown(&name)
            ))
        })?;
        let column = &schema.columns()[index];
        if column.is_computed() {
            return Err(Error::InvalidRow(format!(
                "Column {name:?} is computed and cannot be written: its value is derived from {:?}",
                column.expression.as_deref().unwrap_or_default()
            )));
        }
        if values[index].is_some() {
            return Err(Error::InvalidRow(format!(
                "Column {name:?} is given twice in one row"
            )));
        }
        values[index] = Some(value_for_column(column, v)?);
    }
    Ok(InputRow {
        values,
        tablet_index,
    })
}

/// Converts one YSON value to the wire type of `column`, checking narrow-type ranges.
pub fn value_for_column(column: &ColumnSchema, node: &Yson) -> Result<Value> {
    let mismatch = || Error::InvalidValue {
        column: column.name.clone(),
        message: format!(
            "cannot store {} in a column of type {}",
            describe(node),
            column.logical_type
        ),
    };
    if matches!(node, Yson::Attributed { .. }) {
        // YT refuses them in every column, `any` included (its attributes would be dropped
        // or, in `any`, stored where YT never stores them).
        return Err(Error::InvalidValue {
            column: column.name.clone(),
            message: "Table values cannot have top-level attributes".into(),
        });
    }
    if matches!(node, Yson::Entity) {
        if column.required {
            return Err(Error::InvalidValue {
                column: column.name.clone(),
                message: "column is required and cannot be null".into(),
            });
        }
        return Ok(Value::Null);
    }
    let value = match column.wire_type() {
        ValueType::Int64 => match node {
            Yson::Int64(v) => Value::Int64(*v),
            Yson::Uint64(v) if *v <= i64::MAX as u64 => Value::Int64(*v as i64),
            _ => return Err(mismatch()),
        },
        ValueType::Uint64 => match node {
            Yson::Uint64(v) => Value::Uint64(*v),
            Yson::Int64(v) if *v >= 0 => Value::Uint64(*v as u64),
            // JSON has no uint64: large values travel as "123u" strings.
            Yson::String(s) if s.len() > 1 && s.ends_with(b"u") => {
                std::str::from_utf8(&s[..s.len() - 1])
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok())
                    .map(Value::Uint64)
                    .ok_or_else(mismatch)?
            }
            _ => return Err(mismatch()),
        },
        ValueType::Double => match node {
            Yson::Double(v) => Value::Double(*v),
            Yson::Int64(v) => Value::Double(*v as f64),
            Yson::Uint64(v) => Value::Double(*v as f64),
            _ => return Err(mismatch()),
        },
        ValueType::Boolean => match node {
            Yson::Boolean(v) => Value::Boolean(*v),
            _ => return Err(mismatch()),
        },
        ValueType::String => match node {
            Yson::String(v) => {
                if column.logical_type == LogicalType::Utf8 && std::str::from_utf8(v).is_err() {
                    return Err(Error::InvalidValue {
                        column: column.name.clone(),
                        message: "value is not valid UTF-8 but the column type is utf8".into(),
                    });
                }
                Value::String(v.clone())
            }
            _ => return Err(mismatch()),
        },
        ValueType::Any => Value::Any(crate::yson::to_text(node).into_bytes()),
        ValueType::Null => return Err(mismatch()),
    };
    check_logical_type(column, &value)?;
    Ok(value)
}

/// Checks that a value fits its column's logical type: an integer a narrow type (`int8`,
/// `uint16`, ...), a byte string `utf8`.
pub fn check_logical_type(column: &ColumnSchema, value: &Value) -> Result<()> {
    let out = |v: String| Error::InvalidValue {
        column: column.name.clone(),
        message: format!("value {v} is out of range for type {}", column.logical_type),
    };
    match value {
        Value::Int64(v) => {
            if let Some((lo, hi)) = column.logical_type.signed_range() {
                if *v < lo || *v > hi {
                    return Err(out(v.to_string()));
                }
            }
        }
        Value::Uint64(v) => {
            if let Some(hi) = column.logical_type.unsigned_max() {
                if *v > hi {
                    return Err(out(v.to_string()));
                }
            }
        }
        Value::String(s) => {
            if column.logical_type == LogicalType::Utf8 && std::str::from_utf8(s).is_err() {
                return Err(Error::InvalidValue {
                    column: column.name.clone(),
                    message: "value is not valid UTF-8 but the column type is utf8".into(),
                });
            }
        }
        _ => {}
    }
    Ok(())
}

fn describe(node: &Yson) -> String {
    match node {
        Yson::Entity => "null".into(),
        Yson::Boolean(b) => format!("boolean {b}"),
        Yson::Int64(v) => format!("int64 {v}"),
        Yson::Uint64(v) => format!("uint64 {v}"),
        Yson::Double(v) => format!("double {v}"),
        Yson::String(s) => format!("string {:?}", String::from_utf8_lossy(s)),
        Yson::List(_) => "a list".into(),
        Yson::Map(_) => "a map".into(),
        Yson::Attributed { .. } => "a value with attributes".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> TableSchema {
        TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k)\"};\
             {name=u;type=uint64};{name=s;type=string};{name=i8;type=int8};{name=r;type=string;required=%true}]",
        )
        .unwrap()
    }

    fn row(json: &str) -> Result<InputRow> {
        row_from_yson(
            &schema(),
            &Yson::from_json(&serde_json::from_str(json).unwrap()),
        )
    }

    #[test]
    fn converts_to_schema_order_and_keeps_unwritten_apart() {
        let r = row(r#"{"s": "x", "k": 1, "u": "18446744073709551615u", "i8": null}"#).unwrap();
        assert_eq!(
            r.values,
            vec![
                Some(Value::Int64(1)),
                None,
                Some(Value::Uint64(u64::MAX)),
                Some(Value::string("x")),
                Some(Value::Null),
                None
            ]
        );
    }

    #[test]
    fn values_with_top_level_attributes_are_refused_as_yt_does() {
        for text in [
            "{k=1;u=<a=b>3u}",
            "{k=1;s=<a=b>x}",
            "{k=1;r=<a=%true>\"y\"}",
        ] {
            let node = crate::yson::parse(text.as_bytes()).unwrap();
            let e = row_from_yson(&schema(), &node).unwrap_err().to_string();
            assert!(
                e.contains("Table values cannot have top-level attributes"),
                "{text}: {e}"
            );
        }
        let any =
            TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=a;type=any}]")
                .unwrap();
        let node = crate::yson::parse(b"{k=1;a=<x=1>{y=2}}").unwrap();
        assert!(row_from_yson(&any, &node).is_err());
        // Attributes inside a value of an `any` column are its content, kept.
        let node = crate::yson::parse(b"{k=1;a={y=<x=1>2}}").unwrap();
        assert!(row_from_yson(&any, &node).is_ok());
    }

    #[test]
    fn a_huge_unknown_column_name_is_not_echoed_whole() {
        let name = "n".repeat(1 << 20);
        let node = Yson::Map(vec![(name.into_bytes(), Yson::Int64(1))]);
        let e = row_from_yson(&schema(), &node).unwrap_err().to_string();
        assert!(e.len() < 300, "{} bytes", e.len());
        assert!(e.contains("(1048576 bytes)"), "{e}");
    }

    #[test]
    fn rejects_bad_rows_clearly() {
        assert!(row(r#"{"nope": 1}"#)
            .unwrap_err()
            .to_string()
            .contains("No such column \"nope\""));
        assert!(row(r#"{"h": 1}"#)
            .unwrap_err()
            .to_string()
            .contains("is computed"));
        assert!(row(r#"{"k": "a"}"#)
            .unwrap_err()
            .to_string()
            .contains("cannot store string"));
        assert!(row(r#"{"u": -1}"#)
            .unwrap_err()
            .to_string()
            .contains("type uint64"));
        assert!(row(r#"{"i8": 128}"#)
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(row(r#"{"r": null}"#)
            .unwrap_err()
            .to_string()
            .contains("required"));
        assert!(row(r#"[1]"#)
            .unwrap_err()
            .to_string()
            .contains("must be a map"));
    }

    #[test]
    fn utf8_columns_take_only_valid_utf8() {
        let schema = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=t;type=utf8};{name=s;type=string}]",
        )
        .unwrap();
        let row = |t: &[u8], s: &[u8]| {
            row_from_yson(
                &schema,
                &Yson::Map(vec![
                    (b"k".to_vec(), Yson::Int64(1)),
                    (b"t".to_vec(), Yson::String(t.to_vec())),
                    (b"s".to_vec(), Yson::String(s.to_vec())),
                ]),
            )
        };
        assert!(row("дом".as_bytes(), b"\xff").is_ok());
        let error = row(b"\xff\xfe", b"a").unwrap_err().to_string();
        assert!(error.contains("not valid UTF-8"), "{error}");
        assert!(error.contains("\"t\""), "{error}");
    }
}
