//! YT table schemas: parsing (YSON or JSON, as `yt create table --attributes` takes them) and
//! validation of the structural rules.
//!
//! Rules checked here: known types, unique non-empty names, key columns (those with
//! `sort_order`) first, `expression` only on key columns, `aggregate` only on non-key columns
//! and one of `sum|min|max|first|xdelta`, `lock` only on non-key columns. Whether a computed
//! column's expression is well-formed needs the query language and is checked by `dynql-ql`.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::types::{LogicalType, ValueType};
use crate::yson::Yson;

/// Aggregate functions a non-key column may declare (`aggregate=...`).
pub const COLUMN_AGGREGATES: &[&str] = &["sum", "min", "max", "first", "xdelta"];

/// The optional row-level TTL column of a sorted table (uint64 milliseconds, non-key).
pub const TTL_COLUMN: &str = "$ttl";

/// System columns an ordered table's schema may declare.
pub const ORDERED_SYSTEM_COLUMNS: &[&str] = &["$timestamp", "$cumulative_data_weight"];

/// The virtual key columns of an ordered table in queries ([`TableSchema::query_schema`]).
pub const VIRTUAL_TABLET_INDEX: &str = "$tablet_index";
/// See [`VIRTUAL_TABLET_INDEX`].
pub const VIRTUAL_ROW_INDEX: &str = "$row_index";

/// One column of a table schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnSchema {
    /// Column name (case-sensitive).
    pub name: String,
    /// The declared type; values carry its [`LogicalType::wire_type`].
    #[serde(with = "logical_type_serde")]
    pub logical_type: LogicalType,
    /// True for key columns (`sort_order = ascending`).
    #[serde(default)]
    pub sort_ascending: bool,
    /// The expression of a computed key column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// The aggregate function of an aggregating column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<String>,
    /// Whether null is forbidden.
    #[serde(default)]
    pub required: bool,
    /// The lock group of a non-key column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
}

mod logical_type_serde {
    use super::LogicalType;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &LogicalType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LogicalType, D::Error> {
        let name = String::deserialize(d)?;
        LogicalType::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown type {name:?}")))
    }
}

impl ColumnSchema {
    /// A plain (non-key, non-computed) column.
    pub fn new(name: impl Into<String>, logical_type: LogicalType) -> ColumnSchema {
        ColumnSchema {
            name: name.into(),
            logical_type,
            sort_ascending: false,
            expression: None,
            aggregate: None,
            required: false,
            lock: None,
        }
    }

    /// The wire type of the column's values.
    pub fn wire_type(&self) -> ValueType {
        self.logical_type.wire_type()
    }

    /// True for a key column.
    pub fn is_key(&self) -> bool {
        self.sort_ascending
    }

    /// True for a computed key column.
    pub fn is_computed(&self) -> bool {
        self.expression.is_some()
    }

    /// The column as a YT schema map.
    pub fn to_yson(&self) -> Yson {
        let mut m = vec![
            (
                b"name".to_vec(),
                Yson::String(self.name.clone().into_bytes()),
            ),
            (
                b"type".to_vec(),
                Yson::String(self.logical_type.name().into()),
            ),
        ];
        if self.sort_ascending {
            m.push((b"sort_order".to_vec(), Yson::String(b"ascending".to_vec())));
        }
        if let Some(e) = &self.expression {
            m.push((b"expression".to_vec(), Yson::String(e.clone().into_bytes())));
        }
        if let Some(a) = &self.aggregate {
            m.push((b"aggregate".to_vec(), Yson::String(a.clone().into_bytes())));
        }
        m.push((b"required".to_vec(), Yson::Boolean(self.required)));
        if let Some(l) = &self.lock {
            m.push((b"lock".to_vec(), Yson::String(l.clone().into_bytes())));
        }
        Yson::Map(m)
    }
}

/// A validated YT table schema: key columns first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSchema {
    columns: Vec<ColumnSchema>,
}

impl TableSchema {
    /// Builds and validates a schema.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] when a structural rule (module docs) is violated.
    pub fn new(columns: Vec<ColumnSchema>) -> Result<TableSchema> {
        let schema = TableSchema { columns };
        schema.validate()?;
        Ok(schema)
    }

    /// Parses a schema from YSON or JSON text (a list of column maps, possibly with attributes
    /// such as `<strict=%true; unique_keys=%true>[...]`).
    pub fn parse(text: &str) -> Result<TableSchema> {
        let trimmed = text.trim_start();
        let node = if trimmed.starts_with('[')
            && serde_json::from_str::<serde_json::Value>(text).is_ok()
        {
            // Valid JSON is also read as JSON so that JSON-only spellings (`true`) work.
            Yson::from_json(
                &serde_json::from_str(text)
                    .map_err(|e| Error::InvalidSchema(format!("malformed JSON: {e}")))?,
            )
        } else {
            crate::yson::parse(text.as_bytes())?
        };
        TableSchema::from_yson(&node)
    }

    /// Reads a schema from a YSON node (a list of column maps).
    pub fn from_yson(node: &Yson) -> Result<TableSchema> {
        let list = match node {
            Yson::List(items) => items,
            Yson::Attributed { attributes, value } => {
                let schema = TableSchema::from_yson(value)?;
                check_schema_attributes(attributes, &schema)?;
                return Ok(schema);
            }
            _ => {
                return Err(Error::InvalidSchema(
                    "schema must be a list of columns".into(),
                ))
            }
        };
        let mut columns = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            columns.push(parse_column(i, item)?);
        }
        TableSchema::new(columns)
    }

    /// The schema as YT prints it (`@schema`).
    pub fn to_yson(&self) -> Yson {
        Yson::Attributed {
            attributes: vec![
                (b"strict".to_vec(), Yson::Boolean(true)),
                (b"unique_keys".to_vec(), Yson::Boolean(self.is_sorted())),
            ],
            value: Box::new(Yson::List(
                self.columns.iter().map(|c| c.to_yson()).collect(),
            )),
        }
    }

    /// How queries see an ordered table: sorted by the virtual key columns `$tablet_index`
    /// and `$row_index` (both int64), then the data columns. A sorted table is returned as is.
    ///
    /// ```
    /// use dynql_core::TableSchema;
    /// let queue = TableSchema::parse("[{name=a;type=int64}]").unwrap();
    /// let names: Vec<_> = queue.query_schema().columns().iter().map(|c| c.name.clone()).collect();
    /// assert_eq!(names, ["$tablet_index", "$row_index", "a"]);
    /// ```
    pub fn query_schema(&self) -> TableSchema {
        if self.is_sorted() {
            return self.clone();
        }
        let key = |name: &str| ColumnSchema {
            sort_ascending: true,
            ..ColumnSchema::new(name, LogicalType::Int64)
        };
        let mut columns = vec![key(VIRTUAL_TABLET_INDEX), key(VIRTUAL_ROW_INDEX)];
        columns.extend(self.columns.iter().cloned());
        // Not validated: the virtual names are reserved exactly so that they cannot clash.
        TableSchema { columns }
    }

    /// All columns, key columns first.
    pub fn columns(&self) -> &[ColumnSchema] {
        &self.columns
    }

    /// Number of key columns.
    pub fn key_column_count(&self) -> usize {
        self.columns.iter().take_while(|c| c.is_key()).count()
    }

    /// The key columns.
    pub fn key_columns(&self) -> &[ColumnSchema] {
        &self.columns[..self.key_column_count()]
    }

    /// True for a sorted table (one with key columns).
    pub fn is_sorted(&self) -> bool {
        self.key_column_count() > 0
    }

    /// Position of a column by name.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&ColumnSchema> {
        self.columns.iter().find(|c| c.name == name)
    }

    fn validate(&self) -> Result<()> {
        use crate::error::shown;
        let bad = |m: String| Err(Error::InvalidSchema(m));
        if self.columns.is_empty() {
            return bad("schema has no columns".into());
        }
        let key_count = self.key_column_count();
        let sorted = key_count > 0;
        let mut seen = std::collections::HashSet::new();
        for (i, c) in self.columns.iter().enumerate() {
            if c.name.is_empty() {
                return bad(format!("column #{i} has an empty name"));
            }
            if c.name.len() > MAX_COLUMN_NAME_BYTES {
                return bad(format!(
                    "column #{i}: the name {} is longer than the {MAX_COLUMN_NAME_BYTES} bytes a column name may have",
                    shown(&c.name)
                ));
            }
            if !seen.insert(c.name.as_str()) {
                return bad(format!("duplicate column name {}", shown(&c.name)));
            }
            let system_ok = if sorted {
                c.name == TTL_COLUMN && !c.is_key() && c.wire_type() == ValueType::Uint64
            } else {
                ORDERED_SYSTEM_COLUMNS.contains(&c.name.as_str())
            };
            // YT types the system columns of ordered tables: anything else would be accepted
            // here and fail every later read.
            let system_type = match c.name.as_str() {
                "$timestamp" if !sorted => Some(LogicalType::Uint64),
                "$cumulative_data_weight" if !sorted => Some(LogicalType::Int64),
                _ => None,
            };
            if let Some(expected) = system_type {
                if c.logical_type != expected
                    || c.required
                    || c.expression.is_some()
                    || c.aggregate.is_some()
                {
                    return bad(format!(
                        "system column {:?} must be a nullable column of type {expected} (not computed, not aggregating); it has type {}{}",
                        c.name,
                        c.logical_type,
                        if c.required { ", required" } else { "" }
                    ));
                }
            }
            if c.name.starts_with('$') && !system_ok {
                return bad(format!(
                    "column name {:?} is reserved: names starting with \"$\" are system columns",
                    c.name
                ));
            }
            if c.is_key() && i >= key_count {
                return bad(format!(
                    "key column {:?} follows a non-key column: key columns must come first",
                    c.name
                ));
            }
            if c.expression.is_some() && !c.is_key() {
                return bad(format!(
                    "column {:?} has an expression but is not a key column: only key columns may be computed",
                    c.name
                ));
            }
            if let Some(a) = &c.aggregate {
                if c.is_key() {
                    return bad(format!("key column {:?} cannot be aggregating", c.name));
                }
                if !COLUMN_AGGREGATES.contains(&a.as_str()) {
                    return bad(format!(
                        "column {:?} has unknown aggregate function {a:?}; expected one of {}",
                        c.name,
                        COLUMN_AGGREGATES.join(", ")
                    ));
                }
                if a == "xdelta" {
                    // YT folds xdelta3 binary patches; keeping the newest value instead would
                    // be silently wrong, so the aggregate is refused until a codec exists.
                    return bad(format!(
                        "aggregate xdelta of column {:?} is not supported by dynql (it needs an xdelta3 patch codec); use sum, min, max or first",
                        c.name
                    ));
                }
                if matches!(a.as_str(), "sum")
                    && !matches!(
                        c.wire_type(),
                        ValueType::Int64 | ValueType::Uint64 | ValueType::Double
                    )
                {
                    return bad(format!(
                        "aggregate sum of column {:?} needs a numeric type, not {}",
                        c.name, c.logical_type
                    ));
                }
            }
            if c.lock.is_some() && c.is_key() {
                return bad(format!("key column {:?} cannot have a lock group", c.name));
            }
            if c.is_key() && c.wire_type() == ValueType::Any {
                return bad(format!("key column {:?} cannot have type any", c.name));
            }
        }
        Ok(())
    }
}

/// Checks a schema's attributes (`<strict=%true; unique_keys=%true>[...]`): dynql keeps
/// only strict schemas, with unique keys when sorted, so anything else is refused rather than
/// silently made so (YT refuses non-strict schemas and non-unique keys on dynamic tables).
fn check_schema_attributes(attributes: &[(Vec<u8>, Yson)], schema: &TableSchema) -> Result<()> {
    for (k, v) in attributes {
        let flag = || match v {
            Yson::Boolean(b) => Ok(*b),
            _ => Err(Error::InvalidSchema(format!(
                "schema attribute {:?} must be %true or %false",
                String::from_utf8_lossy(k)
            ))),
        };
        match k.as_slice() {
            b"strict" if !flag()? => {
                return Err(Error::InvalidSchema(
                    "a non-strict schema (strict=%false) is not supported: dynql's tables, like YT's dynamic tables, have strict schemas".into(),
                ))
            }
            b"unique_keys" if !flag()? && schema.is_sorted() => {
                return Err(Error::InvalidSchema(
                    "a sorted schema with unique_keys=%false is not supported: dynql's sorted tables, like YT's dynamic tables, have unique keys".into(),
                ))
            }
            b"strict" | b"unique_keys" => {}
            other => {
                return Err(Error::InvalidSchema(format!(
                    "unknown schema attribute {:?} (known: strict, unique_keys)",
                    String::from_utf8_lossy(other)
                )))
            }
        }
    }
    Ok(())
}

/// The longest column name YT accepts (`MaxColumnNameLength`), in bytes.
pub const MAX_COLUMN_NAME_BYTES: usize = 256;

fn parse_column(index: usize, node: &Yson) -> Result<ColumnSchema> {
    let bad = |m: String| Error::InvalidSchema(format!("column #{index}: {m}"));
    let entries = match node {
        Yson::Map(entries) => entries,
        _ => return Err(bad("expected a map".into())),
    };
    let mut name = None;
    let mut logical_type = None;
    let mut column = ColumnSchema::new("", LogicalType::Int64);
    let text = |key: &str, v: &Yson| -> Result<String> {
        match v {
            Yson::String(s) => String::from_utf8(s.clone())
                .map_err(|_| bad(format!("attribute {key:?} is not valid UTF-8"))),
            _ => Err(bad(format!("attribute {key:?} must be a string"))),
        }
    };
    for (k, v) in entries {
        let key = String::from_utf8_lossy(k);
        match key.as_ref() {
            "name" => name = Some(text("name", v)?),
            "type" => {
                let t = text("type", v)?;
                logical_type =
                    Some(LogicalType::parse(&t).ok_or_else(|| bad(format!("unknown type {t:?}")))?);
            }
            "sort_order" => match v {
                Yson::Entity => {}
                _ => match text("sort_order", v)?.as_str() {
                    "ascending" => column.sort_ascending = true,
                    "descending" => {
                        return Err(bad(
                            "sort order \"descending\" is not supported for dynamic tables".into(),
                        ))
                    }
                    other => return Err(bad(format!("unknown sort order {other:?}"))),
                },
            },
            "expression" => {
                if !matches!(v, Yson::Entity) {
                    column.expression = Some(text("expression", v)?)
                }
            }
            "aggregate" => {
                if !matches!(v, Yson::Entity) {
                    column.aggregate = Some(text("aggregate", v)?)
                }
            }
            "lock" => {
                if !matches!(v, Yson::Entity) {
                    column.lock = Some(text("lock", v)?)
                }
            }
            "required" => match v {
                Yson::Boolean(b) => column.required = *b,
                Yson::String(s) if s == b"true" || s == b"false" => column.required = s == b"true",
                _ => return Err(bad("attribute \"required\" must be a boolean".into())),
            },
            // Accepted for compatibility; they do not change dynamic-table behaviour here.
            "type_v3" | "group" | "max_inline_hunk_size" | "stable_name" => {}
            other => return Err(bad(format!("unknown column attribute {other:?}"))),
        }
    }
    column.name = name.ok_or_else(|| bad("attribute \"name\" is missing".into()))?;
    column.logical_type = logical_type.ok_or_else(|| {
        Error::InvalidSchema(format!(
            "column {:?}: attribute \"type\" is missing",
            column.name
        ))
    })?;
    Ok(column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_yson_and_json_alike() {
        let y = TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=utf8;required=%true}]",
        )
        .unwrap();
        let j = TableSchema::parse(
            r#"[{"name":"k","type":"int64","sort_order":"ascending"},{"name":"v","type":"utf8","required":true}]"#,
        )
        .unwrap();
        assert_eq!(y, j);
        assert_eq!(y.key_column_count(), 1);
        assert_eq!(y.columns()[1].wire_type(), ValueType::String);
        assert!(y.columns()[1].required);
    }

    #[test]
    fn schema_attributes_are_checked_not_dropped() {
        let cols = "[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]";
        assert!(TableSchema::parse(&format!("<strict=%true;unique_keys=%true>{cols}")).is_ok());
        for (attrs, says) in [
            ("<strict=%false>", "non-strict"),
            ("<unique_keys=%false>", "unique_keys=%false"),
            ("<strict=1>", "must be %true or %false"),
            ("<weak=%true>", "unknown schema attribute"),
        ] {
            let e = TableSchema::parse(&format!("{attrs}{cols}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{attrs}: {e}");
        }
        // An ordered schema may say its keys are not unique (it has none).
        assert!(TableSchema::parse("<unique_keys=%false>[{name=a;type=int64}]").is_ok());
    }

    #[test]
    fn system_columns_of_ordered_tables_are_typed_at_creation() {
        for bad in [
            "[{name=a;type=int64};{name=\"$timestamp\";type=int64}]",
            "[{name=a;type=int64};{name=\"$timestamp\";type=uint32}]",
            "[{name=a;type=int64};{name=\"$timestamp\";type=uint64;required=%true}]",
            "[{name=a;type=int64};{name=\"$cumulative_data_weight\";type=uint64}]",
            "[{name=a;type=int64};{name=\"$cumulative_data_weight\";type=string}]",
        ] {
            let e = TableSchema::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("must be a nullable column of type"),
                "{bad}: {e}"
            );
        }
        TableSchema::parse(
            "[{name=a;type=int64};{name=\"$timestamp\";type=uint64};{name=\"$cumulative_data_weight\";type=int64}]",
        )
        .unwrap();
    }

    #[test]
    fn column_names_are_at_most_256_bytes_and_errors_quote_a_prefix() {
        let ok = format!(
            "[{{name={};type=int64}}]",
            "a".repeat(MAX_COLUMN_NAME_BYTES)
        );
        assert!(TableSchema::parse(&ok).is_ok());
        let long = format!("[{{name={};type=int64}}]", "a".repeat(1 << 20));
        let e = TableSchema::parse(&long).unwrap_err().to_string();
        assert!(e.contains("longer than the 256 bytes"), "{e}");
        assert!(e.len() < 400, "{} bytes", e.len());
    }

    #[test]
    fn narrow_types_map_to_wire_types() {
        let s = TableSchema::parse(
            "[{name=a;type=int8};{name=b;type=uint32};{name=c;type=date};{name=d;type=interval}]",
        )
        .unwrap();
        let wire: Vec<_> = s.columns().iter().map(|c| c.wire_type()).collect();
        assert_eq!(
            wire,
            [
                ValueType::Int64,
                ValueType::Uint64,
                ValueType::Uint64,
                ValueType::Int64
            ]
        );
    }

    fn err(text: &str) -> String {
        TableSchema::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn structural_rules_give_clear_errors() {
        assert!(
            err("[{name=v;type=int64};{name=k;type=int64;sort_order=ascending}]")
                .contains("key columns must come first")
        );
        assert!(err("[{name=k;type=int64};{name=k;type=string}]").contains("duplicate column"));
        assert!(err("[{name=k;type=int65}]").contains("unknown type"));
        assert!(
            err("[{name=k;type=int64};{name=h;type=uint64;expression=\"farm_hash(k)\"}]")
                .contains("only key columns may be computed")
        );
        assert!(err(
            "[{name=k;type=int64;sort_order=ascending;aggregate=sum};{name=v;type=int64}]"
        )
        .contains("cannot be aggregating"));
        assert!(err(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=int64;aggregate=avg}]"
        )
        .contains("unknown aggregate"));
        assert!(err(
            "[{name=k;type=int64;sort_order=ascending};{name=v;type=string;aggregate=xdelta}]"
        )
        .contains("xdelta of column \"v\" is not supported"));
        assert!(err("[{name=k;type=int64}").contains("YSON"));
        assert!(TableSchema::parse(
            "[{name=k;type=int64;sort_order=ascending};{name=\"$ttl\";type=uint64}]"
        )
        .is_ok());
        assert!(
            err("[{name=k;type=int64;sort_order=ascending};{name=\"$ttl\";type=int64}]")
                .contains("reserved")
        );
        assert!(err("{name=k}").contains("list of columns"));
        assert!(err("[{type=int64}]").contains("\"name\" is missing"));
    }
}
