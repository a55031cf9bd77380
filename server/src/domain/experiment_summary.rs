//! What an experiment's runs add up to: per input, each version's median objective over the
//! seeds, median time to best and status; per version, against the first (the baseline),
//! wins, ties, losses, the mean relative difference and failures. Pure: `GET
//! /experiments/<id>` and the publish gate read it from the runs the store gives.

use serde::Serialize;
use serde_json::Value;

use crate::objective::Sense;
use crate::store::{ExperimentRun, JobStatus};

/// Where a run stands in its experiment, from its labels.
pub const VERSION_LABEL: &str = "experiment_version";
pub const INPUT_LABEL: &str = "experiment_input";
pub const SEED_LABEL: &str = "experiment_seed";

/// Two medians closer than this, relative to the larger magnitude (or 1), are a tie.
const TIE: f64 = 1e-9;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub jobs: usize,
    pub pending: usize,
    pub running: usize,
    pub completed: usize,
    pub failed: usize,
    pub cancelled: usize,
    /// Every job ended.
    pub done: bool,
}

/// One version against the baseline, over the inputs both have a median for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionSummary {
    pub version: String,
    pub baseline: bool,
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
    /// Mean over the compared inputs of (this − baseline) / |baseline|, signed so that
    /// positive is better whichever the sense; null before any input compares.
    pub mean_relative_difference: Option<f64>,
    /// Its jobs that failed.
    pub failures: usize,
    /// Inputs on which it and the baseline both have a median.
    pub compared_inputs: usize,
}

/// One input, each version's cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputResult {
    pub input: usize,
    /// `minimize` or `maximize`, from its completed runs.
    pub sense: Option<&'static str>,
    pub versions: Vec<Cell>,
    /// The versions with the best median (ties all marked).
    pub best: Vec<String>,
}

/// One version on one input, over its seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub version: String,
    /// Median objective over the completed seeds.
    pub objective: Option<f64>,
    /// Median time to best over the completed seeds that report one, in seconds.
    pub time_to_best_s: Option<f64>,
    /// `PENDING` or `RUNNING` while any seed is; then `COMPLETED` if all completed, else
    /// `FAILED` if any failed, else `CANCELLED`.
    pub status: &'static str,
    pub completed: usize,
    pub failed: usize,
    /// Its jobs, in seed order.
    pub jobs: Vec<String>,
}

/// The whole summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub progress: Progress,
    pub versions: Vec<VersionSummary>,
    pub inputs: Vec<InputResult>,
}

/// One run's place and result.
struct Placed<'a> {
    version: usize,
    input: usize,
    run: &'a ExperimentRun,
}

/// Sums up `runs` of an experiment over `versions` (the first the baseline) and `inputs`
/// inputs. Runs whose labels place them nowhere are counted in the progress only.
pub fn summarize(versions: &[String], inputs: usize, runs: &[ExperimentRun]) -> Summary {
    let mut progress = Progress {
        jobs: runs.len(),
        ..Progress::default()
    };
    for run in runs {
        match run.status {
            JobStatus::Pending => progress.pending += 1,
            JobStatus::Running => progress.running += 1,
            JobStatus::Completed => progress.completed += 1,
            JobStatus::Failed => progress.failed += 1,
            JobStatus::Cancelled => progress.cancelled += 1,
        }
    }
    progress.done = progress.pending + progress.running == 0;

    let placed: Vec<Placed<'_>> = runs
        .iter()
        .filter_map(|run| place(versions, inputs, run))
        .collect();
    let inputs: Vec<InputResult> = (0..inputs)
        .map(|input| input_result(versions, input, &placed))
        .collect();
    let versions = versions
        .iter()
        .enumerate()
        .map(|(index, version)| version_summary(index, version, &inputs, &placed))
        .collect();
    Summary {
        progress,
        versions,
        inputs,
    }
}

fn place<'a>(versions: &[String], inputs: usize, run: &'a ExperimentRun) -> Option<Placed<'a>> {
    let labels: Value = serde_json::from_str(run.labels.as_deref()?).ok()?;
    let version = labels.get(VERSION_LABEL)?.as_str()?;
    let version = versions.iter().position(|known| known == version)?;
    let input: usize = labels.get(INPUT_LABEL)?.as_str()?.parse().ok()?;
    (input < inputs).then_some(Placed {
        version,
        input,
        run,
    })
}

fn input_result(versions: &[String], input: usize, placed: &[Placed<'_>]) -> InputResult {
    let mut sense = None;
    let cells: Vec<Cell> = versions
        .iter()
        .enumerate()
        .map(|(index, version)| {
            let runs: Vec<&ExperimentRun> = placed
                .iter()
                .filter(|placed| placed.input == input && placed.version == index)
                .map(|placed| placed.run)
                .collect();
            if let Some(objective) = runs.iter().find_map(|run| run.objective) {
                sense = Some(objective.sense);
            }
            cell(version, &runs)
        })
        .collect();
    let best = match sense {
        Some(sense) => {
            let better = |a: f64, b: f64| match sense {
                Sense::Maximize => a > b,
                Sense::Minimize => a < b,
            };
            let top = cells
                .iter()
                .filter_map(|cell| cell.objective)
                .reduce(|a, b| if better(b, a) { b } else { a });
            cells
                .iter()
                .filter(|cell| match (cell.objective, top) {
                    (Some(value), Some(top)) => compare(value, top, sense) == Outcome::Tie,
                    _ => false,
                })
                .map(|cell| cell.version.clone())
                .collect()
        }
        None => Vec::new(),
    };
    InputResult {
        input,
        sense: sense.map(Sense::as_str),
        versions: cells,
        best,
    }
}

fn cell(version: &str, runs: &[&ExperimentRun]) -> Cell {
    let count = |status: JobStatus| runs.iter().filter(|run| run.status == status).count();
    let status = if count(JobStatus::Running) > 0 {
        "RUNNING"
    } else if count(JobStatus::Pending) > 0 {
        "PENDING"
    } else if count(JobStatus::Completed) == runs.len() {
        "COMPLETED"
    } else if count(JobStatus::Failed) > 0 {
        "FAILED"
    } else {
        "CANCELLED"
    };
    let completed: Vec<&&ExperimentRun> = runs
        .iter()
        .filter(|run| run.status == JobStatus::Completed)
        .collect();
    Cell {
        version: version.to_owned(),
        objective: median(
            completed
                .iter()
                .filter_map(|run| run.objective)
                .map(|o| o.value),
        ),
        time_to_best_s: median(completed.iter().filter_map(|run| run.time_to_best_s)),
        status,
        completed: completed.len(),
        failed: count(JobStatus::Failed),
        jobs: runs.iter().map(|run| run.job_id.clone()).collect(),
    }
}

fn version_summary(
    index: usize,
    version: &str,
    inputs: &[InputResult],
    placed: &[Placed<'_>],
) -> VersionSummary {
    let mut summary = VersionSummary {
        version: version.to_owned(),
        baseline: index == 0,
        wins: 0,
        ties: 0,
        losses: 0,
        mean_relative_difference: None,
        failures: placed
            .iter()
            .filter(|placed| placed.version == index && placed.run.status == JobStatus::Failed)
            .count(),
        compared_inputs: 0,
    };
    let mut differences = Vec::new();
    for input in inputs {
        let Some(sense) = input.sense.and_then(Sense::parse) else {
            continue;
        };
        let (Some(value), Some(baseline)) =
            (input.versions[index].objective, input.versions[0].objective)
        else {
            continue;
        };
        summary.compared_inputs += 1;
        match compare(value, baseline, sense) {
            Outcome::Win => summary.wins += 1,
            Outcome::Tie => summary.ties += 1,
            Outcome::Loss => summary.losses += 1,
        }
        let signed = match sense {
            Sense::Maximize => value - baseline,
            Sense::Minimize => baseline - value,
        };
        differences.push(if baseline == 0.0 {
            signed.signum() * f64::from(u8::from(signed != 0.0))
        } else {
            signed / baseline.abs()
        });
    }
    if !differences.is_empty() {
        summary.mean_relative_difference =
            Some(differences.iter().sum::<f64>() / differences.len() as f64);
    }
    summary
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Win,
    Tie,
    Loss,
}

/// `value` against `other`, by the sense.
fn compare(value: f64, other: f64, sense: Sense) -> Outcome {
    if (value - other).abs() <= TIE * value.abs().max(other.abs()).max(1.0) {
        return Outcome::Tie;
    }
    let better = match sense {
        Sense::Maximize => value > other,
        Sense::Minimize => value < other,
    };
    if better { Outcome::Win } else { Outcome::Loss }
}

fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut values: Vec<f64> = values.collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::objective::Objective;

    fn run(version: &str, input: usize, status: JobStatus, value: Option<f64>) -> ExperimentRun {
        ExperimentRun {
            job_id: format!("{version}-{input}-{value:?}"),
            status,
            labels: Some(
                json!({VERSION_LABEL: version, INPUT_LABEL: input.to_string(), SEED_LABEL: "1"})
                    .to_string(),
            ),
            objective: value.map(|value| Objective {
                value,
                sense: Sense::Maximize,
            }),
            time_to_best_s: value.map(|_| 0.5),
        }
    }

    #[test]
    fn medians_wins_ties_losses_and_failures() {
        use JobStatus::{Completed, Failed, Pending};
        let versions = ["1".to_owned(), "2".to_owned()];
        let runs = vec![
            // Input 0: 2 is better (median 11 against 10).
            run("1", 0, Completed, Some(10.0)),
            run("1", 0, Completed, Some(9.0)),
            run("1", 0, Completed, Some(12.0)),
            run("2", 0, Completed, Some(11.0)),
            run("2", 0, Completed, Some(11.0)),
            run("2", 0, Failed, None),
            // Input 1: a tie at 5.
            run("1", 1, Completed, Some(5.0)),
            run("2", 1, Completed, Some(5.0)),
            // Input 2: 2 loses (4 against 8).
            run("1", 2, Completed, Some(8.0)),
            run("2", 2, Completed, Some(4.0)),
            // Input 3: 2 has not run yet.
            run("1", 3, Completed, Some(1.0)),
            run("2", 3, Pending, None),
        ];
        let summary = summarize(&versions, 4, &runs);
        assert_eq!(summary.progress.jobs, 12);
        assert_eq!(summary.progress.pending, 1);
        assert!(!summary.progress.done);
        let challenger = &summary.versions[1];
        assert_eq!(
            (challenger.wins, challenger.ties, challenger.losses),
            (1, 1, 1)
        );
        assert_eq!(challenger.failures, 1);
        assert_eq!(challenger.compared_inputs, 3);
        let mean = challenger.mean_relative_difference.expect("compared");
        assert!((mean - (0.1 + 0.0 - 0.5) / 3.0).abs() < 1e-12, "{mean}");
        assert!(summary.versions[0].baseline);
        assert_eq!(summary.versions[0].ties, 4);

        assert_eq!(summary.inputs[0].versions[0].objective, Some(10.0));
        assert_eq!(summary.inputs[0].versions[1].objective, Some(11.0));
        assert_eq!(summary.inputs[0].versions[1].status, "FAILED");
        assert_eq!(summary.inputs[0].best, ["2"]);
        assert_eq!(summary.inputs[1].best, ["1", "2"]);
        assert_eq!(summary.inputs[3].versions[1].status, "PENDING");
        assert_eq!(summary.inputs[3].versions[0].time_to_best_s, Some(0.5));
    }

    #[test]
    fn minimizing_counts_lower_as_better() {
        let versions = ["a".to_owned(), "b".to_owned()];
        let mut runs = vec![
            run("a", 0, JobStatus::Completed, Some(-4.0)),
            run("b", 0, JobStatus::Completed, Some(-5.0)),
        ];
        for run in &mut runs {
            if let Some(objective) = &mut run.objective {
                objective.sense = Sense::Minimize;
            }
        }
        let summary = summarize(&versions, 1, &runs);
        assert_eq!(summary.versions[1].wins, 1);
        assert!(
            summary.versions[1]
                .mean_relative_difference
                .expect("compared")
                > 0.0
        );
        assert_eq!(summary.inputs[0].best, ["b"]);
        assert_eq!(summary.inputs[0].sense, Some("minimize"));
    }
}
