//! YSON functions on `any` values: YPath navigation for `try_get_*` / `get_*`, and
//! `list_contains`, `yson_length`, `any_to_yson_string`, `yson_string_to_any`, `make_list`,
//! `make_map`, `make_entity`.
//!
//! Supported YPath: `/key`, `/<list index>` (negative counts from the end), `/@attribute`,
//! with `\` escaping the next character; the empty path is the whole value.

use dynql_core::{Value, ValueType, Yson};

use crate::error::{Error, Result};
use crate::value_limits::{check_string_length, value_bytes};

fn runtime(msg: impl Into<String>) -> Error {
    Error::Runtime(msg.into())
}

/// A parsed YPath step.
#[derive(Debug, PartialEq)]
enum Step {
    Key(Vec<u8>),
    Attribute(Vec<u8>),
}

fn parse_path(path: &[u8]) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    let mut i = 0;
    while i < path.len() {
        if path[i] != b'/' {
            return Err(runtime(format!(
                "Invalid YPath {:?}: expected \"/\" at offset {i}",
                String::from_utf8_lossy(path)
            )));
        }
        i += 1;
        let attribute = path.get(i) == Some(&b'@');
        if attribute {
            i += 1;
        }
        let mut token = Vec::new();
        while i < path.len() && path[i] != b'/' {
            if path[i] == b'\\' && i + 1 < path.len() {
                i += 1;
            }
            token.push(path[i]);
            i += 1;
        }
        steps.push(if attribute {
            Step::Attribute(token)
        } else {
            Step::Key(token)
        });
    }
    Ok(steps)
}

fn navigate<'a>(mut node: &'a Yson, steps: &[Step]) -> Option<&'a Yson> {
    for step in steps {
        node = match (step, node) {
            (Step::Attribute(name), Yson::Attributed { attributes, .. }) => {
                attributes.iter().find(|(k, _)| k == name).map(|(_, v)| v)?
            }
            (Step::Attribute(_), _) => return None,
            (Step::Key(k), Yson::Attributed { value, .. }) => {
                navigate(value, &[Step::Key(k.clone())])?
            }
            (Step::Key(k), Yson::Map(entries)) => {
                entries.iter().find(|(name, _)| name == k).map(|(_, v)| v)?
            }
            (Step::Key(k), Yson::List(items)) => {
                let index: i64 = std::str::from_utf8(k).ok()?.parse().ok()?;
                let index = if index < 0 {
                    items.len() as i64 + index
                } else {
                    index
                };
                items.get(usize::try_from(index).ok()?)?
            }
            _ => return None,
        };
    }
    Some(node)
}

fn parse_any(v: &[u8]) -> Result<Yson> {
    dynql_core::yson::parse(v).map_err(|e| runtime(format!("Malformed YSON value: {e}")))
}

fn strip(node: &Yson) -> &Yson {
    match node {
        Yson::Attributed { value, .. } => value,
        other => other,
    }
}

/// Converts a found node to `target`, if its type matches (int64 and uint64 convert when the
/// value fits, as YT's `try_get` does for integral values).
fn typed(node: &Yson, target: ValueType) -> Option<Value> {
    Some(match (target, strip(node)) {
        (ValueType::Any, _) => Value::Any(dynql_core::yson::to_text(node).into_bytes()),
        (ValueType::Int64, Yson::Int64(x)) => Value::Int64(*x),
        (ValueType::Int64, Yson::Uint64(x)) if *x <= i64::MAX as u64 => Value::Int64(*x as i64),
        (ValueType::Uint64, Yson::Uint64(x)) => Value::Uint64(*x),
        (ValueType::Uint64, Yson::Int64(x)) if *x >= 0 => Value::Uint64(*x as u64),
        (ValueType::Double, Yson::Double(x)) => Value::Double(*x),
        (ValueType::Boolean, Yson::Boolean(x)) => Value::Boolean(*x),
        (ValueType::String, Yson::String(x)) => Value::String(x.clone()),
        _ => return None,
    })
}

/// `try_get_<type>(any, path)` (`strict = false`) and `get_<type>(any, path)` (`strict`).
pub fn get_by_path(value: &Value, path: &Value, target: ValueType, strict: bool) -> Result<Value> {
    let (Value::Any(doc), Value::String(path)) = (value, path) else {
        return Ok(Value::Null);
    };
    let steps = parse_path(path)?;
    let node = parse_any(doc)?;
    match navigate(&node, &steps).and_then(|n| typed(n, target)) {
        Some(v) => Ok(v),
        None if strict => Err(runtime(format!(
            "Cannot get a value of type {target} at YPath {:?}: it is missing or of another type",
            String::from_utf8_lossy(path)
        ))),
        None => Ok(Value::Null),
    }
}

fn yson_of(v: &Value) -> Result<Yson> {
    Ok(match v {
        Value::Any(bytes) => parse_any(bytes)?,
        other => other.to_yson(),
    })
}

/// `list_contains(list, value)`: whether the YSON list holds an item equal to `value` (types
/// must match: `1` is not `1u`).
pub fn list_contains(list: &Value, item: &Value) -> Result<Value> {
    let Value::Any(bytes) = list else {
        return Ok(Value::Null);
    };
    let Yson::List(items) = strip(&parse_any(bytes)?).clone() else {
        return Err(runtime(
            "Wrong type for argument 1 of list_contains: expected a YSON list",
        ));
    };
    let needle = yson_of(item)?;
    Ok(Value::Boolean(items.iter().any(|i| strip(i) == &needle)))
}

/// `yson_length(any)`: items of a list or map.
pub fn yson_length(value: &Value) -> Result<Value> {
    let Value::Any(bytes) = value else {
        return Ok(Value::Null);
    };
    match strip(&parse_any(bytes)?) {
        Yson::List(items) => Ok(Value::Int64(items.len() as i64)),
        Yson::Map(entries) => Ok(Value::Int64(entries.len() as i64)),
        _ => Err(runtime(
            "Wrong type for argument of yson_length: expected a YSON list or map",
        )),
    }
}

/// `any_to_yson_string(any)`.
pub fn any_to_yson_string(value: &Value) -> Result<Value> {
    match value {
        Value::Any(bytes) => Ok(Value::String(
            dynql_core::yson::to_text(&parse_any(bytes)?).into_bytes(),
        )),
        _ => Ok(Value::Null),
    }
}

/// `yson_string_to_any(string)`.
pub fn yson_string_to_any(value: &Value) -> Result<Value> {
    match value {
        Value::String(text) => Ok(Value::Any(
            dynql_core::yson::to_text(&parse_any(text)?).into_bytes(),
        )),
        _ => Ok(Value::Null),
    }
}

/// Refuses a list or map whose string arguments alone exceed the value cap, before building
/// it: each is in its YSON text at least once (an `any` argument may shrink when it is
/// reformatted, so only the result tells).
fn check_string_arguments(args: &[Value]) -> Result<()> {
    let strings = args
        .iter()
        .filter(|v| matches!(v, Value::String(_)))
        .fold(0usize, |n, v| n.saturating_add(value_bytes(v)));
    check_string_length(strings)
}

/// `make_list(v, ...)`.
pub fn make_list(args: &[Value]) -> Result<Value> {
    check_string_arguments(args)?;
    let items = args.iter().map(yson_of).collect::<Result<Vec<_>>>()?;
    Ok(Value::Any(
        dynql_core::yson::to_text(&Yson::List(items)).into_bytes(),
    ))
}

/// `make_map(key, value, ...)` with string keys.
pub fn make_map(args: &[Value]) -> Result<Value> {
    if !args.len().is_multiple_of(2) {
        return Err(runtime(
            "make_map takes key/value pairs: an even number of arguments",
        ));
    }
    check_string_arguments(args)?;
    let mut entries = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks(2) {
        let Value::String(k) = &pair[0] else {
            return Err(runtime("make_map keys must be strings"));
        };
        entries.push((k.clone(), yson_of(&pair[1])?));
    }
    Ok(Value::Any(
        dynql_core::yson::to_text(&Yson::Map(entries)).into_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any(text: &str) -> Value {
        Value::Any(text.as_bytes().to_vec())
    }

    #[test]
    fn paths_navigate_maps_lists_and_attributes() {
        let doc = any("<a=7>{b={c=4};d=[1;2u;\"x\"];\"e/f\"=%true}");
        let get = |p: &str, t| get_by_path(&doc, &Value::string(p), t, false).unwrap();
        assert_eq!(get("/b/c", ValueType::Int64), Value::Int64(4));
        assert_eq!(get("/d/1", ValueType::Uint64), Value::Uint64(2));
        assert_eq!(get("/d/-1", ValueType::String), Value::string("x"));
        assert_eq!(get("/@a", ValueType::Int64), Value::Int64(7));
        assert_eq!(get("/e\\/f", ValueType::Boolean), Value::Boolean(true));
        assert_eq!(get("/b/d", ValueType::Int64), Value::Null);
        assert_eq!(get("/b/c", ValueType::String), Value::Null);
        assert_eq!(get("/b", ValueType::Any), any("{\"c\"=4;}"));
        assert!(get_by_path(&doc, &Value::string("/b/d"), ValueType::Int64, true).is_err());
        assert!(get_by_path(&doc, &Value::string("b"), ValueType::Int64, false).is_err());
        assert_eq!(
            get_by_path(&Value::Null, &Value::string("/b"), ValueType::Int64, true).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn list_functions() {
        let l = any("[7;9;3;%false;\"y\";2.5]");
        assert_eq!(
            list_contains(&l, &Value::Int64(9)).unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(
            list_contains(&l, &Value::Uint64(9)).unwrap(),
            Value::Boolean(false)
        );
        assert_eq!(
            list_contains(&l, &Value::Boolean(true)).unwrap(),
            Value::Boolean(false)
        );
        assert_eq!(
            list_contains(&l, &Value::string("y")).unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(
            list_contains(&Value::Null, &Value::Int64(1)).unwrap(),
            Value::Null
        );
        assert!(list_contains(&any("\"a\""), &Value::Int64(1))
            .unwrap_err()
            .to_string()
            .contains("Wrong type for argument"));
        assert_eq!(yson_length(&l).unwrap(), Value::Int64(6));
        assert_eq!(
            make_map(&[Value::string("k"), Value::Int64(1)]).unwrap(),
            any("{\"k\"=1;}")
        );
        assert_eq!(
            make_list(&[Value::Int64(1), Value::Null]).unwrap(),
            any("[1;#;]")
        );
        assert_eq!(
            any_to_yson_string(&any("{a=1}")).unwrap(),
            Value::string("{\"a\"=1;}")
        );
        assert_eq!(
            yson_string_to_any(&Value::string("[1;2]")).unwrap(),
            any("[1;2;]")
        );
    }
}
