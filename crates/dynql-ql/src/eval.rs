//! Row-at-a-time evaluation of typed expressions with YT semantics: wrapping integer
//! arithmetic, `Division by zero` and `Division of INT_MIN by -1` errors, null as the minimum
//! in comparisons (or SQL-style null results in canonical mode), Kleene AND/OR, lazy CASE/IF.

use std::cmp::Ordering;

use dynql_core::{compare_values, Value, ValueType};

use crate::ast::{BinaryOp, LikeKind, UnaryOp};
use crate::error::{Error, Result};
use crate::functions::{call_scalar, compile_regex, ScalarFunction};
use crate::texpr::{TExpr, TypedExpr};

/// Options that change evaluation semantics.
#[derive(Debug, Clone, Copy, Default)]
pub struct EvalOptions {
    /// `use_canonical_null_relations`: comparisons with a null operand yield null.
    pub canonical_null_relations: bool,
}

fn runtime(msg: impl Into<String>) -> Error {
    Error::Runtime(msg.into())
}

/// Evaluates `e` over `row`.
///
/// # Errors
/// Runtime errors of YT semantics (division by zero, NaN comparison, bad conversions).
pub fn evaluate(e: &TypedExpr, row: &[Value], opts: EvalOptions) -> Result<Value> {
    eval(e, row, opts, &mut |_: &Value| Ok(()))
}

/// [`evaluate`], giving `meter` every string or `any` value that a function or `||` computes,
/// intermediate ones included, as soon as it exists: how a caller bounds the bytes an
/// evaluation computes (an error from `meter` ends the evaluation with that error).
///
/// # Errors
/// Those of [`evaluate`] and of `meter`.
pub fn evaluate_metered<M>(
    e: &TypedExpr,
    row: &[Value],
    opts: EvalOptions,
    meter: &mut M,
) -> Result<Value>
where
    M: FnMut(&Value) -> Result<()>,
{
    eval(e, row, opts, meter)
}

/// Hands a computed value to the meter if it holds bytes.
fn metered<M: FnMut(&Value) -> Result<()>>(v: Value, meter: &mut M) -> Result<Value> {
    if matches!(v, Value::String(_) | Value::Any(_)) {
        meter(&v)?;
    }
    Ok(v)
}

fn eval<M>(e: &TypedExpr, row: &[Value], opts: EvalOptions, meter: &mut M) -> Result<Value>
where
    M: FnMut(&Value) -> Result<()>,
{
    match &e.kind {
        TExpr::Literal(v) => Ok(v.clone()),
        TExpr::Column(i) => Ok(row.get(*i).cloned().unwrap_or(Value::Null)),
        TExpr::Unary(op, operand) => {
            let v = eval(operand, row, opts, meter)?;
            unary(*op, v)
        }
        TExpr::Binary(op, l, r) => binary(*op, l, r, row, opts, meter),
        TExpr::IsNull(x) => Ok(Value::Boolean(eval(x, row, opts, meter)?.is_null())),
        TExpr::In {
            operands,
            set,
            negated,
        } => {
            let key = operands
                .iter()
                .map(|o| eval(o, row, opts, meter))
                .collect::<Result<Vec<_>>>()?;
            check_nan(&key)?;
            Ok(Value::Boolean(set.contains(&key) != *negated))
        }
        TExpr::Between { operands, ranges } => {
            let key = operands
                .iter()
                .map(|o| eval(o, row, opts, meter))
                .collect::<Result<Vec<_>>>()?;
            check_nan(&key)?;
            let inside = ranges.iter().any(|(lo, hi)| {
                let lo_part = &key[..lo.len().min(key.len())];
                let hi_part = &key[..hi.len().min(key.len())];
                dynql_core::compare_rows(lo_part, lo) != Ordering::Less
                    && dynql_core::compare_rows(hi_part, hi) != Ordering::Greater
            });
            Ok(Value::Boolean(inside))
        }
        TExpr::Like {
            operand,
            pattern,
            escape,
            kind,
            negated,
            compiled,
        } => {
            let s = eval(operand, row, opts, meter)?;
            let p = eval(pattern, row, opts, meter)?;
            let esc = match escape {
                Some(e) => Some(eval(e, row, opts, meter)?),
                None => None,
            };
            let (Value::String(s), Value::String(p)) = (&s, &p) else {
                return Ok(Value::Null);
            };
            let matched = match compiled {
                Some(re) => re.is_match(s),
                None => {
                    let esc = match &esc {
                        Some(Value::String(e)) => Some(e.as_slice()),
                        Some(_) => return Ok(Value::Null),
                        None => None,
                    };
                    compile_like(p, esc, *kind)?.is_match(s)
                }
            };
            Ok(Value::Boolean(matched != *negated))
        }
        TExpr::Case { whens, otherwise } => {
            for (cond, result) in whens {
                if let Value::Boolean(true) = eval(cond, row, opts, meter)? {
                    return eval(result, row, opts, meter);
                }
            }
            match otherwise {
                Some(o) => eval(o, row, opts, meter),
                None => Ok(Value::Null),
            }
        }
        TExpr::Transform {
            operands,
            map,
            default,
        } => {
            let key = operands
                .iter()
                .map(|o| eval(o, row, opts, meter))
                .collect::<Result<Vec<_>>>()?;
            match map.get(&key) {
                Some(v) => Ok(v.clone()),
                None => match default {
                    Some(d) => eval(d, row, opts, meter),
                    None => Ok(Value::Null),
                },
            }
        }
        TExpr::Call(ScalarFunction::If, args) => match eval(&args[0], row, opts, meter)? {
            Value::Boolean(true) => eval(&args[1], row, opts, meter),
            Value::Boolean(false) => eval(&args[2], row, opts, meter),
            _ => Ok(Value::Null),
        },
        TExpr::Call(f, args) => {
            let values = args
                .iter()
                .map(|a| eval(a, row, opts, meter))
                .collect::<Result<Vec<_>>>()?;
            metered(call_scalar(*f, &values, e.ty)?, meter)
        }
    }
}

/// Evaluates a boolean predicate; only TRUE keeps a row.
pub fn evaluate_predicate(e: &TypedExpr, row: &[Value], opts: EvalOptions) -> Result<bool> {
    Ok(matches!(evaluate(e, row, opts)?, Value::Boolean(true)))
}

fn check_nan(values: &[Value]) -> Result<()> {
    if values
        .iter()
        .any(|v| matches!(v, Value::Double(d) if d.is_nan()))
    {
        return Err(runtime("Cannot compare NaN values"));
    }
    Ok(())
}

/// Translates a LIKE pattern (`%`, `_`, escape char) or an RLIKE regex into a regex, as YT
/// does for RE2 in its UTF-8 mode: every form matches the whole text, `_` is one character,
/// ILIKE folds Unicode case, and the escape character (`\` unless ESCAPE says otherwise; none
/// for an empty one) makes the character after it literal.
///
/// # Errors
/// YT's: ESCAPE with RLIKE/REGEXP, an escape string longer than one byte, a pattern ending in
/// the escape character, and a regex RE2 would not parse.
pub fn compile_like(
    pattern: &[u8],
    escape: Option<&[u8]>,
    kind: LikeKind,
) -> Result<regex::bytes::Regex> {
    if kind == LikeKind::Rlike {
        if escape.is_some() {
            return Err(runtime(
                "ESCAPE should not be used together with REGEXP (RLIKE)",
            ));
        }
        // YT runs RE2::FullMatch on the pattern as written, so RLIKE and REGEXP are full
        // matches (regex_partial_match is the unanchored search).
        return compile_regex(&[b"^(?:", pattern, b")$"].concat());
    }
    let esc = match escape {
        None => Some(b'\\'),
        Some([]) => None,
        Some([c]) => Some(*c),
        Some(_) => return Err(runtime("Escape string must be empty or one character")),
    };
    let mut re = String::from(if kind == LikeKind::Ilike {
        "(?is)^"
    } else {
        "(?s)^"
    });
    let mut i = 0;
    while i < pattern.len() {
        let escaped = Some(pattern[i]) == esc;
        if escaped {
            i += 1;
            if i == pattern.len() {
                return Err(runtime(
                    "Incomplete escape sequence at the end of LIKE pattern",
                ));
            }
        }
        match pattern[i] {
            // Any run of bytes, valid UTF-8 or not.
            b'%' if !escaped => re.push_str("(?-u:.*)"),
            b'_' if !escaped => re.push('.'),
            _ => {
                let len = utf8_len(&pattern[i..]);
                match std::str::from_utf8(&pattern[i..i + len]) {
                    Ok(ch) => re.push_str(&regex::escape(ch)),
                    Err(_) => re.push_str(&format!("(?-u:\\x{:02x})", pattern[i])),
                }
                i += len;
                continue;
            }
        }
        i += 1;
    }
    re.push('$');
    regex::bytes::Regex::new(&re).map_err(|e| runtime(format!("Invalid LIKE pattern: {e}")))
}

/// The length of the UTF-8 character `bytes` starts with, or 1 where none starts there.
fn utf8_len(bytes: &[u8]) -> usize {
    let len = match bytes[0] {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    };
    if len <= bytes.len() && std::str::from_utf8(&bytes[..len]).is_ok() {
        len
    } else {
        1
    }
}

fn unary(op: UnaryOp, v: Value) -> Result<Value> {
    Ok(match (op, v) {
        (_, Value::Null) => Value::Null,
        (UnaryOp::Plus, v) => v,
        (UnaryOp::Minus, Value::Int64(x)) => Value::Int64(x.wrapping_neg()),
        (UnaryOp::Minus, Value::Uint64(x)) => Value::Uint64(x.wrapping_neg()),
        (UnaryOp::Minus, Value::Double(x)) => Value::Double(-x),
        (UnaryOp::BitNot, Value::Int64(x)) => Value::Int64(!x),
        (UnaryOp::BitNot, Value::Uint64(x)) => Value::Uint64(!x),
        (UnaryOp::Not, Value::Boolean(x)) => Value::Boolean(!x),
        (op, v) => return Err(Error::Runtime(format!("Cannot apply {op:?} to {v}"))),
    })
}

fn binary(
    op: BinaryOp,
    l: &TypedExpr,
    r: &TypedExpr,
    row: &[Value],
    opts: EvalOptions,
    meter: &mut impl FnMut(&Value) -> Result<()>,
) -> Result<Value> {
    match op {
        BinaryOp::And => {
            let a = eval(l, row, opts, meter)?;
            if let Value::Boolean(false) = a {
                return Ok(a);
            }
            let b = eval(r, row, opts, meter)?;
            Ok(match (a, b) {
                (_, Value::Boolean(false)) => Value::Boolean(false),
                (Value::Boolean(true), Value::Boolean(true)) => Value::Boolean(true),
                _ => Value::Null,
            })
        }
        BinaryOp::Or => {
            let a = eval(l, row, opts, meter)?;
            if let Value::Boolean(true) = a {
                return Ok(a);
            }
            let b = eval(r, row, opts, meter)?;
            Ok(match (a, b) {
                (_, Value::Boolean(true)) => Value::Boolean(true),
                (Value::Boolean(false), Value::Boolean(false)) => Value::Boolean(false),
                _ => Value::Null,
            })
        }
        _ => {
            let a = eval(l, row, opts, meter)?;
            let b = eval(r, row, opts, meter)?;
            metered(apply_binary(op, a, b, opts)?, meter)
        }
    }
}

/// Applies a non-logical binary operator to two values of the same type.
pub fn apply_binary(op: BinaryOp, a: Value, b: Value, opts: EvalOptions) -> Result<Value> {
    if op.is_comparison() {
        return compare(op, &a, &b, opts);
    }
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    use BinaryOp::*;
    Ok(match (a, b) {
        (Value::Int64(x), Value::Int64(y)) => Value::Int64(match op {
            Plus => x.wrapping_add(y),
            Minus => x.wrapping_sub(y),
            Multiply => x.wrapping_mul(y),
            Divide | Modulo => {
                if y == 0 {
                    return Err(runtime("Division by zero"));
                }
                if x == i64::MIN && y == -1 {
                    return Err(runtime("Division of INT_MIN by -1"));
                }
                if op == Divide {
                    x / y
                } else {
                    x % y
                }
            }
            BitAnd => x & y,
            BitOr => x | y,
            // Shift counts are taken modulo 64 (YT leaves counts outside 0..63 undefined).
            LeftShift => x.wrapping_shl(y as u32),
            RightShift => x.wrapping_shr(y as u32),
            _ => {
                return Err(runtime(format!(
                    "operator {} is not defined for int64",
                    op.symbol()
                )))
            }
        }),
        (Value::Uint64(x), Value::Uint64(y)) => Value::Uint64(match op {
            Plus => x.wrapping_add(y),
            Minus => x.wrapping_sub(y),
            Multiply => x.wrapping_mul(y),
            Divide | Modulo => {
                if y == 0 {
                    return Err(runtime("Division by zero"));
                }
                if op == Divide {
                    x / y
                } else {
                    x % y
                }
            }
            BitAnd => x & y,
            BitOr => x | y,
            LeftShift => x.wrapping_shl(y as u32),
            RightShift => x.wrapping_shr(y as u32),
            _ => {
                return Err(runtime(format!(
                    "operator {} is not defined for uint64",
                    op.symbol()
                )))
            }
        }),
        (Value::Double(x), Value::Double(y)) => Value::Double(match op {
            Plus => x + y,
            Minus => x - y,
            Multiply => x * y,
            Divide => x / y,
            _ => {
                return Err(runtime(format!(
                    "operator {} is not defined for double",
                    op.symbol()
                )))
            }
        }),
        (Value::String(x), Value::String(y)) if op == Concat => {
            Value::String(crate::value_limits::concat(&[&x, &y])?)
        }
        (a, b) => {
            return Err(runtime(format!(
                "operator {} cannot be applied to {} and {}",
                op.symbol(),
                a.value_type(),
                b.value_type()
            )))
        }
    })
}

fn compare(op: BinaryOp, a: &Value, b: &Value, opts: EvalOptions) -> Result<Value> {
    if opts.canonical_null_relations && (a.is_null() || b.is_null()) {
        return Ok(Value::Null);
    }
    let (a, b) = (&scalar_of_any(a), &scalar_of_any(b));
    if matches!(a, Value::Double(x) if x.is_nan()) || matches!(b, Value::Double(x) if x.is_nan()) {
        return Err(runtime("Cannot compare NaN values"));
    }
    let o = compare_values(a, b);
    Ok(Value::Boolean(match op {
        BinaryOp::Eq => o == Ordering::Equal,
        BinaryOp::NotEq => o != Ordering::Equal,
        BinaryOp::Less => o == Ordering::Less,
        BinaryOp::LessOrEq => o != Ordering::Greater,
        BinaryOp::Greater => o == Ordering::Greater,
        BinaryOp::GreaterOrEq => o != Ordering::Less,
        _ => return Err(runtime("not a comparison")),
    }))
}

/// An `any` holding a scalar YSON value as that scalar (so `any` compares with typed values);
/// other values unchanged.
fn scalar_of_any(v: &Value) -> Value {
    let Value::Any(bytes) = v else {
        return v.clone();
    };
    match dynql_core::yson::parse(bytes) {
        Ok(dynql_core::Yson::Entity) => Value::Null,
        Ok(dynql_core::Yson::Int64(x)) => Value::Int64(x),
        Ok(dynql_core::Yson::Uint64(x)) => Value::Uint64(x),
        Ok(dynql_core::Yson::Double(x)) => Value::Double(x),
        Ok(dynql_core::Yson::Boolean(x)) => Value::Boolean(x),
        Ok(dynql_core::Yson::String(x)) => Value::String(x),
        _ => v.clone(),
    }
}

/// Converts a literal-typed constant to `target` (literals adapt to their context's type).
pub fn convert_literal(v: &Value, target: ValueType) -> Option<Value> {
    Some(match (v, target) {
        (Value::Null, _) => Value::Null,
        (Value::Int64(x), ValueType::Int64) => Value::Int64(*x),
        (Value::Int64(x), ValueType::Uint64) => Value::Uint64(*x as u64),
        (Value::Int64(x), ValueType::Double) => Value::Double(*x as f64),
        (Value::Uint64(x), ValueType::Uint64) => Value::Uint64(*x),
        (Value::Uint64(x), ValueType::Double) => Value::Double(*x as f64),
        (Value::Uint64(x), ValueType::Int64) => Value::Int64(*x as i64),
        (Value::Double(x), ValueType::Double) => Value::Double(*x),
        (Value::Boolean(x), ValueType::Boolean) => Value::Boolean(*x),
        (Value::String(x), ValueType::String) => Value::String(x.clone()),
        (Value::Any(x), ValueType::Any) => Value::Any(x.clone()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(x: i64) -> Value {
        Value::Int64(x)
    }

    #[test]
    fn integer_arithmetic_wraps_and_division_checks() {
        let o = EvalOptions::default();
        assert_eq!(
            apply_binary(BinaryOp::Plus, i(i64::MAX), i(1), o).unwrap(),
            i(i64::MIN)
        );
        assert_eq!(
            apply_binary(BinaryOp::Modulo, i(-17), i(5), o).unwrap(),
            i(-2)
        );
        assert_eq!(
            apply_binary(BinaryOp::Modulo, i(17), i(-5), o).unwrap(),
            i(2)
        );
        assert!(apply_binary(BinaryOp::Divide, i(1), i(0), o)
            .unwrap_err()
            .to_string()
            .contains("Division by zero"));
        assert!(apply_binary(BinaryOp::Divide, i(i64::MIN), i(-1), o)
            .unwrap_err()
            .to_string()
            .contains("INT_MIN"));
        assert_eq!(
            apply_binary(BinaryOp::Divide, Value::Null, i(0), o).unwrap(),
            Value::Null
        );
        assert_eq!(
            apply_binary(BinaryOp::RightShift, i(-8), i(1), o).unwrap(),
            i(-4)
        );
        assert_eq!(
            apply_binary(
                BinaryOp::RightShift,
                Value::Uint64(u64::MAX),
                Value::Uint64(60),
                o
            )
            .unwrap(),
            Value::Uint64(15)
        );
    }

    #[test]
    fn concatenation_is_capped_and_metered() {
        let o = EvalOptions::default();
        let half = Value::String(vec![b'h'; crate::value_limits::MAX_STRING_VALUE_LENGTH / 2]);
        let full = apply_binary(BinaryOp::Concat, half.clone(), half, o).unwrap();
        let err = apply_binary(BinaryOp::Concat, full, Value::string("!"), o)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("String value is too long: 16777217 bytes (limit 16777216)"),
            "{err}"
        );
        // (c0 || c0) || lower(c0): the meter sees both intermediate values and the result.
        let s = ValueType::String;
        let c = || TypedExpr::new(TExpr::Column(0), s);
        let both = TypedExpr::new(
            TExpr::Binary(BinaryOp::Concat, Box::new(c()), Box::new(c())),
            s,
        );
        let lower = TypedExpr::new(TExpr::Call(ScalarFunction::Lower, vec![c()]), s);
        let e = TypedExpr::new(
            TExpr::Binary(BinaryOp::Concat, Box::new(both), Box::new(lower)),
            s,
        );
        let mut seen = Vec::new();
        let v = evaluate_metered(&e, &[Value::string("aB")], o, &mut |v: &Value| {
            seen.push(v.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(v, Value::string("aBaBab"));
        assert_eq!(seen, ["aBaB", "ab", "aBaBab"].map(Value::string).to_vec());
        // The meter's error ends the evaluation.
        let refused = evaluate_metered(&e, &[Value::string("aB")], o, &mut |_: &Value| {
            Err(Error::Runtime("over budget".into()))
        });
        assert_eq!(refused.unwrap_err().to_string(), "over budget");
    }

    #[test]
    fn null_compares_as_minimum_unless_canonical() {
        let o = EvalOptions::default();
        assert_eq!(
            compare(BinaryOp::Eq, &Value::Null, &Value::Null, o).unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(
            compare(BinaryOp::Less, &Value::Null, &i(5), o).unwrap(),
            Value::Boolean(true)
        );
        let c = EvalOptions {
            canonical_null_relations: true,
        };
        assert_eq!(
            compare(BinaryOp::Eq, &Value::Null, &Value::Null, c).unwrap(),
            Value::Null
        );
        assert!(compare(
            BinaryOp::Eq,
            &Value::Double(f64::NAN),
            &Value::Double(1.0),
            o
        )
        .is_err());
    }

    #[test]
    fn like_patterns() {
        let m = |s: &str, p: &str, e: Option<&str>, k| {
            compile_like(p.as_bytes(), e.map(str::as_bytes), k)
                .unwrap()
                .is_match(s.as_bytes())
        };
        assert!(m("ab.cd.efgh", "__.__.____", None, LikeKind::Like));
        assert!(!m("ab.cd-efgh", "__.__.____", None, LikeKind::Like));
        assert!(m("", "%", None, LikeKind::Like));
        assert!(!m("abc", "", None, LikeKind::Like));
        assert!(m("_", "._", Some("."), LikeKind::Like));
        assert!(!m("a", "._", Some("."), LikeKind::Like));
        assert!(m("ABC", "a%", None, LikeKind::Ilike));
        assert!(m("abc", "a.c", None, LikeKind::Rlike));
        assert!(!m("xabcx", "b.", None, LikeKind::Rlike));
        // RE2's special characters are literal in LIKE, escaped or not.
        assert!(m("a.c(d)", "a.c(d)", None, LikeKind::Like));
        assert!(!m("abc(d)", "a.c(d)", None, LikeKind::Like));
        assert!(m("50%", "50!%", Some("!"), LikeKind::Like));
        assert!(!m("500", "50!%", Some("!"), LikeKind::Like));
        assert!(m("a!b", "a!!b", Some("!"), LikeKind::Like));
        assert!(m("a\\b", "a\\b", Some(""), LikeKind::Like));
    }

    #[test]
    fn like_matches_characters_as_yt_in_utf8() {
        let m = |s: &[u8], p: &str, k| compile_like(p.as_bytes(), None, k).unwrap().is_match(s);
        // `_` is one character, not one byte.
        assert!(m("é".as_bytes(), "_", LikeKind::Like));
        assert!(!m("é".as_bytes(), "__", LikeKind::Like));
        assert!(m("日本".as_bytes(), "_本", LikeKind::Like));
        // ILIKE folds case beyond ASCII.
        assert!(m("ÉTÉ".as_bytes(), "été", LikeKind::Ilike));
        assert!(!m("ÉTÉ".as_bytes(), "été", LikeKind::Like));
        // Text that is not UTF-8 still matches `%` and its own bytes.
        assert!(m(b"a\xffb", "a%", LikeKind::Like));
        let raw = compile_like(b"a\xffb", None, LikeKind::Like).unwrap();
        assert!(raw.is_match(b"a\xffb"));
    }

    #[test]
    fn like_errors_use_yt_words() {
        let e = |p: &str, esc: Option<&str>, k| {
            compile_like(p.as_bytes(), esc.map(str::as_bytes), k)
                .unwrap_err()
                .to_string()
        };
        assert!(e("a", Some("!"), LikeKind::Rlike).contains("ESCAPE should not be used"));
        assert!(e("a", Some("!!"), LikeKind::Like).contains("empty or one character"));
        assert!(e("a!", Some("!"), LikeKind::Like).contains("Incomplete escape sequence"));
    }
}
