//! An object store that injects faults into mutating calls as a [`FaultPlan`] says, for the
//! crash test (a fault at each mutation in turn) and the simulation (faults at seeded
//! random). Reads and listings always pass.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// What a failing call does.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Fault {
    /// The call fails without effect.
    Fail,
    /// The call takes effect, then reports failure (a lost acknowledgement).
    CutOff,
}

/// Decides, call by call, whether the next mutating call fails and how.
pub trait FaultPlan: Send + Sync + 'static {
    fn next_fault(&self) -> Option<Fault>;
}

/// Passes every call to `inner`, but for the mutating calls `plan` fails.
pub struct FaultyStore<P> {
    pub inner: Arc<dyn ObjectStore>,
    pub plan: P,
}

impl<P> fmt::Debug for FaultyStore<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore")
    }
}

impl<P> fmt::Display for FaultyStore<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

pub fn injected() -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: "injected fault".into(),
    }
}

#[async_trait]
impl<P: FaultPlan> ObjectStore for FaultyStore<P> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        match self.plan.next_fault() {
            None => self.inner.put_opts(location, payload, opts).await,
            Some(Fault::CutOff) => {
                self.inner.put_opts(location, payload, opts).await?;
                Err(injected())
            }
            Some(Fault::Fail) => Err(injected()),
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        match self.plan.next_fault() {
            None => self.inner.put_multipart_opts(location, opts).await,
            Some(_) => Err(injected()),
        }
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        match self.plan.next_fault() {
            None => self.inner.delete_stream(locations),
            Some(Fault::CutOff) => {
                let inner = self.inner.clone();
                futures::stream::once(async move {
                    let _: Vec<_> = inner.delete_stream(locations).collect().await;
                    Err(injected())
                })
                .boxed()
            }
            Some(Fault::Fail) => futures::stream::once(async { Err(injected()) }).boxed(),
        }
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        match self.plan.next_fault() {
            None => self.inner.copy_opts(from, to, options).await,
            Some(_) => Err(injected()),
        }
    }
}
