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
