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

/// The expert's response for `action`: a short rationale in `<think>` tags and the action in
/// `<action>` tags, the format the WebShop projection accepts as valid. The rationale does not
/// repeat the instruction: a search already copies it once, and a response must fit the
/// rollout's `max_new_tokens`.
pub fn expert_response(_observation: &Observation, action: &str) -> String {
    let why = if action.starts_with("search[") {
        "I search for the item I need."
    } else if action == "click[buy now]" {
        "The options match, so I buy it."
    } else if action == "click[next >]" {
        "The item is not on this page."
    } else if is_product_click(action) {
        "This product matches the instruction."
    } else {
        "I choose the option the instruction asks for."
    };
    format!("<think>{why}</think><action>{action}</action>")
}

/// A click on a product's ASIN: ten letters and digits (`b07…` in the real catalog, `g000…` in
/// the generated one).
fn is_product_click(action: &str) -> bool {
    action
        .strip_prefix("click[")
        .and_then(|a| a.strip_suffix(']'))
        .is_some_and(|asin| {
            asin.len() == 10
                && asin.chars().all(|c| c.is_ascii_alphanumeric())
                && asin.chars().any(|c| c.is_ascii_digit())
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_short_and_name_the_step() {
        let obs = Observation::default();
        let reply = |a: &str| expert_response(&obs, a);
        assert_eq!(
            reply("search[red shoes]"),
            "<think>I search for the item I need.</think><action>search[red shoes]</action>"
        );
        for product in ["click[b07xyz1234]", "click[g000000221]"] {
            assert!(reply(product).contains("This product matches"), "{product}");
        }
        for option in ["click[xx-large]", "click[navy]", "click[9]"] {
            assert!(reply(option).contains("I choose the option"), "{option}");
        }
        assert!(reply("click[buy now]").contains("I buy it"));
    }
}
