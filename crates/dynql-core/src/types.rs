//! YT value types: the wire types every value has, and the logical (narrow) column types
//! that map onto them.

use std::fmt;

/// The wire type of a value, as YT QL sees it (YT's `EValueType`).
///
/// Columns of narrower logical types (`int8`, `utf8`, `date`, ...) carry values of their wire
/// type; see [`LogicalType::wire_type`]. The declaration order is YT's order of types in value
/// comparison (null first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueType {
    /// The type of the bare `null` literal.
    Null,
    Int64,
    Uint64,
    Double,
    Boolean,
    String,
    /// A YSON document.
    Any,
}

impl ValueType {
    /// YT's name of the type (`int64`, `string`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Null => "null",
            ValueType::Int64 => "int64",
            ValueType::Uint64 => "uint64",
            ValueType::Double => "double",
            ValueType::Boolean => "boolean",
            ValueType::String => "string",
            ValueType::Any => "any",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A column type as written in a YT schema (`type` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicalType {
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Double,
    Float,
    Boolean,
    String,
    Utf8,
    Any,
    Date,
    Datetime,
    Timestamp,
    Interval,
}

impl LogicalType {
    /// Parses a schema type name (`int32`, `utf8`, `yson`, `bool`, ...).
    pub fn parse(name: &str) -> Option<LogicalType> {
        Some(match name {
            "int8" => LogicalType::Int8,
            "int16" => LogicalType::Int16,
            "int32" => LogicalType::Int32,
            "int64" => LogicalType::Int64,
            "uint8" => LogicalType::Uint8,
            "uint16" => LogicalType::Uint16,
            "uint32" => LogicalType::Uint32,
            "uint64" => LogicalType::Uint64,
            "double" => LogicalType::Double,
            "float" => LogicalType::Float,
            "boolean" | "bool" => LogicalType::Boolean,
            "string" => LogicalType::String,
            "utf8" => LogicalType::Utf8,
            "any" | "yson" => LogicalType::Any,
            "date" => LogicalType::Date,
            "datetime" => LogicalType::Datetime,
            "timestamp" => LogicalType::Timestamp,
            "interval" => LogicalType::Interval,
            _ => return None,
        })
    }

    /// The canonical schema name of the type.
    pub fn name(self) -> &'static str {
        match self {
            LogicalType::Int8 => "int8",
            LogicalType::Int16 => "int16",
            LogicalType::Int32 => "int32",
            LogicalType::Int64 => "int64",
            LogicalType::Uint8 => "uint8",
            LogicalType::Uint16 => "uint16",
            LogicalType::Uint32 => "uint32",
            LogicalType::Uint64 => "uint64",
            LogicalType::Double => "double",
            LogicalType::Float => "float",
            LogicalType::Boolean => "boolean",
            LogicalType::String => "string",
            LogicalType::Utf8 => "utf8",
            LogicalType::Any => "any",
            LogicalType::Date => "date",
            LogicalType::Datetime => "datetime",
            LogicalType::Timestamp => "timestamp",
            LogicalType::Interval => "interval",
        }
    }

    /// The wire type values of this column carry.
    pub fn wire_type(self) -> ValueType {
        match self {
            LogicalType::Int8
            | LogicalType::Int16
            | LogicalType::Int32
            | LogicalType::Int64
            | LogicalType::Interval => ValueType::Int64,
            LogicalType::Uint8
            | LogicalType::Uint16
            | LogicalType::Uint32
            | LogicalType::Uint64
            | LogicalType::Date
            | LogicalType::Datetime
            | LogicalType::Timestamp => ValueType::Uint64,
            LogicalType::Double | LogicalType::Float => ValueType::Double,
            LogicalType::Boolean => ValueType::Boolean,
            LogicalType::String | LogicalType::Utf8 => ValueType::String,
            LogicalType::Any => ValueType::Any,
        }
    }

    /// The inclusive range a signed narrow type admits, if narrower than int64.
    pub fn signed_range(self) -> Option<(i64, i64)> {
        match self {
            LogicalType::Int8 => Some((i8::MIN as i64, i8::MAX as i64)),
            LogicalType::Int16 => Some((i16::MIN as i64, i16::MAX as i64)),
            LogicalType::Int32 => Some((i32::MIN as i64, i32::MAX as i64)),
            _ => None,
        }
    }

    /// The largest value an unsigned narrow type admits, if narrower than uint64.
    pub fn unsigned_max(self) -> Option<u64> {
        match self {
            LogicalType::Uint8 => Some(u8::MAX as u64),
            LogicalType::Uint16 => Some(u16::MAX as u64),
            LogicalType::Uint32 => Some(u32::MAX as u64),
            _ => None,
        }
    }
}

impl fmt::Display for LogicalType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
