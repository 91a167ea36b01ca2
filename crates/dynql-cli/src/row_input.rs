//! Rows read from stdin: whole ([`read_rows`], for the commands that take a batch of rows or
//! keys), or a part at a time ([`RowStream`], so that a large `write-table` input is never
//! held whole: JSON a line per row, YSON (`row; row; …`) cut at the `;` between top-level
//! rows).

use std::io::{BufRead, BufReader, Read};

use anyhow::{Context, Result};
use dynql::{Database, Yson};

use crate::commands::InputFormat;

/// About how many bytes of input one part holds.
const PART_BYTES: usize = 8 << 20;

/// Rows of one input, a part at a time.
pub struct RowStream<'a> {
    format: InputFormat,
    input: BufReader<&'a mut (dyn Read + Send)>,
    /// YSON read but not yet parsed: whole rows up to `cut`, then the start of the next.
    pending: Vec<u8>,
    scan: Scan,
    /// Where the last row boundary in `pending` ends (just after its `;`).
    cut: usize,
    /// Bytes and lines consumed before this part (for error messages).
    offset: usize,
    line: usize,
    done: bool,
}

/// Where a YSON scanner is: inside how many brackets, inside a quoted string.
#[derive(Default)]
struct Scan {
    depth: usize,
    quoted: bool,
    escaped: bool,
    /// How much of `pending` was scanned.
    at: usize,
}

impl<'a> RowStream<'a> {
    pub fn new(format: InputFormat, input: &'a mut (dyn Read + Send)) -> RowStream<'a> {
        RowStream {
            format,
            input: BufReader::with_capacity(1 << 20, input),
            pending: Vec::new(),
            scan: Scan::default(),
            cut: 0,
            offset: 0,
            line: 0,
            done: false,
        }
    }

    /// The next part of the rows; `None` at the end of the input.
    pub fn next_part(&mut self) -> Result<Option<Vec<Yson>>> {
        if self.done {
            return Ok(None);
        }
        let rows = match self.format {
            InputFormat::Json | InputFormat::JsonBytes => self.json_part()?,
            InputFormat::Yson | InputFormat::YsonPretty => self.yson_part()?,
        };
        Ok(Some(rows))
    }

    fn json_part(&mut self) -> Result<Vec<Yson>> {
        let mut rows = Vec::new();
        let mut bytes = 0;
        let mut line = Vec::new();
        while bytes < PART_BYTES {
            line.clear();
            let what = format!("JSON row line {}", self.line + 1);
            if dynql::limits::read_row_line(&mut self.input, &mut line, &what)
                .context("reading rows")?
                == 0
            {
                self.done = true;
                break;
            }
            self.line += 1;
            bytes += line.len();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let v = dynql::json_rows::parse_line(&line)
                .map_err(|e| anyhow::anyhow!("line {}: malformed JSON row: {e}", self.line))?;
            let row = Yson::from_json(&v);
            rows.push(match self.format {
                InputFormat::JsonBytes => crate::format::code_points_as_bytes(row)
                    .map_err(|e| anyhow::anyhow!("line {}: {e}", self.line))?,
                _ => row,
            });
        }
        Ok(rows)
    }

    fn yson_part(&mut self) -> Result<Vec<Yson>> {
        while self.cut < PART_BYTES {
            let chunk = self.input.fill_buf().context("reading rows")?;
            if chunk.is_empty() {
                self.done = true;
                self.cut = self.pending.len();
                break;
            }
            let n = chunk.len();
            self.pending.extend_from_slice(chunk);
            self.input.consume(n);
            self.scan_pending();
            // The row not yet ended by a top-level `;`: bounded, so that input with no
            // row boundary (`/dev/zero`) fails instead of filling memory.
            if self.pending.len() - self.cut > dynql::limits::MAX_ROW_TEXT_BYTES {
                let at = self.offset + self.cut;
                anyhow::bail!(dynql::limits::row_text_too_long(&format!(
                    "the YSON row from byte {at}"
                )));
            }
        }
        let rest = self.pending.split_off(self.cut);
        let part = std::mem::replace(&mut self.pending, rest);
        let start = self.offset;
        self.offset += self.cut;
        // A cut is between top-level rows: the rest is scanned afresh from there.
        self.cut = 0;
        self.scan = Scan::default();
        self.scan_pending();
        dynql::yson::parse_list_fragment(&part)
            .with_context(|| format!("malformed YSON rows (in the part from byte {start})"))
    }

    /// Scans the new bytes of `pending`, moving `cut` after each top-level `;`.
    fn scan_pending(&mut self) {
        let s = &mut self.scan;
        for (i, &b) in self.pending.iter().enumerate().skip(s.at) {
            if s.quoted {
                match b {
                    _ if s.escaped => s.escaped = false,
                    b'\\' => s.escaped = true,
                    b'"' => s.quoted = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => s.quoted = true,
                b'{' | b'[' | b'<' => s.depth += 1,
                b'}' | b']' | b'>' => s.depth = s.depth.saturating_sub(1),
                b';' if s.depth == 0 => self.cut = i + 1,
                _ => {}
            }
        }
        s.at = self.pending.len();
    }
}

/// Reads rows (or keys) for the table at `path` from `input`.
pub async fn read_rows(
    db: &Database,
    path: &str,
    format: InputFormat,
    input: &mut (dyn Read + Send),
) -> Result<Vec<Yson>> {
    let mut rows = parse_rows(format, input)?;
    if matches!(format, InputFormat::Json | InputFormat::JsonBytes) {
        if let Ok(entry) = db.store().table(path).await {
            special_doubles(&entry.schema, &mut rows);
        }
    }
    Ok(rows)
}

/// JSON has no literals for NaN and the infinities: the output writes them as the strings
/// "nan", "inf" and "-inf", and they read back as doubles in double columns.
pub fn special_doubles(schema: &dynql::TableSchema, rows: &mut [Yson]) {
    let doubles: Vec<&str> = schema
        .columns()
        .iter()
        .filter(|c| c.wire_type() == dynql::ValueType::Double)
        .map(|c| c.name.as_str())
        .collect();
    if doubles.is_empty() {
        return;
    }
    for row in rows {
        if let Yson::Map(entries) = row {
            for (name, value) in entries.iter_mut() {
                if doubles.iter().any(|d| d.as_bytes() == name.as_slice()) {
                    if let Some(d) = special_double(value) {
                        *value = Yson::Double(d);
                    }
                }
            }
        }
    }
}

/// The double a JSON string stands for: "nan", "inf", "-inf" (as the JSON output writes them).
fn special_double(value: &Yson) -> Option<f64> {
    match value {
        Yson::String(s) => match s.as_slice() {
            b"nan" => Some(f64::NAN),
            b"inf" => Some(f64::INFINITY),
            b"-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Reads rows from `input`: JSON (one object per line) or YSON (a `;`-separated fragment),
/// each row's text bounded as [`RowStream`] bounds it.
fn parse_rows(format: InputFormat, input: &mut (dyn Read + Send)) -> Result<Vec<Yson>> {
    let mut stream = RowStream::new(format, input);
    let mut rows = Vec::new();
    while let Some(part) = stream.next_part()? {
        rows.extend(part);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(format: InputFormat, text: &str) -> Vec<Vec<Yson>> {
        let mut bytes = text.as_bytes();
        let mut stream = RowStream::new(format, &mut bytes);
        let mut out = Vec::new();
        while let Some(part) = stream.next_part().unwrap() {
            out.push(part);
        }
        out
    }

    #[test]
    fn yson_rows_are_cut_between_rows_only() {
        let text = r#"{a="x;}y";b=[1;2]};<k=v>{a=2;};{a="\";"}"#;
        let rows: Vec<Yson> = parts(InputFormat::Yson, text).concat();
        assert_eq!(
            rows,
            dynql::yson::parse_list_fragment(text.as_bytes()).unwrap()
        );
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn large_inputs_come_in_several_parts_with_every_row() {
        let row = format!("{{a=\"{}\"}};\n", "x".repeat(1000));
        let count = 3 * PART_BYTES / row.len() + 3;
        let text = row.repeat(count);
        let got = parts(InputFormat::Yson, &text);
        let sizes: Vec<usize> = got.iter().map(Vec::len).collect();
        assert!(got.len() >= 3, "{sizes:?} of {count}");
        assert_eq!(got.iter().map(Vec::len).sum::<usize>(), count);
        let json = "{\"a\":1}\n".repeat(count);
        assert_eq!(parts(InputFormat::Json, &json).concat().len(), count);
    }

    #[test]
    fn input_without_row_boundaries_fails_at_the_row_text_limit() {
        for format in [InputFormat::Json, InputFormat::Yson] {
            let mut zeros = std::io::repeat(0).take(1 << 30);
            let mut stream = RowStream::new(format, &mut zeros);
            let e = stream.next_part().unwrap_err();
            assert!(
                format!("{e:#}").contains("longer than 67108864 bytes"),
                "{e:#}"
            );
        }
    }

    #[test]
    fn a_malformed_row_is_an_error() {
        let mut bytes: &[u8] = b"{a=1};{a=";
        let mut stream = RowStream::new(InputFormat::Yson, &mut bytes);
        let e = stream.next_part().unwrap_err();
        assert!(format!("{e:#}").contains("malformed YSON rows"), "{e:#}");
        let mut bytes: &[u8] = b"{\"a\":1}\n{oops\n";
        let mut stream = RowStream::new(InputFormat::Json, &mut bytes);
        let e = stream.next_part().unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
