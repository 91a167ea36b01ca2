//! The sizes YT caps for what is written: one string or `any` value, one row's data weight,
//! and (dynql's) one row's input text. Every write checks the first two, so no value the
//! query side would refuse to compute ([`MAX_VALUE_BYTES`]) is ever stored; readers of row
//! input stop at the third, so an endless or garbage stream (`/dev/zero`, a line without a
//! newline) fails in bounded memory instead of growing without end.

/// The most bytes of one string or `any` value: YT's `MaxStringValueLength` and
/// `MaxAnyValueLength` (16 MiB).
pub const MAX_VALUE_BYTES: usize = 16 * 1024 * 1024;

/// The largest data weight of one row (one byte, plus 8 per number, 1 per boolean and the
/// bytes of each string): YT's default `max_row_weight` (16 MiB).
pub const MAX_ROW_WEIGHT: u64 = 16 * 1024 * 1024;

/// The most bytes of one row's input text (a JSON line, a YSON row, a CSV record): four
/// times [`MAX_ROW_WEIGHT`], room for names, quoting and escapes of a row within it.
pub const MAX_ROW_TEXT_BYTES: usize = 4 * MAX_ROW_WEIGHT as usize;

/// The refusal of a value of `length` bytes in `column` (YT's wording).
pub fn value_too_long(column: &str, length: usize) -> String {
    format!(
        "Value is too long: length {length}, limit {MAX_VALUE_BYTES} (16 MiB) in column {}",
        crate::error::shown(column)
    )
}

/// The refusal of a row of data weight `weight` (YT's wording).
pub fn row_too_heavy(weight: u64) -> String {
    format!("Row weight is too large ({weight} > {MAX_ROW_WEIGHT}, 16 MiB)")
}

/// The refusal of a row's input text past [`MAX_ROW_TEXT_BYTES`] (`what`: "a JSON line", …).
pub fn row_text_too_long(what: &str) -> String {
    format!(
        "{what} is longer than {MAX_ROW_TEXT_BYTES} bytes (64 MiB), the most one row's input may be (rows weigh at most {MAX_ROW_WEIGHT}, 16 MiB); is the input in the format given?"
    )
}

/// Checks the values and the weight of one row of values (`None` for a column not written).
///
/// # Errors
/// The message of [`value_too_long`] or [`row_too_heavy`].
pub fn check_row<'a>(
    values: impl IntoIterator<Item = (&'a str, &'a crate::Value)>,
) -> Result<(), String> {
    use crate::Value;
    let mut weight = 1u64;
    for (column, value) in values {
        weight += match value {
            Value::Null => 0,
            Value::Int64(_) | Value::Uint64(_) | Value::Double(_) => 8,
            Value::Boolean(_) => 1,
            Value::String(b) | Value::Any(b) => {
                if b.len() > MAX_VALUE_BYTES {
                    return Err(value_too_long(column, b.len()));
                }
                b.len() as u64
            }
        };
    }
    if weight > MAX_ROW_WEIGHT {
        return Err(row_too_heavy(weight));
    }
    Ok(())
}

/// Reads one line, through its `\n`, into `line` as [`std::io::BufRead::read_until`] does,
/// but holds at most [`MAX_ROW_TEXT_BYTES`]: a longer line (`/dev/zero`, a file without
/// newlines) is an error, not a buffer that grows with the input. Returns the bytes read, 0
/// at the end of the input.
///
/// # Errors
/// The input failing; past the limit, an [`std::io::ErrorKind::InvalidData`] error saying
/// [`row_text_too_long`] of `what` ("a JSON line").
pub fn read_row_line(
    input: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
    what: &str,
) -> std::io::Result<usize> {
    let start = line.len();
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(line.len() - start);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() - start + take > MAX_ROW_TEXT_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                row_text_too_long(what),
            ));
        }
        line.extend_from_slice(&buf[..take]);
        input.consume(take);
        if done {
            return Ok(line.len() - start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    #[test]
    fn values_and_rows_past_the_limits_are_named() {
        // A value of 16 MiB is one, but its row weighs a byte more than a row may.
        let within = Value::String(vec![b'x'; MAX_VALUE_BYTES - 1]);
        assert!(check_row([("s", &within)]).is_ok());
        let over = Value::String(vec![b'x'; MAX_VALUE_BYTES + 1]);
        let e = check_row([("s", &over)]).unwrap_err();
        assert!(e.starts_with("Value is too long: length 16777217"), "{e}");
        let half = Value::Any(vec![b'x'; MAX_VALUE_BYTES / 2]);
        let e = check_row([("a", &half), ("b", &half), ("k", &Value::Int64(1))]).unwrap_err();
        assert!(e.starts_with("Row weight is too large (16777225 >"), "{e}");
    }

    #[test]
    fn a_line_past_the_text_limit_is_an_error_read_in_bounded_steps() {
        let mut input = std::io::BufReader::new(b"{}\nab".as_slice());
        let mut line = Vec::new();
        assert_eq!(read_row_line(&mut input, &mut line, "a line").unwrap(), 3);
        line.clear();
        assert_eq!(read_row_line(&mut input, &mut line, "a line").unwrap(), 2);
        assert_eq!(line, b"ab");
        // An endless line without a newline stops at the limit.
        let mut zeros = std::io::BufReader::new(std::io::repeat(0));
        line.clear();
        let e = read_row_line(&mut zeros, &mut line, "a JSON line").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a JSON line is longer than 67108864"),
            "{e}"
        );
        assert!(line.len() <= MAX_ROW_TEXT_BYTES);
    }
}
