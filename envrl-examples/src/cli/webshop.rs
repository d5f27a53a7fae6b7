//! `envrl webshop`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

/// WebShop tools.
#[derive(Args)]
pub struct WebshopArgs {
    #[command(subcommand)]
    what: WebshopWhat,
}

#[derive(Subcommand)]
enum WebshopWhat {
    /// Print the goal table of an environment seed as JSON lines (idx, asin, instruction_text,
    /// attributes, goal_options, price_upper, weight, …); idx < 500 is the test split.
    Goals {
        /// The WEBSHOP_DATA directory (items_shuffle_1000.json, items_ins_v2_1000.json,
        /// title_nouns.json).
        #[arg(long, env = "WEBSHOP_DATA")]
        data: PathBuf,
        /// The environment seed.
        #[arg(long, default_value_t = 1000)]
        seed: i64,
    },
}

impl WebshopArgs {
    /// Runs the tool.
    ///
    /// # Errors
    /// When the data cannot be read or standard output written.
    pub fn run(self) -> Result<()> {
        match self.what {
            WebshopWhat::Goals { data, seed } => {
                let catalog = envrl_envs::webshop::Catalog::open(&data)?;
                let goals = envrl_envs::webshop::GoalSet::new(&catalog, seed);
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                for (idx, goal) in goals.goals.iter().enumerate() {
                    writeln!(out, "{}", goal.to_json(idx))?;
                }
                out.flush()?;
            }
        }
        Ok(())
    }
}
