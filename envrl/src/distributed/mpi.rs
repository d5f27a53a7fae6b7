//! [`GradientSync`] between the processes of an MPI job, with a watchdog on every exchange.
//!
//! Before each collective every rank tells every other one that it has arrived (the exchange's
//! sequence number, what it is and its length), and waits for their word within the watchdog's
//! time. A rank that does not arrive is therefore named, ranks that disagree on what they
//! exchange are refused before the collective, and the collectives themselves are waited on
//! with the same deadline: no rank blocks for ever in an exchange that another has left.

use std::time::{Duration, Instant};

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::request::{Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::distributed::{GradientSync, ordered_sum};
use crate::error::{Error, Result};

/// Values per gathered chunk of a sum (4 MiB of f32 per rank): bounds the receive buffer.
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

    /// Waits until every rank has arrived at this exchange, within the watchdog's time, and
    /// checks that they all exchange the same thing with the same length.
    fn arrive(&self, what: Exchange, len: u64) -> Result<()> {
        let seq = self.sequence.get() + 1;
        self.sequence.set(seq);
        let (rank, size) = (self.rank(), self.size());
        let word = [seq, what as u64, len];
        let mut heard = vec![[0u64; 3]; size];
        let missing: Vec<usize> = mpi::request::scope(|scope| {
            let mut sends = Vec::with_capacity(size);
            let mut receives = Vec::with_capacity(size);
            for (other, slot) in heard.iter_mut().enumerate() {
                if other == rank {
                    continue;
                }
                let process = self.world.process_at_rank(other as i32);
                sends.push(Some(process.immediate_send(scope, &word[..])));
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
                    return Vec::new();
                }
                if start.elapsed() > self.timeout {
                    let late = if waiting.is_empty() {
                        "every rank answered, but a send did not complete".to_string()
                    } else {
                        format!("rank(s) {waiting:?} did not arrive")
                    };
                    self.time_out(seq, what, &late);
                }
                pause(start);
            }
        });
        debug_assert!(missing.is_empty());
        for (other, theirs) in heard.iter().enumerate() {
            if other != rank && *theirs != word {
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

    /// Waits for a collective every rank has arrived at, within the watchdog's time.
    fn complete<'a, D: ?Sized, S: Scope<'a>>(
        &self,
        mut request: Request<'a, D, S>,
        what: Exchange,
    ) {
        let start = Instant::now();
        loop {
            match request.test() {
                Ok(_) => return,
                Err(pending) => request = pending,
            }
            if start.elapsed() > self.timeout {
                self.time_out(
                    self.sequence.get(),
                    what,
                    "a rank stopped inside the collective",
                );
            }
            pause(start);
        }
    }

    fn gather_lengths(&self, len: u64) -> Result<Vec<u64>> {
        // Lengths may differ between ranks here: the arrival word carries 0.
        self.arrive(Exchange::GatherLengths, 0)?;
        let mut lengths = vec![0u64; self.size()];
        mpi::request::scope(|scope| {
            let request = self
                .world
                .immediate_all_gather_into(scope, &len, &mut lengths[..]);
            self.complete(request, Exchange::GatherLengths);
        });
        Ok(lengths)
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

impl GradientSync for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        let lengths = self.gather_lengths(bytes.len() as u64)?;
        let total: u64 = lengths.iter().sum();
        let too_big = |n: u64| Count::try_from(n).is_err();
        if too_big(total) {
            return Err(Error::distributed(
                self.rank(),
                format!("an all-gather of {total} bytes is larger than MPI counts"),
            ));
        }
        let counts: Vec<Count> = lengths.iter().map(|&n| n as Count).collect();
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |acc, &n| {
                let at = *acc;
                *acc += n;
                Some(at)
            })
            .collect();
        self.arrive(Exchange::GatherBytes, total)?;
        let mut buf = vec![0u8; total as usize];
        {
            let mut partition = PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
            mpi::request::scope(|scope| {
                let request =
                    self.world
                        .immediate_all_gather_varcount_into(scope, bytes, &mut partition);
                self.complete(request, Exchange::GatherBytes);
            });
        }
        Ok(displs
            .iter()
            .zip(&counts)
            .map(|(&at, &n)| buf[at as usize..(at + n) as usize].to_vec())
            .collect())
    }

    fn sum(&self, values: &mut [f32]) -> Result<()> {
        let size = self.size();
        self.arrive(Exchange::Sum, values.len() as u64)?;
        let mut gathered = vec![0f32; SUM_CHUNK.min(values.len()) * size];
        for chunk in values.chunks_mut(SUM_CHUNK) {
            let n = chunk.len();
            let received = &mut gathered[..n * size];
            mpi::request::scope(|scope| {
                let request =
                    self.world
                        .immediate_all_gather_into(scope, &chunk[..], &mut received[..]);
                self.complete(request, Exchange::Sum);
            });
            ordered_sum(received.chunks(n), chunk);
        }
        Ok(())
    }
}
