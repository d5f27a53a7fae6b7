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
use envrl::distributed::{GradientSync, SingleProcess};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tempfile::TempDir;

use super::RunOptions;

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

    fn sync(&self) -> &dyn GradientSync {
        match self {
            Ranks::Single => &SingleProcess,
            #[cfg(feature = "mpi")]
            Ranks::Mpi(mpi) => mpi.as_ref(),
        }
    }

    /// The exchange the trainer sums gradients with.
    pub fn gradient_sync(&self) -> Box<dyn GradientSync> {
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
        let dir = tempfile::Builder::new()
            .prefix(&format!("envrl-rank-{}-", self.rank()))
            .tempdir()
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
