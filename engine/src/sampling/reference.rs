//! Test references for sampling (tests and the `testing` feature only): the exact distribution
//! the filters leave, computed independently with full sorts in f64, and the chi-square check
//! of observed draws against it.

use super::device::RowFilters;

/// Sampling filters as the request gives them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterParams {
    pub temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    pub top_p: f32,
    pub min_p: f32,
}

impl FilterParams {
    /// The same filters as the device sampler takes them.
    pub fn row_filters(&self) -> RowFilters {
        RowFilters {
            inv_temperature: 1.0 / self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
        }
    }
}

/// The exact distribution top-k → temperature → top-p → min-p leaves: `(token, probability)`,
/// most likely first.
pub fn filtered_distribution(logits: &[f32], p: &FilterParams) -> Vec<(u32, f64)> {
    let mut all: Vec<(u32, f64)> = logits
        .iter()
        .enumerate()
        .map(|(id, &l)| (id as u32, f64::from(l)))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    if p.top_k > 0 {
        all.truncate(p.top_k);
    }
    let max = all[0].1;
    let mut weights: Vec<(u32, f64)> = all
        .iter()
        .map(|&(id, l)| (id, ((l - max) / f64::from(p.temperature)).exp()))
        .collect();
    let total: f64 = weights.iter().map(|w| w.1).sum();
    let mut mass = 0.0;
    let keep = weights
        .iter()
        .position(|w| {
            mass += w.1;
            mass >= f64::from(p.top_p) * total
        })
        .map_or(weights.len(), |i| i + 1);
    weights.truncate(keep);
    let threshold = f64::from(p.min_p) * weights[0].1;
    weights.retain(|w| w.1 >= threshold);
    let total: f64 = weights.iter().map(|w| w.1).sum();
    weights.iter().map(|&(id, w)| (id, w / total)).collect()
}

/// 0.1% critical values of chi-square by degrees of freedom (0..=13).
const CRITICAL: [f64; 14] = [
    0.0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59, 31.26, 32.91, 34.53,
];

/// Checks that `tokens` were drawn from `expected` (`filtered_distribution`): none outside it,
/// and a chi-square statistic under its 0.1% critical value. The error says why not.
pub fn check_draws(tokens: &[u32], expected: &[(u32, f64)]) -> Result<f64, String> {
    if let Some(stray) = tokens.iter().find(|t| !expected.iter().any(|e| e.0 == **t)) {
        return Err(format!("token {stray} was filtered out yet drawn"));
    }
    let degrees = expected.len().saturating_sub(1);
    if !(1..CRITICAL.len()).contains(&degrees) {
        return Err(format!("{degrees} degrees of freedom: no critical value here"));
    }
    let num_draws = tokens.len() as f64;
    let chi_square: f64 = expected
        .iter()
        .map(|&(id, probability)| {
            let observed = tokens.iter().filter(|&&t| t == id).count() as f64;
            let wanted = num_draws * probability;
            (observed - wanted).powi(2) / wanted
        })
        .sum();
    if chi_square < CRITICAL[degrees] {
        Ok(chi_square)
    } else {
        Err(format!(
            "chi-square {chi_square} over {degrees} degrees (0.1% critical value {})",
            CRITICAL[degrees]
        ))
    }
}
