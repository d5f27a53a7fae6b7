use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The metrics of one training iteration. Names follow `docs/metrics.md`
/// (`episode/success`, `loss/policy`, `perf/tokens_per_s`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterationMetrics {
    /// The 0-based iteration.
    pub iteration: usize,
    /// Environment steps taken since the start of the run.
    pub env_steps: usize,
    /// The named values.
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

impl IterationMetrics {
    /// A named value, if present.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }

    /// Sets a named value.
    pub fn set(&mut self, name: impl Into<String>, value: f64) {
        self.values.insert(name.into(), value);
    }
}

/// Where the trainer sends each iteration's metrics; the program decides (file, terminal).
pub trait MetricsSink {
    /// Receives the metrics of one iteration.
    fn record(&mut self, metrics: &IterationMetrics);
}

/// Writes one JSON object per line and flushes after each.
pub struct JsonlSink {
    path: PathBuf,
    out: BufWriter<File>,
}

impl JsonlSink {
    /// Creates (or appends to) `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened.
    pub fn append(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::options()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        Ok(Self {
            path,
            out: BufWriter::new(file),
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl MetricsSink for JsonlSink {
    fn record(&mut self, metrics: &IterationMetrics) {
        // A metrics line that cannot be written must not stop training; log it.
        let line = serde_json::to_string(metrics).unwrap_or_default();
        if let Err(e) = writeln!(self.out, "{line}").and_then(|_| self.out.flush()) {
            log::warn!("cannot write metrics to {}: {e}", self.path.display());
        }
    }
}

impl<F: FnMut(&IterationMetrics)> MetricsSink for F {
    fn record(&mut self, metrics: &IterationMetrics) {
        self(metrics)
    }
}
