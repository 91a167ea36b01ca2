//! Tests of [`crate::functions`].

use dynql_core::Value;

use super::patterns::regex_escape;
use super::time::{format_timestamp, timestamp_floor};
use super::*;

fn s(x: &str) -> Value {
    Value::string(x)
}

#[test]
fn names_are_the_names_lookup_knows() {
    for name in NAMES {
        assert!(lookup(name).is_some(), "{name} is listed but not found");
    }
    // The other direction: every name the match in `lookup` spells is listed.
    let source = include_str!("mod.rs");
    let start = source.find("pub fn lookup(").expect("lookup in the source");
    let end = start + source[start..].find("\n}\n").expect("end of lookup");
    let matched: Vec<&str> = source[start..end]
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix('"')?
                .split_once("\" =>")
                .map(|(n, _)| n)
        })
        .collect();
    assert_eq!(matched.len(), NAMES.len());
    for name in matched {
        assert!(NAMES.contains(&name), "{name} is missing from NAMES");
    }
}

#[test]
fn timestamps_floor_in_utc_with_monday_weeks() {
    let t = 1446325284;
    let f = |u| timestamp_floor(t, u).unwrap();
    assert_eq!(f(FloorUnit::Hour), 1446325200);
    assert_eq!(f(FloorUnit::Day), 1446249600);
    assert_eq!(f(FloorUnit::Week), 1445817600);
    assert_eq!(f(FloorUnit::Month), 1443657600);
    assert_eq!(f(FloorUnit::Year), 1420070400);
    assert_eq!(
        format_timestamp(t, b"%Y-%m-%dT%H:%M:%S").unwrap(),
        b"2015-10-31T21:01:24".to_vec()
    );
    assert!(format_timestamp(t, b"%Q").is_err());
}

#[test]
fn regex_functions_use_re2_rewrites() {
    let r = call_scalar(
        ScalarFunction::RegexReplaceAll,
        &[s("([0-9]+)"), s("a12b3"), s("<\\1>")],
        ValueType::String,
    )
    .unwrap();
    assert_eq!(r, s("a<12>b<3>"));
    assert_eq!(regex_escape(b"a.b*c"), b"a\\.b\\*c".to_vec());
    let r = call_scalar(
        ScalarFunction::RegexExtract,
        &[s("([a-z]+)([0-9]+)"), s("..abc123"), s("\\2-\\1")],
        ValueType::String,
    )
    .unwrap();
    assert_eq!(r, s("123-abc"));
}

#[test]
fn regex_predicates_are_false_on_null_and_rewrites_stay_null() {
    use ScalarFunction as S;
    let b = ValueType::Boolean;
    for f in [S::RegexFullMatch, S::RegexPartialMatch] {
        for args in [[s("a.*"), Value::Null], [Value::Null, s("abc")]] {
            assert_eq!(call_scalar(f, &args, b).unwrap(), Value::Boolean(false));
        }
        assert_eq!(
            call_scalar(f, &[s("a.*"), s("abc")], b).unwrap(),
            Value::Boolean(true)
        );
    }
    for f in [S::RegexReplaceFirst, S::RegexReplaceAll, S::RegexExtract] {
        let args = [s("a"), Value::Null, s("b")];
        assert_eq!(
            call_scalar(f, &args, ValueType::String).unwrap(),
            Value::Null
        );
    }
    let escaped = call_scalar(S::RegexEscape, &[Value::Null], ValueType::String);
    assert_eq!(escaped.unwrap(), Value::Null);
}

#[test]
fn nulls_propagate_except_where_handled() {
    assert_eq!(
        call_scalar(ScalarFunction::Lower, &[Value::Null], ValueType::String).unwrap(),
        Value::Null
    );
    assert_eq!(
        call_scalar(ScalarFunction::FarmHash, &[Value::Null], ValueType::Uint64).unwrap(),
        Value::Uint64(3315701238936582721)
    );
    assert!(call_scalar(
        ScalarFunction::Greatest,
        &[Value::Int64(1), Value::Null],
        ValueType::Int64
    )
    .is_err());
    assert!(
        call_scalar(ScalarFunction::ParseInt64, &[s("x1")], ValueType::Int64)
            .unwrap_err()
            .to_string()
            .contains("Cannot convert value")
    );
}
