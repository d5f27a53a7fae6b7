//! The terminal side of a run: a progress bar with the live success rate, and the metrics file.

use std::path::Path;

use anyhow::{Context, Result};
use envrl::{IterationMetrics, JsonlSink, MetricsSink};
use indicatif::{ProgressBar, ProgressStyle};

/// Shows one bar per run (hidden when stderr is not a terminal) and appends every iteration's
/// metrics to `metrics.jsonl`.
pub struct RunProgress {
    bar: ProgressBar,
    file: JsonlSink,
    /// Every iteration's metrics, in order.
    pub history: Vec<IterationMetrics>,
}

impl RunProgress {
    /// A bar of `iterations` steps writing to `dir/metrics.jsonl`.
    ///
    /// # Errors
    /// When the metrics file cannot be created.
    pub fn new(iterations: usize, dir: &Path, quiet: bool) -> Result<Self> {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(iterations as u64)
        };
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        let file = JsonlSink::append(dir.join("metrics.jsonl"))
            .with_context(|| format!("creating metrics file in {}", dir.display()))?;
        Ok(Self {
            bar,
            file,
            history: Vec::new(),
        })
    }

    /// Prints a line above the bar.
    pub fn println(&self, line: impl AsRef<str>) {
        self.bar.println(line.as_ref());
    }

    /// Closes the bar.
    pub fn finish(&self) {
        self.bar.finish();
    }
}

impl MetricsSink for RunProgress {
    fn record(&mut self, m: &IterationMetrics) {
        let get = |k: &str| m.get(k).unwrap_or(f64::NAN);
        self.bar.set_message(format!(
            "success {:.2} return {:.2} invalid {:.2} tok/s {:.0}",
            get("episode/success"),
            get("episode/return"),
            get("policy/invalid_action_rate"),
            get("perf/tokens_per_s"),
        ));
        if let Some(eval) = m.get("eval/success") {
            self.bar.println(format!(
                "iteration {:>4}: eval success {:.3}",
                m.iteration, eval
            ));
        }
        self.bar.inc(1);
        self.file.record(m);
        self.history.push(m.clone());
    }
}
