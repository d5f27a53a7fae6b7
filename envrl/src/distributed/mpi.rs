//! [`Collective`] between the processes of an MPI job, with a watchdog on every exchange.
//!
//! Every exchange is point to point: each rank sends its buffer to every other one and polls
//! its receives, so after the watchdog's time it names the ranks whose data did not arrive.
//! Before each exchange every rank tells every other one that it has arrived (the exchange's
//! sequence number, what it is and its length), so ranks that disagree on what they exchange
//! are refused before any data moves, and no rank blocks for ever in an exchange that another
//! has left.

use std::time::{Duration, Instant};

use mpi::Count;
use mpi::datatype::Equivalence;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::distributed::{Collective, ordered_sum};
use crate::error::{Error, Result};

/// Values per exchanged chunk of a sum (4 MiB of f32 per rank): bounds the receive buffers.
const SUM_CHUNK: usize = 1 << 20;

/// The environment variable that sets the watchdog's seconds ([`Mpi::DEFAULT_TIMEOUT`] unset).
pub const TIMEOUT_VAR: &str = "ENVRL_MPI_TIMEOUT_S";

/// What one exchange is, as the arrival word carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
enum Exchange {
    GatherLengths = 1,
    GatherBytes = 2,
    Sum = 3,
}

impl Exchange {
    fn name(self) -> &'static str {
        match self {
            Exchange::GatherLengths | Exchange::GatherBytes => "all-gather",
            Exchange::Sum => "sum",
        }
    }
}

/// The ranks of an MPI job (`mpirun -np N …`, `srun …`), exchanging over its world communicator.
pub struct Mpi {
    world: SimpleCommunicator,
    timeout: Duration,
    /// Exchanges started so far (the arrival words carry it, so a rank one exchange behind
    /// another is caught).
    sequence: std::cell::Cell<u64>,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

impl Mpi {
    /// The watchdog's time when [`TIMEOUT_VAR`] is not set.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

    /// Initialises MPI and joins the job's world, with the watchdog's time from
    /// [`TIMEOUT_VAR`] (seconds) or [`Mpi::DEFAULT_TIMEOUT`].
    ///
    /// # Errors
    /// [`Error::Distributed`] when MPI was initialised already or the variable is not a
    /// positive number.
    pub fn init() -> Result<Self> {
        let timeout = match std::env::var(TIMEOUT_VAR) {
            Ok(text) => match text.trim().parse::<f64>() {
                Ok(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
                _ => {
                    return Err(Error::distributed(
                        0,
                        format!("{TIMEOUT_VAR}={text:?} is not a positive number of seconds"),
                    ));
                }
            },
            Err(_) => Self::DEFAULT_TIMEOUT,
        };
        let universe = mpi::initialize()
            .ok_or_else(|| Error::distributed(0, "MPI was initialised already"))?;
        Ok(Self {
            world: universe.world(),
            timeout,
            sequence: std::cell::Cell::new(0),
            _universe: universe,
        })
    }

    /// Ends the whole job with `code`, after printing `message` (this rank's error) on
    /// standard error: the other ranks stop at once instead of waiting in an exchange.
    pub fn abort(&self, message: &str, code: i32) -> ! {
        eprintln!("{message}");
        self.world.abort(code)
    }

    /// Sends `mine` to every other rank and receives each rank's buffer of `lengths[rank]`
    /// values, polling within the watchdog's time; then every rank's buffer in rank order
    /// (this rank's is `mine`). After the watchdog's time it ends the job naming the ranks whose
    /// data did not arrive.
    fn swap<T: Equivalence + Clone + Default>(
        &self,
        what: Exchange,
        mine: &[T],
        lengths: &[usize],
    ) -> Vec<Vec<T>> {
        let rank = self.rank();
        let mut theirs: Vec<Vec<T>> = lengths
            .iter()
            .enumerate()
            .map(|(other, &n)| {
                if other == rank {
                    Vec::new()
                } else {
                    vec![T::default(); n]
                }
            })
            .collect();
        mpi::request::scope(|scope| {
            let mut sends = Vec::with_capacity(lengths.len());
            let mut receives = Vec::with_capacity(lengths.len());
            for (other, slot) in theirs.iter_mut().enumerate() {
                if other == rank {
                    continue;
                }
                let process = self.world.process_at_rank(other as i32);
                sends.push(Some(process.immediate_send(scope, mine)));
                receives.push((
                    other,
                    Some(process.immediate_receive_into(scope, &mut slot[..])),
                ));
            }
            let start = Instant::now();
            loop {
                for request in sends.iter_mut() {
                    if let Some(r) = request.take() {
                        *request = r.test().err();
                    }
                }
                for (_, request) in receives.iter_mut() {
                    if let Some(r) = request.take() {
                        *request = r.test().err();
                    }
                }
                let waiting: Vec<usize> = receives
                    .iter()
                    .filter(|(_, r)| r.is_some())
                    .map(|(other, _)| *other)
                    .collect();
                if waiting.is_empty() && sends.iter().all(Option::is_none) {
                    return;
                }
                if start.elapsed() > self.timeout {
                    let late = if waiting.is_empty() {
                        "every rank answered, but a send did not complete".to_string()
                    } else {
                        format!("rank(s) {waiting:?} did not arrive")
                    };
                    self.time_out(self.sequence.get(), what, &late);
                }
                pause(start);
            }
        });
        theirs[rank] = mine.to_vec();
        theirs
    }

    /// Waits until every rank has arrived at this exchange, within the watchdog's time, and
    /// checks that they all exchange the same thing with the same length.
    fn arrive(&self, what: Exchange, len: u64) -> Result<()> {
        let seq = self.sequence.get() + 1;
        self.sequence.set(seq);
        let (rank, size) = (self.rank(), self.size());
        let word = [seq, what as u64, len];
        let heard = self.swap(what, &word, &vec![word.len(); size]);
        for (other, theirs) in heard.iter().enumerate() {
            if other != rank && theirs[..] != word[..] {
                return Err(Error::distributed(
                    rank,
                    format!(
                        "rank {other} is at exchange {} ({} of length {}) while this rank is at \
                         exchange {seq} ({} of length {len}): the ranks do not run the same program",
                        theirs[0],
                        exchange_name(theirs[1]),
                        theirs[2],
                        what.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Ends the job after the watchdog's time at exchange `seq`: MPI cannot withdraw a pending
    /// request, and the other ranks must not wait for this one either.
    fn time_out(&self, seq: u64, what: Exchange, late: &str) -> ! {
        self.abort(
            &format!(
                "envrl: rank {}: watchdog: waited {:.0} s at exchange {seq} ({}) of {} ranks: \
                 {late}; ending the job ({TIMEOUT_VAR} sets the time)",
                self.rank(),
                self.timeout.as_secs_f64(),
                what.name(),
                self.size()
            ),
            3,
        )
    }
}

/// Spins for the first 2 ms of a wait (exchanges between busy ranks are quick), then polls
/// every 200 µs.
fn pause(start: Instant) {
    if start.elapsed() > Duration::from_millis(2) {
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn exchange_name(code: u64) -> &'static str {
    match code {
        1 | 2 => "all-gather",
        3 => "sum",
        _ => "an unknown exchange",
    }
}

impl Collective for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        // Lengths may differ between ranks here: the arrival word carries 0.
        self.arrive(Exchange::GatherLengths, 0)?;
        let size = self.size();
        let lengths: Vec<u64> = self
            .swap(
                Exchange::GatherLengths,
                &[bytes.len() as u64],
                &vec![1; size],
            )
            .iter()
            .map(|l| l[0])
            .collect();
        if let Some(n) = lengths.iter().find(|&&n| Count::try_from(n).is_err()) {
            return Err(Error::distributed(
                self.rank(),
                format!("a rank sends {n} bytes, more than an MPI message holds"),
            ));
        }
        let total: u64 = lengths.iter().sum();
        self.arrive(Exchange::GatherBytes, total)?;
        let lengths: Vec<usize> = lengths.iter().map(|&n| n as usize).collect();
        Ok(self.swap(Exchange::GatherBytes, bytes, &lengths))
    }

    fn sum(&self, values: &mut [f32]) -> Result<()> {
        let size = self.size();
        self.arrive(Exchange::Sum, values.len() as u64)?;
        for chunk in values.chunks_mut(SUM_CHUNK) {
            let parts = self.swap(Exchange::Sum, chunk, &vec![chunk.len(); size]);
            ordered_sum(parts.iter().map(Vec::as_slice), chunk);
        }
        Ok(())
    }
}
