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
    /// it (default: the arm that trains no auxiliary objective).
    #[arg(long)]
    baseline: Option<String>,
    /// The name of the Markdown file written into `--output` (another name keeps a second
    /// comparison of the same runs, against another baseline, beside the first).
    #[arg(long, default_value = "comparison.md")]
    file_name: String,
}

impl CompareArgs {
    /// Compares, prints the tables and writes them with the plots.
    ///
    /// # Errors
    /// As [`crate::run::compare`].
    pub fn run(self) -> Result<()> {
        if !self.file_name.ends_with(".md") || self.file_name.contains(['/', '\\']) {
            anyhow::bail!(
                "--file-name {}: a file name ending in .md, without a folder (the folder is \
                 --output)",
                self.file_name
            );
        }
        let markdown = crate::run::compare(
            &self.runs,
            &self.output,
            self.split.as_deref(),
            self.baseline.as_deref(),
            &self.file_name,
        )?;
        let path = self.output.join(&self.file_name);
        println!("{markdown}");
        println!("written: {} (and compare-*.svg/png)", path.display());
        Ok(())
    }
}
