//! `envrl bench webshop`: engine speed next to the Python reference's recorded figures
//! (WEBSHOP.md §9, `meta_verl_seed1000.json`), and scale on a generated catalog of the full
//! WebShop's size.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use envrl_envs::webshop::{
    Catalog, CatalogGenerator, ObservationMode, SearchIndex, WebShopData, WebShopEngine,
    expert_plan,
};

/// Reference steps/s per core with the scripted expert, including `get_available_actions`.
pub const REFERENCE_STEPS_PER_S: f64 = 23.4;
/// Reference mean `reset(session)`, seconds.
pub const REFERENCE_RESET_S: f64 = 0.007_039;
/// Reference median `search[...]` step, seconds.
pub const REFERENCE_SEARCH_STEP_S: f64 = 0.038_39;
/// Reference median Lucene call alone, seconds.
pub const REFERENCE_SEARCH_ENGINE_S: f64 = 0.010_909;
/// Reference median `click[...]` step, seconds.
pub const REFERENCE_CLICK_STEP_S: f64 = 0.032_437;
/// Reference environment construction, seconds (upper end of the recorded range).
pub const REFERENCE_CONSTRUCT_S: f64 = 0.434;

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Seconds of each search engine call, one per query.
fn search_seconds(index: &SearchIndex, queries: &[String]) -> Vec<f64> {
    queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(index.ranked(q));
            t.elapsed().as_secs_f64()
        })
        .collect()
}

/// Peak and current resident memory of this process, in MiB (Linux; `NaN` elsewhere).
fn memory_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Expert episodes over the goals for about `seconds`, counting steps and the
/// `available_actions` call after each, as the reference benchmark did.
fn expert_steps_per_s(engine: &mut WebShopEngine, seconds: f64) -> (f64, Vec<f64>, Vec<f64>) {
    let data = engine.data().clone();
    let n_goals = engine.goals().goals.len();
    let (mut searches, mut clicks) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let mut steps = 0u64;
    let mut goal = 0;
    while start.elapsed().as_secs_f64() < seconds {
        engine.reset(Some(goal % n_goals));
        let plan = expert_plan(&data, &engine.goals().goals[goal % n_goals]);
        goal += 1;
        for action in &plan {
            let t = Instant::now();
            let result = engine.step(action);
            std::hint::black_box(engine.available_actions());
            let dt = t.elapsed().as_secs_f64();
            if action.starts_with("search[") {
                searches.push(dt);
            } else {
                clicks.push(dt);
            }
            steps += 1;
            if result.done {
                break;
            }
        }
    }
    (
        steps as f64 / start.elapsed().as_secs_f64(),
        searches,
        clicks,
    )
}

/// Speed on the catalog in `data` next to the reference, then scale on a generated catalog
/// of `scale_products` products (0 skips it).
///
/// # Errors
/// When the catalog cannot be loaded or the scale files cannot be written.
pub fn bench_webshop(data: &Path, seconds: f64, scale_products: usize) -> Result<()> {
    let start = Instant::now();
    let shared = WebShopData::open(data)?;
    let mut engine = WebShopEngine::new(shared.clone(), 1000, ObservationMode::Text);
    let construct_s = start.elapsed().as_secs_f64();

    let rounds = 20_000;
    let n_goals = engine.goals().goals.len();
    let start = Instant::now();
    for i in 0..rounds {
        std::hint::black_box(engine.reset(Some(i % n_goals)));
    }
    let reset_s = start.elapsed().as_secs_f64() / rounds as f64;

    let queries: Vec<String> = engine.goals().goals[..500]
        .iter()
        .map(|g| g.instruction_text.to_lowercase())
        .collect();
    let engine_search = search_seconds(&shared.index, &queries);
    let (steps_per_s, searches, clicks) = expert_steps_per_s(&mut engine, seconds);

    println!("WebShop engine, 1000-product catalog, scripted expert (seed 1000), 1 thread");
    println!("| measure | envrl | Python reference | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| steps/s incl. available actions | {steps_per_s:.0} | {REFERENCE_STEPS_PER_S} | {:.0}× |",
        steps_per_s / REFERENCE_STEPS_PER_S
    );
    let row = |name: &str, ours: f64, reference: f64| {
        println!(
            "| {name} | {:.1} µs | {:.1} ms | {:.0}× |",
            ours * 1e6,
            reference * 1e3,
            reference / ours
        );
    };
    row("reset(session)", reset_s, REFERENCE_RESET_S);
    row(
        "search step (median)",
        median(searches),
        REFERENCE_SEARCH_STEP_S,
    );
    row(
        "search engine alone (median)",
        median(engine_search),
        REFERENCE_SEARCH_ENGINE_S,
    );
    row(
        "click step (median)",
        median(clicks),
        REFERENCE_CLICK_STEP_S,
    );
    println!(
        "| construction (load, index, goals) | {:.1} ms | {:.0} ms | {:.1}× |",
        construct_s * 1e3,
        REFERENCE_CONSTRUCT_S * 1e3,
        REFERENCE_CONSTRUCT_S / construct_s
    );
    if scale_products > 0 {
        bench_scale(scale_products)?;
    }
    Ok(())
}

/// Writes a generated catalog of `n` products in the official format, streams it back, indexes
/// it and times searches.
fn bench_scale(n: usize) -> Result<()> {
    let dir = tempfile::tempdir().context("creating a temp dir")?;
    let generator = CatalogGenerator::new(1);
    let start = Instant::now();
    generator.write_dir(dir.path(), n)?;
    let write_s = start.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(dir.path().join(envrl_envs::webshop::PRODUCTS_FILE))
        .map(|m| m.len())
        .unwrap_or(0);
    let (base_peak, _) = memory_mib();
    let start = Instant::now();
    let catalog = Catalog::open(dir.path())?;
    let load_s = start.elapsed().as_secs_f64();
    let queries: Vec<String> = catalog
        .products
        .iter()
        .filter_map(|p| p.instruction_text.as_ref().map(|t| t.to_lowercase()))
        .take(200)
        .collect();
    let start = Instant::now();
    let data = WebShopData::from_catalog(catalog);
    let index_s = start.elapsed().as_secs_f64();
    let (peak, rss) = memory_mib();
    let latencies = search_seconds(&data.index, &queries);
    println!();
    println!(
        "Scale: generated catalog of {n} products ({:.0} MiB of JSON)",
        bytes as f64 / 1048576.0
    );
    println!("| measure | value |");
    println!("|---|---|");
    println!("| write the files | {write_s:.1} s |");
    println!("| stream-load products, instructions, nouns | {load_s:.1} s |");
    println!(
        "| build the BM25 index ({} threads) | {index_s:.1} s |",
        rayon::current_num_threads()
    );
    println!(
        "| resident memory after indexing | {rss:.0} MiB (peak {peak:.0} MiB, {base_peak:.0} MiB before loading) |"
    );
    println!(
        "| search latency, median of {} | {:.2} ms |",
        latencies.len(),
        median(latencies.clone()) * 1e3
    );
    println!(
        "| search latency, max | {:.2} ms |",
        latencies.iter().copied().fold(0.0, f64::max) * 1e3
    );
    Ok(())
}
