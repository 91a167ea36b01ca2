//! Rows given as JSON lines (`insert-rows --format json`, `import --format json`): one
//! object per line, checked more strictly than JSON itself asks: the text must be UTF-8 (the
//! error says where it is not) and an object must not repeat a key (JSON parsers keep the last
//! one silently; YSON input refuses it, and so does this).

use std::collections::HashSet;

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// Parses one line of JSON rows input.
///
/// # Errors
/// A message without the line number (the caller adds it): invalid UTF-8 (with the byte
/// offset), malformed JSON, or a key repeated in an object.
pub fn parse_line(line: &[u8]) -> Result<serde_json::Value, String> {
    let text = std::str::from_utf8(line).map_err(|e| {
        format!(
            "invalid UTF-8 at byte {} of the line (JSON input must be UTF-8)",
            e.valid_up_to() + 1
        )
    })?;
    serde_json::from_str::<NoDuplicateKeys>(text).map_err(|e| e.to_string())?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Deserializes any JSON value only to check that no object repeats a key.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Checker)
    }
}

struct Checker;

impl<'de> Visitor<'de> for Checker {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!("the key {key:?} appears twice")));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_and_invalid_utf8_are_refused_with_their_place() {
        assert!(parse_line(br#"{"k":1,"v":{"a":[1,{"b":2}]}}"#).is_ok());
        let err = parse_line(br#"{"k":1,"k":2}"#).unwrap_err();
        assert!(err.contains("\"k\" appears twice"), "{err}");
        let err = parse_line(br#"{"k":1,"v":{"a":1,"a":2}}"#).unwrap_err();
        assert!(err.contains("\"a\" appears twice"), "{err}");
        let err = parse_line(b"{\"k\":\"\xff\"}").unwrap_err();
        assert!(err.contains("invalid UTF-8 at byte 7"), "{err}");
    }
}
