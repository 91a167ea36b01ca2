//! YT's regex functions over a batch when the pattern (and rewrite) are literals: compiled
//! once (at the first row with a text, as the row evaluator compiles only for a text), the
//! texts read in place from their array, the results built straight into Arrow arrays. Today's
//! row evaluator compiled the pattern again for every row.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, BooleanArray, BooleanBufferBuilder};
use arrow::datatypes::DataType;

use dynql_core::Value;
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::ScalarFunction;
use dynql_ql::regex_functions::PreparedRegex;
use dynql_ql::texpr::TypedExpr;
use dynql_ql::Result;

use super::evaluate::{evaluate, Batch};

/// Whether `f(args)` runs here: a regex function whose pattern and rewrite are literals.
pub(super) fn applies(f: ScalarFunction, args: &[TypedExpr]) -> bool {
    PreparedRegex::applies_to(f)
        && args[0].as_literal().is_some()
        && args.get(2).is_none_or(|r| r.as_literal().is_some())
}

/// `f(pattern, text[, rewrite])` over every row of `input` (see [`applies`]).
pub(super) fn regex_call(
    f: ScalarFunction,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let predicate = PreparedRegex::is_predicate(f);
    let literal = |i: usize| args.get(i).and_then(TypedExpr::as_literal);
    let (pattern, rewrite) = match (literal(0), literal(2)) {
        (Some(Value::String(p)), None) if predicate => (p.as_slice(), &[][..]),
        (Some(Value::String(p)), Some(Value::String(r))) => (p.as_slice(), r.as_slice()),
        // A null pattern or rewrite: YT's predicates answer false, the rewrites null.
        _ => return Ok(all_missing(predicate, input.rows)),
    };
    let texts = evaluate(&args[1], input, opts)?;
    // Compiled at the first text: a batch of null texts never compiles it, as row by row.
    let prepare = || PreparedRegex::new(f, pattern, rewrite);
    if predicate {
        let mut bits = BooleanBufferBuilder::new(input.rows);
        let mut re = None;
        for i in 0..input.rows {
            let hit = match text_at(texts.as_ref(), i) {
                None => false,
                Some(text) => {
                    if re.is_none() {
                        re = Some(prepare()?);
                    }
                    re.as_ref().is_some_and(|re| re.is_match(text))
                }
            };
            bits.append(hit);
        }
        return Ok(Arc::new(BooleanArray::new(bits.finish(), None)));
    }
    let mut out = BinaryBuilder::with_capacity(input.rows, 0);
    let mut re = None;
    for i in 0..input.rows {
        let Some(text) = text_at(texts.as_ref(), i) else {
            out.append_null();
            continue;
        };
        if re.is_none() {
            re = Some(prepare()?);
        }
        match re
            .as_ref()
            .map(|re| re.rewrite(text))
            .transpose()?
            .flatten()
        {
            Some(value) => {
                input.budget.charge(value.len() as u64)?;
                out.append_value(value);
            }
            None => out.append_null(),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// The bytes of row `i` of a string array (`Binary` or `BinaryView`), `None` for a null.
fn text_at(a: &dyn Array, i: usize) -> Option<&[u8]> {
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        DataType::BinaryView => Some(a.as_binary_view().value(i)),
        DataType::LargeBinary => Some(a.as_binary::<i64>().value(i)),
        _ => a.as_binary_opt::<i32>().map(|b| b.value(i)),
    }
}

/// What every row gives when the pattern or rewrite is null.
fn all_missing(predicate: bool, rows: usize) -> ArrayRef {
    if predicate {
        Arc::new(BooleanArray::from(vec![false; rows]))
    } else {
        arrow::array::new_null_array(&DataType::Binary, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column};
    use super::*;
    use dynql_core::ValueType;
    use dynql_ql::texpr::TExpr;

    fn call(f: ScalarFunction, args: Vec<TypedExpr>) -> TypedExpr {
        let ty = if PreparedRegex::is_predicate(f) {
            ValueType::Boolean
        } else {
            ValueType::String
        };
        TypedExpr::new(TExpr::Call(f, args), ty)
    }

    fn text(s: &str) -> TypedExpr {
        TypedExpr::literal(Value::String(s.as_bytes().to_vec()), ValueType::String)
    }

    fn null() -> TypedExpr {
        TypedExpr::literal(Value::Null, ValueType::String)
    }

    /// Texts with nulls, empty strings, bytes that are not UTF-8 and many matches.
    fn rows() -> Vec<Vec<Value>> {
        let texts: Vec<Option<&[u8]>> = vec![
            Some(b"abc123def45"),
            None,
            Some(b""),
            Some(b"\xff\xfe7"),
            Some(b"no digits"),
            Some(b"1-2-3-4-5-6-7-8-9"),
        ];
        texts
            .into_iter()
            .map(|t| vec![t.map_or(Value::Null, |t| Value::String(t.to_vec()))])
            .collect()
    }

    #[test]
    fn every_regex_function_agrees_with_the_row_evaluator() {
        let s = || column(0, ValueType::String);
        use ScalarFunction as S;
        let cases = vec![
            call(S::RegexFullMatch, vec![text(r"[a-z]+\d+[a-z]+\d+"), s()]),
            call(S::RegexFullMatch, vec![text(""), s()]),
            call(S::RegexPartialMatch, vec![text(r"\d"), s()]),
            call(S::RegexPartialMatch, vec![null(), s()]),
            call(S::RegexReplaceFirst, vec![text(r"\d+"), s(), text("<\\0>")]),
            call(S::RegexReplaceAll, vec![text(r"(\d)"), s(), text("[\\1]")]),
            call(S::RegexReplaceAll, vec![text(""), s(), text("-")]),
            call(S::RegexReplaceAll, vec![text(r"\d"), s(), null()]),
            call(
                S::RegexExtract,
                vec![text(r"([a-z]+)(\d+)"), s(), text("\\2:\\1")],
            ),
            call(S::RegexExtract, vec![null(), s(), text("x")]),
        ];
        for e in &cases {
            assert!(
                matches!(&e.kind, TExpr::Call(f, args) if applies(*f, args)),
                "{e:?}"
            );
            agree(e, &[ValueType::String], &rows(), EvalOptions::default());
        }
    }

    #[test]
    fn a_bad_pattern_fails_as_the_row_evaluator_does_and_only_with_a_text() {
        let e = call(
            ScalarFunction::RegexReplaceAll,
            vec![text("(unclosed"), column(0, ValueType::String), text("x")],
        );
        agree(&e, &[ValueType::String], &rows(), EvalOptions::default());
        // Null texts only: nothing to compile the pattern for, as row by row.
        agree(
            &e,
            &[ValueType::String],
            &[vec![Value::Null], vec![Value::Null]],
            EvalOptions::default(),
        );
    }

    #[test]
    fn a_pattern_from_a_column_is_left_to_the_row_path() {
        let e = call(
            ScalarFunction::RegexPartialMatch,
            vec![column(0, ValueType::String), text("abc")],
        );
        let TExpr::Call(f, args) = &e.kind else {
            unreachable!()
        };
        assert!(!applies(*f, args));
    }
}
