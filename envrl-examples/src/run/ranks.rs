//! The ranks of a data-parallel run of the `envrl` command: this process alone, or one rank of
//! an MPI job (`mpirun -np N envrl train …`, `srun envrl train …`; the `mpi` feature).
//!
//! Every rank reads the same config and data, plays its share of the rollouts and trains the
//! same weights ([`envrl::distributed`]); rank 0 is the one writer (run directory, lock, metrics,
//! checkpoints, evaluations, plots), the others write into a scratch directory that is removed
//! at the end, and all resume from rank 0's checkpoint.

use std::fmt;
#[cfg(feature = "mpi")]
use std::rc::Rc;

use anyhow::{Context, Result, bail};
use envrl::distributed::{Collective, SingleProcess};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tempfile::TempDir;

use super::RunOptions;

/// The start of a scratch directory's name: `envrl-rank-<rank>-<pid>-<random>`.
const SCRATCH_PREFIX: &str = "envrl-rank-";

/// Removes the scratch directories in `temp` of ranks that no longer run. A rank ends its own
/// (a [`TempDir`]), but one killed by a signal (the launcher ends every rank when one fails)
/// cannot, and its scratch can hold a warm start as large as the model. Only directories whose
/// process is gone are removed; on systems without `/proc` nothing is.
fn remove_stale_scratch(temp: &std::path::Path) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = stale_scratch_pid(&name.to_string_lossy()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The process id in a scratch directory's name, if `name` is one.
fn stale_scratch_pid(name: &str) -> Option<u32> {
    let mut parts = name.strip_prefix(SCRATCH_PREFIX)?.splitn(3, '-');
    let (_rank, pid, _random) = (
        parts.next()?.parse::<usize>().ok()?,
        parts.next()?,
        parts.next()?,
    );
    pid.parse().ok()
}

/// This process's place in the run.
#[derive(Clone, Default)]
pub enum Ranks {
    /// One process (the default, and a run launched without MPI).
    #[default]
    Single,
    /// One rank of an MPI job.
    #[cfg(feature = "mpi")]
    Mpi(Rc<envrl::distributed::Mpi>),
}

impl fmt::Debug for Ranks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} of {}", self.rank(), self.size())
    }
}

impl Ranks {
    /// An MPI job's rank when an MPI launcher started this process, else [`Ranks::Single`].
    ///
    /// # Errors
    /// When MPI cannot start, or a launcher started several ranks of an `envrl` built without
    /// the `mpi` feature (each would train alone).
    pub fn from_launcher() -> Result<Self> {
        if !envrl::distributed::launched_by_mpi() {
            return Ok(Ranks::Single);
        }
        #[cfg(feature = "mpi")]
        {
            Ok(Ranks::Mpi(Rc::new(envrl::distributed::Mpi::init()?)))
        }
        #[cfg(not(feature = "mpi"))]
        {
            match envrl::distributed::launcher_size() {
                Some(n) if n > 1 => bail!(
                    "started as one of {n} MPI ranks, but this envrl was built without the `mpi` \
                     feature, so every rank would train alone: rebuild with `--features mpi` \
                     (see docs/distributed.md)"
                ),
                _ => Ok(Ranks::Single),
            }
        }
    }

    fn sync(&self) -> &dyn Collective {
        match self {
            Ranks::Single => &SingleProcess,
            #[cfg(feature = "mpi")]
            Ranks::Mpi(mpi) => mpi.as_ref(),
        }
    }

    /// The exchange the trainer sums gradients with.
    pub fn collective(&self) -> Box<dyn Collective> {
        match self {
            Ranks::Single => Box::new(SingleProcess),
            #[cfg(feature = "mpi")]
            Ranks::Mpi(mpi) => Box::new(Rc::clone(mpi)),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.sync().rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.sync().size()
    }

    /// Whether this process writes the run directory (rank 0).
    pub fn writes(&self) -> bool {
        self.rank() == 0
    }

    /// On a rank other than 0, a scratch directory (removed when dropped) and `options` that
    /// write into it, quietly, as a fresh run: rank 0 writes the run directory, and
    /// [`Ranks::from_rank_zero`] gives the others its checkpoint to resume from. `None` on
    /// rank 0.
    ///
    /// # Errors
    /// When the scratch directory cannot be created.
    pub(crate) fn scratch_run(
        &self,
        options: &RunOptions,
    ) -> Result<Option<(TempDir, RunOptions)>> {
        if self.writes() {
            return Ok(None);
        }
        let temp = std::env::temp_dir();
        remove_stale_scratch(&temp);
        let dir = tempfile::Builder::new()
            .prefix(&format!(
                "{SCRATCH_PREFIX}{}-{}-",
                self.rank(),
                std::process::id()
            ))
            .tempdir_in(&temp)
            .context("creating a scratch directory")?;
        let options = RunOptions {
            output_dir: dir.path().join("run"),
            resume: false,
            force: true,
            allow_config_change: true,
            quiet: true,
            ..options.clone()
        };
        Ok(Some((dir, options)))
    }

    /// Rank 0's `value`, on every rank.
    ///
    /// # Errors
    /// When the exchange fails.
    pub fn from_rank_zero<T: Serialize + DeserializeOwned>(&self, value: &T) -> Result<T> {
        if self.size() == 1 {
            return Ok(serde_json::from_value(serde_json::to_value(value)?)?);
        }
        let gathered = self.sync().all_gather(&serde_json::to_vec(value)?)?;
        Ok(serde_json::from_slice(&gathered[0])?)
    }

    /// Refuses to go on unless every rank has the same `what` (`text` on each).
    ///
    /// # Errors
    /// Naming the ranks whose `what` differs from rank 0's, or when the exchange fails.
    pub fn check_same(&self, what: &str, text: &str) -> Result<()> {
        if self.size() == 1 {
            return Ok(());
        }
        let gathered = self.sync().all_gather(text.as_bytes())?;
        let differ: Vec<usize> = (1..gathered.len())
            .filter(|&r| gathered[r] != gathered[0])
            .collect();
        if !differ.is_empty() {
            bail!(
                "rank(s) {differ:?} have another {what} than rank 0: every rank must run the \
                 same command with the same files"
            );
        }
        Ok(())
    }

    /// Ends the run after `error`: in an MPI job, the whole job (so that no other rank waits
    /// for this one), printing the error with this rank's number.
    pub fn fail(&self, error: &anyhow::Error) {
        #[cfg(feature = "mpi")]
        if let Ranks::Mpi(mpi) = self {
            let message = format!("Error: rank {} of {}: {error:#}", self.rank(), self.size());
            mpi.abort(&message, 1);
        }
        #[cfg(not(feature = "mpi"))]
        let _ = error;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scratch_directories_of_gone_processes_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let gone = temp.path().join("envrl-rank-1-4194305-AbCd12");
        let mine = temp
            .path()
            .join(format!("envrl-rank-1-{}-XyZ", std::process::id()));
        let other = temp.path().join("envrl-rank-x-1-y");
        for dir in [&gone, &mine, &other] {
            std::fs::create_dir_all(dir.join("run")).unwrap();
        }
        remove_stale_scratch(temp.path());
        // Process ids on Linux stay below 2^22 (4194304), so 4194305 never runs.
        assert!(!gone.exists() || !std::path::Path::new("/proc/self").exists());
        assert!(mine.exists() && other.exists());
        assert_eq!(stale_scratch_pid("envrl-rank-2-77-abc"), Some(77));
        assert_eq!(stale_scratch_pid("envrl-rank-2-abc"), None);
    }
}
