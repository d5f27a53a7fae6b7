//! The `envrl` command: parses the command line and runs it (see `envrl_examples::cli`).

use clap::Parser;

fn main() -> anyhow::Result<()> {
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    envrl_examples::cli::Cli::parse().run()
}
