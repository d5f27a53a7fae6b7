//! [`ChildServer`]: an inference server process envrl started, waited for until it answers and
//! stopped (with every process it started) when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::pool::http_agent;

/// A server process on `127.0.0.1`, its own process group (engines start workers of their
/// own), its standard error in a log file.
#[derive(Debug)]
pub(crate) struct ChildServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
}

/// A free port on the loopback interface.
pub(crate) fn free_port() -> std::io::Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()
        .map(|a| a.port())
}

/// Whether the server at `url` answers `GET /health` with success (llama.cpp answers 503
/// while it loads the model; vLLM does not listen until it is ready).
fn healthy(agent: &ureq::Agent, url: &str) -> bool {
    agent
        .get(&format!("{url}/health"))
        .call()
        .is_ok_and(|r| r.status().is_success())
}

impl ChildServer {
    /// Starts `command` (which must serve on `port`), its standard error appended to `log`, and
    /// waits until it answers `/health` — at most `timeout`.
    ///
    /// # Errors
    /// In words, naming `log`: the process cannot start, exits, or does not answer in time (it
    /// is stopped then).
    pub(crate) fn start(
        mut command: Command,
        port: u16,
        log: &Path,
        timeout: Duration,
    ) -> Result<Self, String> {
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("opening the server log {}: {e}", log.display()))?;
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("starting {:?}: {e}", command.get_program()))?;
        let mut server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let agent = http_agent(Duration::from_secs(2));
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "the server exited ({status}); the end of {}:\n{}",
                    log.display(),
                    log_tail(log, LOG_LINES)
                ));
            }
            if healthy(&agent, &server.url) {
                return Ok(server);
            }
            if start.elapsed() > timeout {
                return Err(format!(
                    "the server did not answer /health within {:.0} s (rollout.start_timeout_s) \
                     and was stopped; the end of {}:\n{}",
                    timeout.as_secs_f64(),
                    log.display(),
                    log_tail(log, LOG_LINES)
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Lines of a server's log an error quotes.
const LOG_LINES: usize = 12;

/// The last `lines` lines of `log` (at most 4 KiB of them), indented; `(empty)` when it
/// holds nothing, or why it cannot be read.
fn log_tail(log: &Path, lines: usize) -> String {
    let text = match std::fs::read(log) {
        Ok(bytes) => {
            String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(4096)..]).into_owned()
        }
        Err(e) => return format!("  (cannot read it: {e})"),
    };
    let kept: Vec<&str> = text.lines().rev().take(lines).collect();
    if kept.iter().all(|l| l.trim().is_empty()) {
        return "  (empty)".into();
    }
    kept.iter()
        .rev()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Drop for ChildServer {
    /// Asks the process group to stop (SIGTERM), then kills it after 10 s.
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            let group = -(self.child.id() as libc::pid_t);
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is shared.
            unsafe { libc::kill(group, libc::SIGTERM) };
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            // SAFETY: as above; the group's remaining processes, if any.
            unsafe { libc::kill(group, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The interpreter `$variable` names, else `~/.cache/envrl-tools/<venv>/bin/python` (where
/// `scripts/serve-check.sh` installs the engines).
pub(crate) fn tools_python(variable: &str, venv: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/envrl-tools")
                .join(venv)
                .join("bin/python")
        })
}

/// The Python interpreter `python` if it can import `module`, else why not.
pub(crate) fn check_python(python: &Path, module: &str, install: &str) -> Result<PathBuf, String> {
    let found = Command::new(python)
        .args(["-c", &format!("import {module}")])
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    match found.status.success() {
        true => Ok(python.to_path_buf()),
        false => Err(format!(
            "{} cannot import {module} ({install})",
            python.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn a_server_that_never_answers_is_stopped_at_its_deadline_quoting_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let port = free_port().unwrap();
        let start = Instant::now();
        let silent = shell("echo loading weights >&2; echo still loading >&2; exec sleep 60");
        let err = match ChildServer::start(silent, port, &log, Duration::from_secs(1)) {
            Ok(_) => panic!("a silent server was taken as started"),
            Err(e) => e,
        };
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "{:?}",
            start.elapsed()
        );
        assert!(
            err.contains("within 1 s (rollout.start_timeout_s)") && err.contains("  still loading"),
            "{err}"
        );
        let failing = shell("echo ModuleNotFoundError: xllamacpp >&2; exit 3");
        let err = match ChildServer::start(failing, port, &log, Duration::from_secs(30)) {
            Ok(_) => panic!("a server that exited was taken as started"),
            Err(e) => e,
        };
        assert!(
            err.contains("exited") && err.contains("  ModuleNotFoundError: xllamacpp"),
            "{err}"
        );
    }

    #[test]
    fn the_log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(
            &log,
            (0..30).map(|i| format!("line {i}\n")).collect::<String>(),
        )
        .unwrap();
        let tail = log_tail(&log, 3);
        assert_eq!(tail, "  line 27\n  line 28\n  line 29");
        std::fs::write(&log, "\n\n").unwrap();
        assert_eq!(log_tail(&log, 3), "  (empty)");
        assert!(log_tail(&dir.path().join("none"), 3).contains("cannot read it"));
    }
}
