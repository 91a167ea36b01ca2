//! Tab completion and the end-of-statement check, as the rustyline helper of the shell.
//!
//! Completion works on the statement under the cursor (found with the same [`Splitter`] that
//! runs statements): its first word completes to a command, `select` or a meta command; the
//! words of a command to its `--options`, their values, table paths and `PATH/@attributes`;
//! a query to table paths inside `[…]`, and to column names (of the tables the statement
//! names, else of all tables), function names and keywords elsewhere.
//!
//! Table paths and columns come from a [`Catalog`] snapshot the shell loads before a prompt
//! (completion runs inside rustyline, outside the async runtime, and must not wait on the
//! store).

use clap::CommandFactory;
use dynql::{Database, TableSchema};
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::statement::{first_word, split_words, Kind, Splitter};
use super::{command_names, is_command, meta};

/// YT QL keywords offered in queries (`group`, `by`, … one word each).
const KEYWORDS: &[&str] = &[
    "select",
    "from",
    "where",
    "group",
    "by",
    "having",
    "order",
    "limit",
    "offset",
    "join",
    "left",
    "array",
    "using",
    "as",
    "on",
    "and",
    "or",
    "not",
    "is",
    "null",
    "between",
    "in",
    "transform",
    "like",
    "ilike",
    "rlike",
    "regexp",
    "escape",
    "true",
    "false",
    "case",
    "when",
    "then",
    "else",
    "end",
    "asc",
    "desc",
    "with",
    "totals",
];

/// Most tables a catalog snapshot holds: completion must stay quick on a huge store.
const MAX_TABLES: usize = 10_000;

/// The tables of the store and their column names, for completion.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Table paths with the columns queries see, sorted by path.
    pub tables: Vec<(String, Vec<String>)>,
}

impl Catalog {
    /// Walks the store from `//` with [`Database::list`]; a child with a schema is a table,
    /// a `map_node` a directory to walk. Errors leave parts out: completion is a convenience.
    pub async fn load(db: &Database) -> Catalog {
        let mut tables = Vec::new();
        let mut dirs = vec!["//".to_string()];
        while let Some(dir) = dirs.pop() {
            let Ok(children) = db.list(&dir).await else {
                continue;
            };
            for child in children {
                if tables.len() >= MAX_TABLES {
                    break;
                }
                let path = if dir == "//" {
                    format!("//{child}")
                } else {
                    format!("{dir}/{child}")
                };
                match db.get_attribute(&path, Some("schema")).await {
                    Ok(schema) => {
                        let columns = TableSchema::from_yson(&schema)
                            .map(|s| {
                                s.query_schema()
                                    .columns()
                                    .iter()
                                    .map(|c| c.name.clone())
                                    .collect()
                            })
                            .unwrap_or_default();
                        tables.push((path, columns));
                    }
                    // Directories are walked; documents and other values are not.
                    Err(_) => {
                        let kind = db.get_attribute(&path, Some("type")).await;
                        if kind.is_ok_and(|t| t.as_str() == Some("map_node")) {
                            dirs.push(path)
                        }
                    }
                }
            }
        }
        tables.sort();
        Catalog { tables }
    }

    /// Paths and directories (ending in `/`) that extend `prefix` by one path component.
    fn paths(&self, prefix: &str) -> Vec<String> {
        // Components start after the leading `//` of every path.
        let from = prefix.len().max(2);
        let mut out: Vec<String> = self
            .tables
            .iter()
            .filter(|(p, _)| p.starts_with(prefix))
            .filter_map(|(p, _)| match p.get(from..)?.find('/') {
                Some(i) => p.get(..from + i + 1).map(str::to_string),
                None => Some(p.clone()),
            })
            .collect();
        out.dedup();
        out
    }

    /// Column names of the tables `text` names in `[…]`, or of every table if it names none.
    fn columns(&self, text: &str) -> Vec<String> {
        let named: Vec<&str> = text
            .split('[')
            .skip(1)
            .filter_map(|s| s.split(']').next())
            .collect();
        let mut out: Vec<String> = self
            .tables
            .iter()
            .filter(|(p, _)| named.is_empty() || named.contains(&p.as_str()))
            .flat_map(|(_, cols)| cols.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Completions for the cursor at byte `pos` of the edited `buffer`: where the replaced word
/// starts, and the candidates (sorted, distinct) that replace it.
pub fn complete(catalog: &Catalog, buffer: &str, pos: usize) -> (usize, Vec<String>) {
    let Some(before) = buffer.get(..pos) else {
        return (pos, Vec::new());
    };
    let mut splitter = Splitter::new(is_command);
    let mut lines = before.split('\n').peekable();
    while let Some(line) = lines.next() {
        if lines.peek().is_some() {
            splitter.push_line(line);
        } else {
            splitter.push_partial_line(line);
        }
    }
    let (text, kind) = splitter.pending().unwrap_or(("", Kind::Query));
    // The pending text is the input's own suffix, so offsets into it map back.
    let base = pos - text.len();
    let rest = buffer.get(pos..).unwrap_or("");
    let (start, mut candidates) = if !text.contains(char::is_whitespace) {
        complete_first_word(catalog, text)
    } else {
        match kind {
            Kind::Meta => complete_meta(catalog, text),
            Kind::Command { .. } => complete_command(catalog, text),
            Kind::Rows => (text.len(), Vec::new()),
            Kind::Query => complete_query(catalog, text, rest),
        }
    };
    candidates.sort();
    candidates.dedup();
    (base + start, candidates)
}

/// The byte offset just after the last character of `text` that `pred` accepts (0 if none).
fn after_last(text: &str, pred: impl Fn(char) -> bool) -> usize {
    text.char_indices()
        .rev()
        .find(|&(_, c)| pred(c))
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// The candidates among `words` that start with `prefix` (ignoring ASCII case).
fn matching<'a>(words: impl IntoIterator<Item = &'a str>, prefix: &str) -> Vec<String> {
    let lower = prefix.to_ascii_lowercase();
    words
        .into_iter()
        .filter(|w| w.to_ascii_lowercase().starts_with(&lower))
        .map(str::to_string)
        .collect()
}

fn complete_first_word(catalog: &Catalog, word: &str) -> (usize, Vec<String>) {
    if word.starts_with('\\') {
        return (0, matching(meta::names(), word));
    }
    let mut out = matching(command_names().iter().map(String::as_str), word);
    out.extend(matching(["select"], word));
    if out.is_empty() {
        // A query may start with a column or a function: `k, v from [//t]`.
        return complete_query(catalog, word, "");
    }
    (0, out)
}

fn complete_meta(catalog: &Catalog, text: &str) -> (usize, Vec<String>) {
    let word_start = after_last(text, char::is_whitespace);
    let word = &text[word_start..];
    let candidates = match first_word(text) {
        "\\d" => catalog.paths(word),
        "\\format" => matching(meta::FORMATS.iter().copied(), word),
        "\\timing" => matching(["on", "off"], word),
        "\\help" | "\\?" => {
            let mut all = matching(command_names().iter().map(String::as_str), word);
            all.extend(matching(meta::names(), word));
            all
        }
        _ => Vec::new(),
    };
    (word_start, candidates)
}

fn complete_command(catalog: &Catalog, text: &str) -> (usize, Vec<String>) {
    let (words, open) = split_words(text);
    let at_new_word = open.is_none() && text.ends_with(char::is_whitespace);
    let (current, mut start, previous) = match words.split_last() {
        Some((last, earlier)) if !at_new_word => (
            last.text.as_str(),
            last.start,
            earlier.last().map(|w| w.text.as_str()),
        ),
        _ => ("", text.len(), words.last().map(|w| w.text.as_str())),
    };
    // Only plain words complete: replacing a word with escapes would change its meaning.
    let raw = &text[start..];
    if raw != current {
        if raw.len() == current.len() + 1 && open.is_some_and(|o| o.position == start) {
            start += 1;
        } else {
            return (text.len(), Vec::new());
        }
    }
    let name = words.first().map_or("", |w| w.text.as_str());
    let shell = super::ShellLine::command();
    let Some(sub) = shell.find_subcommand(name) else {
        return (start, Vec::new());
    };
    if current.starts_with('-') {
        let mut options: Vec<String> = sub
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        options.push("--help".into());
        return (start, matching(options.iter().map(String::as_str), current));
    }
    if let Some(option) = previous.and_then(|p| p.strip_prefix("--")) {
        if let Some(arg) = sub.get_arguments().find(|a| a.get_long() == Some(option)) {
            if arg.get_action().takes_values() {
                let values: Vec<String> = arg
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_string())
                    .collect();
                return (start, matching(values.iter().map(String::as_str), current));
            }
        }
    }
    if name == "create" && words.len() <= 2 && !current.starts_with('/') {
        return (start, matching(["table"], current));
    }
    if let Some(at) = current.find("/@") {
        let (table, attribute) = current.split_at(at + 2);
        let candidates = matching(dynql::ATTRIBUTES.iter().copied(), attribute)
            .into_iter()
            .map(|a| format!("{table}{a}"))
            .collect();
        return (start, candidates);
    }
    (start, catalog.paths(current))
}

fn complete_query(catalog: &Catalog, text: &str, rest: &str) -> (usize, Vec<String>) {
    // Inside `[…` the word is a table path.
    if let Some(open) = text.rfind('[') {
        if !text[open..].contains(']') {
            return (open + 1, catalog.paths(&text[open + 1..]));
        }
    }
    let word_start = after_last(text, |c| {
        !(c.is_ascii_alphanumeric() || c == '_' || c == '$')
    });
    let word = &text[word_start..];
    if text[..word_start].ends_with('/') {
        // A path typed without its brackets.
        let path_start = after_last(text, char::is_whitespace);
        return (path_start, catalog.paths(&text[path_start..]));
    }
    let mut statement = text.to_string();
    statement.push_str(rest.split(';').next().unwrap_or(""));
    let mut out = matching(catalog.columns(&statement).iter().map(String::as_str), word);
    if word.is_empty() {
        // Before a first letter the columns are the useful part; a hundred functions and
        // keywords would bury them.
        return (word_start, out);
    }
    out.extend(matching(dynql::ql::functions::NAMES.iter().copied(), word));
    // Keywords follow the case the user types them in.
    let upper = word.starts_with(|c: char| c.is_ascii_uppercase());
    out.extend(
        matching(KEYWORDS.iter().copied(), word)
            .into_iter()
            .map(|k| if upper { k.to_ascii_uppercase() } else { k }),
    );
    (word_start, out)
}

/// True when `buffer` holds only complete statements: Enter then runs it, or else starts a
/// new line of the same input.
pub fn is_complete(buffer: &str) -> bool {
    let mut splitter = Splitter::new(is_command);
    for line in buffer.split('\n') {
        splitter.push_line(line);
    }
    splitter.is_idle()
}

/// The rustyline helper: completion from a catalog snapshot, in the light of the lines
/// already typed for the statement.
#[derive(Debug, Default)]
pub struct ShellHelper {
    /// What table paths and columns complete to.
    pub catalog: Catalog,
    /// The earlier lines of the statement being typed (empty on its first line).
    pub pending: String,
}

impl Completer for ShellHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        if self.pending.is_empty() {
            return Ok(complete(&self.catalog, line, pos));
        }
        // Completion sees the whole statement: the table named on an earlier line gives the
        // columns on this one.
        let text = format!("{}\n{line}", self.pending);
        let offset = self.pending.len() + 1;
        let (start, candidates) = complete(&self.catalog, &text, offset + pos);
        Ok(match start.checked_sub(offset) {
            Some(start) => (start, candidates),
            None => (pos, Vec::new()),
        })
    }
}

// Each line is read on its own (the shell joins them into statements, with a continuation
// prompt), so every line is complete to rustyline.
impl Validator for ShellHelper {}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog {
            tables: vec![
                ("//home/orders".into(), vec!["id".into(), "customer".into()]),
                ("//home/users".into(), vec!["id".into(), "name".into()]),
                (
                    "//tmp/q".into(),
                    vec!["$row_index".into(), "payload".into()],
                ),
            ],
        }
    }

    /// Completes at the end of `buffer`, or at `|` if it has one.
    fn at(buffer: &str) -> (usize, Vec<String>) {
        match buffer.find('|') {
            Some(pos) => complete(&catalog(), &buffer.replace('|', ""), pos),
            None => complete(&catalog(), buffer, buffer.len()),
        }
    }

    #[test]
    fn first_words_complete_to_commands_select_and_meta_commands() {
        assert_eq!(at("sel"), (0, vec!["select".into(), "select-rows".into()]));
        assert_eq!(at("insert-r"), (0, vec!["insert-rows".into()]));
        assert_eq!(at("\\ti"), (0, vec!["\\timing".into()]));
        // After a finished statement a new one starts.
        assert_eq!(at("select 1; ins"), (10, vec!["insert-rows".into()]));
        // A query may start with a function.
        assert_eq!(at("farm_h"), (0, vec!["farm_hash".into()]));
    }

    #[test]
    fn paths_complete_one_component_at_a_time() {
        assert_eq!(
            at("select * from [//"),
            (15, vec!["//home/".into(), "//tmp/".into()])
        );
        assert_eq!(
            at("* from [//home/"),
            (8, vec!["//home/orders".into(), "//home/users".into()])
        );
        assert_eq!(at("\\d //tm"), (3, vec!["//tmp/".into()]));
        assert_eq!(at("get //home/u"), (4, vec!["//home/users".into()]));
        assert_eq!(
            at("select * from //home/o"),
            (14, vec!["//home/orders".into()])
        );
    }

    #[test]
    fn columns_come_from_the_tables_the_query_names() {
        assert_eq!(at("select na| from [//home/users]").1, ["name".to_string()]);
        // Without a table every table's columns are offered.
        let (_, all) = at("select pay");
        assert_eq!(all, ["payload".to_string()]);
        // `$` belongs to column names; keywords keep the typed case.
        assert_eq!(at("select $ro").1, ["$row_index".to_string()]);
        // An empty word gets only the columns.
        assert_eq!(
            at("select * from [//home/users] where "),
            (35, vec!["id".into(), "name".into()])
        );
        assert_eq!(at("* from [//home/users] WHER"), (22, vec!["WHERE".into()]));
        assert_eq!(
            at("* from [//home/users]\nwhere id in (1,\n 2) order by na").1,
            ["name".to_string()]
        );
    }

    #[test]
    fn commands_complete_options_values_and_attributes() {
        assert_eq!(at("insert-rows //t --form"), (16, vec!["--format".into()]));
        assert_eq!(
            at("insert-rows //t --format "),
            (
                25,
                vec![
                    "<encode_utf8=%true>json".into(),
                    "<format=pretty>yson".into(),
                    "json".into(),
                    "yson".into()
                ]
            )
        );
        assert_eq!(
            at("get //home/users/@key_c"),
            (4, vec!["//home/users/@key_columns".into()])
        );
        assert_eq!(at("create ta"), (7, vec!["table".into()]));
        assert_eq!(at("get \"//home/us"), (5, vec!["//home/users".into()]));
        assert_eq!(at("\\format j"), (8, vec!["json".into()]));
        // Rows are data: nothing completes there.
        assert_eq!(at("insert-rows //t\n{k=").1, Vec::<String>::new());
    }

    #[test]
    fn words_after_non_ascii_characters_do_not_break_completion() {
        assert_eq!(at("select é").0, 9);
        assert_eq!(at("select éna"), (9, vec!["name".into()]));
        assert_eq!(at("\\d\u{a0}//tm"), (4, vec!["//tmp/".into()]));
        assert_eq!(at("get\u{3000}//home/u").1, ["//home/users".to_string()]);
        assert_eq!(
            at("* from [//home/users] where s = 'ü' and na"),
            (41, vec!["name".into()])
        );
        for buffer in ["é", "\\é", "get é", "insert-rows é\né", "'é", "[é"] {
            for pos in 0..=buffer.len() {
                if buffer.is_char_boundary(pos) {
                    complete(&catalog(), buffer, pos);
                }
            }
        }
    }

    #[test]
    fn input_is_complete_at_a_semicolon_or_an_empty_line() {
        assert!(is_complete(""));
        assert!(is_complete("select 1;"));
        assert!(!is_complete("select 1"));
        assert!(is_complete("select 1\n"));
        assert!(!is_complete("select 'a;\n"));
        assert!(is_complete("\\d //t"));
        assert!(!is_complete("insert-rows //t\n{k=1};"));
        assert!(is_complete("insert-rows //t\n{k=1};\n"));
    }
}
