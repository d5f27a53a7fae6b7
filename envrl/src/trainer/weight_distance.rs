//! How far the policy's trainable weights have moved from where the run started: the L2 distance
//! `‖θ − θ₀‖` over the parameters that take gradients (a LoRA run's adapters, or every weight),
//! and that distance relative to `‖θ₀‖`.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// The trainable weights of a module at one moment, in its visiting order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainableWeights(Vec<Vec<f32>>);

/// `‖θ − θ₀‖` and `‖θ − θ₀‖ / ‖θ₀‖` (`None` when `θ₀` is all zeros).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightDistance {
    /// The L2 distance.
    pub l2: f64,
    /// The distance relative to the starting weights' norm.
    pub relative: Option<f64>,
}

struct Collect(Vec<Vec<f32>>);

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val();
        if value.is_require_grad() {
            let data = value.into_data().convert::<f32>();
            self.0.push(data.try_to_vec::<f32>().unwrap_or_default());
        }
    }
}

impl TrainableWeights {
    /// The weights of `module` that take gradients (none off an autodiff device).
    pub fn of<M: Module>(module: &M) -> Self {
        let mut collect = Collect(Vec::new());
        module.visit(&mut collect);
        Self(collect.0)
    }

    /// How far these weights are from `start`, summed in f64 in a fixed order; `None` when the
    /// two do not hold the same parameters (another architecture or LoRA rank).
    pub fn distance_from(&self, start: &Self) -> Option<WeightDistance> {
        let same_shapes = self.0.len() == start.0.len()
            && self.0.iter().zip(&start.0).all(|(a, b)| a.len() == b.len());
        if !same_shapes || self.0.is_empty() {
            return None;
        }
        let (mut moved, mut norm) = (0.0f64, 0.0f64);
        for (now, then) in self.0.iter().zip(&start.0) {
            for (x, x0) in now.iter().zip(then) {
                moved += (*x as f64 - *x0 as f64).powi(2);
                norm += (*x0 as f64).powi(2);
            }
        }
        let l2 = moved.sqrt();
        Some(WeightDistance {
            l2,
            relative: (norm > 0.0).then(|| l2 / norm.sqrt()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distance_is_the_l2_norm_of_the_change_and_relative_to_the_start() {
        let start = TrainableWeights(vec![vec![3.0, 0.0], vec![4.0]]);
        let now = TrainableWeights(vec![vec![3.0, 1.0], vec![4.0]]);
        let d = now.distance_from(&start).unwrap();
        assert_eq!(d.l2, 1.0);
        assert_eq!(d.relative, Some(0.2));
        assert_eq!(start.distance_from(&start).unwrap().l2, 0.0);
        // A zero start (LoRA's B factors alone) has no relative distance.
        let zeros = TrainableWeights(vec![vec![0.0, 0.0]]);
        let moved = TrainableWeights(vec![vec![0.0, 2.0]]);
        let d = moved.distance_from(&zeros).unwrap();
        assert_eq!((d.l2, d.relative), (2.0, None));
        // Other parameters: no distance.
        assert_eq!(now.distance_from(&zeros), None);
        assert_eq!(
            TrainableWeights(Vec::new()).distance_from(&TrainableWeights(Vec::new())),
            None
        );
    }

    #[test]
    fn only_the_weights_that_take_gradients_count() {
        use burn::nn::LinearConfig;
        let device = burn::tensor::Device::flex().autodiff();
        let trained = LinearConfig::new(3, 2).init(&device);
        assert_eq!(TrainableWeights::of(&trained).0.len(), 2);
        let frozen = trained.no_grad();
        assert!(TrainableWeights::of(&frozen).0.is_empty());
    }
}
