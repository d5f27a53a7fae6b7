//! A scripted WebShop expert (as in the golden episodes): search the instruction, page to the
//! goal product (up to five pages), open it, choose the goal options, buy. Its episodes serve as
//! demonstrations for an SFT warm start.

use std::sync::Arc;

use envrl::{Demonstration, Observation, Tokenizer, record_demonstration};

use crate::webshop::engine::{RESULTS_PER_PAGE, WebShopData};
use crate::webshop::env::{WebShop, split_webshop_task};
use crate::webshop::goals::Goal;
use crate::webshop::prompt::WebShopPrompt;

/// The expert's actions for `goal`: the goal product is looked up in the instruction's search
/// results; when it is not among them the expert buys the first result.
pub fn expert_plan(data: &WebShopData, goal: &Goal) -> Vec<String> {
    let query = goal.instruction_text.to_lowercase();
    let ranked = data.index.ranked(&query);
    let mut plan = vec![format!("search[{query}]")];
    let position = ranked
        .iter()
        .position(|&(doc, _)| data.catalog.products[doc].asin == goal.asin);
    let (doc, buy_options) = match position {
        Some(p) => (ranked[p].0, true),
        None => match ranked.first() {
            Some(&(doc, _)) => (doc, false),
            None => return plan,
        },
    };
    let page = position.unwrap_or(0) / RESULTS_PER_PAGE;
    plan.extend(std::iter::repeat_n("click[next >]".to_string(), page));
    plan.push(format!(
        "click[{}]",
        data.catalog.products[doc].asin.to_lowercase()
    ));
    if buy_options {
        for (_, value) in &goal.goal_options {
            plan.push(format!("click[{value}]"));
        }
    }
    plan.push("click[buy now]".into());
    plan
}

/// The expert's response for `action`: a one-sentence rationale in `<think>` tags and the action
/// in `<action>` tags, the format the WebShop projection accepts as valid.
pub fn expert_response(observation: &Observation, action: &str) -> String {
    format!(
        "<think>I am shopping for: {}. The next step is {action}.</think><action>{action}</action>",
        observation.task
    )
}

/// Records the expert on each task (see [`crate::webshop::webshop_task`]) in the verl-agent
/// prompt format, for behaviour cloning.
pub fn expert_demonstrations(
    data: &Arc<WebShopData>,
    tasks: impl IntoIterator<Item = u64>,
    prompt: &WebShopPrompt,
    tokenizer: &dyn Tokenizer,
    max_steps: usize,
) -> Vec<Demonstration> {
    let mut env = WebShop::new(data.clone());
    tasks
        .into_iter()
        .map(|task| {
            let (seed, goal) = split_webshop_task(task);
            let goals = data.goals(seed as i64);
            let plan = goals
                .goals
                .get(goal as usize)
                .map(|g| expert_plan(data, g))
                .unwrap_or_default();
            let mut expert = |_: &Observation, t: usize| plan.get(t).cloned();
            record_demonstration(
                &mut env,
                task,
                max_steps,
                prompt,
                tokenizer,
                &mut expert,
                &expert_response,
            )
        })
        .collect()
}
