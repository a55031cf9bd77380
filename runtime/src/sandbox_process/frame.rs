//! What the server and a sandbox process say to each other over the child's standard input
//! and output: frames of a JSON header and a raw body, each `[header length][body length]`
//! (two little-endian `u32`) then the two. The body carries the one large blob a message may
//! have (a component, an input, an output) so that it is never escaped into JSON.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::runtime::{CallError, Limits, LogTail, RunOptions};

/// The largest header either side accepts: a report of incumbents and a log delta, or a
/// result with its log tail, is far below it. A body (a component, an input, an output) may
/// have any length a `u32` holds.
const MAX_HEADER: u32 = 256 << 20;

/// From the server to a sandbox process.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum ToChild {
    /// Compile the component in the body (or read it from the compile cache) and keep it
    /// under `sha256`. Answered with [`ToServer::Loaded`].
    Load { sha256: String },
    /// Run the component kept under `sha256` on the input in the body. Answered with
    /// [`ToServer::Started`], reports, then [`ToServer::Done`].
    Run {
        sha256: String,
        options: RunOptions,
        limits: Limits,
    },
    /// The run was asked to finish now: the guest's `cancelled()` answers true from now on.
    Finish,
}

/// From a sandbox process to the server.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum ToServer {
    /// The component of the last `Load` compiled, or why not.
    Loaded(Result<(), String>),
    /// The process took the run: if it dies from now on, the run has begun and fails. Until
    /// then it has not, and another process can take it.
    Started,
    /// What the guest reported since the last report: its newest progress, its incumbents
    /// in order, and the bytes its log gained.
    Report(Report),
    /// The run returned; on success, the output is the body.
    Done {
        result: Result<(), CallError>,
        log: LogTail,
        peak_memory_bytes: usize,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Report {
    pub(super) progress: Option<(f64, String)>,
    pub(super) incumbents: Vec<(f64, String)>,
    /// Whether the guest called `log` since the last report.
    pub(super) logged: bool,
    /// The log's new bytes (or its newest, if more was written than it keeps).
    pub(super) log: Vec<u8>,
}

impl Report {
    pub(super) fn is_empty(&self) -> bool {
        self.progress.is_none() && self.incumbents.is_empty() && !self.logged && self.log.is_empty()
    }
}

/// Writes one frame and flushes it.
pub(super) fn write_frame(
    writer: &mut impl Write,
    header: &impl Serialize,
    body: &[u8],
) -> io::Result<()> {
    let header = serde_json::to_vec(header).map_err(io::Error::other)?;
    let (Ok(header_len), Ok(body_len)) = (u32::try_from(header.len()), u32::try_from(body.len()))
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a frame over 4 GiB",
        ));
    };
    writer.write_all(&header_len.to_le_bytes())?;
    writer.write_all(&body_len.to_le_bytes())?;
    writer.write_all(&header)?;
    writer.write_all(body)?;
    writer.flush()
}

/// Reads one frame: its header and body. `Ok(None)` at the end of the stream, between
/// frames; an error if it ends inside one.
pub(super) fn read_frame<T: DeserializeOwned>(
    reader: &mut impl Read,
) -> io::Result<Option<(T, Vec<u8>)>> {
    let mut lengths = [0u8; 8];
    loop {
        match reader.read(&mut lengths[..1]) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    reader.read_exact(&mut lengths[1..])?;
    let header_len = u32::from_le_bytes([lengths[0], lengths[1], lengths[2], lengths[3]]);
    let body_len = u32::from_le_bytes([lengths[4], lengths[5], lengths[6], lengths[7]]);
    if header_len > MAX_HEADER {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame header of {header_len} bytes, over the limit"),
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    reader.read_exact(&mut header)?;
    let mut body = vec![0u8; body_len as usize];
    reader.read_exact(&mut body)?;
    let header = serde_json::from_slice(&header).map_err(io::Error::other)?;
    Ok(Some((header, body)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_frame_reads_back_as_written() {
        let mut bytes = Vec::new();
        let run = ToChild::Run {
            sha256: "ab".into(),
            options: RunOptions {
                time_limit: Duration::from_millis(1500),
                seed: 7,
                max_iterations: Some(3),
            },
            limits: Limits::default(),
        };
        write_frame(&mut bytes, &run, b"{\"n\": 1}").expect("written");
        write_frame(&mut bytes, &ToChild::Finish, b"").expect("written");
        let mut reader = bytes.as_slice();
        let (header, body) = read_frame::<ToChild>(&mut reader)
            .expect("read")
            .expect("a frame");
        assert!(
            matches!(&header, ToChild::Run { sha256, options, limits }
                if sha256 == "ab" && options.seed == 7 && *limits == Limits::default()),
            "{header:?}"
        );
        assert_eq!(body, b"{\"n\": 1}");
        let (header, body) = read_frame::<ToChild>(&mut reader)
            .expect("read")
            .expect("a frame");
        assert!(matches!(header, ToChild::Finish) && body.is_empty());
        assert!(read_frame::<ToChild>(&mut reader).expect("read").is_none());
        // A stream cut inside a frame is an error, not an end.
        for end in [3, 10] {
            let mut cut = &bytes[..end];
            assert!(read_frame::<ToChild>(&mut cut).is_err());
        }
    }
}
