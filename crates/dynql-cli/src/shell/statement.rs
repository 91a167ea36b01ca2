//! Shell input, line by line, into statements; statements into meta commands, command lines
//! and queries; command lines into words, with the quoting rules of a POSIX shell.
//!
//! A statement ends at a `;` outside quotes or at an empty line. Two kinds are different:
//! a meta command (`\d //t`) is one line, and a command that reads rows (`insert-rows //t`)
//! takes the lines after it, up to an empty line, as its rows: YSON rows are separated by `;`,
//! so `;` cannot end them.
//!
//! Queries are scanned with YT QL's quotes (`'…'`, `"…"` with backslash escapes, `` `…` ``);
//! command lines with a shell's, so a command pasted from bash splits the same way here.

use std::fmt;

/// Commands whose rows follow on the lines after the command, up to an empty line.
pub const ROW_COMMANDS: &[&str] = &[
    "insert-rows",
    "delete-rows",
    "lookup-rows",
    "lock-rows",
    "write-table",
];

/// One complete statement of shell input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The text without the `;` that ended it; lines are joined by `\n`.
    pub text: String,
    /// The 1-based input line the statement starts on.
    pub line: usize,
}

/// What a statement is; see [`Statement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `\name args`: one line.
    Meta,
    /// A command (first word a command name); `rows` while on the first line of a command
    /// that reads rows.
    Command { rows: bool },
    /// The rows after a row-reading command.
    Rows,
    /// Anything else: a YT QL query.
    Query,
}

/// A statement being read.
#[derive(Debug)]
struct Pending {
    text: String,
    line: usize,
    kind: Kind,
    /// The open quote character, if the text so far ends inside quotes.
    quote: Option<char>,
    /// A backslash is waiting to escape the next character.
    escape: bool,
}

/// Splits input lines into statements as they arrive (so a script streams).
#[derive(Debug)]
pub struct Splitter {
    is_command: fn(&str) -> bool,
    pending: Option<Pending>,
    line: usize,
}

impl Splitter {
    /// A splitter that treats a first word as a command when `is_command` says so.
    pub fn new(is_command: fn(&str) -> bool) -> Splitter {
        Splitter {
            is_command,
            pending: None,
            line: 0,
        }
    }

    /// Reads one line (without its `\n`); returns the statements it completes.
    pub fn push_line(&mut self, line: &str) -> Vec<Statement> {
        self.scan_line(line, true)
    }

    /// Reads the line the cursor is on, which may still grow: it ends nothing but statements
    /// ended by `;`. Used to find the statement being typed.
    pub fn push_partial_line(&mut self, line: &str) -> Vec<Statement> {
        self.scan_line(line, false)
    }

    /// The input ended: the statement being read, if any, is complete.
    pub fn finish(&mut self) -> Option<Statement> {
        let p = self.pending.take()?;
        let text = p.text.trim().to_string();
        (!text.is_empty()).then_some(Statement { text, line: p.line })
    }

    /// True when no statement is being read (every line so far belonged to ended ones).
    pub fn is_idle(&self) -> bool {
        self.pending.is_none()
    }

    /// The statement being read: its text so far (a suffix of the input, untouched) and kind.
    pub fn pending(&self) -> Option<(&str, Kind)> {
        self.pending.as_ref().map(|p| (p.text.as_str(), p.kind))
    }

    fn scan_line(&mut self, line: &str, complete: bool) -> Vec<Statement> {
        self.line += 1;
        let mut out = Vec::new();
        let mut rest = line;
        let mut continued = self.pending.is_some();
        loop {
            let Some(p) = self.pending.as_mut() else {
                let trimmed = rest.trim_start();
                if trimmed.is_empty() || (complete && trimmed.starts_with("--")) {
                    break;
                }
                let word = command_word(trimmed);
                let kind = if trimmed.starts_with('\\') {
                    Kind::Meta
                } else if ROW_COMMANDS.contains(&word) {
                    Kind::Command { rows: true }
                } else if (self.is_command)(word) {
                    Kind::Command { rows: false }
                } else {
                    Kind::Query
                };
                self.pending = Some(Pending {
                    text: String::new(),
                    line: self.line,
                    kind,
                    quote: None,
                    escape: false,
                });
                rest = trimmed;
                continued = false;
                continue;
            };
            if continued {
                // Rows are never inside quotes: quote state is reset when they begin.
                let outside = p.quote.is_none();
                if outside && rest.trim_start().starts_with('\\') {
                    // A meta command line ends the statement before it: no query, command
                    // or row starts with a backslash.
                    out.extend(self.finish());
                    continue;
                }
                if complete && outside && rest.trim().is_empty() {
                    // So does an empty line.
                    out.extend(self.finish());
                    break;
                }
                p.text.push('\n');
            }
            match p.kind {
                Kind::Meta => {
                    p.text.push_str(rest);
                    if complete {
                        let text = p.text.trim_end().trim_end_matches(';').to_string();
                        p.text = text;
                        out.extend(self.finish());
                    }
                    break;
                }
                Kind::Rows => {
                    p.text.push_str(rest);
                    break;
                }
                Kind::Command { .. } | Kind::Query => match scan(p, rest) {
                    Some(end) => {
                        p.text.push_str(&rest[..end]);
                        out.extend(self.finish());
                        rest = &rest[end + 1..];
                    }
                    None => {
                        p.text.push_str(rest);
                        if complete && p.kind == (Kind::Command { rows: true }) {
                            p.kind = Kind::Rows;
                            p.quote = None;
                            p.escape = false;
                        }
                        break;
                    }
                },
            }
        }
        out
    }
}

/// Scans `text` with the quote state of `p`; returns the byte offset of the first `;` outside
/// quotes, updating the state up to there (or to the end).
fn scan(p: &mut Pending, text: &str) -> Option<usize> {
    let shell = matches!(p.kind, Kind::Command { .. });
    for (i, c) in text.char_indices() {
        if p.escape {
            p.escape = false;
            continue;
        }
        match p.quote {
            Some(q) if c == q => p.quote = None,
            // A shell escapes only in double quotes; YT QL in both string quotes.
            Some(q) if c == '\\' && (q == '"' || (!shell && q == '\'')) => p.escape = true,
            Some(_) => {}
            None => match c {
                '\\' if shell => p.escape = true,
                '\'' | '"' => p.quote = Some(c),
                '`' if !shell => p.quote = Some(c),
                ';' => return Some(i),
                _ => {}
            },
        }
    }
    None
}

/// The first word of a statement: up to whitespace or `;`.
pub fn first_word(text: &str) -> &str {
    let text = text.trim_start();
    let end = text
        .find(|c: char| c.is_whitespace() || c == ';')
        .unwrap_or(text.len());
    &text[..end]
}

/// The word that names a statement's command: the first word, or the second after `dynql` or
/// `yt`, so a command pasted from a terminal or from YT's documentation runs as it is.
pub fn command_word(text: &str) -> &str {
    let first = first_word(text);
    match first {
        "dynql" | "yt" => first_word(&text.trim_start()[first.len()..]),
        _ => first,
    }
}

/// A command line's words without a leading `dynql` or `yt`.
fn command_words(line: &str) -> Result<Vec<String>, UnclosedQuote> {
    let mut words = words(line)?;
    if words.len() > 1 && matches!(words[0].as_str(), "dynql" | "yt") {
        words.remove(0);
    }
    Ok(words)
}

/// A statement, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// `\name ARGS`: the name without the backslash.
    Meta { name: String, args: Vec<String> },
    /// A command line split into words, and the rows that followed it (empty if none).
    Command { words: Vec<String>, rows: String },
    /// A YT QL query.
    Query(String),
}

/// Parses a statement of the given kind (from [`Splitter`]); the error is an unclosed quote.
pub fn parse(statement: &str, is_command: fn(&str) -> bool) -> Result<Parsed, UnclosedQuote> {
    let text = statement.trim();
    if let Some(meta) = text.strip_prefix('\\') {
        let mut words = words(meta)?;
        let name = if words.is_empty() {
            String::new()
        } else {
            words.remove(0)
        };
        return Ok(Parsed::Meta { name, args: words });
    }
    let command = command_word(text);
    if ROW_COMMANDS.contains(&command) {
        let (line, rows) = text.split_once('\n').unwrap_or((text, ""));
        return Ok(Parsed::Command {
            words: command_words(line)?,
            rows: rows.to_string(),
        });
    }
    // `sql SELECT …` unquoted: the rest of the statement is the SQL, as if quoted.
    if command == "sql" {
        if let Some(rest) = text.strip_prefix("sql").map(str::trim_start) {
            if !rest.is_empty() && !rest.starts_with(['\'', '"', '-']) {
                return Ok(Parsed::Command {
                    words: vec!["sql".to_string(), rest.to_string()],
                    rows: String::new(),
                });
            }
        }
    }
    if is_command(command) {
        return Ok(Parsed::Command {
            words: command_words(text)?,
            rows: String::new(),
        });
    }
    Ok(Parsed::Query(text.to_string()))
}

/// A quote opened and not closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnclosedQuote {
    /// The quote character.
    pub quote: char,
    /// Its byte offset.
    pub position: usize,
}

impl fmt::Display for UnclosedQuote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unclosed {} quote at position {}",
            self.quote, self.position
        )
    }
}

impl std::error::Error for UnclosedQuote {}

/// A word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word with quotes removed and escapes applied.
    pub text: String,
    /// Byte offset of its first character (a quote, if it starts with one).
    pub start: usize,
}

/// Words of a command line, as far as it goes: the last word may be cut inside quotes (then
/// the open quote is returned too). Whitespace, newlines included, separates words.
pub fn split_words(line: &str) -> (Vec<Word>, Option<UnclosedQuote>) {
    let mut words: Vec<Word> = Vec::new();
    let mut current: Option<Word> = None;
    let mut quote: Option<(char, usize)> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let word = current.get_or_insert_with(|| Word {
            text: String::new(),
            start: i,
        });
        match quote {
            Some(('\'', _)) if c == '\'' => quote = None,
            Some(('\'', _)) => word.text.push(c),
            Some((_, _)) if c == '"' => quote = None,
            Some((_, _)) if c == '\\' => match chars.peek() {
                // POSIX: in double quotes a backslash escapes only these.
                Some(&(_, n)) if matches!(n, '"' | '\\' | '$' | '`') => {
                    word.text.push(n);
                    chars.next();
                }
                Some(&(_, '\n')) => {
                    chars.next();
                }
                _ => word.text.push('\\'),
            },
            Some(_) => word.text.push(c),
            None if c.is_whitespace() => {
                // Whitespace before any character of a word starts no word.
                if let Some(w) = current.take() {
                    if w.start != i {
                        words.push(w);
                    }
                }
            }
            None if c == '\'' || c == '"' => quote = Some((c, i)),
            None if c == '\\' => match chars.next() {
                Some((_, '\n')) | None => {}
                Some((_, n)) => word.text.push(n),
            },
            None => word.text.push(c),
        }
    }
    words.extend(current);
    let open = quote.map(|(quote, position)| UnclosedQuote { quote, position });
    (words, open)
}

/// The words of a complete command line.
///
/// # Errors
/// A quote is not closed.
pub fn words(line: &str) -> Result<Vec<String>, UnclosedQuote> {
    match split_words(line) {
        (_, Some(open)) => Err(open),
        (words, None) => Ok(words.into_iter().map(|w| w.text).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_command(word: &str) -> bool {
        matches!(word, "create" | "get" | "start-tx" | "select-rows" | "sql")
            || ROW_COMMANDS.contains(&word)
    }

    /// Feeds `input` line by line, then ends it.
    fn split(input: &str) -> Vec<(String, usize)> {
        let mut s = Splitter::new(is_command);
        let mut out = Vec::new();
        for line in input.split('\n') {
            out.extend(s.push_line(line));
        }
        out.extend(s.finish());
        out.into_iter().map(|st| (st.text, st.line)).collect()
    }

    fn texts(input: &str) -> Vec<String> {
        split(input).into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn semicolons_and_empty_lines_end_statements() {
        assert_eq!(
            split("select 1;select 2 ;\n\nselect\n  3\n\n  * from [//t]"),
            [
                ("select 1".to_string(), 1),
                ("select 2".to_string(), 1),
                ("select\n  3".to_string(), 3),
                ("* from [//t]".to_string(), 6),
            ]
        );
    }

    #[test]
    fn semicolons_in_quotes_do_not_end_statements() {
        assert_eq!(
            texts("* from [//t] where s = 'a;b' or s = \"c\\\";\nd\";\nselect 2;"),
            [
                "* from [//t] where s = 'a;b' or s = \"c\\\";\nd\"",
                "select 2"
            ]
        );
        // A shell has no escapes in single quotes: `'a\'` is closed.
        assert_eq!(
            texts("create table //t --attributes '{a=1;b=\"x\\\\\"}' ;get //t/@"),
            [
                "create table //t --attributes '{a=1;b=\"x\\\\\"}'",
                "get //t/@"
            ]
        );
        assert_eq!(texts("get 'a\\';select 1"), ["get 'a\\'", "select 1"]);
    }

    #[test]
    fn an_empty_line_inside_quotes_belongs_to_the_string() {
        assert_eq!(
            texts("select 'a\n\nb';select 2"),
            ["select 'a\n\nb'", "select 2"]
        );
    }

    #[test]
    fn rows_run_to_an_empty_line_and_keep_their_semicolons() {
        assert_eq!(
            split("insert-rows //t\n{k=1;v=a};\n{k=2};\n\nselect 1;"),
            [
                ("insert-rows //t\n{k=1;v=a};\n{k=2};".to_string(), 1),
                ("select 1".to_string(), 5),
            ]
        );
        // `;` on the command line itself ends the statement with no rows.
        assert_eq!(
            texts("delete-rows //t; select 1;"),
            ["delete-rows //t", "select 1"]
        );
        assert_eq!(
            texts("yt insert-rows //t\n{k=1};\n\nselect 1;"),
            ["yt insert-rows //t\n{k=1};", "select 1"]
        );
        // The end of input ends the rows too.
        assert_eq!(
            texts("insert-rows //t --format json\n{\"k\": 1}"),
            ["insert-rows //t --format json\n{\"k\": 1}"]
        );
    }

    #[test]
    fn a_meta_command_line_ends_the_statement_before_it() {
        assert_eq!(
            texts("get //t/@\n\\format json\nselect 1\n  \\timing\ninsert-rows //t\n{k=1}\n\\q"),
            [
                "get //t/@",
                "\\format json",
                "select 1",
                "\\timing",
                "insert-rows //t\n{k=1}",
                "\\q"
            ]
        );
        // Not inside a string.
        assert_eq!(texts("select 'a\n\\b'"), ["select 'a\n\\b'"]);
    }

    #[test]
    fn meta_commands_are_one_line_and_comments_are_skipped() {
        assert_eq!(
            split("-- a comment\n\\d //t;\n\\timing on\nselect 1"),
            [
                ("\\d //t".to_string(), 2),
                ("\\timing on".to_string(), 3),
                ("select 1".to_string(), 4),
            ]
        );
    }

    #[test]
    fn pending_text_is_the_unfinished_statement() {
        let mut s = Splitter::new(is_command);
        assert!(s.push_line("select 1; select k").len() == 1);
        assert!(s.push_partial_line("from [//").is_empty());
        assert_eq!(s.pending(), Some(("select k\nfrom [//", Kind::Query)));
        let mut s = Splitter::new(is_command);
        s.push_partial_line("\\d //");
        assert_eq!(s.pending(), Some(("\\d //", Kind::Meta)));
        let mut s = Splitter::new(is_command);
        s.push_line("insert-rows //t");
        assert_eq!(s.pending().map(|p| p.1), Some(Kind::Rows));
        assert!(!s.is_idle());
        s.push_line("");
        assert!(s.is_idle());
    }

    #[test]
    fn words_follow_posix_quoting() {
        assert_eq!(
            words(r#"create table //t --attributes '{a="x y"; b=%true}' "q\"uo\te" a\ b"#).unwrap(),
            [
                "create",
                "table",
                "//t",
                "--attributes",
                r#"{a="x y"; b=%true}"#,
                "q\"uo\\te",
                "a b"
            ]
        );
        assert_eq!(words("  a\n  b  ").unwrap(), ["a", "b"]);
        assert_eq!(words("''").unwrap(), [""]);
        assert_eq!(
            words("get 'abc"),
            Err(UnclosedQuote {
                quote: '\'',
                position: 4
            })
        );
        let (w, open) = split_words("get \"//t/@sch");
        assert_eq!(
            w.last().map(|w| (w.text.as_str(), w.start)),
            Some(("//t/@sch", 4))
        );
        assert_eq!(open.map(|o| o.quote), Some('"'));
    }

    #[test]
    fn unquoted_sql_is_the_rest_of_the_statement() {
        let parsed = parse(
            "sql SELECT upper(name) FROM \"//t\"\nWHERE a > 1",
            is_command,
        );
        assert_eq!(
            parsed.unwrap(),
            Parsed::Command {
                words: vec![
                    "sql".into(),
                    "SELECT upper(name) FROM \"//t\"\nWHERE a > 1".into()
                ],
                rows: String::new(),
            }
        );
        // Quoted, it is an ordinary command line (options allowed).
        let parsed = parse("sql 'SELECT 1' --format json", is_command).unwrap();
        assert_eq!(
            parsed,
            Parsed::Command {
                words: vec![
                    "sql".into(),
                    "SELECT 1".into(),
                    "--format".into(),
                    "json".into()
                ],
                rows: String::new(),
            }
        );
    }

    #[test]
    fn statements_parse_into_meta_commands_and_queries() {
        assert_eq!(
            parse("\\d  //t", is_command).unwrap(),
            Parsed::Meta {
                name: "d".into(),
                args: vec!["//t".into()]
            }
        );
        assert_eq!(
            parse(
                "insert-rows //t --format json\n{\"k\": 1}\n{\"k\": 2}",
                is_command
            )
            .unwrap(),
            Parsed::Command {
                words: vec![
                    "insert-rows".into(),
                    "//t".into(),
                    "--format".into(),
                    "json".into()
                ],
                rows: "{\"k\": 1}\n{\"k\": 2}".into()
            }
        );
        assert_eq!(
            parse("get\n  //t/@", is_command).unwrap(),
            Parsed::Command {
                words: vec!["get".into(), "//t/@".into()],
                rows: String::new()
            }
        );
        assert_eq!(
            parse("* from [//t]", is_command).unwrap(),
            Parsed::Query("* from [//t]".into())
        );
        assert!(parse("get '//t", is_command).is_err());
        // Pasted with the program name in front.
        assert_eq!(
            parse("dynql insert-rows //t\n{k=1}", is_command).unwrap(),
            Parsed::Command {
                words: vec!["insert-rows".into(), "//t".into()],
                rows: "{k=1}".into()
            }
        );
        assert_eq!(
            parse("yt from [//t]", is_command).unwrap(),
            Parsed::Query("yt from [//t]".into())
        );
    }
}
