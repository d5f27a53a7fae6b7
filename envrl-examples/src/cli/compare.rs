//! `envrl compare`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// Compare finished runs arm by arm.
#[derive(Args)]
pub struct CompareArgs {
    /// Run directories of `envrl train`.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// Where comparison.md and the plots go.
    #[arg(long, default_value = "runs/comparison")]
    output: PathBuf,
    /// Compare the held-out results of `envrl eval --split SPLIT` (eval-SPLIT.json)
    /// instead of the runs' own (eval.json).
    #[arg(long)]
    split: Option<String>,
    /// The arm the paired differences are taken against, by its label as the table shows
    /// it (default: the arm without auxiliary objectives).
    #[arg(long)]
    baseline: Option<String>,
}

impl CompareArgs {
    /// Compares, prints the tables and writes them with the plots.
    ///
    /// # Errors
    /// As [`crate::run::compare`].
    pub fn run(self) -> Result<()> {
        let markdown = crate::run::compare(
            &self.runs,
            &self.output,
            self.split.as_deref(),
            self.baseline.as_deref(),
        )?;
        println!("{markdown}");
        println!(
            "written: {} (and compare-*.svg/png)",
            self.output.join("comparison.md").display()
        );
        Ok(())
    }
}
