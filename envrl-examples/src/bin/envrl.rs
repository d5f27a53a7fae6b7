//! The `envrl` command: parses the command line and runs it (see `envrl_examples::cli`).

use clap::Parser;

fn main() -> anyhow::Result<()> {
    restore_sigpipe();
    envrl_examples::keep_freed_memory();
    envrl_examples::init_logging();
    envrl_examples::cli::Cli::parse().run()
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
