//! The vectorised query pipeline: a bound YT QL query lowered onto a DataFusion logical plan
//! ([`lower`]) over what it reads ([`input`]: streaming tablet scans, [`table_scan`], counting what they read in [`scan_reads`], under
//! lookup joins, [`lookup_join`]), with YT's semantics kept in DataFusion functions
//! ([`udf`]) that evaluate expressions over Arrow arrays ([`evaluate`], [`compare`], [`calls`])
//! within a budget of computed bytes per batch ([`budget`]), and in operators of its own where
//! YT's grouping depends on scan order ([`first_groups`], [`totals`]). A run keeps the plans
//! it executes ([`stages`]) for EXPLAIN ANALYZE.

pub(crate) mod any_row_order;
pub(crate) mod between;
pub(crate) mod budget;
pub(crate) mod byte_kernels;
pub(crate) mod calls;
pub(crate) mod compare;
pub(crate) mod conditional;
pub(crate) mod conversion_calls;
pub(crate) mod dictionary_filter;
pub(crate) mod dictionary_groups;
pub(crate) mod evaluate;
pub(crate) mod first_groups;
pub(crate) mod group_limit;
pub(crate) mod in_list;
pub(crate) mod input;
pub(crate) mod integer_arithmetic;
pub(crate) mod join_keys;
pub(crate) mod keep_rows;
#[cfg(test)]
pub(crate) mod kernel_tests;
pub(crate) mod key_order;
pub(crate) mod lookup_join;
pub(crate) mod lower;
pub(crate) mod math_calls;
pub(crate) mod null_calls;
pub(crate) mod numeric_calls;
pub(crate) mod pick;
pub(crate) mod regex_calls;
pub(crate) mod results;
pub(crate) mod row_group_pruning;
pub(crate) mod scan_output;
pub(crate) mod scan_reads;
pub(crate) mod stages;
pub(crate) mod string_calls;
pub(crate) mod table_scan;
pub(crate) mod tablet_groups;
pub(crate) mod timestamp_calls;
pub(crate) mod totals;
pub(crate) mod transform;
pub(crate) mod udf;
pub(crate) mod where_pruning;
pub(crate) mod yson_calls;
