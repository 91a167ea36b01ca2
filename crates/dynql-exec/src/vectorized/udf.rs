//! YT semantics as DataFusion functions: [`YtExpression`], a scalar UDF that evaluates one
//! bound YT QL expression over its input columns ([`super::evaluate`]), and [`YtAggregate`],
//! an aggregate UDF over YT's aggregate states for the aggregates DataFusion's built-ins do
//! not compute exactly as YT (`first`, `argmin`, `argmax`, `cardinality`).

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::scalar::ScalarValue;

use dynql_core::arrow_convert::{array_value, arrow_type};
use dynql_core::{Value, ValueType};
use dynql_ql::aggregate::AggregateState;
use dynql_ql::eval::EvalOptions;
use dynql_ql::functions::AggregateFunction;
use dynql_ql::texpr::{TExpr, TypedExpr};

use super::budget::Budget;
use super::evaluate::{evaluate, Batch};
use crate::select::MAX_BATCH_STRING_BYTES;

/// Distinguishes function instances: each lowered expression is its own function.
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A DataFusion error carrying a query-language error (recovered by
/// [`super::lower::query_error`]).
pub(crate) fn external(e: dynql_ql::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Whether a check runs on an expression's values after evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    None,
    /// ORDER BY keys: a NaN fails the query, as YT cannot order it.
    NoNanToOrder,
}

/// One YT QL expression as a scalar function of the columns it reads: argument `i` is the
/// expression's column `i` (see [`super::lower`]).
#[derive(Debug)]
pub(crate) struct YtExpression {
    id: u64,
    name: String,
    expr: TypedExpr,
    types: Vec<ValueType>,
    options: EvalOptions,
    check: Check,
    signature: Signature,
}

impl YtExpression {
    /// `expr` reads columns `0..types.len()` of the given types.
    pub(crate) fn new(
        expr: TypedExpr,
        types: Vec<ValueType>,
        options: EvalOptions,
        check: Check,
    ) -> YtExpression {
        let id = next_id();
        // Volatile: DataFusion must neither fold nor reorder it, as YT evaluates it where
        // the query puts it (and errors must surface the same). A column of doubles as an
        // ORDER BY key is immutable: only the sort evaluates it, on every row it sorts, and
        // DataFusion then pushes the sort's top-k threshold into the scan (which it does
        // not for a volatile key).
        let volatility = if is_double_order_key(&expr, &types, check) {
            Volatility::Immutable
        } else {
            Volatility::Volatile
        };
        let signature = if types.is_empty() {
            Signature::nullary(volatility)
        } else {
            Signature::any(types.len(), volatility)
        };
        YtExpression {
            id,
            name: format!("yt_{id}"),
            expr,
            types,
            options,
            check,
            signature,
        }
    }
}

impl YtExpression {
    /// Whether the function gives its one argument, a column of doubles, as an ORDER BY key
    /// (see [`double_order_key`]): then it keeps the column's order and bounds.
    pub(crate) fn is_double_order_key(&self) -> bool {
        is_double_order_key(&self.expr, &self.types, self.check)
    }
}

fn is_double_order_key(expr: &TypedExpr, types: &[ValueType], check: Check) -> bool {
    check == Check::NoNanToOrder
        && types == [ValueType::Double]
        && matches!(expr.kind, TExpr::Column(0))
}

impl PartialEq for YtExpression {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for YtExpression {}

impl Hash for YtExpression {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl ScalarUDFImpl for YtExpression {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(arrow_type(self.expr.ty))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let columns = ColumnarValue::values_to_arrays(&args.args)?;
        // One budget per expression and batch (see `MAX_BATCH_STRING_BYTES`).
        let budget = Budget::new(MAX_BATCH_STRING_BYTES, rows);
        let batch = Batch {
            columns: &columns,
            types: &self.types,
            rows,
            budget: &budget,
        };
        let mut result = evaluate(&self.expr, batch, self.options).map_err(external)?;
        if self.check == Check::NoNanToOrder && result.data_type() == &DataType::Float64 {
            result = double_order_key(result)?;
        }
        let declared = arrow_type(self.expr.ty);
        if result.data_type() != &declared {
            if let Some(views) = result.as_binary_view_opt() {
                // The cast copies the strings into one `Binary` buffer, whose i32 offsets
                // Arrow's cast would overflow with a panic.
                let bytes = views.views().iter().map(|v| u64::from(*v as u32)).sum();
                budget.charge(bytes).map_err(external)?;
            }
            result = arrow::compute::cast(&result, &declared)?;
        }
        Ok(ColumnarValue::Array(result))
    }
}

/// Doubles as an ORDER BY key orders them in YT: a NaN fails the query (YT cannot compare
/// it), and -0.0 is 0.0 (they compare equal, so the next key decides; Arrow's total order
/// would put -0.0 first).
fn double_order_key(keys: ArrayRef) -> DfResult<ArrayRef> {
    let values = keys.as_primitive::<Float64Type>();
    // One branch-free pass over the values (which the compiler vectorises) finds whether
    // any slot holds either; most batches hold neither and are given back as they are.
    let negative_zero = (-0.0f64).to_bits();
    let (nan, zero) = values.values().iter().fold((false, false), |(n, z), v| {
        (n | v.is_nan(), z | (v.to_bits() == negative_zero))
    });
    if nan && (0..values.len()).any(|i| values.is_valid(i) && values.value(i).is_nan()) {
        return Err(external(dynql_ql::Error::Runtime(
            "Comparison with NaN in ORDER BY".into(),
        )));
    }
    if !zero {
        return Ok(keys);
    }
    let positive: Float64Array = values.unary(|v| if v == 0.0 { 0.0 } else { v });
    Ok(Arc::new(positive))
}

/// A YT value as a DataFusion scalar of the wire type's Arrow type.
pub(crate) fn scalar(v: &Value, ty: ValueType) -> DfResult<ScalarValue> {
    Ok(match v {
        Value::Null => ScalarValue::try_from(&arrow_type(ty))?,
        Value::Int64(x) => ScalarValue::Int64(Some(*x)),
        Value::Uint64(x) => ScalarValue::UInt64(Some(*x)),
        Value::Double(x) => ScalarValue::Float64(Some(*x)),
        Value::Boolean(x) => ScalarValue::Boolean(Some(*x)),
        Value::String(b) | Value::Any(b) => ScalarValue::Binary(Some(b.clone())),
    })
}

/// A YT aggregate computed with its own states ([`AggregateState`]); partial states travel
/// between DataFusion's aggregation phases as bytes.
#[derive(Debug)]
pub(crate) struct YtAggregate {
    id: u64,
    name: String,
    function: AggregateFunction,
    types: Vec<ValueType>,
    result: ValueType,
    /// Gives each group's state (encoded, see [`AggregateState::encode`]) instead of its
    /// value: WITH TOTALS merges the states of the groups.
    states: bool,
    signature: Signature,
}

impl YtAggregate {
    pub(crate) fn new(
        function: AggregateFunction,
        types: Vec<ValueType>,
        result: ValueType,
    ) -> YtAggregate {
        let id = next_id();
        YtAggregate {
            id,
            name: format!("yt_{}_{id}", function.name()),
            function,
            signature: Signature::any(types.len(), Volatility::Immutable),
            types,
            result,
            states: false,
        }
    }

    /// The aggregate giving its groups' encoded states (bytes) rather than their values.
    pub(crate) fn states(function: AggregateFunction, types: Vec<ValueType>) -> YtAggregate {
        YtAggregate {
            states: true,
            ..YtAggregate::new(function, types, ValueType::String)
        }
    }
}

impl PartialEq for YtAggregate {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for YtAggregate {}

impl Hash for YtAggregate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl AggregateUDFImpl for YtAggregate {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(if self.states {
            DataType::Binary
        } else {
            arrow_type(self.result)
        })
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(Box::new(StateAccumulator {
            state: AggregateState::new(self.function),
            types: self.types.clone(),
            result: self.result,
            states: self.states,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}_state", args.name),
            DataType::Binary,
            true,
        ))])
    }
}

/// One group's [`AggregateState`].
#[derive(Debug)]
struct StateAccumulator {
    state: AggregateState,
    types: Vec<ValueType>,
    result: ValueType,
    states: bool,
}

impl Accumulator for StateAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let rows = values.first().map_or(0, |a| a.len());
        let mut args = Vec::with_capacity(values.len());
        for row in 0..rows {
            args.clear();
            for (a, t) in values.iter().zip(&self.types) {
                args.push(array_value(a.as_ref(), *t, row));
            }
            self.state.update(&args).map_err(external)?;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        if self.states {
            return Ok(ScalarValue::Binary(Some(self.state.encode())));
        }
        scalar(&self.state.finish(), self.result)
    }

    fn size(&self) -> usize {
        let values = match &self.state {
            AggregateState::Cardinality(set) => set.len() * 32,
            _ => 64,
        };
        std::mem::size_of::<Self>() + values
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.state.encode()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let Some(states) = states.first() else {
            return Ok(());
        };
        let states = states.as_binary::<i32>();
        for i in 0..states.len() {
            if states.is_valid(i) {
                let other = AggregateState::decode(states.value(i)).map_err(external)?;
                self.state.merge(&other).map_err(external)?;
            }
        }
        Ok(())
    }
}
