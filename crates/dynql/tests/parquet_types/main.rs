//! Every Arrow type of a Parquet file in YT QL and in import (issue 40, items 2 and 4): files
//! generated here with every type (ten row groups, nulls) are read with `select-rows` and
//! compared with the values written; types YT has no counterpart for are refused by name;
//! date and timestamp keys prune row groups; dates and timestamps import into YT's date
//! types and integers; `columns` chooses and renames the columns an import reads.
//!
//! One test binary: each links all of DataFusion.

mod files;
mod import;
mod select;
