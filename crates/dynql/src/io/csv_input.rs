//! CSV input in bounded memory: the records of a file cut by a scanner that follows the CSV
//! reader's quoting, so that one record longer than
//! [`MAX_ROW_TEXT_BYTES`](dynql_core::limits::MAX_ROW_TEXT_BYTES) (`/dev/zero`, a quote never
//! closed) is an error and a batch ends at a record boundary once its text reaches a byte
//! budget, whatever its row count.
//!
//! ```text
//! file ──▶ RecordScanner (record ends, sizes) ──▶ arrow Decoder (whole records) ──▶ batches
//! ```

use std::io::BufRead;

use arrow::csv::reader::Decoder;
use arrow::record_batch::RecordBatch;

use dynql_core::limits::{row_text_too_long, MAX_ROW_TEXT_BYTES};

/// Where the scanner is in a record, as the CSV reader (`csv-core`, `"` quotes, `,`
/// delimiters, no escape character) would be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    /// At the start of a field: a quote here opens a quoted field.
    #[default]
    FieldStart,
    /// In an unquoted field: a quote is a character like any other.
    Field,
    /// In a quoted field: newlines and delimiters are data.
    Quoted,
    /// Just after a quote in a quoted field: another quote is an escaped one.
    QuoteInQuoted,
}

/// Finds the ends of records and measures them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RecordScanner {
    state: State,
    /// Bytes of the record not yet ended.
    open: usize,
}

impl RecordScanner {
    /// Scans `bytes`; returns the offset just past the `records`-th record end in them (or
    /// `None` when fewer end there).
    ///
    /// # Errors
    /// A record longer than [`MAX_ROW_TEXT_BYTES`], `what` naming it.
    fn scan(&mut self, bytes: &[u8], records: usize, what: &str) -> Result<Option<usize>, String> {
        let mut ended = 0;
        for (i, &b) in bytes.iter().enumerate() {
            self.state = match (self.state, b) {
                (State::Quoted, b'"') => State::QuoteInQuoted,
                (State::Quoted, _) => State::Quoted,
                (State::FieldStart | State::QuoteInQuoted, b'"') => State::Quoted,
                (_, b',') => State::FieldStart,
                (_, b'\n') => {
                    self.open = 0;
                    ended += 1;
                    if ended == records {
                        self.state = State::FieldStart;
                        return Ok(Some(i + 1));
                    }
                    State::FieldStart
                }
                _ => State::Field,
            };
            self.open += 1;
            if self.open > MAX_ROW_TEXT_BYTES {
                return Err(row_text_too_long(what));
            }
        }
        Ok(None)
    }
}

/// Reads the header record of a CSV input: its bytes, through the newline.
///
/// # Errors
/// The input failing (`Err(Ok(io))`), or a header longer than [`MAX_ROW_TEXT_BYTES`]
/// (`Err(Err(message))`).
pub(crate) fn read_header(
    input: &mut impl BufRead,
    file: &str,
) -> Result<Vec<u8>, Result<std::io::Error, String>> {
    let mut scanner = RecordScanner::default();
    let mut header = Vec::new();
    loop {
        let buf = input.fill_buf().map_err(Ok)?;
        if buf.is_empty() {
            return Ok(header);
        }
        let what = format!("{file}: the CSV header");
        let end = scanner.scan(buf, 1, &what).map_err(Err)?;
        let take = end.unwrap_or(buf.len());
        header.extend_from_slice(&buf[..take]);
        input.consume(take);
        if end.is_some() {
            return Ok(header);
        }
    }
}

/// The data records of a CSV input (after its header) as batches of at most the decoder's
/// batch size and about `batch_bytes` of text.
pub(crate) struct CsvBatches<R> {
    input: R,
    decoder: Decoder,
    scanner: RecordScanner,
    batch_bytes: usize,
    /// Text fed to the decoder since the last batch.
    fed: usize,
    /// 1-based line of the record being scanned (for errors; records with quoted newlines
    /// count one line each).
    record: u64,
    file: String,
    done: bool,
}

impl<R: BufRead> CsvBatches<R> {
    pub(crate) fn new(input: R, decoder: Decoder, batch_bytes: usize, file: &str) -> Self {
        CsvBatches {
            input,
            decoder,
            scanner: RecordScanner::default(),
            batch_bytes,
            fed: 0,
            record: 2,
            file: file.to_string(),
            done: false,
        }
    }

    /// The next batch, `None` at the end.
    ///
    /// # Errors
    /// The input failing or malformed; a record past the row text limit (a message).
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>, CsvError> {
        if self.done {
            return Ok(None);
        }
        loop {
            let buf = self.input.fill_buf().map_err(CsvError::Io)?;
            if buf.is_empty() {
                // A last record without a newline ends with the input.
                self.decoder.decode(&[]).map_err(CsvError::Arrow)?;
                self.done = true;
                return self.decoder.flush().map_err(CsvError::Arrow);
            }
            // Feed whole records up to the decoder's capacity, or past the byte budget up
            // to the end of the record that reaches it: a batch always ends between records.
            let capacity = self.decoder.capacity().max(1);
            let over_budget = self.fed >= self.batch_bytes;
            let records = if over_budget { 1 } else { capacity };
            let what = format!("{}: the CSV record from line {}", self.file, self.record);
            let mut scan = self.scanner;
            let end = scan.scan(buf, records, &what).map_err(CsvError::Limit)?;
            let take = end.unwrap_or(buf.len());
            let decoded = self.decoder.decode(&buf[..take]).map_err(CsvError::Arrow)?;
            // The scanner moves over what the decoder took (all of it, unless the decoder
            // counted records the scanner did not).
            let mut moved = self.scanner;
            moved
                .scan(&buf[..decoded], usize::MAX, &what)
                .map_err(CsvError::Limit)?;
            self.record += buf[..decoded].iter().filter(|&&b| b == b'\n').count() as u64;
            self.scanner = moved;
            self.input.consume(decoded);
            self.fed += decoded;
            // Full, or fed through the end of the record past the budget: at a boundary.
            let through_record_end = end.is_some() && decoded == take;
            if self.decoder.capacity() == 0 || (over_budget && through_record_end) {
                self.fed = 0;
                return self.decoder.flush().map_err(CsvError::Arrow);
            }
        }
    }
}

/// What failed reading CSV.
#[derive(Debug)]
pub(crate) enum CsvError {
    Io(std::io::Error),
    Arrow(arrow::error::ArrowError),
    /// A record past the row text limit: the input's fault.
    Limit(String),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batches(text: &[u8], rows: usize, bytes: usize) -> Result<Vec<Vec<String>>, CsvError> {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Utf8, true),
            Field::new("b", DataType::Utf8, true),
        ]);
        let decoder = arrow::csv::ReaderBuilder::new(Arc::new(schema))
            .with_header(false)
            .with_batch_size(rows)
            .build_decoder();
        let mut out = Vec::new();
        let mut reader = CsvBatches::new(
            std::io::BufReader::with_capacity(7, text),
            decoder,
            bytes,
            "f",
        );
        while let Some(b) = reader.next_batch()? {
            out.push(
                b.column(0)
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.unwrap_or("").to_string())
                    .collect(),
            );
        }
        Ok(out)
    }

    #[test]
    fn batches_end_between_records_by_rows_or_bytes() {
        let text = b"x,1\n\"q,\"\"\nq\",2\ny\"z,3\nlast,4";
        let all: Vec<String> = ["x", "q,\"\nq", "y\"z", "last"].map(String::from).into();
        assert_eq!(batches(text, 100, 1 << 20).unwrap().concat(), all);
        assert_eq!(batches(text, 2, 1 << 20).unwrap().len(), 2);
        // A byte budget of 1: a batch ends at the first record end past it (the reader's
        // 7-byte buffer may have fed the start of a second record before).
        let small = batches(text, 100, 1).unwrap();
        assert_eq!(small.concat(), all);
        assert!(small.len() >= 2, "{small:?}");
        assert!(small.iter().all(|b| b.len() <= 2), "{small:?}");
    }

    #[test]
    fn a_record_without_end_fails_at_the_row_text_limit() {
        let mut zeros = std::io::BufReader::new(std::io::Read::take(std::io::repeat(0), 1 << 30));
        let e = read_header(&mut zeros, "zeros").unwrap_err().unwrap_err();
        assert!(e.contains("the CSV header is longer than 67108864"), "{e}");
        let open_quote: Vec<u8> = [&b"a,b\n\""[..], &vec![b'x'; MAX_ROW_TEXT_BYTES + 1]].concat();
        match batches(&open_quote, 10, 1 << 20) {
            // Line 1 is the header's: the record after "a,b" starts on line 3.
            Err(CsvError::Limit(m)) => assert!(m.contains("from line 3"), "{m}"),
            other => panic!("{:?}", other.map(|b| b.len())),
        }
    }
}
