//! Summary statistics of a column's samples, as mmtests reports them.

use serde::Serialize;

/// Summary of one column's samples (ns per operation per thread).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Summary {
    /// Arithmetic mean (mmtests `Amean`).
    pub amean: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Half-width of the 95% confidence interval of the mean.
    pub ci95: f64,
    /// Number of samples.
    pub n: usize,
}

/// Two-sided 95% Student t quantiles for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

impl Summary {
    /// Summarises `samples` (at least one).
    pub fn of(samples: &[f64]) -> Summary {
        let n = samples.len().max(1);
        let amean = samples.iter().sum::<f64>() / n as f64;
        let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let var = if n > 1 {
            samples.iter().map(|x| (x - amean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let stddev = var.sqrt();
        let t = if n > 1 {
            T95.get(n - 2).copied().unwrap_or(1.96)
        } else {
            0.0
        };
        Summary {
            amean,
            min,
            max,
            stddev,
            ci95: t * stddev / (n as f64).sqrt(),
            n,
        }
    }

    /// True if the 95% confidence intervals of the two means do not overlap (mmtests marks
    /// such a difference with `*`).
    pub fn differs_from(&self, other: &Summary) -> bool {
        self.amean + self.ci95 < other.amean - other.ci95
            || other.amean + other.ci95 < self.amean - self.ci95
    }

    /// Percent difference of this mean from `base`'s (negative: less time than the host).
    pub fn pct_vs(&self, base: &Summary) -> f64 {
        (self.amean - base.amean) / base.amean * 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_min_max_and_interval_of_known_samples() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!((s.amean, s.min, s.max, s.n), (3.0, 1.0, 5.0, 5));
        assert!((s.stddev - 1.5811).abs() < 1e-3);
        assert!((s.ci95 - 2.776 * 1.5811 / 5f64.sqrt()).abs() < 1e-3);
        let far = Summary::of(&[100.0, 101.0, 102.0]);
        assert!(s.differs_from(&far));
        assert!(!s.differs_from(&Summary::of(&[2.0, 3.0, 4.0])));
        assert!((far.pct_vs(&s) - (101.0 - 3.0) / 3.0 * 100.0).abs() < 1e-9);
    }
}
