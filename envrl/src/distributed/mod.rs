//! Data-parallel learners: the exchange between processes that train one policy together.
//!
//! Every process (a *rank*) holds the same model, plays its share of the iteration's groups and
//! gathers the others' trajectories (so every rank holds the same rollout batch), computes the
//! gradient of its share of each optimizer step's rows and examples, and the ranks sum those
//! gradients before every rank clips and steps identically. [`Collective`] is that exchange;
//! [`SingleProcess`] is the one-process case (nothing to exchange) and, with the `mpi` feature,
//! `Mpi` runs it between the processes of an MPI job (`mpirun -np N …`).
//!
//! Sums are taken in rank order on every rank, so every rank gets the same bits, and the result
//! differs from one process's only by float rounding (the order of additions).

mod gather;
#[cfg(feature = "burn")]
mod gradients;
mod launcher;
#[cfg(feature = "mpi")]
mod mpi;
mod share;

pub use gather::gather;
#[cfg(feature = "burn")]
pub use gradients::sum_gradients;
pub use launcher::{launched_by_mpi, launcher_size, local_rank};
#[cfg(feature = "mpi")]
pub use mpi::{Mpi, TIMEOUT_VAR};
pub use share::share_of;

use crate::error::Result;

/// The exchange between the ranks of a data-parallel run, at the two seams where they meet:
/// gathering what each rank played or scored (trajectories, the critic's values: [`gather`]
/// over [`Collective::all_gather`]) and summing gradients and statistics
/// ([`Collective::sum`], [`sum_gradients`]).
///
/// Every rank calls the same methods in the same order with buffers of the same length (the
/// collectives of MPI); an implementation that cannot complete one returns
/// [`crate::Error::Distributed`] naming the rank and the cause rather than hang or panic.
pub trait Collective {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Every rank's `bytes`, in rank order.
    ///
    /// # Errors
    /// [`crate::Error::Distributed`] when the exchange fails.
    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>>;

    /// Replaces `values` on every rank by the element-wise sum over ranks, added in rank order
    /// (`v₀ + v₁ + …`, so that every rank gets the same bits).
    ///
    /// # Errors
    /// [`crate::Error::Distributed`] when the exchange fails, or the ranks' lengths differ.
    fn sum(&self, values: &mut [f32]) -> Result<()>;
}

/// Forwards to the shared exchange.
impl<T: Collective + ?Sized> Collective for std::rc::Rc<T> {
    fn rank(&self) -> usize {
        (**self).rank()
    }

    fn size(&self) -> usize {
        (**self).size()
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        (**self).all_gather(bytes)
    }

    fn sum(&self, values: &mut [f32]) -> Result<()> {
        (**self).sum(values)
    }
}

/// Forwards to the boxed exchange.
impl<T: Collective + ?Sized> Collective for Box<T> {
    fn rank(&self) -> usize {
        (**self).rank()
    }

    fn size(&self) -> usize {
        (**self).size()
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        (**self).all_gather(bytes)
    }

    fn sum(&self, values: &mut [f32]) -> Result<()> {
        (**self).sum(values)
    }
}

/// One process: rank 0 of 1, nothing to exchange.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleProcess;

impl Collective for SingleProcess {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![bytes.to_vec()])
    }

    fn sum(&self, _values: &mut [f32]) -> Result<()> {
        Ok(())
    }
}

/// `parts[0] + parts[1] + …` element-wise into `out`, in that order.
///
/// # Panics
/// When a part's length differs from `out`'s (a caller bug).
pub fn ordered_sum<'a>(parts: impl IntoIterator<Item = &'a [f32]>, out: &mut [f32]) {
    for (r, part) in parts.into_iter().enumerate() {
        assert_eq!(part.len(), out.len(), "every part as long as the output");
        if r == 0 {
            out.copy_from_slice(part);
        } else {
            out.iter_mut().zip(part).for_each(|(o, &p)| *o += p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_sums_add_in_rank_order() {
        let parts: [&[f32]; 3] = [&[1.0, 1e8], &[2.0, 1.0], &[3.0, -1e8]];
        let mut out = [0.0; 2];
        ordered_sum(parts, &mut out);
        // (1e8 + 1) rounds to 1e8 in f32 before -1e8 is added: the order is the documented one.
        assert_eq!(out, [6.0, 0.0]);
    }

    #[test]
    fn a_single_process_exchanges_nothing() {
        let sync = SingleProcess;
        let mut values = [1.5, -2.0];
        sync.sum(&mut values).unwrap();
        assert_eq!(values, [1.5, -2.0]);
        assert_eq!(sync.all_gather(b"x").unwrap(), vec![b"x".to_vec()]);
        assert_eq!((sync.rank(), sync.size()), (0, 1));
    }
}
