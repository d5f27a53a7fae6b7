//! # envrl-examples
//!
//! The programs people run with envrl, and the set-up code they share. Binaries stay thin:
//! they parse arguments, pick a device and call into this library.
//!
//! - [`bench`](mod@bench): `envrl bench`, speed tables next to the reference.
//! - [`cli`]: the `envrl` command, one module per subcommand.
//! - [`device`]: the `--device` and `--dtype` values.
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
//! use envrl_examples::run::{EnvName, ModelSource, Preset, RunConfig};
//!
//! let mut config = RunConfig::preset(Preset::CpuTiny, EnvName::Alfworld)?;
//! config.trainer.seed = 3;
//! assert_eq!(config.model, ModelSource::Tiny);
//! let text = config.to_toml()?;
//! assert!(text.contains("seed = 3"));
//! let config = config.with_overrides(&["trainer.learning_rate=3e-4".into()])?;
//! assert_eq!(config.trainer.learning_rate, 3e-4);
//! assert!(config.with_overrides(&["preset=\"cpu-huge\"".into()]).is_err());
//! # Ok::<(), anyhow::Error>(())
//! ```
#![deny(missing_docs)]

/// mimalloc for every program of this crate: training allocates and frees tensors of tens of
/// megabytes per operation, which glibc's allocator hands back to the kernel and takes again
/// (page faults and page clearing took a fifth of a training step). 1.5× training tokens/s on
/// the examples' model (`envrl bench train`, docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `purge_delay` option (`mi_option_purge_delay` in `mimalloc.h` of mimalloc v3, the
/// version `libmimalloc-sys` builds; the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes mimalloc keep freed memory for reuse instead of returning it to the kernel a second
/// later: a training step frees and reallocates the same attention-sized tensors many times,
/// and each return cost page faults and page clearing on the next use (10,245 → 536 page
/// faults and +11 % tokens per CPU-second in `envrl bench train --vocab 600 --batch 16
/// --seq 200`). The process keeps its peak memory until it exits. Every program of this
/// crate calls it first.
pub fn keep_freed_memory() {
    // SAFETY: `mi_option_set` stores an option value; any value is valid for this option.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

/// Shows the libraries' warnings (`log::warn!`: non-finite advantages, unknown target tokens,
/// …) on standard error; `RUST_LOG` chooses another level (`info` adds a line per iteration).
/// Every program of this crate calls it first.
pub fn init_logging() {
    let _ = env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .parse_env("RUST_LOG")
        .format_timestamp(None)
        .format_target(false)
        .try_init();
}

pub mod bench;
pub mod cli;
pub mod device;
pub mod env_server;
pub mod keydoor;
pub mod lm;
pub mod progress;
pub mod replay;
pub mod run;

#[cfg(test)]
mod allocator_tests {
    #[test]
    fn the_purge_delay_option_index_is_mimallocs() {
        // Its documented default is 1000 ms; no neighbouring option defaults to 1000.
        // SAFETY: reading and storing option values.
        let before = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(before, 1000);
        }
        super::keep_freed_memory();
        let after = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(after, -1);
    }
}
