//! The fused AdamW against Burn's `AdamW`: same parameters and moments over several steps.

use burn::module::{Module, Param};
use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::{Device, Distribution, Tensor};

use super::FusedAdamW;

#[derive(Module, Debug)]
struct Weights {
    big: Param<Tensor<2>>,
    small: Param<Tensor<1>>,
}

fn weights(device: &Device) -> Weights {
    Weights {
        big: Param::from_tensor(Tensor::random(
            [300, 200],
            Distribution::Normal(0.0, 1.0),
            device,
        )),
        small: Param::from_tensor(Tensor::random([7], Distribution::Normal(0.0, 1.0), device)),
    }
}

fn loss(w: &Weights, target: &Tensor<2>) -> Tensor<1> {
    (w.big.val() - target.clone()).square().sum() + w.small.val().powi_scalar(4).sum()
}

#[test]
fn fused_adamw_follows_burns_adamw() {
    let device = Device::flex().autodiff();
    let start = weights(&device);
    let target = Tensor::<2>::random([300, 200], Distribution::Normal(0.0, 1.0), &device);
    for weight_decay in [0.0, 0.01] {
        let mut burn_optim = AdamWConfig::new()
            .with_weight_decay(weight_decay)
            .with_epsilon(1e-8)
            .init();
        let mut fused = FusedAdamW::new(1e-8, weight_decay).init();
        let (mut a, mut b) = (start.clone(), start.clone());
        for _ in 0..5 {
            let grads = GradientsParams::from_grads(loss(&a, &target).backward(), &a);
            a = burn_optim.step(1e-2, a, grads);
            let grads = GradientsParams::from_grads(loss(&b, &target).backward(), &b);
            b = fused.step(1e-2, b, grads);
        }
        let diff = |x: Tensor<2>, y: Tensor<2>| (x - y).abs().max().into_scalar::<f32>();
        assert!(diff(a.big.val(), b.big.val()) < 1e-6);
        let small = (a.small.val() - b.small.val())
            .abs()
            .max()
            .into_scalar::<f32>();
        assert!(small < 1e-6);
        assert!(
            diff(a.big.val(), start.big.val()) > 1e-3,
            "the parameters moved"
        );
    }
}
