//! The bytes of strings one expression may compute over one batch
//! ([`crate::select::MAX_BATCH_STRING_BYTES`]), charged before the memory is taken.
//!
//! Every string or `any` value a function or `||` computes counts, intermediate values
//! included (they are what the time and memory go to: `concat(a, a) as b, concat(b, b) as c`
//! computes each level in full), and so does a literal copied into a column. Values read from
//! columns and literals compared with or passed to a function are not copied, so they cost
//! nothing. Well below 2 GiB, the budget also keeps every `Binary` array an expression builds
//! within Arrow's `i32` offsets.

use std::cell::Cell;

use dynql_core::Value;
use dynql_ql::value_limits::value_bytes;
use dynql_ql::Result;

use super::evaluate::runtime;

/// What one expression has computed so far over one batch, against its limit.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    rows: usize,
    used: Cell<u64>,
}

impl Budget {
    /// A budget of `limit` bytes for one expression over a batch of `rows` rows.
    pub(crate) fn new(limit: u64, rows: usize) -> Budget {
        Budget {
            limit,
            rows,
            used: Cell::new(0),
        }
    }

    /// Takes `bytes` from the budget before they are allocated.
    ///
    /// # Errors
    /// The budget would be exceeded; the message names the limit.
    pub(crate) fn charge(&self, bytes: u64) -> Result<()> {
        let used = self.used.get().saturating_add(bytes);
        if used > self.limit {
            return Err(runtime(format!(
                "Expression result is too large: its strings for a batch of {} rows need at least {used} bytes (limit {})",
                self.rows, self.limit
            )));
        }
        self.used.set(used);
        Ok(())
    }

    /// Charges the bytes of a computed string or `any` value (other values are free).
    ///
    /// # Errors
    /// As [`Budget::charge`].
    pub(crate) fn charge_value(&self, v: &Value) -> Result<()> {
        match value_bytes(v) {
            0 => Ok(()),
            n => self.charge(n as u64),
        }
    }

    /// The bytes charged so far.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_add_up_to_the_limit_and_no_further() {
        let b = Budget::new(10, 3);
        b.charge(4).unwrap();
        b.charge_value(&Value::string("abcdef")).unwrap();
        b.charge_value(&Value::Int64(1)).unwrap();
        assert_eq!(b.used(), 10);
        let err = b.charge(1).unwrap_err().to_string();
        assert_eq!(
            err,
            "Expression result is too large: its strings for a batch of 3 rows need at least 11 bytes (limit 10)"
        );
        // A refused charge takes nothing.
        assert_eq!(b.used(), 10);
        assert!(b.charge(u64::MAX).is_err());
    }
}
