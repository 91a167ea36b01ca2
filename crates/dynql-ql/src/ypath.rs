//! YSON functions on `any` values: YPath navigation for `try_get_*` / `get_*`, and
//! `list_contains`, `yson_length`, `any_to_yson_string`, `yson_string_to_any`, `make_list`,
//! `make_map`, `make_entity`.
//!
//! Supported YPath: `/key`, `/<list index>` (negative counts from the end), `/@attribute`,
//! with `\` escaping the next character; the empty path is the whole value.
//!
//! Each function is also here in pieces over one value's bytes ([`YPath`], [`list_items`],
//! [`yson_length_of`], [`canonical_text`], [`make_list_with`], …), which the array evaluator
//! (dynql-exec) calls value by value: both evaluators give the same answers and errors.

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

/// The YSON document of an `any` value, as the YSON functions read it.
///
/// # Errors
/// `Malformed YSON value: …`.
pub fn parse_any(v: &[u8]) -> Result<Yson> {
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

/// A YPath parsed once, to navigate any number of documents: the row evaluator parses a
/// row's path for its document, the array evaluator a batch's literal path once.
#[derive(Debug)]
pub struct YPath {
    text: Vec<u8>,
    steps: Vec<Step>,
}

impl YPath {
    /// Parses `path`.
    ///
    /// # Errors
    /// `Invalid YPath …` for a path that does not start a step with `/`.
    pub fn parse(path: &[u8]) -> Result<YPath> {
        Ok(YPath {
            steps: parse_path(path)?,
            text: path.to_vec(),
        })
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// `try_get_<target>` (`strict = false`) or `get_<target>` (`strict`) of the YSON
    /// document `doc` at this path.
    ///
    /// # Errors
    /// `doc` is malformed, or (`strict`) nothing of type `target` is at the path.
    pub fn get(&self, doc: &[u8], target: ValueType, strict: bool) -> Result<Value> {
        let node = parse_any(doc)?;
        match navigate(&node, &self.steps).and_then(|n| typed(n, target)) {
            Some(v) => Ok(v),
            None if strict => Err(runtime(format!(
                "Cannot get a value of type {target} at YPath {:?}: it is missing or of another type",
                String::from_utf8_lossy(&self.text)
            ))),
            None => Ok(Value::Null),
        }
    }
}

/// `try_get_<type>(any, path)` (`strict = false`) and `get_<type>(any, path)` (`strict`).
pub fn get_by_path(value: &Value, path: &Value, target: ValueType, strict: bool) -> Result<Value> {
    let (Value::Any(doc), Value::String(path)) = (value, path) else {
        return Ok(Value::Null);
    };
    YPath::parse(path)?.get(doc, target, strict)
}

/// A value as the YSON functions take it: an `any` value's document (an error when it is
/// malformed), any other value (null too: `#`) as its YSON scalar.
///
/// # Errors
/// `Malformed YSON value: …`.
pub fn yson_of(v: &Value) -> Result<Yson> {
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
    let items = list_items(bytes)?;
    let needle = yson_of(item)?;
    Ok(Value::Boolean(list_holds(&items, &needle)))
}

/// The items of the YSON list `bytes` (its attributes aside), which `list_contains` searches.
///
/// # Errors
/// `bytes` is malformed or no list.
pub fn list_items(bytes: &[u8]) -> Result<Vec<Yson>> {
    let not_a_list = || runtime("Wrong type for argument 1 of list_contains: expected a YSON list");
    match parse_any(bytes)? {
        Yson::List(items) => Ok(items),
        Yson::Attributed { value, .. } => match *value {
            Yson::List(items) => Ok(items),
            _ => Err(not_a_list()),
        },
        _ => Err(not_a_list()),
    }
}

/// Whether one of `items` (its attributes aside) equals `needle`, as `list_contains` compares.
pub fn list_holds(items: &[Yson], needle: &Yson) -> bool {
    items.iter().any(|i| strip(i) == needle)
}

/// `yson_length(any)`: items of a list or map.
pub fn yson_length(value: &Value) -> Result<Value> {
    let Value::Any(bytes) = value else {
        return Ok(Value::Null);
    };
    Ok(Value::Int64(yson_length_of(bytes)?))
}

/// The items of the YSON list or map `bytes` (`yson_length` of a value that is not null).
///
/// # Errors
/// `bytes` is malformed, or neither a list nor a map.
pub fn yson_length_of(bytes: &[u8]) -> Result<i64> {
    match strip(&parse_any(bytes)?) {
        Yson::List(items) => Ok(items.len() as i64),
        Yson::Map(entries) => Ok(entries.len() as i64),
        _ => Err(runtime(
            "Wrong type for argument of yson_length: expected a YSON list or map",
        )),
    }
}

/// `any_to_yson_string(any)`.
pub fn any_to_yson_string(value: &Value) -> Result<Value> {
    match value {
        Value::Any(bytes) => Ok(Value::String(canonical_text(bytes)?)),
        _ => Ok(Value::Null),
    }
}

/// `yson_string_to_any(string)`.
pub fn yson_string_to_any(value: &Value) -> Result<Value> {
    match value {
        Value::String(text) => Ok(Value::Any(canonical_text(text)?)),
        _ => Ok(Value::Null),
    }
}

/// The YSON text `bytes` parsed and written back in canonical form (what
/// `any_to_yson_string` and `yson_string_to_any` give).
///
/// # Errors
/// `Malformed YSON value: …`.
pub fn canonical_text(bytes: &[u8]) -> Result<Vec<u8>> {
    Ok(dynql_core::yson::to_text(&parse_any(bytes)?).into_bytes())
}

/// `to_any(v)`: an `any` value as it is, any other (null too: `#`) as its YSON text.
///
/// # Errors
/// The text would be longer than the string limit.
pub fn to_any(v: &Value) -> Result<Value> {
    Ok(match v {
        Value::Any(y) => Value::Any(y.clone()),
        other => {
            // A string's YSON text is at least the string and its two quotes.
            check_string_length(value_bytes(other).saturating_add(2))?;
            let text = dynql_core::yson::to_text(&other.to_yson()).into_bytes();
            check_string_length(text.len())?;
            Value::Any(text)
        }
    })
}

/// The bytes of the string arguments of `make_list` or `make_map`, which their text holds at
/// least once.
fn string_bytes(args: &[Value]) -> usize {
    args.iter()
        .filter(|v| matches!(v, Value::String(_)))
        .fold(0usize, |n, v| n.saturating_add(value_bytes(v)))
}

/// `make_list(v, ...)`.
pub fn make_list(args: &[Value]) -> Result<Value> {
    make_list_with(string_bytes(args), args.iter().map(yson_of))
}

/// `make_list` of arguments whose string ones hold `strings` bytes, converted to YSON one by
/// one by `items`. A list whose string arguments alone exceed the value cap is refused before
/// it is built: each is in its YSON text at least once (an `any` argument may shrink when it
/// is reformatted, so only the result tells).
///
/// # Errors
/// The string limit, or the first item that fails.
pub fn make_list_with(
    strings: usize,
    items: impl IntoIterator<Item = Result<Yson>>,
) -> Result<Value> {
    check_string_length(strings)?;
    let items = items.into_iter().collect::<Result<Vec<_>>>()?;
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
    let pairs = args.chunks(2).map(|pair| {
        let key = match &pair[0] {
            Value::String(k) => Some(k.clone()),
            _ => None,
        };
        (key, &pair[1])
    });
    make_map_with(string_bytes(args), pairs, yson_of)
}

/// `make_map` of arguments whose string ones hold `strings` bytes, pair by pair: a key
/// (`None` when it is no string) and a value converted to YSON by `yson` (checked as
/// [`make_list_with`] checks).
///
/// # Errors
/// The string limit, a key that is no string, or the first value that fails.
pub fn make_map_with<V>(
    strings: usize,
    pairs: impl IntoIterator<Item = (Option<Vec<u8>>, V)>,
    mut yson: impl FnMut(V) -> Result<Yson>,
) -> Result<Value> {
    check_string_length(strings)?;
    let mut entries = Vec::new();
    for (key, value) in pairs {
        let Some(key) = key else {
            return Err(runtime("make_map keys must be strings"));
        };
        entries.push((key, yson(value)?));
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
