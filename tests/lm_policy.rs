use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Device;
use envrl::{Policy, SamplingParams, ScoreRow, row_streams, token_mean_cross_entropy};
use envrl_algos::LmConfig;

fn prompts() -> Vec<Vec<u32>> {
    vec![
        vec![5, 6, 7, 8, 9, 10, 11],
        vec![12, 13],
        vec![14, 15, 16, 17],
    ]
}

#[test]
fn cached_generation_logprobs_equal_full_sequence_scores() {
    // Left-padded, KV-cached sampling must see exactly what right-padded scoring sees.
    let model = LmConfig::tiny(40).init(&Device::flex(), 3).unwrap();
    let params = SamplingParams {
        temperature: 1.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 6,
    };
    let generations = model.generate(&prompts(), &[1], &params, &mut row_streams(9, 0..3));
    let rows: Vec<ScoreRow> = prompts()
        .into_iter()
        .zip(&generations)
        .map(|(context, g)| ScoreRow {
            context,
            target: g.tokens.clone(),
        })
        .collect();
    let scores = model.score(&rows, false);
    let logp: Vec<f32> = scores.logprobs.into_data().try_to_vec().unwrap();
    let width = logp.len() / rows.len();
    for (i, g) in generations.iter().enumerate() {
        assert!(!g.tokens.is_empty());
        for (k, lp) in g.logprobs.iter().enumerate() {
            let scored = logp[i * width + k];
            assert!(
                (lp - scored).abs() < 1e-4,
                "row {i} token {k}: {lp} vs {scored}"
            );
        }
    }
}

#[test]
fn a_prompt_generates_the_same_alone_and_in_a_padded_batch() {
    let model = LmConfig::tiny(40).init(&Device::flex(), 4).unwrap();
    let greedy = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 5,
    };
    let batch = model.generate(&prompts(), &[], &greedy, &mut row_streams(0, 0..3));
    let alone = model.generate(&prompts()[1..2], &[], &greedy, &mut row_streams(0, [1]));
    assert_eq!(batch[1].tokens, alone[0].tokens);
    for (a, b) in batch[1].logprobs.iter().zip(&alone[0].logprobs) {
        assert!((a - b).abs() < 1e-4);
    }
}

#[test]
fn generation_stops_at_a_stop_token() {
    let model = LmConfig::tiny(40).init(&Device::flex(), 5).unwrap();
    let greedy = SamplingParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_new_tokens: 8,
    };
    let free = model.generate(&prompts(), &[], &greedy, &mut row_streams(0, 0..3));
    // Declare the first greedy token of row 0 a stop token: row 0 must end right there.
    let stop = free[0].tokens[0];
    let stopped = model.generate(&prompts(), &[stop], &greedy, &mut row_streams(0, 0..3));
    assert_eq!(stopped[0].tokens, vec![stop]);
    assert!(stopped[0].stopped);
}

#[test]
fn scoring_on_an_autodiff_device_gives_gradients_to_every_parameter() {
    let model = LmConfig::tiny(30)
        .with_tie_word_embeddings(false)
        .init(&Device::flex().autodiff(), 1)
        .unwrap();
    let rows = vec![ScoreRow {
        context: vec![3, 4, 5],
        target: vec![6, 7],
    }];
    let loss = token_mean_cross_entropy(&model.score(&rows, true));
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    assert_eq!(grads.len(), model.num_params_tensors());
}

trait CountTensors {
    fn num_params_tensors(&self) -> usize;
}

impl<M: Module> CountTensors for M {
    fn num_params_tensors(&self) -> usize {
        struct Count(usize);
        impl burn::module::ModuleVisitor for Count {
            fn visit_float<const D: usize>(
                &mut self,
                _: &burn::module::Param<burn::tensor::Tensor<D>>,
            ) {
                self.0 += 1;
            }
        }
        let mut c = Count(0);
        self.visit(&mut c);
        c.0
    }
}

#[test]
fn inconsistent_model_sizes_are_errors_naming_the_field() {
    let err = LmConfig::new(10, 64, 128, 2, 4, 3)
        .init(&Device::flex(), 0)
        .unwrap_err();
    assert!(err.to_string().contains("`num_key_value_heads`"), "{err}");
}

#[test]
fn gradient_checkpointing_gives_the_same_gradients() {
    // Recomputing activations in the backward pass must not change a single gradient.
    let rows: Vec<ScoreRow> = prompts()
        .into_iter()
        .map(|context| ScoreRow {
            target: context.iter().map(|t| t + 1).collect(),
            context,
        })
        .collect();
    let grads = |device: Device| {
        let model = LmConfig::tiny(40).init(&device, 5).unwrap();
        let scores = model.score(&rows, false);
        let loss = token_mean_cross_entropy(&scores);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let q = &model.model.layers[0].self_attn.q_proj.weight;
        let embed = &model.model.embed_tokens;
        [
            grads.get::<2>(q.id).unwrap(),
            grads.get::<2>(embed.id).unwrap(),
        ]
        .map(|g| g.into_data().try_to_vec::<f32>().unwrap())
    };
    let plain = grads(Device::flex().autodiff());
    let checkpointed = grads(Device::flex().autodiff().gradient_checkpointing());
    assert!(plain[0].iter().any(|g| *g != 0.0));
    assert_eq!(plain, checkpointed);
}
