//! What the one-shot commands print for a person at a terminal (driven through tmux): drawn
//! tables for `sql` and `select-rows`, pretty YSON for `get` and `explain-query`; a format
//! asked for is printed as asked (issue 40, item 6).

use std::path::Path;

use crate::shell::{shell_quote, Tmux};
use crate::TestStore;

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";

#[test]
fn commands_at_a_terminal_draw_tables_and_pretty_print() {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//home/t", "--attributes", SCHEMA],
        None,
    );
    let rows: String = (0..50).map(|k| format!("{{k={k};v=x{k}}};\n")).collect();
    s.ok(&["insert-rows", "//home/t"], Some(&rows));
    let dynql = format!(
        "{} --store {}",
        shell_quote(Path::new(env!("CARGO_BIN_EXE_dynql"))),
        shell_quote(s.dir.path())
    );
    // Each command's output, then a marker; the session stays for the screen to be read.
    let command = [
        format!("{dynql} sql 'SELECT k, v FROM \"//home/t\" WHERE k < 2 ORDER BY k'"),
        format!("{dynql} select-rows 'k FROM [//home/t]'"),
        format!("{dynql} select-rows 'k FROM [//home/t] WHERE k = 7' --format json"),
        format!("YT_FORMAT=yson {dynql} sql 'SELECT 5 AS five'"),
        format!("{dynql} get //home/t/@key_columns"),
        format!("{dynql} explain-query 'k FROM [//home/t] WHERE k = 1'"),
        "echo '[all done]'; sleep 30".to_string(),
    ]
    .join("; ");
    let Some(t) = Tmux::start(s.dir.path(), &command) else {
        eprintln!("skipped: tmux is not installed");
        return;
    };
    let screen = t.wait_for("[all done]", 1);
    // sql: a drawn table with its row count.
    assert!(
        screen.contains("│ 0 ┆ x0 │\n│ 1 ┆ x1 │\n╰───┴────╯\n(2 rows)\n"),
        "{screen}"
    );
    // select-rows: the first 40 rows drawn, the rest counted.
    assert!(
        screen.contains("│ 39 │\n╰────╯\n(50 rows), 10 not shown"),
        "{screen}"
    );
    assert!(!screen.contains("│ 40 │"), "{screen}");
    // --format and YT_FORMAT are printed as asked, terminal or not.
    assert!(screen.contains("\n{\"k\":7}\n"), "{screen}");
    assert!(screen.contains("\n{\"five\"=5;};\n"), "{screen}");
    // get and explain-query: pretty YSON.
    assert!(screen.contains("\n[\n    \"k\";\n]\n"), "{screen}");
    assert!(screen.contains("\n    \"ranges\" = [\n"), "{screen}");
}

/// A query that runs longer than a second shows a progress bar on a terminal's stderr (the
/// rows and row groups read of those planned), cleared before the result is drawn; with
/// stderr not a terminal it prints nothing (issue 41, item 4).
#[test]
fn a_long_query_shows_a_progress_bar_on_a_terminal_only() {
    let s = TestStore::new();
    s.ok(
        &["create", "table", "//home/t", "--attributes", SCHEMA],
        None,
    );
    let rows: String = (0..15).map(|k| format!("{{k={k};v=x{k}}};\n")).collect();
    s.ok(&["insert-rows", "//home/t"], Some(&rows));
    s.ok(&["compact", "//home/t"], None);
    let dynql = format!(
        "{} --store {}",
        shell_quote(Path::new(env!("CARGO_BIN_EXE_dynql"))),
        shell_quote(s.dir.path())
    );
    let piped = s.dir.path().join("piped-stderr");
    // 15 rows of 200 ms each: three seconds, twice.
    let query = "'k, sleep(200) AS slept FROM [//home/t]'";
    let command = [
        format!("{dynql} select-rows {query}"),
        format!(
            "{dynql} select-rows {query} 2>{} | cat",
            shell_quote(&piped)
        ),
        "echo '[all done]'; sleep 30".to_string(),
    ]
    .join("; ");
    let Some(t) = Tmux::start(s.dir.path(), &command) else {
        eprintln!("skipped: tmux is not installed");
        return;
    };
    let running = t.wait_for("reading [", 1);
    assert!(running.contains("/15 rows, row groups "), "{running}");
    assert!(running.contains("/1, "), "{running}");
    let screen = t.wait_for_within("[all done]", 1, std::time::Duration::from_secs(30));
    // Cleared: the drawn table follows the command line with no bar left.
    assert!(!screen.contains("reading ["), "{screen}");
    assert!(screen.contains("│ 14 ┆     0 │"), "{screen}");
    assert!(screen.contains("(15 rows)"), "{screen}");
    let stderr = std::fs::read_to_string(&piped).expect("the piped command's stderr");
    assert_eq!(stderr, "", "nothing on a stderr that is not a terminal");
}
