//! Constant folding of literal-only sub-expressions.

use crate::error::Result;
use crate::eval::{evaluate, EvalOptions};
use crate::functions::ScalarFunction;
use crate::texpr::{TExpr, TypedExpr};

/// Folds literal-only sub-expressions (their errors surface here, before any row is read).
pub(crate) fn fold(mut e: TypedExpr, opts: EvalOptions) -> Result<TypedExpr> {
    fold_in_place(&mut e, opts)?;
    Ok(e)
}

fn fold_in_place(e: &mut TypedExpr, opts: EvalOptions) -> Result<()> {
    match &mut e.kind {
        TExpr::Literal(_) | TExpr::Column(_) => return Ok(()),
        TExpr::Unary(_, x) | TExpr::IsNull(x) => fold_in_place(x, opts)?,
        TExpr::Binary(_, l, r) => {
            fold_in_place(l, opts)?;
            fold_in_place(r, opts)?;
        }
        TExpr::In { operands, .. } | TExpr::Between { operands, .. } => {
            for o in operands {
                fold_in_place(o, opts)?;
            }
        }
        TExpr::Like {
            operand,
            pattern,
            escape,
            ..
        } => {
            fold_in_place(operand, opts)?;
            fold_in_place(pattern, opts)?;
            if let Some(x) = escape {
                fold_in_place(x, opts)?;
            }
        }
        // CASE and TRANSFORM branches run lazily; fold them only as a whole.
        TExpr::Case { .. } | TExpr::Transform { .. } => {}
        TExpr::Call(ScalarFunction::If, _) => {}
        TExpr::Call(_, args) => {
            for a in args {
                fold_in_place(a, opts)?;
            }
        }
    }
    if e.is_constant() {
        let v = evaluate(e, &[], opts)?;
        e.kind = TExpr::Literal(v);
    }
    Ok(())
}
