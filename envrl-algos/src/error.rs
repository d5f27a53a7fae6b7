//! The error type of `envrl-algos`.

use std::path::PathBuf;

/// Errors of model configs, tokenizers and weight files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model config holds sizes that do not fit together.
    #[error("invalid model config field `{field}`: {reason}")]
    InvalidModelConfig {
        /// The offending `config.json` key.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A tokenizer file is unreadable or malformed.
    #[error("tokenizer {path}: {reason}")]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A model file (config, weights) is missing, malformed, or describes a model this crate
    /// cannot run.
    #[error("model file {path}: {reason}")]
    ModelFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the tensor or key where there is one.
        reason: String,
    },
    /// An export could not be written or did not verify; nothing is left at the output path.
    #[error("export to {path}: {reason}")]
    Export {
        /// The output path (or the file being written).
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An algorithm config holds an impossible value.
    #[error("invalid config field `{field}`: {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// The result type of `envrl-algos`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
