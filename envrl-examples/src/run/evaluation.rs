//! The held-out evaluation of a run: its table, and the files beside it (`eval.md`,
//! `eval.json`, `eval-episodes.txt`, `eval-outcomes.json`; `eval-<tag>…` for another split).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use envrl::Trainer;
use envrl::distributed::Collective;
use envrl_algos::CausalLm;

use super::envs::Reporting;
use super::report::{EvalRow, episode_outcomes, episode_transcripts, eval_table};

/// A run directory's evaluation file: `eval<extension>`, or `eval-<tag><extension>` for an
/// evaluation on another split (`envrl eval --split`).
pub(crate) fn eval_path(dir: &Path, tag: Option<&str>, extension: &str) -> PathBuf {
    dir.join(match tag {
        Some(tag) => format!("eval-{tag}{extension}"),
        None => format!("eval{extension}"),
    })
}

/// Evaluates on the held-out tasks and writes the episodes and their outcomes.
pub(crate) struct Evaluation<'a> {
    pub reporting: &'a Reporting,
    pub dir: &'a Path,
    pub tag: Option<&'a str>,
}

impl Evaluation<'_> {
    /// The path of one of the evaluation's files.
    pub fn file(&self, extension: &str) -> PathBuf {
        eval_path(self.dir, self.tag, extension)
    }

    /// Plays every held-out task once; writes `-episodes.txt` (the first 20 transcripts) and
    /// `-outcomes.json` (each episode's result, for `envrl compare`'s intervals), warning
    /// when they cannot be written; returns the table (last row: all tasks). In a
    /// data-parallel run the ranks play their shares of the episodes and gather them, and
    /// their episode scores.
    pub fn run(&self, trainer: &mut Trainer<CausalLm>) -> Result<Vec<EvalRow>> {
        let scores = &self.reporting.scores;
        if let Some(log) = scores {
            log.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
        let report = trainer.evaluate(trainer.world().eval_tasks.len())?;
        self.write("-episodes.txt", episode_transcripts(&report, 20));
        let scores: Option<BTreeMap<u64, f64>> = match scores {
            Some(log) => {
                let mine: BTreeMap<u64, f64> = log
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(|(k, v)| (*k, *v))
                    .collect();
                Some(gather_scores(trainer.collective(), mine)?)
            }
            None => None,
        };
        let outcomes = episode_outcomes(&report, scores.as_ref());
        self.write(
            "-outcomes.json",
            serde_json::to_string(&outcomes).unwrap_or_default(),
        );
        Ok(eval_table(
            &report,
            &self.reporting.task_label,
            scores.as_ref(),
        ))
    }

    fn write(&self, extension: &str, text: String) {
        let path = self.file(extension);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("could not write {}: {e}", path.display());
        }
    }
}

/// The episode scores of every rank's share of the evaluation.
fn gather_scores(sync: &dyn Collective, mine: BTreeMap<u64, f64>) -> Result<BTreeMap<u64, f64>> {
    if sync.size() == 1 {
        return Ok(mine);
    }
    let mut all = BTreeMap::new();
    for (rank, bytes) in sync
        .all_gather(&serde_json::to_vec(&mine)?)?
        .iter()
        .enumerate()
    {
        let part: BTreeMap<u64, f64> = serde_json::from_slice(bytes)
            .with_context(|| format!("rank {rank} sent unreadable episode scores"))?;
        all.extend(part);
    }
    Ok(all)
}
