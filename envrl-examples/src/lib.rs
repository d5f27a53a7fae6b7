//! # envrl-examples
//!
//! The programs people run with envrl, and the set-up code they share. Binaries stay thin:
//! they parse arguments, pick a device and call into this library.
//!
//! - [`bench`](mod@bench): `envrl bench`, speed tables next to the reference.
//! - [`keydoor`]: a from-scratch tiny LM trained with GRPO on the key-and-door world.
//! - [`lm`]: `envrl lm`, logits and generations of a model directory.
//! - [`progress`]: the terminal progress bar and metrics file of a run.
//! - [`replay`]: `envrl replay`, transcripts of recorded action lists.
//! - [`run`]: `envrl train` / `envrl eval`: whole runs from a TOML config, with plots and an
//!   evaluation table.
//!
//! # Example
//!
//! A run's whole configuration is one value: start from a preset, override fields as
//! `--set key=value` does, and write the TOML that `envrl train --config` reads back.
//!
//! ```
//! use envrl_examples::run::RunConfig;
//!
//! let mut config = RunConfig::preset("cpu-tiny", "alfworld")?;
//! config.trainer.seed = 3;
//! assert_eq!(config.model, "tiny");
//! let text = config.to_toml()?;
//! assert!(text.contains("seed = 3"));
//! assert!(RunConfig::preset("cpu-huge", "alfworld").is_err());
//! # Ok::<(), anyhow::Error>(())
//! ```
#![deny(missing_docs)]

/// mimalloc for every program of this crate: training allocates and frees tensors of tens of
/// megabytes per operation, which glibc's allocator hands back to the kernel and takes again
/// (page faults and page clearing took a fifth of a training step). 1.5× training tokens/s on
/// the examples' model (`envrl bench train`, docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod bench;
pub mod device;
pub mod keydoor;
pub mod lm;
pub mod progress;
pub mod replay;
pub mod run;
