//! A command whose reader goes away (`envrl compare … | head`) ends as Unix commands do, by
//! SIGPIPE, not with a panic about a broken pipe.
#![allow(missing_docs)]
#![cfg(unix)]

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

#[test]
fn a_closed_stdout_ends_the_command_without_a_panic() {
    let runs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/results/runs/smollm2-pick"
    );
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_envrl"))
        .arg("compare")
        .args(["grpo__0", "both-0.2__0"].map(|run| format!("{runs}/{run}")))
        .arg("--output")
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the table is printed.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        output.status
    );
}
