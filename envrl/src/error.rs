//! The error type of the `envrl` crate.

use std::path::PathBuf;

/// Errors raised by the core crate: invalid configurations, checkpoints and I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration field holds an impossible value.
    #[error("invalid config field `{field}`: {reason}")]
    InvalidConfig {
        /// The name of the offending field.
        field: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// A configuration file could not be parsed.
    #[error("cannot parse config {path}: {reason}")]
    ConfigFile {
        /// The file that was read.
        path: PathBuf,
        /// The parser's message (it names unknown fields).
        reason: String,
    },
    /// A checkpoint is missing, incomplete or corrupt.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint directory or file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A metric was asked for by a name the iteration did not record (a typo, or a value that
    /// only some iterations have, such as `eval/success`).
    #[error("no metric `{name}` in iteration {iteration}; it has: {known}")]
    Metric {
        /// The name asked for.
        name: String,
        /// The iteration.
        iteration: usize,
        /// The names it has, comma-separated.
        known: String,
    },
    /// A data-parallel exchange between ranks failed (see [`crate::distributed`]).
    #[error("rank {rank}: {reason}")]
    Distributed {
        /// The rank that saw the failure.
        rank: usize,
        /// What failed, naming the exchange and, where known, the other rank.
        reason: String,
    },
    /// An inference server that samples rollouts did not answer with a valid response, after
    /// its retries.
    #[error("rollout server {server}: {reason}")]
    RolloutServer {
        /// The server's address.
        server: String,
        /// What failed, naming the request.
        reason: String,
    },
    /// The trainer cannot go on in this process: a rollout playing ahead failed after the update
    /// it overlapped had moved the weights (`max_staleness` 1). A resume from the last
    /// checkpoint continues the run exactly.
    #[error("the trainer stopped: {reason}")]
    Stopped {
        /// What failed, at which iteration.
        reason: String,
    },
    /// An I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file that could not be read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Builds an [`Error::InvalidConfig`].
    pub fn config(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidConfig {
            field,
            reason: reason.into(),
        }
    }

    /// Builds an [`Error::Distributed`] seen by `rank`.
    pub fn distributed(rank: usize, reason: impl Into<String>) -> Self {
        Error::Distributed {
            rank,
            reason: reason.into(),
        }
    }

    /// Builds an [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The result type of the `envrl` crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
