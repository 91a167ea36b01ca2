//! Counting a table's rows, and finding the keys at even steps through them, without
//! holding the rows: the scan runs as a query's does (clean row groups decoded as columns,
//! only the columns asked for) and its pieces are dropped as they come. `@row_count`,
//! `@data_weight` and the pivots of a reshard by key read tables this way, in memory bounded
//! by a row group rather than by the table.

use dynql_core::arrow_convert::array_value;
use dynql_core::{Value, ValueType};

use crate::error::Result;
use crate::kernel::timestamp::Timestamp;
use crate::scan::{FnSink, KeyRange, Piece, ScanStatistics};
use crate::state::State;
use crate::store::Store;

impl Store {
    /// What a scan of the whole table at `path` as of `timestamp` reads, its rows dropped as
    /// they come: `rows_read` is the table's row count, and with `weigh`, `data_weight` is its
    /// data weight (without, a sorted table's rows are read as their key columns only).
    pub async fn count_rows(
        &self,
        path: &str,
        timestamp: Timestamp,
        weigh: bool,
    ) -> Result<ScanStatistics> {
        self.settle_read_timestamp(timestamp).await?;
        let state = self.refresh().await?;
        self.count_on(&state, path, timestamp, weigh).await
    }

    /// The row count of a sorted table at `path` as of `timestamp`, and the keys at rows
    /// `i * count / parts` for `i` in `1..parts` (those below the count, in order), both
    /// read from one pinned state: where a reshard into `parts` tablets of similar row
    /// counts puts its pivots.
    pub async fn keys_at_even_steps(
        &self,
        path: &str,
        timestamp: Timestamp,
        parts: usize,
    ) -> Result<(u64, Vec<Vec<Value>>)> {
        self.settle_read_timestamp(timestamp).await?;
        let state = self.refresh().await?;
        let rows = self
            .count_on(&state, path, timestamp, false)
            .await?
            .rows_read;
        let parts = parts.max(1) as u64;
        let positions: Vec<u64> = (1..parts)
            .map(|i| i * rows / parts)
            .filter(|&p| p < rows)
            .collect();
        if positions.is_empty() {
            return Ok((rows, Vec::new()));
        }
        let (entry, _) = state.table_data(path)?;
        let key_types: Vec<ValueType> = entry
            .schema
            .key_columns()
            .iter()
            .map(|c| c.wire_type())
            .collect();
        let key_columns: Vec<usize> = (0..key_types.len()).collect();
        let mut keys = Vec::with_capacity(positions.len());
        // Rows passed so far, and the next position wanted.
        let (mut passed, mut next) = (0u64, 0usize);
        let mut pick = |_: usize, piece: Piece| {
            let len = match &piece {
                Piece::Row(_) => 1,
                Piece::Batch(b, _) => b.num_rows() as u64,
            };
            while next < positions.len() && positions[next] < passed + len {
                let at = (positions[next] - passed) as usize;
                keys.push(match &piece {
                    Piece::Row(row) => row[..key_types.len()].to_vec(),
                    Piece::Batch(b, _) => key_types
                        .iter()
                        .enumerate()
                        .map(|(c, &t)| array_value(b.column(c).as_ref(), t, at))
                        .collect(),
                });
                next += 1;
            }
            passed += len;
            Ok(next < positions.len())
        };
        let ranges = [KeyRange::all()];
        self.scan_state_pieces(
            &state,
            path,
            &ranges,
            timestamp,
            Some(crate::scan::ByteStrings::Binary.into()),
            None,
            Some(&key_columns),
            None,
            None,
            &mut FnSink(&mut pick),
        )
        .await?;
        Ok((rows, keys))
    }

    /// [`Store::count_rows`] over a pinned state.
    async fn count_on(
        &self,
        state: &State,
        path: &str,
        timestamp: Timestamp,
        weigh: bool,
    ) -> Result<ScanStatistics> {
        let (entry, _) = state.table_data(path)?;
        let keys: Vec<usize> = (0..entry.schema.key_column_count()).collect();
        let columns = (!weigh && entry.schema.is_sorted()).then_some(&keys[..]);
        let ranges = [KeyRange::all()];
        let mut discard = |_: usize, _: Piece| Ok(true);
        self.scan_state_pieces(
            state,
            path,
            &ranges,
            timestamp,
            Some(crate::scan::ByteStrings::Binary.into()),
            None,
            columns,
            None,
            None,
            &mut FnSink(&mut discard),
        )
        .await
    }
}
