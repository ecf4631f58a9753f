//! Time synchronisation, as OpenTSDB's `TimeSyncedIterator` steps series in
//! lock step: the timestamps are the union of the series' timestamps, and
//! at each one a series either has a point there or is missing (the caller
//! fills it).

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::num::Num;

/// A series' points as the lock-step iteration reads them (sorted by
/// timestamp, no duplicates).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Points<'a> {
    /// A sub query's answer.
    Raw(&'a [(i64, Num)]),
    /// One column of an expression's output: `values[row * stride + column]`.
    Column {
        timestamps: &'a [i64],
        values: &'a [f64],
        stride: usize,
        column: usize,
    },
}

impl Points<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Points::Raw(points) => points.len(),
            Points::Column { timestamps, .. } => timestamps.len(),
        }
    }

    fn timestamp(&self, i: usize) -> i64 {
        match self {
            Points::Raw(points) => points[i].0,
            Points::Column { timestamps, .. } => timestamps[i],
        }
    }

    fn value(&self, i: usize) -> f64 {
        match self {
            Points::Raw(points) => points[i].1.as_f64(),
            Points::Column {
                values,
                stride,
                column,
                ..
            } => values.get(i * stride + column).copied().unwrap_or(f64::NAN),
        }
    }

    /// All timestamps, in order.
    fn timestamps(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.timestamp(i))
    }
}

/// The sorted union of the timestamps of `series`, held in `budget`.
pub(crate) fn union_timestamps(
    series: &[Points<'_>],
    budget: &QueryBudget,
) -> Result<Vec<i64>, QueryError> {
    let total: usize = series.iter().map(Points::len).sum();
    budget.hold(total)?;
    let mut all = Vec::with_capacity(total);
    let mut tick = 0;
    for points in series {
        for ts in points.timestamps() {
            budget.tick(&mut tick)?;
            all.push(ts);
        }
    }
    all.sort_unstable();
    all.dedup();
    budget.release(total - all.len());
    Ok(all)
}

/// A series' position in the lock-step iteration.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cursor {
    next: usize,
}

impl Cursor {
    /// The series' value at `ts` (consuming it), or `None` when it has no
    /// point there. Calls must come in increasing `ts`.
    pub(crate) fn take(&mut self, points: &Points<'_>, ts: i64) -> Option<f64> {
        while self.next < points.len() && points.timestamp(self.next) < ts {
            self.next += 1;
        }
        if self.next < points.len() && points.timestamp(self.next) == ts {
            self.next += 1;
            return Some(points.value(self.next - 1));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_and_cursors() {
        let a = [(1, Num::Int(10)), (3, Num::Float(30.5))];
        let b_ts = [2, 3];
        let b_values = [0.0, 20.0, 0.0, 21.0];
        let b = Points::Column {
            timestamps: &b_ts,
            values: &b_values,
            stride: 2,
            column: 1,
        };
        let budget = QueryBudget::unlimited();
        let ts = union_timestamps(&[Points::Raw(&a), b], &budget).unwrap();
        assert_eq!(ts, [1, 2, 3]);
        assert_eq!(budget.values_held(), 3);
        let (mut ca, mut cb) = (Cursor::default(), Cursor::default());
        let got: Vec<(Option<f64>, Option<f64>)> = ts
            .iter()
            .map(|t| (ca.take(&Points::Raw(&a), *t), cb.take(&b, *t)))
            .collect();
        assert_eq!(
            got,
            [
                (Some(10.0), None),
                (None, Some(20.0)),
                (Some(30.5), Some(21.0))
            ]
        );
    }
}
