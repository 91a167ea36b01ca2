//! The command reference (`docs/cli-reference.md`), generated from the clap definitions so
//! it never drifts: a test compares the file with what the definitions render, and
//! `DYNQL_BLESS=1 cargo test -p dynql-cli reference` rewrites it.

use clap::CommandFactory;

use crate::commands::Cli;

/// The reference as Markdown: the global usage, then every command's full help.
pub fn markdown() -> String {
    let mut cli = Cli::command().term_width(100);
    let mut out = String::from(
        "# dynql command reference\n\n\
         Generated from the command line's own definitions (`crates/dynql-cli/src/reference.rs`); \
         do not edit by hand. `dynql help COMMAND` prints the same text.\n\n",
    );
    out.push_str("## dynql\n\n```text\n");
    out.push_str(&cli.render_long_help().to_string());
    out.push_str("```\n");
    let names: Vec<String> = cli
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    for name in names {
        let Some(sub) = cli.find_subcommand_mut(&name) else {
            continue;
        };
        let mut sub = sub.clone().bin_name(format!("dynql {name}"));
        out.push_str(&format!("\n## dynql {name}\n\n```text\n"));
        out.push_str(&sub.render_long_help().to_string());
        out.push_str("```\n");
    }
    // No trailing spaces: clap pads some lines.
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli-reference.md");
        let rendered = markdown();
        if std::env::var("DYNQL_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(path, &rendered).expect("write the reference");
            return;
        }
        let stored = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            stored == rendered,
            "docs/cli-reference.md is out of date: run DYNQL_BLESS=1 cargo test -p dynql-cli reference"
        );
        // Every command is in it.
        for c in Cli::command().get_subcommands() {
            assert!(rendered.contains(&format!("## dynql {}\n", c.get_name())));
        }
    }
}
