//! One SVG chart per workload: the mean ns/op of every column for each configuration.

use std::path::Path;

use plotters::prelude::*;

use crate::runner::RunResult;

const COLORS: [RGBColor; 6] = [BLACK, RED, BLUE, GREEN, MAGENTA, CYAN];

/// Writes `DIR/<workload>.svg` for every workload of `r`.
///
/// # Errors
/// I/O or drawing failures.
pub fn write_all(r: &RunResult, dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for (w, configs) in &r.workloads {
        let path = dir.join(format!("{}.svg", w.name()));
        let maxv = configs
            .iter()
            .flat_map(|c| c.columns.iter().filter_map(|k| k.summary.map(|s| s.amean)))
            .fold(1.0f64, f64::max);
        let minv = configs
            .iter()
            .flat_map(|c| c.columns.iter().filter_map(|k| k.summary.map(|s| s.amean)))
            .fold(f64::INFINITY, f64::min)
            .min(maxv);
        let root = SVGBackend::new(&path, (900, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        let labels: Vec<String> = configs.iter().map(|c| c.params.label()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{} — mean ns/op (log scale)", w.name()),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                -0.5f64..(configs.len() as f64 - 0.5),
                ((minv / 2.0).max(0.1)..maxv * 2.0).log_scale(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        chart
            .configure_mesh()
            .x_labels(configs.len())
            .x_label_formatter(&|x| labels.get(x.round() as usize).cloned().unwrap_or_default())
            .y_desc("ns/op")
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        for (ci, name) in r.column_names.iter().enumerate() {
            let color = COLORS[ci % COLORS.len()];
            let pts: Vec<(f64, f64)> = configs
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    c.columns
                        .get(ci)
                        .and_then(|k| k.summary)
                        .map(|s| (i as f64, s.amean))
                })
                .collect();
            if pts.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
        drop(chart);
        drop(root);
        out.push(path);
    }
    Ok(out)
}
