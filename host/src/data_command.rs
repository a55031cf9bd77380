//! `caseload data upload FILE`: a dataset sent to `POST /data_file` from a shell or a CI
//! step, read from the file as it is sent; prints the data file's identifier, to launch on.

use std::path::Path;

use anyhow::Context;
use bytes::Bytes;
use futures_util::stream;
use hyper::Method;
use tokio::io::AsyncReadExt;

use crate::api_client::ApiClient;
use crate::cli::{DataCommand, Output};
use caseload::http_post::{RequestBody, read_body};

/// What the command calls itself in the server's log.
const USER_AGENT: &str = concat!("caseload-data/", env!("CARGO_PKG_VERSION"));

/// The pieces a file is read and sent in.
const CHUNK: usize = 1 << 20;

/// Runs the command; whether it succeeded.
pub async fn run(command: &DataCommand) -> anyhow::Result<bool> {
    match command {
        DataCommand::Upload {
            file,
            media_type,
            filename,
            project,
            output,
            target,
        } => {
            let api = ApiClient::new(target, USER_AGENT)?;
            let mut query = form_urlencoded::Serializer::new(String::new());
            let name = filename.clone().or_else(|| {
                file.file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            });
            if let Some(name) = &name {
                query.append_pair("filename", name);
            }
            if let Some(project) = project {
                query.append_pair("project", project);
            }
            // A type that says nothing of the content: the server guesses from the name.
            let media_type = media_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            let (body, length) = file_body(file).await?;
            let headers = [
                ("content-type", media_type),
                ("content-length", length.to_string()),
            ];
            let path = format!("/data_file?{}", query.finish());
            let response = api.open(Method::POST, &path, &headers, body).await?;
            let answer = read_body(response.into_body(), 1 << 20)
                .await
                .map_err(anyhow::Error::msg)?;
            let stored: serde_json::Value =
                serde_json::from_slice(&answer).context("the server's answer is not JSON")?;
            match output {
                Output::Json => println!("{stored}"),
                Output::Text => println!(
                    "{}",
                    stored["data_file_identifier"]
                        .as_str()
                        .context("the server's answer names no data file")?
                ),
            }
            Ok(true)
        }
    }
}

/// The file as a body read a piece at a time, and its length.
async fn file_body(path: &Path) -> anyhow::Result<(RequestBody, u64)> {
    let file = tokio::fs::File::open(path)
        .await
        .with_context(|| format!("cannot read {}", path.display()))?;
    let length = file
        .metadata()
        .await
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    let chunks = stream::try_unfold(file, |mut file| async move {
        let mut chunk = vec![0; CHUNK];
        let read = file.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        chunk.truncate(read);
        Ok(Some((Bytes::from(chunk), file)))
    });
    Ok((RequestBody::stream(chunks), length))
}
