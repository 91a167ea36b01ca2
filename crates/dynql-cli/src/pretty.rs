//! Tables for people: query results and schemas drawn with box characters, and the
//! `(3 rows, 2.1 ms)` line under them (the shell's, and `sql`/`select-rows` on a terminal).

use std::time::Duration;

use comfy_table::{presets, CellAlignment, Table};
use dynql::{SelectResult, TableSchema, Value, ValueType};

/// Cells longer than this many characters are cut (with `…`): one huge `any` value would
/// otherwise push every other column off the screen. `\format json` prints values whole.
const MAX_CELL_CHARS: usize = 120;

fn table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .apply_modifier(comfy_table::modifiers::UTF8_ROUND_CORNERS)
        .set_header(header);
    t
}

/// The result's first `shown` rows drawn as a table: a header of column names, numbers
/// right-aligned, null as `null`, numbers and booleans plain, strings as text (invalid UTF-8
/// replaced, control characters escaped), `any` values as YSON text.
pub fn result_table(result: &SelectResult, shown: usize) -> String {
    let mut t = table(result.columns.iter().map(|(n, _)| n.clone()).collect());
    for row in result.rows.iter().take(shown) {
        t.add_row(row.iter().map(cell_text).collect::<Vec<_>>());
    }
    for (i, (_, ty)) in result.columns.iter().enumerate() {
        if matches!(ty, ValueType::Int64 | ValueType::Uint64 | ValueType::Double) {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    t.to_string()
}

/// The text of one cell.
pub fn cell_text(v: &Value) -> String {
    let text = match v {
        Value::Null => "null".to_string(),
        Value::Int64(x) => x.to_string(),
        Value::Uint64(x) => x.to_string(),
        // Debug keeps the `.0` of whole doubles, so they do not read as integers.
        Value::Double(x) => format!("{x:?}"),
        Value::Boolean(x) => x.to_string(),
        Value::String(s) => String::from_utf8_lossy(s).into_owned(),
        Value::Any(_) => v.to_string(),
    };
    let mut out = String::with_capacity(text.len());
    for (n, c) in text.chars().enumerate() {
        if n == MAX_CELL_CHARS {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// A schema as a table: one row per column; the optional properties get a column only when
/// some column has them.
pub fn schema_table(schema: &TableSchema) -> String {
    let cols = schema.columns();
    let any_expression = cols.iter().any(|c| c.expression.is_some());
    let any_aggregate = cols.iter().any(|c| c.aggregate.is_some());
    let any_lock = cols.iter().any(|c| c.lock.is_some());
    let mut header = vec!["name".to_string(), "type".into(), "sort_order".into()];
    header.push("required".into());
    if any_expression {
        header.push("expression".into());
    }
    if any_aggregate {
        header.push("aggregate".into());
    }
    if any_lock {
        header.push("lock".into());
    }
    let mut t = table(header);
    for c in cols {
        let mut row = vec![
            c.name.clone(),
            c.logical_type.name().to_string(),
            if c.sort_ascending { "ascending" } else { "" }.to_string(),
            if c.required { "yes" } else { "" }.to_string(),
        ];
        if any_expression {
            row.push(c.expression.clone().unwrap_or_default());
        }
        if any_aggregate {
            row.push(c.aggregate.clone().unwrap_or_default());
        }
        if any_lock {
            row.push(c.lock.clone().unwrap_or_default());
        }
        t.add_row(row);
    }
    t.to_string()
}

/// Rows a drawn table shows by default, as DuckDB's and datafusion-cli's do.
pub const DEFAULT_MAX_ROWS: usize = 40;

/// How the shell shows the rows a drawn table leaves out.
pub const SHELL_MORE_ROWS: &str = "\\maxrows N shows more; 0 all";

/// How the command line shows the rows a drawn table leaves out.
pub const COMMAND_MORE_ROWS: &str = "--format yson or a pipe prints all";

/// [`footer`] of a table that shows `shown` of `rows` rows: says how many were left out and
/// how to see them (`more`).
pub fn footer_of(rows: usize, shown: usize, elapsed: Option<Duration>, more: &str) -> String {
    let footer = footer(rows, elapsed);
    match rows.saturating_sub(shown) {
        0 => footer,
        left => format!("{footer}, {left} not shown ({more})"),
    }
}

/// `(3 rows, 2.1 ms)`, `(1 row)`: the line under a result.
pub fn footer(rows: usize, elapsed: Option<Duration>) -> String {
    let noun = if rows == 1 { "row" } else { "rows" };
    match elapsed {
        Some(d) => format!("({rows} {noun}, {})", duration(d)),
        None => format!("({rows} {noun})"),
    }
}

/// A duration as people read it: `0.4 ms`, `12.3 ms`, `1.25 s`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_draw_as_a_table_with_numbers_on_the_right() {
        let result = SelectResult {
            columns: vec![
                ("k".into(), ValueType::Int64),
                ("v".into(), ValueType::String),
            ],
            rows: vec![
                vec![Value::Int64(1), Value::string("a\tb")],
                vec![Value::Int64(100), Value::Null],
            ],
            statistics: Default::default(),
        };
        let text = result_table(&result, result.rows.len());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "╭─────┬──────╮",
                "│   k ┆ v    │",
                "╞═════╪══════╡",
                "│   1 ┆ a\\tb │",
                "│ 100 ┆ null │",
                "╰─────┴──────╯",
            ]
        );
    }

    #[test]
    fn long_cells_are_cut() {
        let long = Value::string("x".repeat(500));
        assert_eq!(cell_text(&long).chars().count(), MAX_CELL_CHARS + 1);
        assert!(cell_text(&long).ends_with('…'));
        assert_eq!(cell_text(&Value::Uint64(5)), "5");
        assert_eq!(cell_text(&Value::Double(2.0)), "2.0");
        assert_eq!(cell_text(&Value::Boolean(true)), "true");
    }

    #[test]
    fn footers_count_rows_and_show_time() {
        assert_eq!(footer(1, None), "(1 row)");
        assert_eq!(
            footer(3, Some(Duration::from_micros(2140))),
            "(3 rows, 2.1 ms)"
        );
        assert_eq!(duration(Duration::from_millis(1250)), "1.25 s");
    }
}
