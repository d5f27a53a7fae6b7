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
    /// A named value, if present (see [`metric_names`](crate::metric_names) for the names).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).copied()
    }

    /// A named value; a name this iteration did not record is an error that lists the names
    /// it has, so that a typo cannot read as 0 or NaN.
    ///
    /// # Errors
    /// [`Error::Metric`] when the name is absent.
    pub fn value(&self, name: &str) -> Result<f64> {
        self.get(name).ok_or_else(|| Error::Metric {
            name: name.to_string(),
            iteration: self.iteration,
            known: self.values.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// Sets a named value.
    pub fn set(&mut self, name: impl Into<String>, value: f64) {
        self.values.insert(name.into(), value);
    }
}

/// Where the trainer sends each iteration's metrics; the program decides (file, terminal).
pub trait MetricsSink {
    /// Receives the metrics of one iteration.
    ///
    /// # Errors
    /// When they cannot be kept (a file write failed): the trainer stops the run with it, so
    /// that no iteration's metrics are lost silently; `--resume` then continues from the last
    /// checkpoint.
    fn record(&mut self, metrics: &IterationMetrics) -> Result<()>;
}

/// Writes one JSON object per line and flushes after each. A line that cannot be written
/// whole is cut off again, so the file never ends in half a line.
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
    fn record(&mut self, metrics: &IterationMetrics) -> Result<()> {
        let mut line = serde_json::to_string(metrics)
            .map_err(|e| Error::io(&self.path, std::io::Error::other(e)))?;
        line.push('\n');
        let before = self.out.get_ref().metadata().map(|m| m.len()).ok();
        let written = self
            .out
            .write_all(line.as_bytes())
            .and_then(|_| self.out.flush());
        if let Err(e) = written {
            // Take back whatever part of the line reached the file.
            if let Some(len) = before {
                let _ = self.out.get_ref().set_len(len);
            }
            return Err(Error::io(&self.path, e));
        }
        Ok(())
    }
}

impl<F: FnMut(&IterationMetrics)> MetricsSink for F {
    fn record(&mut self, metrics: &IterationMetrics) -> Result<()> {
        self(metrics);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_metric_is_an_error_naming_what_there_is() {
        let mut m = IterationMetrics {
            iteration: 3,
            ..Default::default()
        };
        m.set(crate::metric_names::EPISODE_SUCCESS, 0.5);
        assert_eq!(m.value("episode/success").unwrap(), 0.5);
        let err = m.value("episode/sucess").unwrap_err().to_string();
        assert_eq!(
            err,
            "no metric `episode/sucess` in iteration 3; it has: episode/success"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_is_an_error_naming_the_file() {
        let mut sink = JsonlSink::append("/dev/full").unwrap();
        let err = sink
            .record(&IterationMetrics::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/dev/full") && err.to_lowercase().contains("space"),
            "{err}"
        );
    }

    #[test]
    fn every_record_is_one_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.jsonl");
        let mut sink = JsonlSink::append(&path).unwrap();
        let mut m = IterationMetrics::default();
        m.set("episode/success", 0.5);
        sink.record(&m).unwrap();
        m.iteration = 1;
        sink.record(&m).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with('\n'));
    }
}
