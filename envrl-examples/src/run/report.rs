//! What a run leaves behind besides its checkpoints: plots of the learning curves (SVG and PNG)
//! and the evaluation table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result};
use envrl::{EvalReport, IterationMetrics};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One row of the evaluation table.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EvalRow {
    /// Task type or category.
    pub label: String,
    /// Episodes played.
    pub episodes: usize,
    /// Success rate.
    pub success: f64,
    /// Mean raw score (WebShop), if known.
    pub score: Option<f64>,
}

/// The outcome of one evaluation episode (`eval-outcomes.json`), for paired comparisons over
/// episodes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EpisodeOutcome {
    /// The task played.
    pub task: u64,
    /// Whether it was won.
    pub won: bool,
    /// The episode's return.
    #[serde(rename = "return")]
    pub episode_return: f64,
    /// The raw score (WebShop), if known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub score: Option<f64>,
}

/// Every episode's outcome, in the evaluation's order.
pub fn episode_outcomes(
    report: &EvalReport,
    scores: Option<&BTreeMap<u64, f64>>,
) -> Vec<EpisodeOutcome> {
    report
        .batch
        .trajectories
        .iter()
        .map(|t| EpisodeOutcome {
            task: t.task_id,
            won: t.won(),
            episode_return: t.episode_return() as f64,
            score: scores.and_then(|s| s.get(&t.task_id).copied()),
        })
        .collect()
}

/// Groups an evaluation by task label; `scores` are WebShop raw scores by task.
pub fn eval_table(
    report: &EvalReport,
    label: &dyn Fn(u64) -> String,
    scores: Option<&BTreeMap<u64, f64>>,
) -> Vec<EvalRow> {
    let mut groups: BTreeMap<String, (usize, usize, f64)> = BTreeMap::new();
    for t in &report.batch.trajectories {
        let entry = groups.entry(label(t.task_id)).or_default();
        entry.0 += 1;
        entry.1 += usize::from(t.won());
        entry.2 += scores
            .and_then(|s| s.get(&t.task_id))
            .copied()
            .unwrap_or(0.0);
    }
    let mut rows: Vec<EvalRow> = groups
        .into_iter()
        .map(|(label, (n, wins, score))| EvalRow {
            label,
            episodes: n,
            success: wins as f64 / n.max(1) as f64,
            score: scores.map(|_| score / n.max(1) as f64),
        })
        .collect();
    if rows.len() == 1 {
        rows[0].label = "all".into();
        return rows;
    }
    let n: usize = rows.iter().map(|r| r.episodes).sum();
    let wins: f64 = rows.iter().map(|r| r.success * r.episodes as f64).sum();
    let score: f64 = rows
        .iter()
        .map(|r| r.score.unwrap_or(0.0) * r.episodes as f64)
        .sum();
    rows.push(EvalRow {
        label: "all".into(),
        episodes: n,
        success: wins / n.max(1) as f64,
        score: scores.map(|_| score / n.max(1) as f64),
    });
    rows
}

/// The table as Markdown.
pub fn eval_markdown(rows: &[EvalRow]) -> String {
    let with_score = rows.iter().any(|r| r.score.is_some());
    let mut out = String::from(if with_score {
        "| task | episodes | success (%) | score (×100) |\n|---|---|---|---|\n"
    } else {
        "| task | episodes | success (%) |\n|---|---|---|\n"
    });
    for r in rows {
        match r.score {
            Some(s) => out.push_str(&format!(
                "| {} | {} | {:.1} | {:.1} |\n",
                r.label,
                r.episodes,
                100.0 * r.success,
                100.0 * s
            )),
            None => out.push_str(&format!(
                "| {} | {} | {:.1} |\n",
                r.label,
                r.episodes,
                100.0 * r.success
            )),
        }
    }
    out
}

/// The first `max` episodes of an evaluation as text: per step the observation, the model's
/// reply, the action it was read as (marked when the reply's format was invalid) and the
/// reward. What a user reads to see what the agent actually does.
pub fn episode_transcripts(report: &EvalReport, max: usize) -> String {
    let mut out = String::new();
    for trajectory in report.batch.trajectories.iter().take(max) {
        out.push_str(&format!(
            "=== task {} ({}): {}\n",
            trajectory.task_id,
            if trajectory.won() { "won" } else { "not won" },
            trajectory.task.trim()
        ));
        for step in &trajectory.steps {
            out.push_str(&format!(
                "[{}] observation: {}\n    reply: {}\n    action: {}{} (reward {})\n",
                step.t,
                step.observation.trim().replace('\n', " "),
                step.response.trim().replace('\n', " "),
                step.action,
                if step.valid { "" } else { " [invalid format]" },
                step.reward
            ));
        }
        out.push('\n');
    }
    out
}

/// Registers a system sans-serif font for PNG text, once; `false` if none was found.
fn png_font() -> bool {
    static FONT: OnceLock<bool> = OnceLock::new();
    *FONT.get_or_init(|| {
        let candidates = [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/TTF/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
            "/System/Library/Fonts/Supplemental/Arial.ttf",
            "C:\\Windows\\Fonts\\arial.ttf",
        ];
        candidates.iter().any(|path| {
            std::fs::read(path).is_ok_and(|bytes| {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            })
        })
    })
}

/// A named curve: `(environment steps, value)` points.
pub(crate) type Curve = (String, Vec<(f64, f64)>);

/// The band around a curve: `(x, low, high)` points, drawn shaded in the curve's colour.
pub(crate) type Band = Vec<(f64, f64, f64)>;

/// One curve of a metric against environment steps.
fn series(history: &[IterationMetrics], name: &str) -> Vec<(f64, f64)> {
    history
        .iter()
        .filter_map(|m| m.get(name).map(|v| (m.env_steps as f64, v)))
        .filter(|(_, v)| v.is_finite())
        .collect()
}

/// The plot's size in pixels; the legend goes below it.
const PLOT_SIZE: (u32, u32) = (720, 420);

/// The height of one legend row, in pixels.
const LEGEND_ROW: u32 = 20;

/// The chart's margin and the width of its y-axis labels, in pixels: the plot area, and with it
/// the legend's swatches, start at their sum.
const MARGIN: i32 = 12;
const Y_LABEL_AREA: i32 = 56;

/// The colours of the curves, in order.
const COLORS: [RGBColor; 6] = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];

/// The picture's height: the plot, then one legend row per curve below it, so that no label
/// hides a curve however long the arms' names.
fn picture_height(curves: usize) -> u32 {
    PLOT_SIZE.1 + LEGEND_ROW * curves as u32 + if curves > 0 { LEGEND_ROW / 2 } else { 0 }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    curves: &[Curve],
    bands: &[Band],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (plot, legend) = root.split_vertically(PLOT_SIZE.1);
    let band_points = bands
        .iter()
        .flatten()
        .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
    let points = curves
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .chain(band_points);
    let (mut x1, mut y0, mut y1) = (1.0f64, f64::INFINITY, f64::NEG_INFINITY);
    for (x, y) in points {
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !y0.is_finite() {
        (y0, y1) = (0.0, 1.0);
    }
    if y1 - y0 < 1e-9 {
        y1 = y0 + 1.0;
    }
    let pad = 0.05 * (y1 - y0);
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 20))
        .margin(MARGIN)
        .x_label_area_size(36)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0.0..x1, (y0 - pad)..(y1 + pad))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("environment steps")
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (i, band) in bands.iter().enumerate().filter(|(_, b)| b.len() > 1) {
        let color = COLORS[i % COLORS.len()];
        let outline: Vec<(f64, f64)> = band
            .iter()
            .map(|&(x, _, hi)| (x, hi))
            .chain(band.iter().rev().map(|&(x, lo, _)| (x, lo)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                color.mix(0.15).filled(),
            )))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let label =
        TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, curve)) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                curve.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        chart
            .draw_series(curve.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        // The legend, one row per curve under the plot: a swatch, then the name, both centred
        // on the row and aligned with the plot area's left edge.
        let (x, y) = (
            MARGIN + Y_LABEL_AREA,
            (i as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32,
        );
        legend
            .draw(&PathElement::new(
                vec![(x, y), (x + 24, y)],
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        legend
            .draw(&Text::new(name.clone(), (x + 32, y), label.clone()))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// Writes `success`, `return` and `losses` plots (SVG and PNG) into `dir`; returns the files
/// written (none, with a notice, when no system font is found to measure text).
///
/// # Errors
/// When a file cannot be written.
pub fn plot_history(history: &[IterationMetrics], dir: &Path) -> Result<Vec<PathBuf>> {
    let loss_names: Vec<String> = history
        .iter()
        .flat_map(|m| m.values.keys())
        .filter(|k| k.starts_with("loss/"))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let plots: Vec<(&str, &str, Vec<Curve>)> = vec![
        (
            "success",
            "Success rate",
            vec![
                ("train".into(), series(history, "episode/success")),
                ("eval".into(), series(history, "eval/success")),
            ],
        ),
        (
            "return",
            "Episode return",
            vec![("train".into(), series(history, "episode/return"))],
        ),
        (
            "losses",
            "Losses",
            loss_names
                .iter()
                .map(|n| (n.clone(), series(history, n)))
                .collect(),
        ),
    ];
    let mut written = Vec::new();
    for (file, title, curves) in &plots {
        written.extend(write_plot(dir, file, title, curves, &[])?);
    }
    Ok(written)
}

/// Writes `<file>.svg` and `<file>.png` into `dir`: the curves against environment steps, each
/// with its band when `bands` has one at its index. Returns the files written (none, with a notice, when no system font is found to measure
/// text).
///
/// # Errors
/// When a file cannot be written.
pub(crate) fn write_plot(
    dir: &Path,
    file: &str,
    title: &str,
    curves: &[Curve],
    bands: &[Band],
) -> Result<Vec<PathBuf>> {
    // Both backends measure text with the registered font.
    if !png_font() {
        eprintln!("no system font found (DejaVu Sans); skipping the plots");
        return Ok(Vec::new());
    }
    let size = (PLOT_SIZE.0, picture_height(curves.len()));
    let svg = dir.join(format!("{file}.svg"));
    draw(
        SVGBackend::new(&svg, size).into_drawing_area(),
        title,
        curves,
        bands,
    )
    .with_context(|| format!("drawing {}", svg.display()))?;
    let png = dir.join(format!("{file}.png"));
    draw(
        BitMapBackend::new(&png, size).into_drawing_area(),
        title,
        curves,
        bands,
    )
    .with_context(|| format!("drawing {}", png.display()))?;
    Ok(vec![svg, png])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_has_its_own_rows_below_the_plot() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["grpo", "grpo + state_prediction(cosine 0.2)", "placebo"];
        let curves: Vec<Curve> = names
            .iter()
            .map(|n| (n.to_string(), vec![(0.0, 0.1), (100.0, 0.4)]))
            .collect();
        let written = write_plot(dir.path(), "legend", "Success", &curves, &[]).unwrap();
        if written.is_empty() {
            eprintln!("skipped: no system font to draw text with");
            return;
        }
        let png = std::fs::read(dir.path().join("legend.png")).unwrap();
        // The PNG header's IHDR chunk holds the width and height, big-endian, at bytes 16..24.
        let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
        assert_eq!((size(16), size(20)), (720, 420 + 3 * 20 + 10));
        let svg = std::fs::read_to_string(dir.path().join("legend.svg")).unwrap();
        for name in names {
            assert!(svg.contains(name), "{name} is not in the legend");
        }
    }
}
