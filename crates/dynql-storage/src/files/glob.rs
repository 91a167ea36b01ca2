//! Locations of Parquet files: a path or URL with an optional glob (`*`, `?`, `**`, `[…]`).

use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

use crate::error::{Error, Result};

/// Where the files of a location live, and which of them it names.
pub(crate) struct Location {
    pub(crate) objects: Arc<dyn ObjectStore>,
    /// The URL of the object store's root: `file://` or `s3://bucket`.
    pub(crate) root: String,
    /// The longest directory prefix without glob characters (listing starts there).
    pub(crate) prefix: ObjectPath,
    /// The full pattern, matched against object paths; `None`: every `.parquet` file under
    /// `prefix` (a directory) or exactly `prefix` (a file).
    pub(crate) pattern: Option<regex::Regex>,
}

fn invalid(location: &str, message: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("Invalid file location {location:?}: {message}"))
}

/// Resolves `location`: a local path (relative to the working directory, or absolute),
/// `file:///abs/path`, or `s3://bucket/key` (configured from the `AWS_*` environment, as
/// the store is).
pub(crate) fn resolve(location: &str) -> Result<Location> {
    if location.is_empty() {
        return Err(invalid(location, "empty"));
    }
    let (objects, root, path): (Arc<dyn ObjectStore>, String, String) =
        if let Some(rest) = location.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(invalid(
                    location,
                    "s3:// needs a bucket, e.g. s3://bucket/dir/*.parquet",
                ));
            }
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| invalid(location, e))?;
            (Arc::new(s3), format!("s3://{bucket}"), key.to_string())
        } else if location.contains("://") && !location.starts_with("file://") {
            return Err(invalid(
                location,
                "supported are local paths, file:///path and s3://bucket/path",
            ));
        } else {
            let local = location.strip_prefix("file://").unwrap_or(location);
            let absolute = if local.starts_with('/') {
                std::path::PathBuf::from(local)
            } else {
                std::env::current_dir()
                    .map_err(|e| invalid(location, format!("no working directory: {e}")))?
                    .join(local)
            };
            let text = absolute
                .to_str()
                .ok_or_else(|| invalid(location, "not valid UTF-8"))?
                .to_string();
            (
                Arc::new(crate::io::local_files::LocalFiles::new(
                    LocalFileSystem::new(),
                )),
                "file://".to_string(),
                normalize(&text),
            )
        };
    let path = path.trim_start_matches('/').to_string();
    let glob_at = path.find(['*', '?', '[']);
    let (prefix, pattern) = match glob_at {
        None => (path.trim_end_matches('/').to_string(), None),
        Some(at) => {
            let dir_end = path[..at].rfind('/').map(|i| i + 1).unwrap_or(0);
            let prefix = path[..dir_end].trim_end_matches('/').to_string();
            (
                prefix,
                Some(glob_regex(&path).map_err(|m| invalid(location, m))?),
            )
        }
    };
    Ok(Location {
        objects,
        root,
        prefix: ObjectPath::from(prefix.as_str()),
        pattern,
    })
}

/// Removes `.` segments and folds `..` (object paths have neither).
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// A regular expression matching exactly the paths of a glob: `*` and `?` within one path
/// segment, `**` across segments, `[abc]`/`[a-z]`/`[!a]` classes.
pub(crate) fn glob_regex(glob: &str) -> std::result::Result<regex::Regex, String> {
    let mut re = String::from("^");
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // `**/` matches zero or more whole directories.
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(?:[^/]*/)*");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|c| *c == ']')
                    .ok_or_else(|| format!("unclosed '[' at position {i}"))?;
                let class: String = chars[i + 1..i + 1 + close].iter().collect();
                if class.is_empty() {
                    return Err(format!("empty '[]' at position {i}"));
                }
                let class = match class.strip_prefix('!') {
                    Some(rest) => format!("^{}", rest.replace('\\', "\\\\")),
                    None => class.replace('\\', "\\\\"),
                };
                re.push('[');
                re.push_str(&class);
                re.push(']');
                i += close + 2;
                continue;
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::Regex::new(&re).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_within_and_across_segments() {
        let re = glob_regex("data/exports/*.parquet").unwrap();
        assert!(re.is_match("data/exports/part-0.parquet"));
        assert!(!re.is_match("data/exports/sub/part-0.parquet"));
        assert!(!re.is_match("data/exports/part-0.parquet.tmp"));
        let re = glob_regex("data/**/*.parquet").unwrap();
        assert!(re.is_match("data/a.parquet"));
        assert!(re.is_match("data/x/y/a.parquet"));
        let re = glob_regex("d/part-0[0-4]?.parquet").unwrap();
        assert!(re.is_match("d/part-017.parquet"));
        assert!(!re.is_match("d/part-057.parquet"));
        let re = glob_regex("d/[!p]*").unwrap();
        assert!(re.is_match("d/q") && !re.is_match("d/p"));
        assert!(glob_regex("d/[abc").is_err());
    }

    #[test]
    fn locations_split_into_a_listing_prefix_and_a_pattern() {
        let l = resolve("/tmp/x/../exports/*.parquet").unwrap();
        assert_eq!(l.prefix.as_ref(), "tmp/exports");
        assert!(l.pattern.unwrap().is_match("tmp/exports/a.parquet"));
        let l = resolve("file:///tmp/one.parquet").unwrap();
        assert_eq!(l.prefix.as_ref(), "tmp/one.parquet");
        assert!(l.pattern.is_none());
        assert!(resolve("http://x/y").is_err());
        assert!(resolve("").is_err());
    }
}
