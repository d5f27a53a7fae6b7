//! The `envrl` command: parses the command line and runs it (see `envrl_examples::cli`).

use clap::Parser;

fn main() -> anyhow::Result<()> {
    restore_sigpipe();
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    let cli = envrl_examples::cli::Cli::parse();
    // `mpirun -np N envrl train …`: one rank of a data-parallel run (the `mpi` feature).
    let ranks = envrl_examples::run::Ranks::from_launcher()?;
    let result = cli.run(&ranks);
    if let Err(error) = &result {
        // In an MPI job this ends every rank, naming this one and the error.
        ranks.fail(error);
    }
    result
}

/// Ends quietly when the reader of standard output goes away (`envrl compare … | head`), as
/// Unix commands do: Rust ignores SIGPIPE, so `println!` would panic on the closed pipe.
#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: called first in `main`, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}
