//! What a command prints for a person at a terminal and what it prints into a pipe.
//!
//! As duckdb does, rows (`sql`, `select-rows`) are a drawn table on a terminal and the
//! chosen format (YSON unless told) in a pipe; as `yt` does, Cypress values (`get`, `list
//! --format`, `explain-query`) are pretty YSON on a terminal. A format given with `--format`
//! (or `YT_FORMAT` for rows, as `yt` reads it) is printed as asked, terminal or not.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use dynql::Yson;

use crate::format::{parse_format, FormatSpec, OutputFormat};

/// How a command prints rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowsOutput {
    /// A drawn table of the first rows, with a row count under it.
    Drawn,
    /// A format of `--format`, every row.
    Format(FormatSpec),
}

/// How rows print: the format given (`--format`, else `yt_format`, the `YT_FORMAT`
/// variable), else a drawn table on a terminal, else YSON.
///
/// # Errors
/// `YT_FORMAT` names no format dynql prints.
pub fn rows_output(
    given: Option<FormatSpec>,
    yt_format: Option<&str>,
    terminal: bool,
) -> Result<RowsOutput> {
    if let Some(spec) = given {
        return Ok(RowsOutput::Format(spec));
    }
    match yt_format.map(str::trim) {
        Some(text) if !text.is_empty() => Ok(RowsOutput::Format(
            parse_format(text).map_err(|e| anyhow::anyhow!("YT_FORMAT: {e}"))?,
        )),
        _ if terminal => Ok(RowsOutput::Drawn),
        _ => Ok(RowsOutput::Format(FormatSpec {
            format: OutputFormat::Yson,
            columns: None,
        })),
    }
}

/// The `YT_FORMAT` variable, if set.
pub fn yt_format_variable() -> Option<String> {
    std::env::var("YT_FORMAT").ok()
}

/// Whether stdout is a terminal (a person reads it).
pub fn stdout_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

/// Set once a write to stdout finds its reader gone.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Stdout, noting a reader that went away (`dynql sql … | head -2`): the command then stops
/// at its next write, and [`stdout_closed`] tells `main` to end quietly with status 0, as
/// ripgrep does, rather than report the broken pipe as a failure. Only stdout's own broken
/// pipe counts: one of a store's network connection stays an error.
pub struct Stdout;

impl Stdout {
    fn noted<T>(result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
            }
        }
        result
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Stdout::noted(std::io::stdout().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        Stdout::noted(std::io::stdout().write_all(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Stdout::noted(std::io::stdout().flush())
    }
}

/// Whether a write to stdout found its reader gone (see [`Stdout`]).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Formats of a Cypress value (`get`, `list --format`, `explain-query`), as `yt` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeFormat {
    /// Text YSON on one line (`yson`, `<format=text>yson`).
    Yson,
    /// YSON over several lines, indented by four spaces (`<format=pretty>yson`).
    YsonPretty,
    /// JSON on one line (`json`, `<format=text>json`).
    Json,
    /// JSON over several lines (`<format=pretty>json`).
    JsonPretty,
}

/// The spellings `--format` of `get`, `list` and `explain-query` offers.
pub const TREE_FORMAT_NAMES: &[&str] = &[
    "yson",
    "<format=text>yson",
    "<format=pretty>yson",
    "json",
    "<format=pretty>json",
];

/// The `--format` parser of `get`, `list` and `explain-query`.
pub fn tree_format_parser() -> crate::format::FormatParser<TreeFormat> {
    crate::format::FormatParser::new(parse_tree_format, TREE_FORMAT_NAMES)
}

/// Parses a Cypress value's format: yson or json, with `format=text|pretty` in front.
/// Attributes dynql would not honour are refused, never ignored.
pub fn parse_tree_format(text: &str) -> std::result::Result<TreeFormat, String> {
    let unknown = || {
        format!(
            "unknown format {text:?}: use one of {}",
            TREE_FORMAT_NAMES.join(", ")
        )
    };
    let node = dynql::yson::parse(text.trim().as_bytes()).map_err(|_| unknown())?;
    let (attributes, name) = match &node {
        Yson::Attributed { attributes, value } => (attributes.as_slice(), value.as_str()),
        other => (&[][..], other.as_str()),
    };
    let mut pretty = false;
    for (key, value) in attributes {
        match (key.as_slice(), value.as_str()) {
            (b"format", Some("text")) => pretty = false,
            (b"format", Some("pretty")) => pretty = true,
            (b"format", Some("binary")) => {
                return Err("binary YSON is not supported by dynql: use <format=text>yson or <format=pretty>yson".into())
            }
            (b"format", _) => return Err("the format attribute takes text or pretty".into()),
            _ => {
                return Err(format!(
                    "the format attribute {} is not supported here (only format=text|pretty)",
                    String::from_utf8_lossy(key)
                ))
            }
        }
    }
    match (name, pretty) {
        (Some("yson"), false) => Ok(TreeFormat::Yson),
        (Some("yson"), true) => Ok(TreeFormat::YsonPretty),
        (Some("json"), false) => Ok(TreeFormat::Json),
        (Some("json"), true) => Ok(TreeFormat::JsonPretty),
        _ => Err(unknown()),
    }
}

/// The format a Cypress value prints in: the one given, else pretty YSON on a terminal,
/// else `on_pipe` (what scripts have always read).
pub fn tree_format(given: Option<TreeFormat>, terminal: bool, on_pipe: TreeFormat) -> TreeFormat {
    match given {
        Some(format) => format,
        None if terminal => TreeFormat::YsonPretty,
        None => on_pipe,
    }
}

/// Writes `value` in `format`, then a line break.
pub fn write_tree(out: &mut (dyn Write + Send), value: &Yson, format: TreeFormat) -> Result<()> {
    let text = match format {
        TreeFormat::Yson => dynql::yson::to_text(value),
        TreeFormat::YsonPretty => pretty_yson(value),
        TreeFormat::Json => value.to_json().to_string(),
        TreeFormat::JsonPretty => serde_json::to_string_pretty(&value.to_json())?,
    };
    writeln!(out, "{text}")?;
    Ok(())
}

/// `value` as YT's pretty YSON writer prints it: each map, list and attribute item on a line
/// of its own, indented by four spaces a level, `"key" = value;`, attributes `<…>` followed by
/// a space and the value; an empty map or list stays `{}` / `[]`.
pub fn pretty_yson(value: &Yson) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out
}

fn write_pretty(value: &Yson, depth: usize, out: &mut String) {
    match value {
        Yson::Attributed { attributes, value } => {
            if !attributes.is_empty() {
                write_items(
                    attributes.iter().map(|(k, v)| (Some(k), v)),
                    ('<', '>'),
                    depth,
                    out,
                );
                out.push(' ');
            }
            write_pretty(value, depth, out);
        }
        Yson::Map(entries) => write_items(
            entries.iter().map(|(k, v)| (Some(k), v)),
            ('{', '}'),
            depth,
            out,
        ),
        Yson::List(items) => write_items(items.iter().map(|v| (None, v)), ('[', ']'), depth, out),
        scalar => out.push_str(&dynql::yson::to_text(scalar)),
    }
}

/// A collection's items, one a line one level deeper than `depth`, between `brackets`.
fn write_items<'a>(
    items: impl ExactSizeIterator<Item = (Option<&'a Vec<u8>>, &'a Yson)>,
    brackets: (char, char),
    depth: usize,
    out: &mut String,
) {
    const INDENT: &str = "    ";
    out.push(brackets.0);
    if items.len() == 0 {
        out.push(brackets.1);
        return;
    }
    out.push('\n');
    for (key, value) in items {
        out.push_str(&INDENT.repeat(depth + 1));
        if let Some(key) = key {
            out.push_str(&dynql::yson::to_text(&Yson::String(key.clone())));
            out.push_str(" = ");
        }
        write_pretty(value, depth + 1, out);
        out.push_str(";\n");
    }
    out.push_str(&INDENT.repeat(depth));
    out.push(brackets.1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(format: OutputFormat) -> RowsOutput {
        RowsOutput::Format(FormatSpec {
            format,
            columns: None,
        })
    }

    #[test]
    fn rows_are_drawn_on_a_terminal_unless_a_format_is_asked_for() {
        let json = parse_format("json").unwrap();
        assert_eq!(rows_output(None, None, true).unwrap(), RowsOutput::Drawn);
        assert_eq!(
            rows_output(None, None, false).unwrap(),
            spec(OutputFormat::Yson)
        );
        // --format wins on a terminal, and over YT_FORMAT.
        assert_eq!(
            rows_output(Some(json.clone()), None, true).unwrap(),
            spec(OutputFormat::Json)
        );
        assert_eq!(
            rows_output(Some(json), Some("yson"), false).unwrap(),
            spec(OutputFormat::Json)
        );
        // YT_FORMAT is a choice too; an empty one is none.
        assert_eq!(
            rows_output(None, Some("<format=pretty>yson"), true).unwrap(),
            spec(OutputFormat::YsonPretty)
        );
        assert_eq!(
            rows_output(None, Some(" "), true).unwrap(),
            RowsOutput::Drawn
        );
        let err = rows_output(None, Some("xml"), true)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("YT_FORMAT: unknown format"), "{err}");
    }

    #[test]
    fn tree_formats_parse_as_yt_spells_them() {
        for (text, format) in [
            ("yson", TreeFormat::Yson),
            ("<format=text>yson", TreeFormat::Yson),
            ("<format=pretty>yson", TreeFormat::YsonPretty),
            (" json ", TreeFormat::Json),
            ("<format=pretty>json", TreeFormat::JsonPretty),
        ] {
            assert_eq!(parse_tree_format(text), Ok(format), "{text}");
        }
        assert!(parse_tree_format("<format=binary>yson")
            .unwrap_err()
            .contains("binary YSON is not supported"));
        assert!(parse_tree_format("<sort_keys=%true>yson")
            .unwrap_err()
            .contains("sort_keys"));
        assert!(parse_tree_format("dsv")
            .unwrap_err()
            .contains("unknown format"));
        assert_eq!(
            tree_format(None, true, TreeFormat::Json),
            TreeFormat::YsonPretty
        );
        assert_eq!(tree_format(None, false, TreeFormat::Json), TreeFormat::Json);
        assert_eq!(
            tree_format(Some(TreeFormat::Yson), true, TreeFormat::Json),
            TreeFormat::Yson
        );
    }

    #[test]
    fn pretty_yson_is_written_as_yt_writes_it() {
        let value = dynql::yson::parse(
            br#"<"strict"=%true;>[{"name"="k";"type"="int64";"tags"=[];"m"={};};{"x"=[1;2u;];}]"#,
        )
        .unwrap();
        assert_eq!(
            pretty_yson(&value),
            r#"<
    "strict" = %true;
> [
    {
        "name" = "k";
        "type" = "int64";
        "tags" = [];
        "m" = {};
    };
    {
        "x" = [
            1;
            2u;
        ];
    };
]"#
        );
        assert_eq!(pretty_yson(&Yson::Boolean(true)), "%true");
        assert_eq!(pretty_yson(&Yson::Map(vec![])), "{}");
    }
}
