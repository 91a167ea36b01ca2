//! Where queries run: DataFusion's runtime (its memory pool, and the disk manager operators
//! spill to) and the sessions made over it. A [`Engine`] belongs to whoever runs queries (a
//! `Database` holds one); the free functions of [`crate::select`] run in a shared default
//! engine without a memory limit.
//!
//! Lowered plans call their functions directly (YT's as UDFs, DataFusion's aggregates
//! through `expr_fn`), so a session registers none and holds nothing of a query: an engine
//! makes its two sessions (one partition, or one per core) once and every query shares them
//! (building one costs a tenth of a point read).

use std::sync::{Arc, OnceLock};

use datafusion::execution::context::SessionState;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::TaskContext;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::{Error, Result};
use crate::scan::Explanation;
use crate::select::{QueryResult, QueryStream, SelectOptions};
use dynql_storage::Store;

/// The session's time zone: a timestamp literal without an offset (`TIMESTAMP '2024-06-01'`,
/// `'2024-06-01'` compared with a timestamp column) means UTC, and one with an offset keeps
/// it, as DuckDB reads them on a UTC machine. DataFusion's default (none) read such a
/// literal in the zone of the column it is compared with (issue 73).
pub const SESSION_TIME_ZONE: &str = "UTC";

/// DataFusion's defaults, but for the time zone ([`SESSION_TIME_ZONE`]) and a memory limit:
/// a sort that spills keeps back memory to merge its spilled runs (10 MiB by default),
/// which a small limit could never grant, so the reservation is an eighth of the limit at
/// most.
fn session_config(memory_limit: Option<usize>) -> SessionConfig {
    let mut config = SessionConfig::new();
    config.options_mut().execution.time_zone = Some(SESSION_TIME_ZONE.to_string());
    if let Some(limit) = memory_limit {
        let execution = &mut config.options_mut().execution;
        execution.sort_spill_reservation_bytes =
            execution.sort_spill_reservation_bytes.min(limit / 8);
    }
    config
}

/// DataFusion's runtime and sessions for the queries of one owner, with an optional memory
/// limit. Cloning shares them.
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use dynql_exec::{Engine, SelectOptions};
/// let store = dynql_storage::Store::open("memory://")?;
/// let engine = Engine::new(Some(256 << 20))?;
/// assert_eq!(engine.memory_limit(), Some(256 << 20));
/// let err = engine.select_rows(&store, "* from [//missing]", &SelectOptions::default()).await;
/// assert!(err.is_err());
/// # Ok::<(), dynql_exec::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    memory_limit: Option<usize>,
    runtime: Arc<RuntimeEnv>,
    one: SessionContext,
    many: SessionContext,
    /// The one-partition session's state and task context: a read in key order plans and
    /// runs in them without copying the state per query.
    one_partition: (SessionState, Arc<TaskContext>),
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("memory_limit", &self.inner.memory_limit)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine whose operators together hold at most `memory_limit` bytes (`None`: no
    /// limit). Sorts, aggregations and joins past it spill to temporary files where
    /// DataFusion can, and fail with a resources-exhausted error where it cannot. The limit
    /// covers query operators only: decoded row groups kept for later reads (the chunk
    /// cache) are budgeted by the store.
    ///
    /// # Errors
    /// A limit of 0 bytes, or a runtime DataFusion cannot build.
    pub fn new(memory_limit: Option<usize>) -> Result<Engine> {
        let mut builder = RuntimeEnvBuilder::new();
        if let Some(bytes) = memory_limit {
            if bytes == 0 {
                return Err(Error::InvalidOption {
                    name: "memory_limit",
                    message: "must be more than 0 bytes".into(),
                });
            }
            builder = builder.with_memory_limit(bytes, 1.0);
        }
        let runtime = builder.build_arc()?;
        let session = |partitions: Option<usize>| {
            let mut config = session_config(memory_limit);
            if let Some(n) = partitions {
                config = config.with_target_partitions(n);
            }
            // DataFusion's physical optimizer rules, then dynql's.
            let state = SessionStateBuilder::new()
                .with_config(config)
                .with_runtime_env(runtime.clone())
                .with_physical_optimizer_rule(Arc::new(
                    crate::vectorized::dictionary_groups::DictionaryGroupsRule,
                ))
                .with_physical_optimizer_rule(Arc::new(
                    crate::vectorized::dictionary_filter::DictionaryFilterRule,
                ))
                .with_physical_optimizer_rule(Arc::new(
                    crate::vectorized::any_row_order::AnyRowOrderRule,
                ))
                .build();
            SessionContext::new_with_state(state)
        };
        let one = session(Some(1));
        let many = session(None);
        let state = one.state();
        let task = state.task_ctx();
        Ok(Engine {
            inner: Arc::new(Inner {
                memory_limit,
                runtime,
                one,
                many,
                one_partition: (state, task),
            }),
        })
    }

    /// The process's shared engine, without a memory limit.
    pub fn shared() -> Engine {
        static SHARED: OnceLock<Engine> = OnceLock::new();
        SHARED
            .get_or_init(|| Engine::new(None).expect("a runtime without limits always builds"))
            .clone()
    }

    /// The memory limit of the engine's operators, if any.
    pub fn memory_limit(&self) -> Option<usize> {
        self.inner.memory_limit
    }

    /// DataFusion's runtime: the memory pool and the disk manager for spilling.
    pub fn runtime(&self) -> Arc<RuntimeEnv> {
        self.inner.runtime.clone()
    }

    /// The configuration of a session in this engine (see [`session_config`]).
    pub fn session_config(&self) -> SessionConfig {
        session_config(self.inner.memory_limit)
    }

    /// The session a query runs in: in one partition, or in one per core.
    pub(crate) fn session(&self, one_partition: bool) -> SessionContext {
        if one_partition {
            self.inner.one.clone()
        } else {
            self.inner.many.clone()
        }
    }

    /// The one-partition session's state and task context.
    pub(crate) fn one_partition(&self) -> &(SessionState, Arc<TaskContext>) {
        &self.inner.one_partition
    }

    /// [`crate::select_rows`] in this engine.
    ///
    /// # Errors
    /// As [`crate::select_rows`].
    pub async fn select_rows(
        &self,
        store: &Store,
        query: &str,
        options: &SelectOptions,
    ) -> Result<QueryResult> {
        self.select_stream(store, query, options)
            .await?
            .into_result()
            .await
    }

    /// [`crate::select_stream`] in this engine.
    ///
    /// # Errors
    /// As [`crate::select_stream`].
    pub async fn select_stream(
        &self,
        store: &Store,
        query: &str,
        options: &SelectOptions,
    ) -> Result<QueryStream> {
        crate::select::select_stream_in(self, store, query, options).await
    }

    /// [`crate::explain_query`] in this engine.
    ///
    /// # Errors
    /// As [`crate::explain_query`].
    pub async fn explain_query(
        &self,
        store: &Store,
        query: &str,
        options: &SelectOptions,
    ) -> Result<Explanation> {
        crate::select::explain_query_in(self, store, query, options).await
    }

    /// [`crate::explain_analyze_query`] in this engine.
    ///
    /// # Errors
    /// As [`crate::explain_analyze_query`].
    pub async fn explain_analyze_query(
        &self,
        store: &Store,
        query: &str,
        options: &SelectOptions,
    ) -> Result<Explanation> {
        crate::select::explain_analyze_query_in(self, store, query, options).await
    }
}
