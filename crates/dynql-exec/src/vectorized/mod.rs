//! The vectorised query pipeline: a bound YT QL query lowered onto a DataFusion logical plan
//! ([`lower`]), with YT's semantics kept in DataFusion functions ([`udf`]) that evaluate
//! expressions over Arrow arrays ([`evaluate`]).

pub(crate) mod evaluate;
pub(crate) mod lookup_join;
pub(crate) mod lower;
pub(crate) mod table_scan;
pub(crate) mod udf;
