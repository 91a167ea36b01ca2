//! [`FromValue`]: one result value as a Rust value, with the YT type -> Rust type mapping.

use std::fmt;

use dynql_core::{Value, Yson};

/// A Rust type a result value can be read as ([`Row::get`](crate::Row::get)).
///
/// Results carry the YT types of a schema as their wire types; each maps to Rust types as
/// follows (the same mapping holds for [`SelectResult::deserialize`](crate::SelectResult::deserialize)):
///
/// | YT type | wire type | Rust types |
/// |---|---|---|
/// | `int8`, `int16`, `int32`, `int64`, `interval` | `int64` | `i64`; `i8`..`i32`, `u64`..`u8` when the value fits |
/// | `uint8`, `uint16`, `uint32`, `uint64`, `date`, `datetime`, `timestamp` | `uint64` | `u64`; `u8`..`u32`, `i64` when the value fits |
/// | `double`, `float` | `double` | `f64` |
/// | `boolean` | `boolean` | `bool` |
/// | `string`, `utf8` | `string` | `String` (valid UTF-8 only), `Vec<u8>` (any bytes) |
/// | `any`/`yson` | `any` | [`Yson`] (the parsed document) |
/// | null of any type | — | `Option<T>`: `None` |
///
/// Every value also reads as [`Value`] (as it is) and as [`Yson`]. Integers never change
/// value: a `uint64` above `i64::MAX` read as `i64` is an error, not a wrapped number; a
/// null read as anything but an `Option` or [`Value`] is an error that names `Option`.
/// `date` is days, `datetime` seconds and `timestamp` microseconds since the Unix epoch, as
/// in YT.
///
/// Implement it for your own types to read them with [`Row::get`](crate::Row::get).
///
/// # Example
/// ```
/// use dynql::{FromValue, Value};
/// assert_eq!(i64::from_value(&Value::Int64(-5)).unwrap(), -5);
/// assert_eq!(Option::<String>::from_value(&Value::Null).unwrap(), None);
/// let err = u8::from_value(&Value::Int64(300)).unwrap_err();
/// assert_eq!(err.to_string(), "cannot read int64 value 300 as u8: it does not fit");
/// ```
pub trait FromValue: Sized {
    /// Reads `value` as `Self`.
    ///
    /// # Errors
    /// The value is of a type (or out of the range) `Self` does not take.
    fn from_value(value: &Value) -> Result<Self, FromValueError>;
}

/// Why a value does not read as a Rust type; [`Row::get`](crate::Row::get) adds the column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromValueError {
    message: String,
}

impl FromValueError {
    /// An error with its own text (for implementations of [`FromValue`] outside dynql).
    pub fn new(message: impl Into<String>) -> FromValueError {
        FromValueError {
            message: message.into(),
        }
    }

    /// "cannot read string value "abc" as i64", with a hint where one helps.
    pub fn mismatch(value: &Value, rust_type: &str) -> FromValueError {
        let hint = match value {
            Value::Null => format!(" (read it as Option<{rust_type}>)"),
            Value::String(b) if rust_type == "String" && std::str::from_utf8(b).is_err() => {
                " (the bytes are not valid UTF-8: read it as Vec<u8>)".to_string()
            }
            Value::Any(_) => " (read an any column as dynql::Yson)".to_string(),
            _ => String::new(),
        };
        FromValueError::new(format!(
            "cannot read {} as {rust_type}{hint}",
            describe(value)
        ))
    }

    /// The text of the error.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for FromValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FromValueError {}

/// "int64 value 300", "string value \"abc\"", "null": the value and its type, short.
pub(crate) fn describe(value: &Value) -> String {
    const SHOWN: usize = 40;
    match value {
        Value::Null => "null".to_string(),
        Value::Int64(v) => format!("int64 value {v}"),
        Value::Uint64(v) => format!("uint64 value {v}"),
        Value::Double(v) => format!("double value {v}"),
        Value::Boolean(v) => format!("boolean value {v}"),
        Value::String(b) => {
            let text = String::from_utf8_lossy(&b[..b.len().min(SHOWN)]);
            let more = if b.len() > SHOWN { "…" } else { "" };
            format!("string value {text:?}{more}")
        }
        Value::Any(_) => "any value".to_string(),
    }
}

/// Integers of every width from either wire integer type, when the value fits.
macro_rules! integer_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(value: &Value) -> Result<$t, FromValueError> {
                let fitted = match value {
                    Value::Int64(v) => <$t>::try_from(*v).ok(),
                    Value::Uint64(v) => <$t>::try_from(*v).ok(),
                    _ => return Err(FromValueError::mismatch(value, stringify!($t))),
                };
                fitted.ok_or_else(|| {
                    FromValueError::new(format!(
                        "cannot read {} as {}: it does not fit",
                        describe(value),
                        stringify!($t)
                    ))
                })
            }
        }
    )*};
}

integer_from_value!(i8, i16, i32, i64, u8, u16, u32, u64);

impl FromValue for f64 {
    fn from_value(value: &Value) -> Result<f64, FromValueError> {
        match value {
            Value::Double(v) => Ok(*v),
            _ => Err(FromValueError::mismatch(value, "f64")),
        }
    }
}

impl FromValue for bool {
    fn from_value(value: &Value) -> Result<bool, FromValueError> {
        match value {
            Value::Boolean(v) => Ok(*v),
            _ => Err(FromValueError::mismatch(value, "bool")),
        }
    }
}

impl FromValue for String {
    fn from_value(value: &Value) -> Result<String, FromValueError> {
        match value {
            Value::String(b) => match std::str::from_utf8(b) {
                Ok(s) => Ok(s.to_string()),
                Err(_) => Err(FromValueError::mismatch(value, "String")),
            },
            _ => Err(FromValueError::mismatch(value, "String")),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(value: &Value) -> Result<Vec<u8>, FromValueError> {
        match value {
            Value::String(b) => Ok(b.clone()),
            _ => Err(FromValueError::mismatch(value, "Vec<u8>")),
        }
    }
}

impl FromValue for Value {
    fn from_value(value: &Value) -> Result<Value, FromValueError> {
        Ok(value.clone())
    }
}

impl FromValue for Yson {
    /// Any value as YSON: `any` values parsed into their document, null as `#` (entity).
    fn from_value(value: &Value) -> Result<Yson, FromValueError> {
        match value {
            // `Value::to_yson` keeps unparsable `any` bytes as a string; here that is an error,
            // so that a caller never takes bytes for a document.
            Value::Any(b) => dynql_core::yson::parse(b)
                .map_err(|e| FromValueError::new(format!("any value is not valid YSON: {e}"))),
            _ => Ok(value.to_yson()),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value) -> Result<Option<T>, FromValueError> {
        match value {
            Value::Null => Ok(None),
            _ => T::from_value(value).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_convert_between_wire_types_only_when_they_fit() {
        assert_eq!(i64::from_value(&Value::Uint64(7)).unwrap(), 7);
        assert_eq!(u64::from_value(&Value::Int64(7)).unwrap(), 7);
        assert_eq!(i32::from_value(&Value::Int64(-7)).unwrap(), -7);
        let e = i64::from_value(&Value::Uint64(u64::MAX)).unwrap_err();
        assert_eq!(
            e.message(),
            "cannot read uint64 value 18446744073709551615 as i64: it does not fit"
        );
        assert!(u64::from_value(&Value::Int64(-1)).is_err());
        assert!(i64::from_value(&Value::Double(1.0)).is_err());
    }

    #[test]
    fn a_null_names_option_and_bad_utf8_names_bytes() {
        let e = i64::from_value(&Value::Null).unwrap_err();
        assert_eq!(
            e.message(),
            "cannot read null as i64 (read it as Option<i64>)"
        );
        let bytes = Value::String(vec![0xff, 0x00]);
        let e = String::from_value(&bytes).unwrap_err();
        assert!(e.message().contains("read it as Vec<u8>"), "{e}");
        assert_eq!(Vec::<u8>::from_value(&bytes).unwrap(), vec![0xff, 0x00]);
    }

    #[test]
    fn any_values_read_as_their_yson_document() {
        let v = Value::Any(b"{a=1}".to_vec());
        let y = Yson::from_value(&v).unwrap();
        assert_eq!(y.get("a"), Some(&Yson::Int64(1)));
        assert!(String::from_value(&v)
            .unwrap_err()
            .message()
            .contains("dynql::Yson"));
        assert!(Yson::from_value(&Value::Any(b"{a=".to_vec())).is_err());
        assert_eq!(Yson::from_value(&Value::Null).unwrap(), Yson::Entity);
    }
}
