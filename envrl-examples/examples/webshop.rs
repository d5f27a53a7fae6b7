//! The WebShop agent on the embedded default: a generated catalog (or `WEBSHOP_DATA`), a
//! from-scratch tiny LM warm-started on the scripted expert, then GRPO + EnvRL (state prediction
//! and inverse dynamics), with a progress bar, plots and a score and success table.
//!
//! ```text
//! cargo run --release -p envrl-examples --example webshop -- [seed]
//! ```
//! The same run, with every option: `envrl train webshop --help`.

fn main() -> anyhow::Result<()> {
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    envrl_examples::run::run_example(envrl_examples::run::EnvName::Webshop)
}
