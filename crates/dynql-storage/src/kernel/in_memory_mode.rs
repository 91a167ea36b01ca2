//! A table's `in_memory_mode` attribute (YT's): whether a long-lived process holds the
//! table's chunk files, and their decoded row groups, in memory (see `crate::io::in_memory`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A table's `in_memory_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InMemoryMode {
    /// Chunks are read from the object store as needed (the default).
    #[default]
    None,
    /// Chunk files are held in memory.
    Compressed,
    /// Chunk files and their decoded row groups are held in memory.
    Uncompressed,
}

impl InMemoryMode {
    /// Parses `none`, `compressed` or `uncompressed`.
    ///
    /// # Errors
    /// Any other text.
    pub fn parse(text: &str) -> Result<InMemoryMode> {
        match text {
            "none" => Ok(InMemoryMode::None),
            "compressed" => Ok(InMemoryMode::Compressed),
            "uncompressed" => Ok(InMemoryMode::Uncompressed),
            other => Err(Error::Invalid(format!(
                "Attribute \"in_memory_mode\" must be none, compressed or uncompressed, not {other:?}"
            ))),
        }
    }

    /// The mode as YT names it.
    pub fn name(self) -> &'static str {
        match self {
            InMemoryMode::None => "none",
            InMemoryMode::Compressed => "compressed",
            InMemoryMode::Uncompressed => "uncompressed",
        }
    }

    pub(crate) fn is_none(&self) -> bool {
        *self == InMemoryMode::None
    }
}
