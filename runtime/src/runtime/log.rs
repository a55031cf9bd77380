//! The execution log: the guest's stdout, stderr and `log` lines, keeping only the newest bytes.
//!
//! wasmtime-wasi's `MemoryOutputPipe` traps the guest once it is full; a plugin that prints a
//! lot must not die for it, so this sink drops the oldest bytes instead and remembers that it
//! did.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// The newest bytes written to an execution's log.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogTail {
    pub text: String,
    /// True when older bytes were dropped to respect the cap.
    pub truncated: bool,
}

#[derive(Debug)]
struct Buffer {
    bytes: VecDeque<u8>,
    capacity: usize,
    truncated: bool,
    /// Every byte ever appended, kept or not: tells a reader whether the log changed.
    written: u64,
}

/// A shared, bounded log; clones write to the same buffer.
#[derive(Debug, Clone)]
pub struct BoundedLog {
    buffer: Arc<Mutex<Buffer>>,
}

impl BoundedLog {
    pub fn new(capacity: usize) -> BoundedLog {
        BoundedLog {
            buffer: Arc::new(Mutex::new(Buffer {
                bytes: VecDeque::new(),
                capacity,
                truncated: false,
                written: 0,
            })),
        }
    }

    pub fn append(&self, bytes: &[u8]) {
        // A poisoned lock only means another writer panicked mid-append; the bytes are still
        // a valid log.
        let mut buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        buffer.written += bytes.len() as u64;
        let capacity = buffer.capacity;
        let bytes = if bytes.len() > capacity {
            buffer.truncated = true;
            &bytes[bytes.len() - capacity..]
        } else {
            bytes
        };
        let overflow = (buffer.bytes.len() + bytes.len()).saturating_sub(capacity);
        if overflow > 0 {
            buffer.bytes.drain(..overflow);
            buffer.truncated = true;
        }
        buffer.bytes.extend(bytes);
    }

    /// How many bytes were ever appended.
    pub fn written(&self) -> u64 {
        self.buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written
    }

    /// The bytes appended since [`BoundedLog::written`] was `written`, of those it still
    /// holds: what a copy of the log that had every byte up to then lacks; and what
    /// [`BoundedLog::written`] is now, read under the same lock.
    pub fn since(&self, written: u64) -> (Vec<u8>, u64) {
        let buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let new = usize::try_from(buffer.written.saturating_sub(written)).unwrap_or(usize::MAX);
        let skip = buffer.bytes.len().saturating_sub(new);
        (
            buffer.bytes.range(skip..).copied().collect(),
            buffer.written,
        )
    }

    pub fn tail(&self) -> LogTail {
        let buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let (front, back) = buffer.bytes.as_slices();
        let mut bytes = Vec::with_capacity(buffer.bytes.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        LogTail {
            // Dropping old bytes may have cut a character in two; show it as U+FFFD.
            text: String::from_utf8_lossy(&bytes).into_owned(),
            truncated: buffer.truncated,
        }
    }
}

impl IsTerminal for BoundedLog {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for BoundedLog {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for BoundedLog {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always room: old bytes make way for new ones.
        Ok(64 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for BoundedLog {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for BoundedLog {
    fn poll_write(
        self: Pin<&mut Self>,
        _context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.append(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes() {
        let log = BoundedLog::new(8);
        log.append(b"hello ");
        assert_eq!(
            log.tail(),
            LogTail {
                text: "hello ".into(),
                truncated: false
            }
        );
        log.append(b"world");
        assert_eq!(
            log.tail(),
            LogTail {
                text: "lo world".into(),
                truncated: true
            }
        );
        log.append(b"0123456789");
        assert_eq!(log.tail().text, "23456789");
    }

    #[test]
    fn since_gives_what_a_copy_lacks() {
        let log = BoundedLog::new(8);
        log.append(b"abc");
        let written = log.written();
        assert_eq!(log.since(0), (b"abc".to_vec(), 3));
        log.append(b"de");
        assert_eq!(log.since(written), (b"de".to_vec(), 5));
        assert!(log.since(log.written()).0.is_empty());
        // More than the log keeps: its newest bytes.
        log.append(b"0123456789");
        assert_eq!(log.since(written), (b"23456789".to_vec(), 15));
    }
}
