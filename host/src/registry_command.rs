//! `caseload plugin versions | promote | retire | download`: a server's plugin registry from
//! a shell or a CI step, beside `plugin publish` (`kit::publish`). Each calls the route the
//! console and the clients call; a refusal prints the server's problem and exits 1.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hyper::Method;
use serde_json::{Value, json};

use crate::api_client::ApiClient;
use crate::cli::{Output, ServerTarget};
use crate::job_command::segment;

/// What the commands call themselves in the server's log.
const USER_AGENT: &str = concat!("caseload-plugin/", env!("CARGO_PKG_VERSION"));

/// `caseload plugin versions PROBLEM`: one line per version (version, source, current or
/// retired, digest, jobs bound to it), or the server's answer as it is.
pub async fn versions(problem: &str, output: Output, target: &ServerTarget) -> anyhow::Result<()> {
    let api = ApiClient::new(target, USER_AGENT)?;
    let path = format!("/problem/{}/versions", segment(problem));
    let listed = api.json(Method::GET, &path, None).await?;
    match output {
        Output::Json => println!("{listed}"),
        Output::Text => print_versions(&listed),
    }
    Ok(())
}

/// `caseload plugin promote PROBLEM VERSION`: the version becomes current.
pub async fn promote(problem: &str, version: &str, target: &ServerTarget) -> anyhow::Result<()> {
    let api = ApiClient::new(target, USER_AGENT)?;
    let path = format!("/problem/{}/current", segment(problem));
    let listed = api
        .json(Method::PUT, &path, Some(json!({"version": version})))
        .await?;
    print_versions(&listed);
    Ok(())
}

/// `caseload plugin retire PROBLEM VERSION`: no new job runs the version.
pub async fn retire(problem: &str, version: &str, target: &ServerTarget) -> anyhow::Result<()> {
    let api = ApiClient::new(target, USER_AGENT)?;
    let path = format!(
        "/problem/{}/versions/{}",
        segment(problem),
        segment(version)
    );
    let listed = api.json(Method::DELETE, &path, None).await?;
    print_versions(&listed);
    Ok(())
}

/// `caseload plugin download PROBLEM VERSION [-o FILE]`: the component's bytes, written
/// aside and renamed into place; prints where.
pub async fn download(
    problem: &str,
    version: &str,
    output: Option<&Path>,
    target: &ServerTarget,
) -> anyhow::Result<()> {
    let api = ApiClient::new(target, USER_AGENT)?;
    let path = format!(
        "/problem/{}/versions/{}/component",
        segment(problem),
        segment(version)
    );
    let answer = api.call(Method::GET, &path, None).await?;
    let file = match output {
        Some(file) => file.to_owned(),
        None => PathBuf::from(format!("{problem}-{version}.wasm").replace(['/', ':'], "-")),
    };
    let directory = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut aside = tempfile::NamedTempFile::new_in(&directory)
        .with_context(|| format!("cannot write in {}", directory.display()))?;
    std::io::Write::write_all(&mut aside, &answer.body)
        .with_context(|| format!("cannot write {}", file.display()))?;
    aside
        .persist(&file)
        .with_context(|| format!("cannot write {}", file.display()))?;
    println!("{}", file.display());
    Ok(())
}

/// The versions of `GET /problem/<id>/versions`, one a line.
fn print_versions(listed: &Value) {
    for version in listed["versions"].as_array().into_iter().flatten() {
        let state = if version["current"] == true {
            "current"
        } else if version["retired"] == true {
            "retired"
        } else {
            "-"
        };
        println!(
            "{}\t{}\t{}\t{}\t{}\t{} jobs",
            version["name"].as_str().unwrap_or(""),
            version["version"].as_str().unwrap_or(""),
            version["source"].as_str().unwrap_or(""),
            state,
            version["digest"].as_str().unwrap_or(""),
            version["jobs"]
        );
    }
}
