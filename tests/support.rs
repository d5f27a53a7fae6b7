use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

struct Flatten(Vec<f32>);

impl ModuleVisitor for Flatten {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let data = param.val().into_data().convert::<f32>();
        self.0.extend(data.try_to_vec::<f32>().expect("f32 data"));
    }
}

/// All float parameters of a module, in visiting order.
pub fn flat_params<M: Module>(module: &M) -> Vec<f32> {
    let mut v = Flatten(Vec::new());
    module.visit(&mut v);
    v.0
}

/// ‖a − b‖ / ‖b‖ of our f32 values against reference f64 values.
pub fn relative_error(a: &[f32], b: &[f64]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    (num / den).sqrt()
}

/// Ranks that are threads of one process, exchanging through memory what MPI ranks exchange
/// through messages: the data-parallel code path without an MPI library. A rank that panics
/// leaves the others waiting, so only tests use it.
pub struct ThreadRank {
    rank: usize,
    size: usize,
    exchange: std::sync::Arc<Exchange>,
}

struct Exchange {
    slots: std::sync::Mutex<Vec<Vec<u8>>>,
    barrier: std::sync::Barrier,
}

impl ThreadRank {
    /// The `size` ranks of one group, rank 0 first.
    pub fn group(size: usize) -> Vec<ThreadRank> {
        let exchange = std::sync::Arc::new(Exchange {
            slots: std::sync::Mutex::new(vec![Vec::new(); size]),
            barrier: std::sync::Barrier::new(size),
        });
        (0..size)
            .map(|rank| ThreadRank {
                rank,
                size,
                exchange: exchange.clone(),
            })
            .collect()
    }
}

impl envrl::distributed::Collective for ThreadRank {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, bytes: &[u8]) -> envrl::Result<Vec<Vec<u8>>> {
        self.exchange.slots.lock().unwrap()[self.rank] = bytes.to_vec();
        self.exchange.barrier.wait();
        let all = self.exchange.slots.lock().unwrap().clone();
        // Nobody writes the next exchange before everyone has read this one.
        self.exchange.barrier.wait();
        Ok(all)
    }

    fn sum(&self, values: &mut [f32]) -> envrl::Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let parts: Vec<Vec<f32>> = self
            .all_gather(&bytes)?
            .iter()
            .map(|b| {
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect()
            })
            .collect();
        envrl::distributed::ordered_sum(parts.iter().map(Vec::as_slice), values);
        Ok(())
    }
}

/// The first observations of `n` generated ALFWorld games (seed 7) as chat prompts asking for
/// an admissible action.
pub fn alfworld_prompts(tokenizer: &dyn envrl::Tokenizer, n: usize) -> Vec<Vec<u32>> {
    use envrl::Environment;
    let games =
        std::sync::Arc::new(envrl_envs::alfworld::GameGenerator::new(7).generate_many(n as u64));
    let mut env = envrl_envs::alfworld::AlfWorld::new(games);
    (0..n as u64)
        .map(|task| {
            let obs = env.reset(task);
            tokenizer.encode_prompt(&format!(
                "{}\nYour admissible actions are: {:?}.\nChoose one admissible action.",
                obs.text, obs.admissible
            ))
        })
        .collect()
}
