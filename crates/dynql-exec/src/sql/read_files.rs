//! `read_parquet('dump/*.parquet')` and `read_csv('in/*.csv')`, DuckDB's table functions:
//! one location or a list of them (`read_parquet(['a.parquet', 'b.parquet'])`), and
//! `union_by_name => true` to combine files by column name.
//!
//! DataFusion calls table functions while it plans, synchronously, and opening files (listing
//! them, reading their schemas) is asynchronous. So planning is tried, and each source the
//! functions are asked for and has not been opened is noted and makes planning fail; the
//! session opens the noted sources and plans again. Each attempt opens at least one new
//! source, so a statement plans at most once more than it names sources.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, DataFusionError, ScalarValue};
use datafusion::logical_expr::Expr;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr as AstExpr, FunctionArg, FunctionArgExpr, FunctionArgOperator,
    ObjectNamePart, Statement as AstStatement, TableFactor, VisitMut, VisitorMut,
};

use super::files::{FileFormatKind, FileSource};

/// The table functions, by SQL name, and the format each reads.
pub(super) const FUNCTIONS: [(&str, FileFormatKind); 2] = [
    ("read_parquet", FileFormatKind::Parquet),
    ("read_csv", FileFormatKind::Csv),
];

/// The named arguments the functions take.
const NAMED: [&str; 1] = ["union_by_name"];

/// The sources of one statement's table function calls.
#[derive(Debug, Default)]
pub(super) struct OpenedSources {
    opened: Mutex<HashMap<FileSource, Arc<dyn TableProvider>>>,
    /// Sources asked for while planning and not opened yet.
    wanted: Mutex<Vec<FileSource>>,
}

impl OpenedSources {
    /// The sources planning asked for that are not opened, emptied.
    pub(super) fn take_wanted(&self) -> Vec<FileSource> {
        std::mem::take(&mut *self.wanted.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Makes `source` available to the next planning.
    pub(super) fn insert(&self, source: FileSource, table: Arc<dyn TableProvider>) {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(source, table);
    }

    /// Forgets every opened source (files are listed afresh by each statement).
    pub(super) fn clear(&self) {
        self.take_wanted();
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// One of the table functions, reading files of one format.
#[derive(Debug)]
pub(super) struct ReadFiles {
    pub(super) name: &'static str,
    pub(super) format: FileFormatKind,
    pub(super) sources: Arc<OpenedSources>,
}

impl ReadFiles {
    fn usage(&self) -> String {
        let example = match self.format {
            FileFormatKind::Parquet => "'dump/*.parquet'",
            _ => "'in/*.csv'",
        };
        format!(
            "{0} takes one location (or a list of them), and optionally union_by_name => true: {0}({example}), {0}([{example}, …], union_by_name => true) (a path, glob, directory, file:// or s3:// URL)",
            self.name
        )
    }

    fn source(&self, args: &[Expr]) -> Result<FileSource, String> {
        let (first, rest) = args.split_first().ok_or_else(|| self.usage())?;
        let locations = match first {
            Expr::Literal(value, _) => match string_of(value) {
                Some(s) => vec![s],
                None => list_of(value).ok_or_else(|| self.usage())?,
            },
            Expr::ScalarFunction(call) if call.name() == "make_array" => call
                .args
                .iter()
                .map(|e| match e {
                    Expr::Literal(value, _) => string_of(value),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| self.usage())?,
            _ => return Err(self.usage()),
        };
        if locations.is_empty() {
            return Err(format!("{}: the list of locations is empty", self.name));
        }
        let union_by_name = match rest {
            [] => false,
            [Expr::Literal(ScalarValue::Boolean(Some(b)), _)] => *b,
            _ => return Err(self.usage()),
        };
        Ok(FileSource {
            locations,
            format: self.format,
            union_by_name,
        })
    }
}

fn string_of(value: &ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.clone()),
        _ => None,
    }
}

fn list_of(value: &ScalarValue) -> Option<Vec<String>> {
    let list = match value {
        ScalarValue::List(list) => list.value(0),
        ScalarValue::LargeList(list) => list.value(0),
        ScalarValue::FixedSizeList(list) => list.value(0),
        _ => return None,
    };
    (0..list.len())
        .map(|i| {
            ScalarValue::try_from_array(&list, i)
                .ok()
                .and_then(|v| string_of(&v))
        })
        .collect()
}

impl TableFunctionImpl for ReadFiles {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let source = match self.source(args.exprs()) {
            Ok(source) => source,
            Err(message) => return plan_err!("{message}"),
        };
        if let Some(table) = self
            .sources
            .opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&source)
        {
            return Ok(table.clone());
        }
        self.sources
            .wanted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(source);
        // Never seen by users: the session opens the source and plans again.
        Err(DataFusionError::Plan(format!(
            "{}: the files are not opened yet",
            self.name
        )))
    }
}

/// Checks the named arguments of the table functions in `statement` (DataFusion passes
/// their values without names): only `union_by_name`, after the location. DuckDB's
/// `union_by_name = true` is rewritten to `union_by_name => true` (it would otherwise be a
/// comparison with a column).
pub(super) fn normalize_named_arguments(statement: &mut AstStatement) -> Result<(), String> {
    struct Check(Option<String>);
    impl VisitorMut for Check {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            let (name, args) = match factor {
                TableFactor::Table {
                    name,
                    args: Some(args),
                    ..
                } => (name, &mut args.args),
                TableFactor::Function { name, args, .. } => (name, args),
                _ => return ControlFlow::Continue(()),
            };
            let function = match name.0.last() {
                Some(ObjectNamePart::Identifier(ident)) => ident.value.to_ascii_lowercase(),
                _ => return ControlFlow::Continue(()),
            };
            if !FUNCTIONS.iter().any(|(n, _)| *n == function) {
                return ControlFlow::Continue(());
            }
            for (i, arg) in args.iter_mut().enumerate() {
                // DuckDB's `union_by_name = true`.
                if let FunctionArg::Unnamed(FunctionArgExpr::Expr(AstExpr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq,
                    right,
                })) = arg
                {
                    if let (true, AstExpr::Identifier(name)) = (i > 0, left.as_ref()) {
                        *arg = FunctionArg::Named {
                            name: name.clone(),
                            arg: FunctionArgExpr::Expr(right.as_ref().clone()),
                            operator: FunctionArgOperator::RightArrow,
                        };
                    }
                }
                if let Some(problem) = problem_of(i, arg) {
                    self.0 = Some(format!("{function}: {problem}"));
                    return ControlFlow::Break(());
                }
                // The planner takes values without names: the one name there is, is checked.
                if let FunctionArg::Named { arg: value, .. }
                | FunctionArg::ExprNamed { arg: value, .. } = arg
                {
                    *arg = FunctionArg::Unnamed(value.clone());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut check = Check(None);
    let _ = statement.visit(&mut check);
    match check.0 {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// What is wrong with argument `i` of a table function, if anything.
fn problem_of(i: usize, arg: &FunctionArg) -> Option<String> {
    let name = match arg {
        FunctionArg::Unnamed(_) if i == 0 => return None,
        FunctionArg::Unnamed(_) => {
            return Some(format!(
                "argument {} needs its name: union_by_name => true",
                i + 1
            ))
        }
        FunctionArg::Named { name, .. } => name.value.clone(),
        FunctionArg::ExprNamed { name, .. } => name.to_string(),
    };
    if i == 0 {
        Some("the location comes first, without a name".to_string())
    } else if !NAMED.contains(&name.to_ascii_lowercase().as_str()) {
        Some(format!(
            "unknown argument {name}; it takes {}",
            NAMED.join(", ")
        ))
    } else {
        None
    }
}
