//! Every table of `docs/results.md` is rebuilt from the small run files committed beside it:
//! each `docs/results/runs/<experiment>/comparison.md` must equal what `envrl compare` makes
//! of that experiment's run folders today.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};

fn experiments() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/results/runs");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("comparison.md").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn committed_comparisons_are_rebuilt_exactly_from_the_committed_runs() {
    let experiments = experiments();
    for experiment in &experiments {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(experiment)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("config.toml").exists())
            .collect();
        runs.sort();
        let out = tempfile::tempdir().unwrap();
        // comparison.md, and any further comparison-*.md (the same runs against another
        // baseline), each rebuilt against the baseline it names.
        let mut tables: Vec<PathBuf> = std::fs::read_dir(experiment)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("comparison") && name.ends_with(".md")
            })
            .collect();
        tables.sort();
        for table in tables {
            let committed = std::fs::read_to_string(&table).unwrap();
            let baseline = committed
                .split_once("Baseline: `")
                .and_then(|(_, rest)| rest.split_once("`."))
                .map(|(label, _)| label.to_string());
            let file = table.file_name().unwrap().to_string_lossy().into_owned();
            let compare = |runs: &[PathBuf]| {
                envrl_examples::run::compare(runs, out.path(), None, baseline.as_deref(), &file)
                    .unwrap()
            };
            let rebuilt = compare(&runs);
            // The order the runs are given in changes nothing.
            runs.reverse();
            assert_eq!(
                compare(&runs),
                rebuilt,
                "{}: the table depends on the run order",
                table.display()
            );
            assert_eq!(
                rebuilt,
                committed,
                "{}: the committed table differs from what its runs give (rebuild it with \
                 `envrl compare {}/*/ --output {} --file-name {file}`{})",
                table.display(),
                experiment.display(),
                experiment.display(),
                baseline
                    .map(|b| format!(" --baseline '{b}'"))
                    .unwrap_or_default()
            );
        }
    }
    println!("{} committed comparisons rebuilt", experiments.len());
}

/// `docs/results.md` quotes its tables between `<!-- table: FILE -->` and `<!-- end table -->`;
/// each quote must appear word for word in the comparison it names, so that rebuilding a
/// comparison without updating the page fails here.
#[test]
fn the_tables_quoted_in_results_md_match_their_comparisons() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let page = std::fs::read_to_string(docs.join("results.md")).unwrap();
    let mut quoted = 0;
    for block in page.split("<!-- table: ").skip(1) {
        let (source, rest) = block
            .split_once(" -->\n")
            .expect("a table marker ends with -->");
        let (table, _) = rest
            .split_once("<!-- end table -->")
            .unwrap_or_else(|| panic!("the quote of {source} has no <!-- end table -->"));
        let comparison = std::fs::read_to_string(docs.join("..").join(source))
            .unwrap_or_else(|e| panic!("results.md quotes {source}, which cannot be read: {e}"));
        assert!(
            comparison.contains(table),
            "docs/results.md's quote of {source} differs from the file: copy its table again"
        );
        quoted += 1;
    }
    assert!(quoted > 0, "docs/results.md quotes no table");
    println!("{quoted} quoted tables match");
}

/// `docs/results.md` quotes the committed controls' real-target shares after
/// `<!-- share: FOLDER -->`: each row must be what the folder's runs' `metrics.jsonl` give
/// (`aux/real_target_share/<name>` weighted by `aux/examples/<name>` over the iterations), as
/// `scripts/real-target-share.py` prints it.
#[test]
fn the_quoted_real_target_shares_are_rebuilt_from_the_committed_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("docs/results.md")).unwrap();
    let Some((_, block)) = page.split_once("<!-- share: ") else {
        return;
    };
    let (folder, rest) = block.split_once(" -->\n").unwrap();
    let quoted: Vec<&str> = rest
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let mut runs: Vec<PathBuf> = std::fs::read_dir(root.join(folder))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let mut rebuilt = Vec::new();
    for run in &runs {
        let mut sums: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
        for line in std::fs::read_to_string(run.join("metrics.jsonl"))
            .unwrap()
            .lines()
        {
            let metrics: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).unwrap();
            for (key, share) in &metrics {
                let Some(name) = key.strip_prefix("aux/real_target_share/") else {
                    continue;
                };
                if !name.contains("_shuffled") {
                    continue;
                }
                let examples = metrics[&format!("aux/examples/{name}")].as_f64().unwrap();
                let entry = sums.entry(name.to_string()).or_default();
                entry.0 += share.as_f64().unwrap() * examples;
                entry.1 += examples;
            }
        }
        let name = run.file_name().unwrap().to_string_lossy();
        for (objective, (real, total)) in sums {
            rebuilt.push(format!(
                "| {name} | {objective} | {:.1} |",
                100.0 * real / total
            ));
        }
    }
    assert_eq!(
        quoted, rebuilt,
        "rebuild with scripts/real-target-share.py {folder}/*/"
    );
}
