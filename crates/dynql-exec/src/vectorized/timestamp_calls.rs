//! Timestamp functions over arrays (issue 41): `timestamp_floor_{hour,day,week,month,quarter,
//! year}` of an `int64` and `format_timestamp` with a literal format, with the row
//! evaluator's semantics: null gives null, seconds since the epoch in UTC, the proleptic
//! Gregorian calendar, weeks starting on Monday.
//!
//! The floors are integer arithmetic per value (month, quarter and year through the civil
//! date of the day number, without a calendar library). A format is parsed once per batch.
//! A value outside the range the kernels are sure of (years -200,000 to 200,000, or YT's
//! 1..=9999 for a format), or any value under a format that does not parse, is handed to the
//! row evaluator, so its error (or value) is its own, word for word.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, Int64Array};
use arrow::datatypes::Int64Type;

use dynql_core::{Value, ValueType};
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::{call_scalar, FloorUnit, ScalarFunction, TimestampFormat};
use dynql_ql::texpr::TypedExpr;
use dynql_ql::value_limits::check_string_length;
use dynql_ql::Result;

use super::evaluate::{evaluate, Batch};

/// The seconds of about 200,000 years either side of the epoch: well inside the row
/// evaluator's calendar (±262,143 years), far from integer overflow.
const SURE: i64 = 6_300_000_000_000;

const DAY: i64 = 86_400;

/// Whether `f(args)` runs here: a floor of an `int64`, or `format_timestamp` of an `int64`
/// with a literal format.
pub(super) fn applies(f: ScalarFunction, args: &[TypedExpr]) -> bool {
    match (f, args) {
        (ScalarFunction::TimestampFloor(_), [t]) => t.ty == ValueType::Int64,
        (ScalarFunction::FormatTimestamp, [t, format]) => {
            t.ty == ValueType::Int64 && matches!(format.as_literal(), Some(Value::String(_)))
        }
        _ => false,
    }
}

/// `f(args)` over every row of `input` (see [`applies`]).
pub(super) fn timestamp_call(
    f: ScalarFunction,
    e: &TypedExpr,
    args: &[TypedExpr],
    input: Batch<'_>,
    opts: EvalOptions,
) -> Result<ArrayRef> {
    let times = evaluate(&args[0], input, opts)?;
    let times = times.as_primitive::<Int64Type>();
    match (f, args.get(1).and_then(TypedExpr::as_literal)) {
        (ScalarFunction::TimestampFloor(unit), _) => floor(unit, e, times),
        (_, Some(Value::String(format))) => format_call(e, times, format, input),
        _ => unreachable!("timestamp_call of {f:?}: `applies` admits these forms only"),
    }
}

/// The row evaluator's `f(args)` (its error, where there is one).
fn by_row(f: ScalarFunction, args: &[Value], e: &TypedExpr) -> Result<Value> {
    call_scalar(f, args, e.ty)
}

fn floor(
    unit: FloorUnit,
    e: &TypedExpr,
    times: &arrow::array::PrimitiveArray<Int64Type>,
) -> Result<ArrayRef> {
    let f = ScalarFunction::TimestampFloor(unit);
    let mut out = Vec::with_capacity(times.len());
    for i in 0..times.len() {
        let t = times.value(i);
        out.push(if times.is_null(i) {
            0
        } else if (-SURE..=SURE).contains(&t) {
            floor_of(unit, t)
        } else {
            match by_row(f, &[Value::Int64(t)], e)? {
                Value::Int64(x) => x,
                _ => 0,
            }
        });
    }
    Ok(Arc::new(Int64Array::new(out.into(), times.logical_nulls())))
}

/// The start of `t`'s hour, day, week (Monday), month, quarter or year, for `t` within
/// [`SURE`].
fn floor_of(unit: FloorUnit, t: i64) -> i64 {
    let days = t.div_euclid(DAY);
    let first_of = |month_of: fn(i64) -> i64| {
        let (year, month, _) = civil_from_days(days);
        days_from_civil(year, month_of(month), 1) * DAY
    };
    match unit {
        FloorUnit::Hour => t.div_euclid(3600) * 3600,
        FloorUnit::Day => days * DAY,
        // 1970-01-01 was a Thursday, three days after a Monday.
        FloorUnit::Week => (days - (days + 3).rem_euclid(7)) * DAY,
        FloorUnit::Month => first_of(|m| m),
        FloorUnit::Quarter => first_of(|m| (m - 1) / 3 * 3 + 1),
        FloorUnit::Year => first_of(|_| 1),
    }
}

/// The proleptic Gregorian (year, month, day) of a day number (0 is 1970-01-01), after
/// Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The day number of a proleptic Gregorian date (the inverse of [`civil_from_days`]).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `format_timestamp(t, format)` of each row, the format parsed once; each string checked
/// against the string limit and charged to the budget before it is kept.
fn format_call(
    e: &TypedExpr,
    times: &arrow::array::PrimitiveArray<Int64Type>,
    format: &[u8],
    input: Batch<'_>,
) -> Result<ArrayRef> {
    let parsed = TimestampFormat::parse(format).ok();
    let mut builder = BinaryBuilder::with_capacity(times.len(), 0);
    let mut text = Vec::new();
    for i in 0..times.len() {
        if times.is_null(i) {
            builder.append_null();
            continue;
        }
        let t = times.value(i);
        text.clear();
        match &parsed {
            Some(p) if TimestampFormat::formats(t) => p.write(t, &mut text),
            _ => {
                let args = [Value::Int64(t), Value::String(format.to_vec())];
                if let Value::String(s) = by_row(ScalarFunction::FormatTimestamp, &args, e)? {
                    text = s;
                }
            }
        }
        check_string_length(text.len())?;
        input.budget.charge(text.len() as u64)?;
        builder.append_value(&text);
    }
    Ok(Arc::new(builder.finish()))
}

#[cfg(test)]
mod tests {
    use super::super::kernel_tests::{agree, column};
    use super::*;
    use dynql_ql::texpr::TExpr;
    use proptest::prelude::*;

    const UNITS: [FloorUnit; 6] = [
        FloorUnit::Hour,
        FloorUnit::Day,
        FloorUnit::Week,
        FloorUnit::Month,
        FloorUnit::Quarter,
        FloorUnit::Year,
    ];

    /// Seconds near the edges that matter: the epoch, leap days, YT's 1..=9999 years, the
    /// kernels' sure range and the calendar's, and anything.
    fn times() -> impl Strategy<Value = Option<i64>> {
        proptest::option::of(prop_oneof![
            Just(0i64),
            Just(-1),
            Just(951_782_400), // 2000-02-29
            Just(-62_135_596_800),
            Just(-62_135_596_801),
            Just(253_402_300_799),
            Just(253_402_300_800),
            Just(SURE),
            Just(-SURE - 1),
            Just(8_210_266_876_799), // the calendar's last second, and past it
            Just(8_210_266_876_800),
            Just(-8_334_601_228_800),
            Just(-8_334_601_228_801),
            Just(i64::MIN),
            Just(i64::MAX),
            -100_000_000_000i64..300_000_000_000,
            -SURE..SURE,
            any::<i64>(),
        ])
    }

    fn call(f: ScalarFunction, args: Vec<TypedExpr>) -> TypedExpr {
        let ty = match f {
            ScalarFunction::FormatTimestamp => ValueType::String,
            _ => ValueType::Int64,
        };
        TypedExpr::new(TExpr::Call(f, args), ty)
    }

    fn text(s: &str) -> TypedExpr {
        TypedExpr::literal(Value::string(s), ValueType::String)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Invariant: every floor and `format_timestamp` of a literal format gives what the
        /// row evaluator gives, row by row, errors (out of range, bad formats) included.
        #[test]
        fn every_timestamp_kernel_agrees_with_the_row_evaluator(
            rows in proptest::collection::vec(times(), 0..30),
        ) {
            let rows: Vec<Vec<Value>> = rows
                .into_iter()
                .map(|t| vec![t.map_or(Value::Null, Value::Int64)])
                .collect();
            let types = [ValueType::Int64];
            let t = || column(0, ValueType::Int64);
            let mut cases: Vec<TypedExpr> = UNITS
                .iter()
                .map(|u| call(ScalarFunction::TimestampFloor(*u), vec![t()]))
                .collect();
            for format in [
                "%Y-%m-%dT%H:%M:%S",
                "%d.%m.%y %a %b %j %U",
                "",
                "%",
                "%Q",
                "a very long format past thirty bytes",
            ] {
                cases.push(call(ScalarFunction::FormatTimestamp, vec![t(), text(format)]));
            }
            for e in cases {
                let TExpr::Call(f, args) = &e.kind else { unreachable!() };
                prop_assert!(applies(*f, args), "{:?}", e);
                agree(&e, &types, &rows, EvalOptions::default());
            }
        }
    }

    #[test]
    fn floors_match_the_calendar_over_four_centuries() {
        // Every day from 1600 to 2400 at 13:00, against the row evaluator (chrono).
        let first = -11_676_096_000i64 + 13 * 3600;
        for day in (0..292_200).step_by(7) {
            let t = first + day * DAY;
            for unit in UNITS {
                let f = ScalarFunction::TimestampFloor(unit);
                let expected = call_scalar(f, &[Value::Int64(t)], ValueType::Int64).unwrap();
                assert_eq!(Value::Int64(floor_of(unit, t)), expected, "{unit:?} {t}");
            }
        }
    }
}
