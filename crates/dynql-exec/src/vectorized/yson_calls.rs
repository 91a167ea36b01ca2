//! The YSON functions over arrays (issue 41): `try_get_*` / `get_*`, `list_contains`,
//! `yson_length`, `any_to_yson_string`, `yson_string_to_any`, `to_any`, `make_list`,
//! `make_map`, `make_entity`, and beside them `greatest` of strings and `regex_escape`, with
//! the row evaluator's semantics: they call, value by value, the very functions of
//! [`dynql_ql::ypath`] the row evaluator calls (so malformed YSON, missing paths and wrong types
//! give its nulls and its errors, word for word), every string or `any` value built is checked
//! against the string limit where the row path checks it and charged to the batch's budget
//! before it is kept, row after row as the row path charges.
//!
//! What is gained over the row path: an `any` or string column is read in place, not copied
//! into a value per row; a literal is converted once per batch (a literal YPath parsed once, a
//! column of paths again only where it changes; a literal `list_contains` needle or `make_*`
//! argument converted to YSON once); the result is built straight into an Arrow builder.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, UInt64Builder,
};

use dynql_core::arrow_convert::array_value;
use dynql_core::{Value, ValueType, Yson};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::{call_scalar, regex_escape, ScalarFunction};
use dynql_ql::texpr::TypedExpr;
use dynql_ql::value_limits::check_string_length;
use dynql_ql::ypath::{self, YPath};
use dynql_ql::{Error, Result};

use super::budget::Budget;
use super::evaluate::{evaluate, runtime, Batch};
use super::string_calls::Strings;

#[cfg(test)]
thread_local! {
    /// The calls [`yson_call`] has run on this thread: how the tests see that `evaluate`
    /// dispatches here.
    static CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether `f(args)` runs here: the functions above over arguments of their declared types
/// (`make_map` with an even number of arguments and string keys; `greatest` of strings), each
/// literal's value of its expression's type (or null), the call of its result type.
pub(super) fn applies(f: ScalarFunction, e: &TypedExpr, args: &[TypedExpr]) -> bool {
    use ScalarFunction as S;
    use ValueType::{Any, Boolean, Int64, String};
    let typed = |want: &[ValueType]| {
        args.len() == want.len() && args.iter().zip(want).all(|(a, t)| a.ty == *t)
    };
    let result = match (f, args) {
        (S::GetByPath(t, _), _) if typed(&[Any, String]) => t,
        (S::ListContains, [list, _]) if list.ty == Any => Boolean,
        (S::YsonLength, _) if typed(&[Any]) => Int64,
        (S::AnyToYsonString, _) if typed(&[Any]) => String,
        (S::YsonStringToAny, _) if typed(&[String]) => Any,
        (S::RegexEscape, _) if typed(&[String]) => String,
        (S::ToAny, [_]) | (S::MakeList, _) | (S::MakeEntity, []) => Any,
        (S::MakeMap, _)
            if args.len().is_multiple_of(2) && args.iter().step_by(2).all(|k| k.ty == String) =>
        {
            Any
        }
        (S::Greatest, [_, ..]) if args.iter().all(|a| a.ty == String) => String,
        _ => return false,
    };
    // The row path passes a literal on as it is; here it is read by its expression's type.
    let literals = args.iter().all(|a| {
        a.as_literal()
            .is_none_or(|v| v.is_null() || v.value_type() == a.ty)
    });
    e.ty == result && literals
}

/// `f(args)` over every row of `input` (see [`applies`]); `e` is the call.
pub(super) fn yson_call(
    f: ScalarFunction,
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    use ScalarFunction as S;
    #[cfg(test)]
    CALLS.set(CALLS.get() + 1);
    let items = args
        .iter()
        .map(|a| Item::of(a, input, opts))
        .collect::<Result<Vec<_>>>()?;
    let rows = input.rows;
    // `to_any` and `greatest` give back an argument (or its text), which the row path's
    // `check_result` does not hold against the string limit.
    let check = !matches!(f, S::ToAny | S::Greatest);
    let mut out = Output::new(e.ty, rows, input.budget, check);
    match f {
        S::GetByPath(target, strict) => {
            // Parsed at the first row that needs it, again only where the path changes.
            let mut path: Option<YPath> = None;
            for i in 0..rows {
                let (Some(doc), Some(text)) = (items[0].bytes(i), items[1].bytes(i)) else {
                    out.push_null();
                    continue;
                };
                if path.as_ref().is_none_or(|p| p.text() != text) {
                    path = Some(YPath::parse(text)?);
                }
                let v = match &path {
                    Some(p) => p.get(doc, target, strict)?,
                    None => Value::Null,
                };
                out.push(&v)?;
            }
        }
        S::ListContains => {
            let (lists, needles) = (&items[0], &items[1]);
            for i in 0..rows {
                let list = match lists.bytes(i) {
                    Some(list) if !needles.is_null(i) => list,
                    _ => {
                        out.push_null();
                        continue;
                    }
                };
                // The list is read before the needle, as the row path reads them.
                let list = ypath::list_items(list)?;
                let needle = needles.yson(i)?;
                out.push(&Value::Boolean(ypath::list_holds(&list, &needle)))?;
            }
        }
        S::YsonLength | S::AnyToYsonString | S::YsonStringToAny | S::RegexEscape => {
            for i in 0..rows {
                let Some(b) = items[0].bytes(i) else {
                    out.push_null();
                    continue;
                };
                match f {
                    S::YsonLength => out.push(&Value::Int64(ypath::yson_length_of(b)?))?,
                    S::RegexEscape => out.push_bytes(&regex_escape(b))?,
                    _ => out.push_bytes(&ypath::canonical_text(b)?)?,
                }
            }
        }
        S::ToAny => {
            let item = &items[0];
            // A literal's text is made once.
            let constant = match item {
                Item::Constant(v, _) => Some(ypath::to_any(v)),
                _ => None,
            };
            for i in 0..rows {
                match (&constant, item) {
                    (Some(Ok(v)), _) => out.push(v)?,
                    (Some(Err(err)), _) => return Err(err.clone()),
                    // An `any` value passes through as it is.
                    (None, Item::Bytes(s, true)) => match s.get(i) {
                        Some(b) => out.push_bytes(b)?,
                        None => out.push(&ypath::to_any(&Value::Null)?)?,
                    },
                    (None, _) => out.push(&ypath::to_any(&item.value(i))?)?,
                }
            }
        }
        S::MakeList => {
            for i in 0..rows {
                let items_of_row = items.iter().map(|a| a.yson(i).map(Cow::into_owned));
                let v = ypath::make_list_with(string_bytes(&items, i), items_of_row)?;
                out.push(&v)?;
            }
        }
        S::MakeMap => {
            for i in 0..rows {
                let pairs = items
                    .chunks(2)
                    .map(|pair| (pair[0].bytes(i).map(<[u8]>::to_vec), &pair[1]));
                let v = ypath::make_map_with(string_bytes(&items, i), pairs, |value: &Item| {
                    value.yson(i).map(Cow::into_owned)
                })?;
                out.push(&v)?;
            }
        }
        S::MakeEntity => {
            if rows > 0 {
                let v = call_scalar(f, &[], e.ty)?;
                for _ in 0..rows {
                    out.push(&v)?;
                }
            }
        }
        S::Greatest => {
            for i in 0..rows {
                // The greatest in YT's (bytewise) order, the last of equal ones as `max_by`
                // keeps it; a null anywhere is the row path's error.
                let mut best: Option<&[u8]> = None;
                for a in &items {
                    let Some(b) = a.bytes(i) else {
                        call_scalar(f, &[Value::Null], e.ty)?;
                        return Err(runtime("greatest of a null argument did not fail"));
                    };
                    if best.is_none_or(|m| b >= m) {
                        best = Some(b);
                    }
                }
                match best {
                    Some(b) => out.push_bytes(b)?,
                    None => out.push_null(),
                }
            }
        }
        _ => unreachable!("yson_call of {f:?}: `applies` admits these functions only"),
    }
    Ok(out.finish())
}

/// The bytes of row `i`'s string arguments, which `make_list` and `make_map` check first.
fn string_bytes(items: &[Item], i: usize) -> usize {
    items
        .iter()
        .fold(0usize, |n, a| n.saturating_add(a.string_bytes(i)))
}

/// An argument over a batch, read as the row path reads it.
enum Item {
    /// A literal: its value, and its YSON once asked for (an error kept for every row).
    Constant(Value, OnceCell<Result<Yson>>),
    /// A string (`false`) or `any` (`true`) column, read in place.
    Bytes(Strings, bool),
    /// A column of another type, read value by value.
    Column(ArrayRef, ValueType),
}

impl Item {
    fn of(a: &TypedExpr, input: Batch<'_>, opts: EvalOptions) -> Result<Item> {
        Ok(match a.as_literal() {
            Some(v) => Item::Constant(v.clone(), OnceCell::new()),
            None if matches!(a.ty, ValueType::String | ValueType::Any) => {
                Item::Bytes(Strings::of(a, input, opts)?, a.ty == ValueType::Any)
            }
            None => Item::Column(evaluate(a, input, opts)?, a.ty),
        })
    }

    fn is_null(&self, i: usize) -> bool {
        match self {
            Item::Constant(v, _) => v.is_null(),
            Item::Bytes(s, _) => s.get(i).is_none(),
            Item::Column(a, ty) => array_value(a.as_ref(), *ty, i).is_null(),
        }
    }

    /// Row `i`'s bytes, for a string or `any` argument (`None`: null).
    fn bytes(&self, i: usize) -> Option<&[u8]> {
        match self {
            Item::Constant(Value::String(b) | Value::Any(b), _) => Some(b),
            Item::Bytes(s, _) => s.get(i),
            _ => None,
        }
    }

    /// The bytes row `i`'s value holds if it is a string (what `make_*` count).
    fn string_bytes(&self, i: usize) -> usize {
        match self {
            Item::Constant(Value::String(b), _) => b.len(),
            Item::Bytes(s, false) => s.get(i).map_or(0, <[u8]>::len),
            _ => 0,
        }
    }

    /// Row `i`'s value as YSON, as [`ypath::yson_of`] converts it (`#` for null).
    fn yson(&self, i: usize) -> Result<Cow<'_, Yson>> {
        Ok(match self {
            Item::Constant(v, yson) => match yson.get_or_init(|| ypath::yson_of(v)) {
                Ok(y) => Cow::Borrowed(y),
                Err(err) => return Err(err.clone()),
            },
            Item::Bytes(s, any) => Cow::Owned(match s.get(i) {
                None => Yson::Entity,
                Some(b) if *any => ypath::parse_any(b)?,
                Some(b) => Yson::String(b.to_vec()),
            }),
            Item::Column(a, ty) => Cow::Owned(ypath::yson_of(&array_value(a.as_ref(), *ty, i))?),
        })
    }

    /// Row `i`'s value.
    fn value(&self, i: usize) -> Value {
        match self {
            Item::Constant(v, _) => v.clone(),
            Item::Bytes(s, any) => match s.get(i) {
                None => Value::Null,
                Some(b) if *any => Value::Any(b.to_vec()),
                Some(b) => Value::String(b.to_vec()),
            },
            Item::Column(a, ty) => array_value(a.as_ref(), *ty, i),
        }
    }
}

/// A call's result column, each row's value appended as the row path keeps it: a string or
/// `any` value checked against the string limit (where `check`) and charged to the budget
/// first.
struct Output<'a> {
    builder: Builder,
    budget: &'a Budget,
    check: bool,
}

enum Builder {
    Int64(Int64Builder),
    Uint64(UInt64Builder),
    Double(Float64Builder),
    Boolean(BooleanBuilder),
    Bytes(BinaryBuilder),
}

/// A value of another type than the call's, which `applies` rules out.
fn mismatch() -> Error {
    runtime("A YSON function's value does not have the type of its call")
}

impl<'a> Output<'a> {
    fn new(ty: ValueType, rows: usize, budget: &'a Budget, check: bool) -> Output<'a> {
        let builder = match ty {
            ValueType::Int64 => Builder::Int64(Int64Builder::with_capacity(rows)),
            ValueType::Uint64 => Builder::Uint64(UInt64Builder::with_capacity(rows)),
            ValueType::Double => Builder::Double(Float64Builder::with_capacity(rows)),
            ValueType::Boolean => Builder::Boolean(BooleanBuilder::with_capacity(rows)),
            // Strings and `any` (`applies` admits no null-typed call).
            _ => Builder::Bytes(BinaryBuilder::with_capacity(rows, 0)),
        };
        Output {
            builder,
            budget,
            check,
        }
    }

    fn push_null(&mut self) {
        match &mut self.builder {
            Builder::Int64(b) => b.append_null(),
            Builder::Uint64(b) => b.append_null(),
            Builder::Double(b) => b.append_null(),
            Builder::Boolean(b) => b.append_null(),
            Builder::Bytes(b) => b.append_null(),
        }
    }

    fn push_bytes(&mut self, v: &[u8]) -> Result<()> {
        let Builder::Bytes(b) = &mut self.builder else {
            return Err(mismatch());
        };
        if self.check {
            check_string_length(v.len())?;
        }
        if !v.is_empty() {
            self.budget.charge(v.len() as u64)?;
        }
        b.append_value(v);
        Ok(())
    }

    fn push(&mut self, v: &Value) -> Result<()> {
        match v {
            Value::Null => self.push_null(),
            Value::String(b) | Value::Any(b) => return self.push_bytes(b),
            _ => match (&mut self.builder, v) {
                (Builder::Int64(o), Value::Int64(x)) => o.append_value(*x),
                (Builder::Uint64(o), Value::Uint64(x)) => o.append_value(*x),
                (Builder::Double(o), Value::Double(x)) => o.append_value(*x),
                (Builder::Boolean(o), Value::Boolean(x)) => o.append_value(*x),
                _ => return Err(mismatch()),
            },
        }
        Ok(())
    }

    fn finish(self) -> ArrayRef {
        match self.builder {
            Builder::Int64(mut b) => Arc::new(b.finish()),
            Builder::Uint64(mut b) => Arc::new(b.finish()),
            Builder::Double(mut b) => Arc::new(b.finish()),
            Builder::Boolean(mut b) => Arc::new(b.finish()),
            Builder::Bytes(mut b) => Arc::new(b.finish()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::calls::call as row_path;
    use super::super::evaluate::to_array;
    use super::super::kernel_tests::{agree, column, evaluate_with, rows, Domain};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    /// The columns: the scalars of [`rows`] (i0 u1 d2 b3 s4), then two `any` columns: a5 of
    /// well-formed documents, a6 of anything (malformed YSON and bytes too).
    const TYPES: [ValueType; 7] = [
        ValueType::Int64,
        ValueType::Uint64,
        ValueType::Double,
        ValueType::Boolean,
        ValueType::String,
        ValueType::Any,
        ValueType::Any,
    ];

    /// Strings that are paths (good and bad), YSON texts (good and bad), keys and bytes.
    const DOMAIN: Domain = Domain {
        int64_edges: &[i64::MIN, 1],
        int64: -2..3,
        uint64: 0..3,
        doubles: &[-0.0, 0.0, 1.0, 2.5, f64::NAN],
        with_edge_doubles: false,
        strings: &[
            b"",
            b"x",
            b"/a",
            b"/l/1",
            b"/l/-1",
            b"/@x",
            b"a/",
            b"/b\\/c",
            b"[1;2]",
            b"<x=1>{a=1}",
            b"%true",
            b"}{",
            b"\xff\x00.*",
        ],
        values_per_null: 6,
    };

    /// Well-formed documents: maps, lists and scalars, with attributes.
    const DOCS: [&str; 14] = [
        "{a=1;b=\"x\";l=[1;2u;%true;\"x\";2.5;#;[1];{a=1}];\"b/c\"=%false}",
        "<x=5>{a=2u;l=[]}",
        "<x=[1]>[1;\"x\";%false;#;2.5;%nan;-0.;1u]",
        "[{a=1};[];<x=1>1]",
        "{}",
        "[]",
        "#",
        "1",
        "-7",
        "3u",
        "2.5",
        "%true",
        "\"x\"",
        "<x=\"y\">\"s\"",
    ];

    fn docs() -> impl Strategy<Value = Vec<u8>> {
        proptest::sample::select(DOCS.to_vec()).prop_map(|d| d.as_bytes().to_vec())
    }

    /// Documents, malformed YSON and bytes.
    fn anything() -> impl Strategy<Value = Vec<u8>> {
        let malformed = vec!["{a=", "[1;2", "}{", "", "1 2", "[1;;2]", "<>", "\"\\xff\""];
        prop_oneof![
            3 => docs(),
            2 => proptest::sample::select(malformed).prop_map(|d| d.as_bytes().to_vec()),
            2 => "[\\[\\]{}<>;=a1u#%\"x/. ]{0,8}".prop_map(String::into_bytes),
            1 => proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    /// Up to 29 rows of [`TYPES`].
    fn table() -> impl Strategy<Value = Vec<Vec<Value>>> {
        let maybe = |s: BoxedStrategy<Vec<u8>>| proptest::option::weighted(0.85, s);
        let anys = (maybe(docs().boxed()), maybe(anything().boxed()));
        let anys = proptest::collection::vec(anys, 30);
        (rows(&DOMAIN), anys).prop_map(|(scalars, anys)| {
            scalars
                .into_iter()
                .zip(anys)
                .map(|(mut row, (a5, a6))| {
                    row.push(a5.map_or(Value::Null, Value::Any));
                    row.push(a6.map_or(Value::Null, Value::Any));
                    row
                })
                .collect::<Vec<_>>()
        })
    }

    fn call(f: ScalarFunction, args: Vec<TypedExpr>, ty: ValueType) -> TypedExpr {
        TypedExpr::new(TExpr::Call(f, args), ty)
    }

    fn doc(text: &str) -> TypedExpr {
        TypedExpr::literal(Value::Any(text.as_bytes().to_vec()), ValueType::Any)
    }

    fn text(s: &str) -> TypedExpr {
        TypedExpr::literal(Value::string(s), ValueType::String)
    }

    fn null(ty: ValueType) -> TypedExpr {
        TypedExpr::literal(Value::Null, ty)
    }

    /// Every function over the columns of [`TYPES`] and literals (null, malformed YSON).
    fn cases() -> Vec<TypedExpr> {
        use ScalarFunction as S;
        use ValueType::{Any, Boolean, Double, Int64, String, Uint64};
        let c = |i: usize| column(i, TYPES[i]);
        let mut cases = Vec::new();
        for t in [Int64, Uint64, Double, Boolean, String, Any] {
            for strict in [false, true] {
                let f = S::GetByPath(t, strict);
                cases.push(call(f, vec![c(5), c(4)], t));
                cases.push(call(f, vec![c(6), text("/a")], t));
                for p in ["/a", "/l/1", "/l/-1", "/@x", "", "/b\\/c", "/l/7/a", "bad"] {
                    cases.push(call(f, vec![c(5), text(p)], t));
                }
                cases.push(call(f, vec![c(5), null(String)], t));
                cases.push(call(f, vec![doc("{a=[1;2u]}"), c(4)], t));
            }
        }
        let needles = [
            TypedExpr::literal(Value::Int64(1), Int64),
            TypedExpr::literal(Value::Uint64(2), Uint64),
            TypedExpr::literal(Value::Double(2.5), Double),
            TypedExpr::literal(Value::Boolean(true), Boolean),
            text("x"),
            doc("[1]"),
            doc("{a="),
            null(Int64),
        ];
        for needle in (0..7).map(c).chain(needles) {
            cases.push(call(S::ListContains, vec![c(5), needle], Boolean));
        }
        cases.push(call(S::ListContains, vec![c(6), c(0)], Boolean));
        cases.push(call(S::ListContains, vec![doc("[1;\"x\"]"), c(4)], Boolean));
        for a in [c(5), c(6), doc("<x=1>[1; 2]"), doc("[1;"), null(Any)] {
            cases.push(call(S::YsonLength, vec![a.clone()], Int64));
            cases.push(call(S::AnyToYsonString, vec![a.clone()], String));
            cases.push(call(S::ToAny, vec![a], Any));
        }
        for s in [c(4), text("{a = 1}"), null(String)] {
            cases.push(call(S::YsonStringToAny, vec![s.clone()], Any));
            cases.push(call(S::RegexEscape, vec![s.clone()], String));
            cases.push(call(S::Greatest, vec![s.clone(), c(4)], String));
            cases.push(call(S::Greatest, vec![c(4), s, c(4)], String));
        }
        cases.push(call(S::Greatest, vec![c(4)], String));
        for i in 0..5 {
            cases.push(call(S::ToAny, vec![c(i)], Any));
        }
        cases.push(call(S::ToAny, vec![text("a\"\u{e9}")], Any));
        cases.push(call(S::ToAny, vec![null(Int64)], Any));
        cases.push(call(S::MakeEntity, vec![], Any));
        cases.push(call(S::MakeList, vec![], Any));
        cases.push(call(S::MakeList, (0..7).map(c).collect(), Any));
        let mixed = vec![c(4), text("k"), doc("<a=1>{b=2}"), null(Int64), c(5)];
        cases.push(call(S::MakeList, mixed, Any));
        cases.push(call(S::MakeList, vec![c(0), doc("[1;")], Any));
        let map = vec![c(4), c(5), text("k"), c(0), text("m"), c(6)];
        cases.push(call(S::MakeMap, map, Any));
        let map = vec![text("k"), c(2), null(String), c(3)];
        cases.push(call(S::MakeMap, map, Any));
        cases.push(call(S::MakeMap, vec![], Any));
        cases
    }

    /// The call `e` over `rows` within a budget of `limit` bytes, by this kernel or by the
    /// row path's `calls::call`: its values (or error) and the bytes charged.
    fn within(
        e: &TypedExpr,
        rows: &[Vec<Value>],
        limit: u64,
        kernel: bool,
    ) -> (std::result::Result<Vec<Value>, std::string::String>, u64) {
        let columns: Vec<ArrayRef> = TYPES
            .iter()
            .enumerate()
            .map(|(c, t)| to_array(*t, &rows.iter().map(|r| r[c].clone()).collect::<Vec<_>>()))
            .collect::<Result<_>>()
            .unwrap();
        let budget = Budget::new(limit, rows.len());
        let input = Batch {
            columns: &columns,
            types: &TYPES,
            rows: rows.len(),
            budget: &budget,
        };
        let TExpr::Call(f, args) = &e.kind else {
            unreachable!()
        };
        let opts = EvalOptions::default();
        let got = if kernel {
            yson_call(*f, e, args, input, opts)
        } else {
            row_path(*f, e, args, input, opts)
        };
        let got = got
            .map(|a| {
                (0..rows.len())
                    .map(|i| array_value(a.as_ref(), e.ty, i))
                    .collect::<Vec<_>>()
            })
            .map_err(|err| err.to_string());
        (got, budget.used())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Invariant: each kernel gives what the row evaluator gives, row by row: nulls,
        /// malformed YSON, missing paths, values of other types, and the row path's errors
        /// word for word; and it charges the batch's budget what the row path charges, failing
        /// at the same row when the budget runs out.
        #[test]
        fn every_yson_kernel_agrees_with_the_row_evaluator(rows in table()) {
            for e in cases() {
                let TExpr::Call(f, args) = &e.kind else { unreachable!() };
                prop_assert!(applies(*f, &e, args), "{:?}", e);
                agree(&e, &TYPES, &rows, EvalOptions::default());
                let kernel = within(&e, &rows, u64::MAX, true);
                prop_assert_eq!(&kernel, &within(&e, &rows, u64::MAX, false), "{:?}", e);
                if kernel.1 > 1 {
                    let half = kernel.1 / 2;
                    let (a, b) = (within(&e, &rows, half, true), within(&e, &rows, half, false));
                    prop_assert_eq!(a, b, "{:?}", e);
                }
            }
        }
    }

    #[test]
    fn evaluate_dispatches_the_yson_functions_here() {
        let row = vec![
            Value::Int64(1),
            Value::Uint64(2),
            Value::Double(2.5),
            Value::Boolean(true),
            Value::string("/l/1"),
            Value::Any(DOCS[0].as_bytes().to_vec()),
            Value::Any(b"[1;2]".to_vec()),
        ];
        let one = std::slice::from_ref(&row);
        let budget = Budget::new(u64::MAX, 1);
        for e in cases() {
            let before = CALLS.get();
            let _ = evaluate_with(&e, &TYPES, one, &budget);
            assert_eq!(CALLS.get(), before + 1, "{e:?}");
        }
        // What is not admitted runs elsewhere: an odd make_map, greatest of numbers.
        let odd = call(ScalarFunction::MakeMap, vec![text("k")], ValueType::Any);
        let numbers = call(
            ScalarFunction::Greatest,
            vec![column(0, ValueType::Int64)],
            ValueType::Int64,
        );
        for e in [odd, numbers] {
            let before = CALLS.get();
            let _ = evaluate_with(&e, &TYPES, one, &budget);
            assert_eq!(CALLS.get(), before, "{e:?}");
            agree(&e, &TYPES, one, EvalOptions::default());
        }
    }

    #[test]
    fn values_past_the_string_limit_fail_as_on_the_row_path() {
        use ScalarFunction as S;
        use ValueType::{Any, String};
        let limit = dynql_ql::value_limits::MAX_STRING_VALUE_LENGTH;
        let big = vec![b'.'; limit / 2 + 1];
        let mut quoted = vec![b'"'];
        quoted.extend(std::iter::repeat_n(0xffu8, limit / 3));
        quoted.push(b'"');
        let rows = vec![vec![
            Value::String(big.clone()),
            Value::String(big),
            Value::Any(quoted),
            Value::String(vec![b'm'; limit]),
        ]];
        let types = [String, String, Any, String];
        let c = |i: usize| column(i, types[i]);
        for e in [
            call(S::MakeList, vec![c(0), c(1)], Any),
            call(S::MakeMap, vec![text("k"), c(0), text("l"), c(1)], Any),
            call(S::RegexEscape, vec![c(0)], String),
            call(S::AnyToYsonString, vec![c(2)], String),
            call(S::ToAny, vec![c(3)], Any),
            // Chosen, not computed: no limit.
            call(S::Greatest, vec![c(3), c(0)], String),
        ] {
            let TExpr::Call(f, args) = &e.kind else {
                unreachable!()
            };
            assert!(applies(*f, &e, args), "{e:?}");
            agree(&e, &types, &rows, EvalOptions::default());
            let budget = Budget::new(u64::MAX, rows.len());
            let got = evaluate_with(&e, &types, &rows, &budget);
            let too_long = got
                .as_ref()
                .is_err_and(|err| err.to_string().contains("String value is too long"));
            assert_eq!(too_long, *f != S::Greatest, "{e:?}");
        }
    }
}
