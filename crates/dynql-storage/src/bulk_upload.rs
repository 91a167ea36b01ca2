//! The chunks of a bulk write, encoded and uploaded while the merge goes on.
//!
//! ```text
//! sorted rows ─▶ ChunkEncoding (thread) ─┐  a chunk's rows queue for its own thread, so the
//!   (merge)      ChunkEncoding (thread) ─┼▶ next chunk is encoded on the other core while
//!                …                       │  this one finishes;
//!                                        └▶ ChunkUploads: each chunk uploaded once encoded,
//!                                           a few at once, references kept in order
//! ```
//!
//! Memory stays bounded: a chunk's queue holds at most [`QUEUED_BATCHES`] batches and at
//! most [`CHUNKS_IN_FLIGHT`] closed chunks are encoding or uploading beside the open one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use object_store::ObjectStore;
use tokio::sync::{mpsc, oneshot};

use crate::bulk_chunk::BulkChunkWriter;
use crate::error::{Error, Result};
use crate::kernel::chunk_ref::ChunkRef;

/// Batches of rows (merge batches, at most 16k rows each) a chunk's encoding thread may have
/// queued: enough for the next chunk to start on the other core while this one finishes, few
/// enough to bound memory (about 30 MB at a bulk row's usual size).
const QUEUED_BATCHES: usize = 32;

/// Closed chunks encoding or uploading at once, beside the one being fed.
const CHUNKS_IN_FLIGHT: usize = 2;

/// What a chunk's encoding thread gives: the chunk and its file, or nothing without rows.
type Encoded = Result<Option<crate::bulk_chunk::EncodedChunk>>;

/// One chunk of a bulk write, encoded on a thread of its own (one of the runtime's blocking
/// threads) as its rows arrive.
pub(crate) struct ChunkEncoding {
    sender: mpsc::Sender<RecordBatch>,
    encoded: oneshot::Receiver<Encoded>,
    rows: usize,
}

impl ChunkEncoding {
    /// Starts encoding `writer`'s chunk; `largest` learns the size of its file when done.
    fn start(writer: BulkChunkWriter, largest: Arc<AtomicUsize>) -> ChunkEncoding {
        let (sender, mut receiver) = mpsc::channel::<RecordBatch>(QUEUED_BATCHES);
        let (done, encoded) = oneshot::channel();
        // On the runtime's blocking threads, which outlive a write: a thread of its own per
        // chunk would start each encoding with an empty allocator cache, faulting in fresh
        // pages for everything it encodes.
        tokio::task::spawn_blocking(move || {
            let mut writer = writer;
            let mut result = Ok(());
            while let Some(rows) = receiver.blocking_recv() {
                result = writer.write(&rows);
                if result.is_err() {
                    break;
                }
            }
            let outcome = result.and_then(|()| writer.encode());
            if let Ok(Some(encoded)) = &outcome {
                largest.fetch_max(encoded.bytes.len(), Ordering::Relaxed);
            }
            // Nobody waits when the write failed elsewhere: nothing to tell.
            let _ = done.send(outcome);
        });
        ChunkEncoding {
            sender,
            encoded,
            rows: 0,
        }
    }

    /// Rows sent so far.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Appends rows whose keys all follow the rows before.
    ///
    /// # Errors
    /// The encoding failed (on these rows or earlier ones).
    pub(crate) async fn write(&mut self, rows: RecordBatch) -> Result<()> {
        self.rows += rows.num_rows();
        if self.sender.send(rows).await.is_ok() {
            return Ok(());
        }
        // The thread stopped on an error: its outcome says which.
        match (&mut self.encoded).await {
            Ok(Err(e)) => Err(e),
            _ => Err(Error::Internal("a chunk encoding thread stopped".into())),
        }
    }

    /// The encoded chunk, once its thread has encoded every row sent.
    async fn finish(self) -> Encoded {
        drop(self.sender);
        self.encoded
            .await
            .map_err(|_| Error::Internal("a chunk encoding thread panicked".into()))?
    }
}

/// The chunks of a bulk write, each encoded and then uploaded by a task of its own, at most
/// [`CHUNKS_IN_FLIGHT`] at once beside the one being fed, in the order started.
pub(crate) struct ChunkUploads {
    objects: Arc<dyn ObjectStore>,
    in_flight: std::collections::VecDeque<tokio::task::JoinHandle<Result<Option<ChunkRef>>>>,
    done: Vec<ChunkRef>,
    /// The size of the largest chunk file encoded so far: what the next one likely needs.
    largest_bytes: Arc<AtomicUsize>,
}

impl ChunkUploads {
    pub(crate) fn new(objects: Arc<dyn ObjectStore>) -> ChunkUploads {
        ChunkUploads {
            objects,
            in_flight: Default::default(),
            done: Vec::new(),
            largest_bytes: Arc::default(),
        }
    }

    /// Starts encoding a chunk with `writer`; its rows follow with
    /// [`ChunkEncoding::write`], then [`ChunkUploads::push`] uploads it.
    pub(crate) fn start(&self, writer: BulkChunkWriter) -> ChunkEncoding {
        ChunkEncoding::start(writer, self.largest_bytes.clone())
    }

    /// Closes `encoding` (no more rows) and uploads its chunk once encoded, first waiting for
    /// the oldest chunk if [`CHUNKS_IN_FLIGHT`] are encoding or uploading.
    pub(crate) async fn push(&mut self, encoding: ChunkEncoding) -> Result<()> {
        if self.in_flight.len() >= CHUNKS_IN_FLIGHT {
            self.wait_oldest().await?;
        }
        let objects = self.objects.clone();
        self.in_flight.push_back(tokio::spawn(async move {
            let Some(encoded) = encoding.finish().await? else {
                return Ok(None);
            };
            if let Some(filter) = encoded.key_filter {
                let path = crate::key_filter::filter_path(&encoded.chunk.path);
                crate::chunk::put_encoded(objects.as_ref(), &path, filter).await?;
            }
            crate::chunk::put_encoded(objects.as_ref(), &encoded.chunk.path, encoded.bytes).await?;
            Ok(Some(encoded.chunk))
        }));
        Ok(())
    }

    /// The size of the largest chunk file encoded so far (0 before the first): a guess of
    /// the next one's, for [`BulkChunkWriter::new`] (the chunks of a write hold as many rows
    /// each, but a tablet's last).
    pub(crate) fn largest_bytes(&self) -> usize {
        self.largest_bytes.load(Ordering::Relaxed)
    }

    async fn wait_oldest(&mut self) -> Result<()> {
        if let Some(upload) = self.in_flight.pop_front() {
            let chunk = upload
                .await
                .map_err(|e| Error::Internal(format!("a chunk upload failed: {e}")))??;
            self.done.extend(chunk);
        }
        Ok(())
    }

    /// Waits for every chunk; their references in the order they were started.
    pub(crate) async fn finish(mut self) -> Result<Vec<ChunkRef>> {
        while !self.in_flight.is_empty() {
            self.wait_oldest().await?;
        }
        Ok(std::mem::take(&mut self.done))
    }
}

/// A bulk write that fails stops its other uploads (what they wrote is garbage that
/// collection removes, as for a killed import).
impl Drop for ChunkUploads {
    fn drop(&mut self) {
        for upload in &self.in_flight {
            upload.abort();
        }
    }
}
