//! The files a location names: listed once, for readers other than [`FileTable`](super::FileTable)
//! (SQL reads files with DataFusion's own Parquet and CSV readers).

use std::sync::Arc;

use futures::StreamExt;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::glob;
use crate::error::{Error, Result};

/// The files of a location, in path order, with the object store they live in.
#[derive(Debug, Clone)]
pub struct ListedFiles {
    /// The object store of the files.
    pub objects: Arc<dyn ObjectStore>,
    /// The URL of the object store's root: `file://` or `s3://bucket`.
    pub root: String,
    /// The files, sorted by path.
    pub files: Vec<ObjectMeta>,
}

/// Lists the files `location` names: a file, a glob (`./dump/*.csv`, `s3://bucket/**/*.parquet`)
/// or a directory, meaning every file under it whose name ends with `extension`
/// (`.parquet`, `.csv`).
///
/// # Errors
/// [`Error::Invalid`] for a malformed location, one that cannot be listed, or one that names
/// no file.
pub async fn list_files(location: &str, extension: &str) -> Result<ListedFiles> {
    let resolved = glob::resolve(location)?;
    let objects = resolved.objects.clone();
    let listing_error = |e: object_store::Error| -> Error {
        Error::Invalid(format!("Cannot list {location:?}: {e}"))
    };
    let mut files: Vec<ObjectMeta> = Vec::new();
    let matches = |meta: &ObjectMeta| match &resolved.pattern {
        Some(pattern) => pattern.is_match(meta.location.as_ref()),
        None => meta.location.as_ref().ends_with(extension),
    };
    let single = match &resolved.pattern {
        Some(_) => None,
        None => match objects.head(&resolved.prefix).await {
            Ok(meta) => Some(meta),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => return Err(listing_error(e)),
        },
    };
    match single {
        Some(meta) => files.push(meta),
        None => {
            let mut stream = objects.list(Some(&resolved.prefix));
            while let Some(meta) = stream.next().await {
                let meta = meta.map_err(listing_error)?;
                if matches(&meta) {
                    files.push(meta);
                }
            }
        }
    }
    if files.is_empty() {
        let kind = extension.trim_start_matches('.');
        return Err(Error::Invalid(format!(
            "No files match {location:?} (a directory means its *.{kind} files)"
        )));
    }
    files.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(ListedFiles {
        objects,
        root: resolved.root,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_directory_lists_its_files_of_the_extension_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.csv", "a.csv", "c.parquet"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let listed = list_files(dir.path().to_str().unwrap(), ".csv")
            .await
            .unwrap();
        assert_eq!(listed.root, "file://");
        let names: Vec<_> = listed
            .files
            .iter()
            .map(|m| m.location.filename().unwrap().to_string())
            .collect();
        assert_eq!(names, ["a.csv", "b.csv"]);
        let one = list_files(dir.path().join("c.parquet").to_str().unwrap(), ".csv")
            .await
            .unwrap();
        assert_eq!(one.files.len(), 1);
        let glob = format!("{}/*.parquet", dir.path().display());
        assert_eq!(list_files(&glob, ".parquet").await.unwrap().files.len(), 1);
        let err = list_files(&format!("{}/*.tsv", dir.path().display()), ".tsv")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("No files match"), "{err}");
    }
}
