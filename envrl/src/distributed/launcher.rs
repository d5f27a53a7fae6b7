//! What an MPI launcher (Open MPI's `mpirun`, MPICH's Hydra, Slurm's `srun`) tells a process
//! through its environment, readable without MPI.

/// A variable the launcher sets to the number of ranks.
const SIZE_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"];
/// A variable the launcher sets to the rank's index on its node.
const LOCAL_RANK_VARS: [&str; 4] = [
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "PMIX_LOCAL_RANK",
    "SLURM_LOCALID",
];

fn number(vars: &[&str]) -> Option<usize> {
    vars.iter()
        .find_map(|var| std::env::var(var).ok()?.trim().parse().ok())
}

/// Whether an MPI launcher started this process.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .any(|var| std::env::var_os(var).is_some())
}

/// The number of ranks the launcher started, when it says.
pub fn launcher_size() -> Option<usize> {
    number(&SIZE_VARS)
}

/// This process's index among the ranks on its node (0 when no launcher says): the GPU it
/// should use in `cuda:{local_rank}`.
pub fn local_rank() -> usize {
    number(&LOCAL_RANK_VARS).unwrap_or(0)
}
