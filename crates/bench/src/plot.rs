//! PNG charts (plotters) of `strata bench seeds`: replay time against shared_buffers,
//! one chart per workload, one line per engine.

use super::seeds::{Kind, Row};
use plotters::prelude::*;
use std::path::Path;

pub fn replay_charts(dir: &Path, rows: &[Row], sizes: &[(String, u64)]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    ids.dedup();
    for id in ids {
        let series: Vec<(Kind, Vec<(usize, f64)>)> = [Kind::Strata, Kind::Postgres]
            .into_iter()
            .map(|k| {
                let pts = sizes
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (_, b))| {
                        rows.iter()
                            .find(|r| r.0 == id && r.2 == *b && r.3 == k)
                            .and_then(|r| r.4.replay)
                            .map(|v| (i, v))
                    })
                    .collect::<Vec<_>>();
                (k, pts)
            })
            .filter(|(_, p)| !p.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let ymax = series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|x| x.1))
            .fold(0.0f64, f64::max)
            .max(1e-6)
            * 1.15;
        let path = dir.join(format!("replay_{id}.png"));
        let root = BitMapBackend::new(&path, (800, 500)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let names: Vec<String> = sizes.iter().map(|s| s.0.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Workload {id}: replay time after a crash (redo done ... elapsed)"),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(sizes.len() as f64 - 0.5), 0.0..ymax)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("shared_buffers")
            .y_desc("seconds")
            .x_labels(sizes.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(|x| e(&x))?;
        for (k, pts) in &series {
            let color = if *k == Kind::Strata { BLUE } else { RED };
            let data: Vec<(f64, f64)> = pts.iter().map(|(i, v)| (*i as f64, *v)).collect();
            chart
                .draw_series(LineSeries::new(data.clone(), color.stroke_width(3)))
                .map_err(|x| e(&x))?
                .label(k.name())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(data.iter().map(|p| Circle::new(*p, 5, color.filled())))
                .map_err(|x| e(&x))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(())
}
