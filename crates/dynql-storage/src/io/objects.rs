//! Object store calls that tolerate other processes collecting garbage at the same time:
//! a listing that meets a file deleted under it lists again, and deleting what another
//! collector already deleted is not an error.

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::error::Result;

/// How many times a listing is tried while files vanish under it.
const LIST_ATTEMPTS: usize = 4;

/// Every object under `prefix`. A local listing stats each file it finds, so a file deleted
/// meanwhile fails it: the listing is tried again (the deletion is over by then).
pub(crate) async fn list_all(
    objects: &dyn ObjectStore,
    prefix: &ObjectPath,
) -> Result<Vec<ObjectMeta>> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match objects.list(Some(prefix)).try_collect().await {
            Err(object_store::Error::NotFound { .. }) if attempt < LIST_ATTEMPTS => continue,
            listed => return Ok(listed?),
        }
    }
}

/// Deletes `path`; already gone is fine (another collector got there first).
pub(crate) async fn delete_if_present(objects: &dyn ObjectStore, path: &ObjectPath) -> Result<()> {
    match objects.delete(path).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
