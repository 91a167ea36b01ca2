//! `dynql shell`: scripts on stdin, and a person at a terminal (driven through tmux).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::TestStore;

const CREATE: &str = r#"create table //home/t --attributes '{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}';"#;

#[test]
fn a_script_runs_its_statements_in_order() {
    let s = TestStore::new();
    let script = format!(
        "{CREATE}
insert-rows //home/t
{{k=1;v=a}};
{{k=2;v=\"b;c\"}};

-- a comment between statements
select * from [//home/t] where k = 2;
\\format json
k, v
  from [//home/t]
  order by k limit 10

get //home/t/@key_columns --format json;
insert-rows //home/t --format json
{{\"k\": 3, \"v\": \"json\"}}
\\format schemaful_dsv
select v from [//home/t] where k = 3; select-rows 'k from [//home/t] where k = 1' --format json
"
    );
    let out = s.ok(&["shell"], Some(&script));
    // `create` prints the new table's id first, as yt does.
    let (id, out) = out.split_once('\n').unwrap();
    assert_eq!(s.ok(&["get", "//home/t/@id"], None), format!("\"{id}\"\n"));
    assert_eq!(
        out,
        "{\"k\"=2;\"v\"=\"b;c\";};\n\
         {\"k\":1,\"v\":\"a\"}\n{\"k\":2,\"v\":\"b;c\"}\n\
         [\"k\"]\n\
         json\n\
         {\"k\":1}\n"
    );
}

#[test]
fn a_script_stops_at_the_first_error() {
    let s = TestStore::new();
    let script = format!(
        "{CREATE}
select * from [//home/t];
select k from [//home/nope];
create table //home/later --attributes '{{dynamic=%true; schema=[{{name=k;type=int64;sort_order=ascending}}]}}';
"
    );
    let out = s.run(&["shell"], Some(&script));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 3:"), "{stderr}");
    assert!(stderr.contains("//home/nope"), "{stderr}");
    assert_eq!(s.ok(&["exists", "//home/t"], None), "true\n");
    assert_eq!(s.ok(&["exists", "//home/later"], None), "false\n");
}

#[test]
fn a_script_error_shows_the_line_of_the_query_with_a_caret() {
    let s = TestStore::new();
    let script = format!("{CREATE}\nselect k\nfrom [//home/t]\nwhere k = = 1;\n");
    let err = s.fails(&["shell"], Some(&script));
    assert!(
        err.contains("Error: line 2: Error while parsing query"),
        "{err}"
    );
    assert!(err.contains("\n  where k = = 1\n            ^\n"), "{err}");
    // Bad command lines and meta commands fail too.
    let err = s.fails(&["shell"], Some("get //home/t/@schema --bogus;\n"));
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
    let err = s.fails(&["shell"], Some("\\format nope\n"));
    assert!(err.contains("\\format takes one of pretty, json"), "{err}");
    let err = s.fails(&["shell"], Some("get '//home/t/@schema;\n"));
    assert!(err.contains("unclosed ' quote"), "{err}");
}

#[test]
fn quit_ends_a_script_and_statements_piped_to_dynql_alone_run() {
    let s = TestStore::new();
    assert_eq!(s.ok(&["shell"], Some("\\q\nselect * from [//nope];\n")), "");
    // As `echo '…' | duckdb` does: no command, statements on stdin run as in the shell.
    assert_eq!(
        s.ok(&[], Some("exists //tmp;\nexists //nope;\n")),
        "true\nfalse\n"
    );
    let err = s.fails(&[], Some("select * from [//nope];\n"));
    assert!(err.contains("//nope"), "{err}");
    // Options still need their command.
    let err = s.fails(&["--bogus"], Some("exists //tmp;\n"));
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
}

/// A tmux server of its own, running one session; killed on drop.
pub(crate) struct Tmux {
    /// The server's socket: in the test's temporary directory, so no other server is touched
    /// and nothing is left behind.
    socket: PathBuf,
}

impl Tmux {
    /// Starts `command` in a detached 200x50 session; `None` if tmux is not installed.
    pub(crate) fn start(dir: &Path, command: &str) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            return None;
        }
        let tmux = Tmux {
            socket: dir.join("tmux.sock"),
        };
        let status = tmux
            .command()
            .args(["new-session", "-d", "-s", "shell", "-x", "200", "-y", "50"])
            .arg(command)
            .status()
            .expect("tmux new-session");
        assert!(status.success(), "tmux new-session failed");
        Some(tmux)
    }

    pub(crate) fn command(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    /// Types `text` literally.
    pub(crate) fn type_text(&self, text: &str) {
        // tmux reads an argument's final `;` as a command separator unless it is escaped.
        let text = match text.strip_suffix(';') {
            Some(head) => format!("{head}\\;"),
            None => text.to_string(),
        };
        let status = self
            .command()
            .args(["send-keys", "-t", "shell", "-l", &text])
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// Presses keys by tmux name (`Enter`, `Tab`, `C-u`).
    pub(crate) fn keys(&self, keys: &[&str]) {
        let status = self
            .command()
            .args(["send-keys", "-t", "shell"])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// Types a line and presses Enter.
    pub(crate) fn line(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    pub(crate) fn screen(&self) -> String {
        let out = self
            .command()
            .args(["capture-pane", "-p", "-t", "shell", "-S", "-1000"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (up to 10 s) until `needle` appears on the screen at least `count` times.
    pub(crate) fn wait_for(&self, needle: &str, count: usize) -> String {
        self.wait_for_within(needle, count, Duration::from_secs(10))
    }

    /// [`Tmux::wait_for`] with a time budget of its own.
    pub(crate) fn wait_for_within(&self, needle: &str, count: usize, budget: Duration) -> String {
        let deadline = Instant::now() + budget;
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= count {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited 10 s for {count} × {needle:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

pub(crate) fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn a_person_at_a_terminal() {
    let s = TestStore::new();
    let history = s.dir.path().join("history");
    let command = format!(
        "env DYNQL_HISTORY={} {} --store {}; echo \"[exited $?]\"; sleep 30",
        shell_quote(&history),
        shell_quote(Path::new(env!("CARGO_BIN_EXE_dynql"))),
        shell_quote(s.dir.path()),
    );
    let Some(t) = Tmux::start(s.dir.path(), &command) else {
        eprintln!("skipped: tmux is not installed");
        return;
    };
    // `dynql` with no command on a terminal is the shell.
    t.wait_for("dynql>", 1);
    t.line(CREATE);
    t.wait_for("dynql>", 2);
    // Rows follow the command, up to an empty line.
    t.line("insert-rows //home/t");
    t.line("{k=1;v=alpha};");
    t.line("{k=2;v=beta};");
    t.keys(&["Enter"]);
    t.wait_for("dynql>", 3);
    // A statement over several lines, ended by `;`.
    t.line("\\timing off");
    t.wait_for("timing is off", 1);
    t.line("select k, v");
    t.line("from [//home/t]");
    // The lines after the first show the continuation prompt.
    t.wait_for("   ..> from [//home/t]", 1);
    t.line("where k > 0;");
    let screen = t.wait_for("(2 rows)", 1);
    assert!(
        screen.contains("dynql> select k, v\n   ..> from [//home/t]\n   ..> where k > 0;\n"),
        "{screen}"
    );
    assert!(screen.contains("│ 1 ┆ alpha │"), "{screen}");
    assert!(screen.contains("│ 2 ┆ beta  │"), "{screen}");
    // Keys typed ahead are kept from one line to the next: two Enters at once end the
    // statement with an empty line.
    t.type_text("v from [//home/t] where k = 1");
    t.keys(&["Enter", "Enter"]);
    let screen = t.wait_for("(1 row)", 1);
    assert!(screen.contains("│ alpha │"), "{screen}");
    t.line("\\timing on");
    t.wait_for("timing is on", 1);
    t.line("k from [//home/t] where k = 2;");
    let screen = t.wait_for("(1 row, ", 1);
    assert!(screen.contains(" ms)"), "{screen}");
    t.line("\\d //home/t");
    let screen = t.wait_for("rows: 2, chunks: 0", 1);
    assert!(
        screen.contains("//home/t: sorted dynamic table, mounted"),
        "{screen}"
    );
    assert!(screen.contains("key columns: k"), "{screen}");
    assert!(screen.contains("│ v    ┆ string ┆"), "{screen}");
    // A bad query: the message, the line, a caret under the position; the shell goes on.
    t.line("* from [//home/t] where k = = 1;");
    let screen = t.wait_for("Error while parsing query", 1);
    let caret = format!("  * from [//home/t] where k = = 1\n  {}^\n", " ".repeat(28));
    assert!(screen.contains(&caret), "{screen}");
    t.wait_for("dynql>", 9);
    // Tab completes a command word, then a table path, then a column.
    t.type_text("sel");
    t.keys(&["Tab"]);
    t.wait_for("dynql> select", 2);
    t.type_text(" * from [//ho");
    t.keys(&["Tab"]);
    t.wait_for("dynql> select * from [//home/", 1);
    t.keys(&["Tab"]);
    t.wait_for("dynql> select * from [//home/t", 1);
    t.type_text("] where ");
    t.keys(&["Tab", "Tab"]);
    let screen = t.wait_for("dynql> select * from [//home/t] where", 2);
    // The second Tab lists the columns of the table the query names.
    assert!(screen.contains("\nk  v\n"), "{screen}");
    t.type_text("k = 1;");
    t.keys(&["Enter"]);
    t.wait_for("(1 row, ", 2);
    // On a continuation line, columns complete from the table named on an earlier line.
    t.line("select v from [//home/t]");
    t.type_text("where ");
    t.keys(&["Tab", "Tab"]);
    let screen = t.wait_for("   ..> where", 2);
    assert!(screen.contains("\nk  v\n"), "{screen}");
    // Ctrl-C drops the statement being typed: the next line starts a new one.
    t.keys(&["C-c"]);
    t.line("k from [//home/t] where k = 1;");
    t.wait_for("(1 row, ", 3);
    t.line("\\q");
    t.wait_for("[exited 0]", 1);
    let history = std::fs::read_to_string(&history).expect("the history file");
    assert!(
        history.contains("select k, v\\nfrom [//home/t]\\nwhere k > 0;"),
        "{history}"
    );
}

#[test]
fn ctrl_c_cancels_the_running_statement_within_a_second_and_the_session_goes_on() {
    let s = TestStore::new();
    s.ok(&["create", "table", "//home/t", "--attributes", "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}"], None);
    let rows: String = (0..3000).map(|k| format!("{{k={k};v=x}};\n")).collect();
    s.ok(&["insert-rows", "//home/t"], Some(&rows));
    // `exec`: the terminal's Ctrl-C reaches dynql alone, not a shell around it.
    let command = format!(
        "exec env DYNQL_HISTORY={} {} --store {}",
        shell_quote(&s.dir.path().join("history")),
        shell_quote(Path::new(env!("CARGO_BIN_EXE_dynql"))),
        shell_quote(s.dir.path()),
    );
    let Some(t) = Tmux::start(s.dir.path(), &command) else {
        eprintln!("skipped: tmux is not installed");
        return;
    };
    t.wait_for("dynql>", 1);
    // Each computes for long stretches without yielding: a cross join feeding an aggregate
    // (27 billion joined rows), a hash join of 100 million rows against a 20-million-row build side, a YT QL
    // join without an index.
    let statements = [
        r#"sql SELECT sum(a.k * b.k + c.k) AS s FROM "//home/t" a, "//home/t" b, "//home/t" c;"#,
        "sql SELECT count(*) AS c FROM generate_series(1, 100000000) a JOIN generate_series(1, 20000000) b ON a.value = b.value;",
        "select-rows 'sum(a.k) AS s FROM [//home/t] AS a JOIN [//home/t] AS b ON a.v = b.v GROUP BY 1 AS one' --allow-join-without-index --input-row-limit 100000000000 --output-row-limit 100000000000;",
    ];
    for (n, statement) in statements.iter().enumerate() {
        t.line(statement);
        // Long enough to be computing, short of the time the fastest one takes (the hash
        // join, about 3 s on 2 cores: a 100M-row probe side against a 20M-row build side).
        std::thread::sleep(Duration::from_millis(300));
        let screen = t.screen();
        assert_eq!(
            screen.matches("dynql>").count(),
            n + 1,
            "{statement} is not running:\n{screen}"
        );
        let pressed = Instant::now();
        t.keys(&["C-c"]);
        t.wait_for("Cancelled.", n + 1);
        t.wait_for("dynql>", n + 2);
        let waited = pressed.elapsed();
        assert!(
            waited < Duration::from_secs(1),
            "{statement}: the prompt came back {waited:?} after Ctrl-C"
        );
    }
    // A cancelled statement prints nothing, even when it reaches its end before the abort
    // takes effect (the join computes inline for about a second): its sum never shows.
    std::thread::sleep(Duration::from_secs(3));
    let cancelled_sum = (0..3000u64).sum::<u64>() * 3000;
    let screen = t.screen();
    assert!(
        !screen.contains(&cancelled_sum.to_string()) && !screen.contains("1 row"),
        "a cancelled statement printed its result:\n{screen}"
    );
    // The session goes on, with the store as it was. (Its answer may wait for the cancelled
    // statements' threads to let go of the cores: DataFusion stops a cancelled operator at
    // its next batch, which a debug build under the whole suite's load takes seconds to reach.)
    t.line("k, v from [//home/t] where k = 2;");
    let screen = t.wait_for_within("(1 row", 1, Duration::from_secs(60));
    assert!(screen.contains("│ 2 ┆ x │"), "{screen}");
    assert!(!screen.contains(&cancelled_sum.to_string()), "{screen}");
    t.line("\\q");
}

#[test]
fn ctrl_c_ends_a_one_shot_query_at_once() {
    use std::os::unix::process::ExitStatusExt;
    if sigint_ignored() {
        eprintln!("skipped: this process ignores SIGINT (a script's background job), and so would dynql, as it should");
        return;
    }
    let s = TestStore::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynql"))
        .args(["--store", &s.url(), "sql"])
        // 100 billion rows: minutes of work, in little memory (a 20M-row join now ends
        // within the second the test waits).
        .arg("SELECT count(*) AS c FROM generate_series(1, 100000000000) a WHERE a.value % 7 = 3")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn dynql");
    std::thread::sleep(Duration::from_millis(1000));
    assert!(child.try_wait().unwrap().is_none(), "the query ended early");
    let pressed = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(kill.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if pressed.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("dynql still runs 5 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let waited = pressed.elapsed();
    assert!(
        waited < Duration::from_secs(1),
        "exited {waited:?} after SIGINT"
    );
    // Ended by the signal, which a shell reports as exit status 130 (and a script loop
    // around it stops, as it should).
    assert_eq!(status.signal(), Some(2), "{status:?}");
}

#[test]
fn session_options_and_a_row_cap_for_drawn_tables() {
    let s = TestStore::new();
    let rows: String = (0..50).map(|k| format!("{{k={k};v=x}};")).collect();
    let script = format!(
        "{CREATE}
insert-rows //home/t
{rows}

\\set input_row_limit 10
\\set
\\format json
k from [//home/t] where k < 5;
\\set input_row_limit default
\\format pretty
k from [//home/t];
\\maxrows 0
k from [//home/t] where k >= 48;
\\set input_row_limit 10
k from [//home/t];
"
    );
    let out = s.run(&["shell"], Some(&script));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("input_row_limit 10\noutput_row_limit default\ntimestamp default\n"),
        "{stdout}"
    );
    // A limit of 10 rows read is enough for k < 5 (one range read in key order).
    assert!(stdout.contains("{\"k\":4}\n"), "{stdout}");
    // Pretty tables show 40 rows and count the rest; \maxrows 0 shows all.
    assert!(stdout.contains("(50 rows), 10 not shown"), "{stdout}");
    assert!(stdout.contains("(2 rows)\n"), "{stdout}");
    // The session's limit applies, and its error says how to raise it.
    assert!(
        stderr.contains("excessive input") && stderr.contains("\\set input_row_limit N"),
        "{stderr}"
    );
}

#[test]
fn files_run_in_the_session_and_select_rows_follows_the_shell_format() {
    let s = TestStore::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("setup.ytql");
    std::fs::write(
        &file,
        format!("{CREATE}\ninsert-rows //home/t\n{{k=1;v=a}};\n\n\\format json\n"),
    )
    .unwrap();
    let bad = dir.path().join("bad.ytql");
    std::fs::write(&bad, "k from [//home/t];\nnot a query;\n").unwrap();
    let script = format!(
        "\\i {}
select-rows 'k, v from [//home/t]';
\\format pretty
select-rows 'k from [//home/t]';
select-rows 'k from [//home/t]' --format yson;
\\i {}
",
        file.display(),
        bad.display()
    );
    let out = s.run(&["shell"], Some(&script));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The file's `create` prints the table's id first; its \format json holds after it, and
    // select-rows without --format follows \format.
    let (_id, after) = stdout.split_once('\n').unwrap_or_default();
    assert!(after.starts_with("{\"k\":1,\"v\":\"a\"}\n"), "{stdout}");
    assert!(
        stdout.contains("│ 1 │") && stdout.contains("(1 row)"),
        "{stdout}"
    );
    assert!(stdout.contains("{\"k\"=1;};\n"), "{stdout}");
    // An error in an included file names the file and its line.
    assert!(
        stderr.contains(&format!("{}, line 2", bad.display())),
        "{stderr}"
    );
}

/// Whether this process ignores SIGINT, as a background job of a non-interactive shell does:
/// its children inherit that, and a Ctrl-C cannot reach them.
fn sigint_ignored() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|l| {
                l.strip_prefix("SigIgn:")
                    .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            })
        })
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

#[test]
fn sql_typed_as_a_query_and_count_star_get_hints() {
    let s = TestStore::new();
    // The shell reads a bare statement as YT QL: SQL needs the `sql` prefix.
    for query in ["SELECT 1 AS x;", "select * from \"//home/t\";"] {
        let err = s.fails(&["shell"], Some(query));
        assert!(err.contains("hint:") && err.contains("`sql`"), "{err}");
    }
    // A YT QL mistake that is no SQL gets no such hint.
    let err = s.fails(
        &["shell"],
        Some(&format!("{CREATE}\nk from [//home/t] where;\n")),
    );
    assert!(!err.contains("`sql`"), "{err}");
    // YT QL has no count(*): YT users count with sum(1).
    let err = s.fails(&["shell"], Some("select count(*) from [//home/t];"));
    assert!(err.contains("hint:") && err.contains("sum(1)"), "{err}");
    let err = s.fails(&["select-rows", "count(*) AS n FROM [//home/t]"], None);
    assert!(
        err.contains("\n        ^\nhint:") && err.contains("sum(1)"),
        "{err}"
    );
    let err = s.fails(&["select-rows", "count(k) AS n FROM [//home/t]"], None);
    assert!(err.contains("hint:") && err.contains("sum(1)"), "{err}");
}
