//! `caseload plugin check`: loads a plugin file as the server would, runs its example inputs
//! and says what it would serve, or why the server would refuse it, before it is dropped in.

use std::path::PathBuf;

pub use caseload::plugins::check::{CheckOptions, Checker, Failure};

/// `caseload plugin check FILE...`: one report per file; true if every file would load and
/// pass its examples.
pub fn check_plugins(files: &[PathBuf], options: CheckOptions) -> anyhow::Result<bool> {
    let checker = Checker::new(options)?;
    let mut all_pass = true;
    for path in files {
        let checked = checker.check(path);
        let mut lines = checked.report.iter();
        let path = path.display();
        match (lines.next(), &checked.outcome) {
            (Some(headline), Ok(_) | Err(Failure::Input(_))) => {
                println!("{path}: loads: {headline}")
            }
            (Some(headline), Err(Failure::Refused(_))) => println!("{path}: refused: {headline}"),
            (None, Err(failure)) => println!("{path}: {failure}"),
            (None, Ok(_)) => println!("{path}: loads"),
        }
        for line in lines {
            println!("{line}");
        }
        if let Err(failure) = &checked.outcome {
            all_pass = false;
            if !checked.report.is_empty() {
                println!("  {failure}");
            }
        }
    }
    Ok(all_pass)
}
