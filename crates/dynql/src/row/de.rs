//! serde over result rows: a row is a map of column name to value (or a sequence of values,
//! for tuples); a value deserializes as its wire type says, an `any` value as its YSON
//! document.

use std::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

use dynql_core::{Value, ValueType, Yson};

use crate::error::{Error, Result};

/// Reads one row (`None`: a key a lookup found no row for) as `T`; `row` numbers errors.
pub(crate) fn row_as<T: DeserializeOwned>(
    columns: &[(String, ValueType)],
    values: Option<&[Value]>,
    row: Option<usize>,
) -> Result<T> {
    T::deserialize(RowDeserializer { columns, values }).map_err(|e| Error::RowValue {
        row,
        column: e.column,
        message: e.message,
    })
}

/// A serde error, with the column it is about once known.
#[derive(Debug)]
pub(crate) struct DeError {
    column: Option<String>,
    message: String,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<M: fmt::Display>(message: M) -> DeError {
        DeError {
            column: None,
            message: message.to_string(),
        }
    }
}

type DeResult<T> = std::result::Result<T, DeError>;

/// Calls `$writer!` with the given methods and the scalar `deserialize_*` methods: both
/// deserializers write the same list, so it is kept once.
macro_rules! scalar_methods {
    ($writer:ident $(, $method:ident)*) => {
        $writer!(
            $($method,)*
            deserialize_bool,
            deserialize_i8,
            deserialize_i16,
            deserialize_i32,
            deserialize_i64,
            deserialize_i128,
            deserialize_u8,
            deserialize_u16,
            deserialize_u32,
            deserialize_u64,
            deserialize_u128,
            deserialize_f32,
            deserialize_f64,
            deserialize_char,
            deserialize_str,
            deserialize_string
        );
    };
}

/// A scalar asked of a null: an error naming `Option` (rather than serde's "unit value").
/// Other requests of a null (ignored columns, `()`) see a unit.
macro_rules! null_refused {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
            match self.0 {
                Value::Null => Err(de::Error::invalid_type(
                    de::Unexpected::Other("null (an Option field takes it)"),
                    &visitor,
                )),
                _ => self.deserialize_any(visitor),
            }
        }
    )*};
}

/// A whole row.
struct RowDeserializer<'a> {
    columns: &'a [(String, ValueType)],
    values: Option<&'a [Value]>,
}

impl<'a> RowDeserializer<'a> {
    fn values(&self) -> DeResult<&'a [Value]> {
        self.values.ok_or_else(|| {
            de::Error::custom(
                "no row has this key (keep_missing_rows): read the rows into Option<T>",
            )
        })
    }
}

impl<'de, 'a> de::Deserializer<'de> for RowDeserializer<'a> {
    type Error = DeError;

    /// Structs, maps and anything self-describing: column name to value.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        let values = self.values()?;
        let entries = self.columns.iter().zip(values).map(|((name, _), value)| {
            (
                name.as_str(),
                ColumnValue {
                    column: name,
                    value: ValueDeserializer(value),
                },
            )
        });
        let mut map = MapDeserializer::new(entries);
        let out = visitor.visit_map(&mut map)?;
        map.end()?;
        Ok(out)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.values {
            None => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    /// Tuples and sequences: the values in column order.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        let values = self.values()?;
        let items = self
            .columns
            .iter()
            .zip(values)
            .map(|((name, _), value)| ColumnValue {
                column: name,
                value: ValueDeserializer(value),
            });
        let mut seq = SeqDeserializer::new(items);
        let out = visitor.visit_seq(&mut seq)?;
        seq.end()?;
        Ok(out)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> DeResult<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> DeResult<V::Value> {
        self.deserialize_seq(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct map struct enum identifier ignored_any
    }
}

/// One column's value, which names its column in the errors it gives.
struct ColumnValue<'a> {
    column: &'a str,
    value: ValueDeserializer<'a>,
}

impl ColumnValue<'_> {
    fn name<T>(&self, r: DeResult<T>) -> DeResult<T> {
        r.map_err(|mut e| {
            e.column.get_or_insert_with(|| self.column.to_string());
            e
        })
    }
}

impl<'de> IntoDeserializer<'de, DeError> for ColumnValue<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// Every call goes to the value's own deserializer; only the error gains the column.
macro_rules! named {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
            let r = self.value.$method(visitor);
            self.name(r)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ColumnValue<'_> {
    type Error = DeError;

    scalar_methods!(
        named,
        deserialize_any,
        deserialize_option,
        deserialize_seq,
        deserialize_bytes,
        deserialize_byte_buf
    );

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> DeResult<V::Value> {
        let r = self.value.deserialize_enum(name, variants, visitor);
        self.name(r)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> DeResult<V::Value> {
        let r = visitor.visit_newtype_struct(self.value);
        self.name(r)
    }

    forward_to_deserialize_any! {
        unit unit_struct map struct tuple tuple_struct identifier ignored_any
    }
}

/// One value, by its wire type.
#[derive(Clone, Copy)]
struct ValueDeserializer<'a>(&'a Value);

impl<'a> ValueDeserializer<'a> {
    /// An `any` value's document (`None` for other values).
    fn document(&self) -> DeResult<Option<Yson>> {
        match self.0 {
            Value::Any(bytes) => dynql_core::yson::parse(bytes)
                .map(Some)
                .map_err(|e| de::Error::custom(format!("any value is not valid YSON: {e}"))),
            _ => Ok(None),
        }
    }
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Int64(v) => visitor.visit_i64(*v),
            Value::Uint64(v) => visitor.visit_u64(*v),
            Value::Double(v) => visitor.visit_f64(*v),
            Value::Boolean(v) => visitor.visit_bool(*v),
            // Text as text; other bytes as bytes (a `String` field then says so).
            Value::String(b) => match std::str::from_utf8(b) {
                Ok(s) => visitor.visit_str(s),
                Err(_) => visitor.visit_bytes(b),
            },
            Value::Any(_) => match self.document()? {
                Some(y) => YsonDeserializer(&y).deserialize_any(visitor),
                None => visitor.visit_unit(),
            },
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            Value::Any(_) => match self.document()? {
                Some(Yson::Entity) | None => visitor.visit_none(),
                Some(y) => visitor.visit_some(YsonDeserializer(&y)),
            },
            _ => visitor.visit_some(self),
        }
    }

    /// `Vec<u8>` asks for a sequence: a string's bytes are one.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.0 {
            Value::String(b) => {
                let mut seq = SeqDeserializer::new(b.iter().copied());
                let out = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.0 {
            Value::String(b) => visitor.visit_bytes(b),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_bytes(visitor)
    }

    /// A unit variant by its name: a string column of variant names.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> DeResult<V::Value> {
        match self.0 {
            Value::String(b) => match std::str::from_utf8(b) {
                Ok(s) => visitor.visit_enum(s.into_deserializer()),
                Err(_) => Err(de::Error::custom(
                    "a string that is not valid UTF-8 is no enum variant",
                )),
            },
            Value::Any(_) => match self.document()? {
                Some(y) => YsonDeserializer(&y).deserialize_enum(name, variants, visitor),
                None => self.deserialize_any(visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    scalar_methods!(null_refused);

    forward_to_deserialize_any! {
        unit unit_struct newtype_struct map struct tuple tuple_struct identifier ignored_any
    }
}

/// A YSON document (an `any` value): maps, lists and scalars as serde's.
struct YsonDeserializer<'a>(&'a Yson);

impl<'de> IntoDeserializer<'de, DeError> for YsonDeserializer<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for YsonDeserializer<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.0 {
            Yson::Entity => visitor.visit_unit(),
            Yson::Boolean(v) => visitor.visit_bool(*v),
            Yson::Int64(v) => visitor.visit_i64(*v),
            Yson::Uint64(v) => visitor.visit_u64(*v),
            Yson::Double(v) => visitor.visit_f64(*v),
            Yson::String(b) => match std::str::from_utf8(b) {
                Ok(s) => visitor.visit_str(s),
                Err(_) => visitor.visit_bytes(b),
            },
            Yson::List(items) => {
                let mut seq = SeqDeserializer::new(items.iter().map(YsonDeserializer));
                let out = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            Yson::Map(entries) => {
                let mut map = YsonMap {
                    entries: entries.iter(),
                    value: None,
                };
                visitor.visit_map(&mut map)
            }
            // Attributes describe the node; the node itself is the value.
            Yson::Attributed { value, .. } => YsonDeserializer(value).deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.0 {
            Yson::Entity => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> DeResult<V::Value> {
        match self.0.as_str() {
            Some(s) => visitor.visit_enum(s.into_deserializer()),
            None => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq map struct tuple tuple_struct identifier ignored_any
    }
}

/// The entries of a YSON map, keys as text (not valid UTF-8: as bytes).
struct YsonMap<'a> {
    entries: std::slice::Iter<'a, (Vec<u8>, Yson)>,
    value: Option<&'a Yson>,
}

impl<'de> MapAccess<'de> for YsonMap<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> DeResult<Option<K::Value>> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let key = Yson::String(key.clone());
        seed.deserialize(YsonDeserializer(&key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> DeResult<V::Value> {
        let value = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a map value asked for before its key"))?;
        seed.deserialize(YsonDeserializer(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn columns(names: &[&str]) -> Vec<(String, ValueType)> {
        names
            .iter()
            .map(|n| (n.to_string(), ValueType::Null))
            .collect()
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Inner {
        a: i64,
        b: Vec<String>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    enum Color {
        Red,
        Blue,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Wide {
        n: u32,
        bytes: Vec<u8>,
        doc: Inner,
        color: Color,
        missing: Option<f64>,
    }

    #[test]
    fn a_row_reads_into_a_struct_with_nested_yson_bytes_and_enums() {
        let cols = columns(&["n", "bytes", "doc", "color", "extra"]);
        let values = [
            Value::Uint64(7),
            Value::String(vec![0xff, 1]),
            Value::Any(b"{a=1;b=[x;y]}".to_vec()),
            Value::string("Blue"),
            Value::Boolean(true),
        ];
        let wide: Wide = row_as(&cols, Some(&values), Some(0)).unwrap();
        assert_eq!(
            wide,
            Wide {
                n: 7,
                bytes: vec![0xff, 1],
                doc: Inner {
                    a: 1,
                    b: vec!["x".into(), "y".into()]
                },
                color: Color::Blue,
                missing: None,
            }
        );
        let _ = Color::Red;
    }

    #[test]
    fn errors_name_the_row_and_the_column() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            a: i64,
        }
        let cols = columns(&["a"]);
        let e = row_as::<S>(&cols, Some(&[Value::string("x")]), Some(3)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Row #3, column \"a\": invalid type: string \"x\", expected i64"
        );
        let e = row_as::<S>(&cols, Some(&[Value::Null]), Some(0)).unwrap_err();
        assert!(e.to_string().starts_with("Row #0, column \"a\""), "{e}");
        let e = row_as::<S>(&columns(&["b"]), Some(&[Value::Int64(1)]), Some(1)).unwrap_err();
        assert_eq!(e.to_string(), "Row #1: missing field `a`");
        let e = row_as::<S>(&cols, None, Some(2)).unwrap_err();
        assert!(e.to_string().contains("Option<T>"), "{e}");
    }

    #[test]
    fn tuples_read_by_position() {
        let cols = columns(&["a", "b"]);
        let values = [Value::Int64(1), Value::Null];
        let t: (i64, Option<String>) = row_as(&cols, Some(&values), None).unwrap();
        assert_eq!(t, (1, None));
        assert!(row_as::<(i64,)>(&cols, Some(&values), None).is_err());
    }
}
