//! The functions of `/api/query/gexp` (OpenTSDB 2.4's `ExpressionFactory`,
//! plus 2.5's `firstDiff`) and their parameter checks, in each function's
//! order and words: [`check`] turns a call's series count and function
//! parameters into an [`Operation`].
//!
//! Every function returns no series when it has no series parameter (the
//! other checks are not reached then, as in OpenTSDB).

use crate::expression::error::ExpressionError;
use crate::expression::script::ArithOp;

/// A function name as registered (names are case-sensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Function {
    Absolute,
    Alias,
    DiffSeries,
    DivideSeries,
    FirstDiff,
    HighestCurrent,
    HighestMax,
    MovingAverage,
    MultiplySeries,
    Scale,
    SumSeries,
    TimeShift,
}

impl Function {
    /// Every registered name and what it calls.
    const NAMES: [(&'static str, Function); 17] = [
        ("absolute", Function::Absolute),
        ("alias", Function::Alias),
        ("diffSeries", Function::DiffSeries),
        ("difference", Function::DiffSeries),
        ("divideSeries", Function::DivideSeries),
        ("divide", Function::DivideSeries),
        ("firstDiff", Function::FirstDiff),
        ("highestCurrent", Function::HighestCurrent),
        ("highestMax", Function::HighestMax),
        ("movingAverage", Function::MovingAverage),
        ("multiplySeries", Function::MultiplySeries),
        ("multiply", Function::MultiplySeries),
        ("scale", Function::Scale),
        ("sumSeries", Function::SumSeries),
        ("sum", Function::SumSeries),
        ("timeShift", Function::TimeShift),
        ("shift", Function::TimeShift),
    ];

    /// Looks a registered name up.
    pub(crate) fn from_name(name: &str) -> Option<Function> {
        Function::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }
}

/// Which value ranks a series for `highestCurrent` / `highestMax`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rank {
    /// The latest value in the query range.
    Current,
    /// The largest value in the query range.
    Max,
}

/// A moving average's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Window {
    /// The last `n` values.
    Points(usize),
    /// The values less than this many ms older than the newest.
    Millis(i64),
}

/// A call with checked parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operation {
    /// A call without series parameters: no series.
    Nothing,
    Absolute,
    /// The alias template (function parameters joined with `,`).
    Alias(String),
    Scale(f64),
    /// `sumSeries` (`+`), `diffSeries` (`-`), `multiplySeries` (`*`),
    /// `divideSeries` (`/`).
    Combine(ArithOp),
    Highest {
        n: usize,
        rank: Rank,
    },
    MovingAverage(Window),
    /// Milliseconds added to every timestamp.
    TimeShift(i64),
    FirstDiff,
}

/// Checks a call of `function` with `series` series parameters and the
/// function parameters `params`.
pub(crate) fn check(
    function: Function,
    series: usize,
    params: &[String],
) -> Result<Operation, ExpressionError> {
    if series == 0 {
        return Ok(Operation::Nothing);
    }
    Ok(match function {
        Function::Absolute => Operation::Absolute,
        Function::FirstDiff => Operation::FirstDiff,
        Function::Alias => {
            if params.is_empty() {
                return Err(ExpressionError::MissingAlias);
            }
            Operation::Alias(params.join(","))
        }
        Function::Scale => Operation::Scale(scale_factor(params)?),
        Function::SumSeries => combine(ArithOp::Add, series)?,
        Function::DiffSeries => combine(ArithOp::Subtract, series)?,
        Function::MultiplySeries => combine(ArithOp::Multiply, series)?,
        Function::DivideSeries => combine(ArithOp::Divide, series)?,
        Function::HighestCurrent => Operation::Highest {
            n: top_n(params)?,
            rank: Rank::Current,
        },
        Function::HighestMax => Operation::Highest {
            n: top_n(params)?,
            rank: Rank::Max,
        },
        Function::MovingAverage => Operation::MovingAverage(window(params)?),
        Function::TimeShift => Operation::TimeShift(time_shift(params)?),
    })
}

fn combine(op: ArithOp, series: usize) -> Result<Operation, ExpressionError> {
    if !(2..=26).contains(&series) {
        return Err(ExpressionError::SeriesCount(series));
    }
    Ok(Operation::Combine(op))
}

/// `^[-0-9\.]+$`, then `Double.parseDouble`.
fn scale_factor(params: &[String]) -> Result<f64, ExpressionError> {
    let factor = params.first().ok_or(ExpressionError::MissingScaleFactor)?;
    if factor.is_empty()
        || !factor
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == '.')
    {
        // OpenTSDB prints the factor it had not parsed yet (always 0.0);
        // the parameter says more.
        return Err(ExpressionError::UnparseableScaleFactor(factor.clone()));
    }
    factor
        .parse::<f64>()
        .map_err(|_| ExpressionError::ScaleFactorNotNumber)
}

/// `^[0-9]+$`, a positive Java `int`.
fn top_n(params: &[String]) -> Result<usize, ExpressionError> {
    let param = params.first().ok_or(ExpressionError::MissingTopN)?;
    if param.is_empty() || !param.chars().all(|c| c.is_ascii_digit()) {
        return Err(ExpressionError::UnparseableTopN(param.clone()));
    }
    let n: i32 = param.parse().map_err(|_| ExpressionError::NotAnInteger)?;
    if n < 1 {
        return Err(ExpressionError::TopNNotPositive(i64::from(n)));
    }
    usize::try_from(n).map_err(|_| ExpressionError::NotAnInteger)
}

/// A number of points (`^[0-9]+$`) or a quoted time span (`'5min'`).
fn window(params: &[String]) -> Result<Window, ExpressionError> {
    let param = params
        .first()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .ok_or(ExpressionError::MissingWindow)?;
    let window = if param.chars().all(|c| c.is_ascii_digit()) {
        let n: i32 = param.parse().map_err(|_| ExpressionError::NotAnInteger)?;
        Window::Points(usize::try_from(n).unwrap_or(0))
    } else if param.starts_with('\'') && param.ends_with('\'') {
        Window::Millis(window_millis(param)?)
    } else {
        return Err(ExpressionError::UnparseableWindow(param.to_string()));
    };
    match window {
        Window::Points(0) | Window::Millis(..=0) => Err(ExpressionError::WindowNotPositive),
        ok => Ok(ok),
    }
}

/// `MovingAverage.parseParam`: `'<digits><unit>'` with unit `d`/`day`,
/// `h`/`hr`/`hour`, `m`/`min`, `s`/`sec`.
fn window_millis(param: &str) -> Result<i64, ExpressionError> {
    // A lone quote both starts and ends with one: no digits.
    let inner = param.get(1..param.len() - 1).unwrap_or_default();
    let digits = inner.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return Err(ExpressionError::InvalidWindow(param.to_string()));
    }
    let count: i32 = inner[..digits]
        .parse()
        .map_err(|_| ExpressionError::WindowOverflow(param.to_string()))?;
    let unit = &inner[digits..];
    let ms_per_unit = match unit {
        "day" | "d" => 86_400_000,
        "hr" | "hour" | "h" => 3_600_000,
        "min" | "m" => 60_000,
        "sec" | "s" => 1_000,
        _ => {
            return Err(ExpressionError::WindowUnit {
                unit: unit.to_string(),
                window: param.to_string(),
            });
        }
    };
    Ok(i64::from(count) * ms_per_unit)
}

/// `TimeShift`: a quoted `'<digits><unit>'` with unit `sec`, `min`, `hr`,
/// `day`/`days`, `week`/`weeks`. OpenTSDB 2.4 keeps the closing quote in
/// the unit (`min'`) and so rejects every quoted shift; the quote is
/// dropped here, which is what its tests and documentation intend.
fn time_shift(params: &[String]) -> Result<i64, ExpressionError> {
    let param = params
        .first()
        .map(|p| p.trim())
        .ok_or(ExpressionError::MissingTimeShift)?;
    if !(param.starts_with('\'') && param.ends_with('\'')) {
        return Err(ExpressionError::TimeShiftNotQuoted);
    }
    // A lone quote both starts and ends with one: no digits.
    let inner = param.get(1..param.len() - 1).unwrap_or_default();
    let digits = inner.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return Err(ExpressionError::InvalidTimeShift(param.to_string()));
    }
    let count: i32 = inner[..digits]
        .parse()
        .map_err(|_| ExpressionError::InvalidTimeShift(param.to_string()))?;
    let unit = inner[digits..].trim();
    let ms_per_unit: i64 = match unit {
        "sec" => 1_000,
        "min" => 60_000,
        "hr" => 3_600_000,
        "day" | "days" => 86_400_000,
        "week" | "weeks" => 7 * 86_400_000,
        _ => return Err(ExpressionError::TimeShiftUnit(unit.to_string())),
    };
    let shift = i64::from(count) * ms_per_unit;
    if shift <= 0 {
        return Err(ExpressionError::TimeShiftNotPositive);
    }
    Ok(shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(function: Function, params: &[&str]) -> Result<Operation, ExpressionError> {
        let params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
        check(function, 1, &params)
    }

    #[test]
    fn names() {
        assert_eq!(Function::from_name("sum"), Some(Function::SumSeries));
        assert_eq!(Function::from_name("shift"), Some(Function::TimeShift));
        assert_eq!(Function::from_name("divide"), Some(Function::DivideSeries));
        assert_eq!(Function::from_name("Sum"), None);
    }

    #[test]
    fn parameters_in_opentsdb_words() {
        use ExpressionError as E;
        assert_eq!(check(Function::Scale, 0, &[]), Ok(Operation::Nothing));
        assert_eq!(run(Function::Alias, &[]), Err(E::MissingAlias));
        assert_eq!(
            run(Function::Alias, &["a", "b"]),
            Ok(Operation::Alias("a,b".into()))
        );
        assert_eq!(run(Function::Scale, &[]), Err(E::MissingScaleFactor));
        assert_eq!(run(Function::Scale, &["-2.5"]), Ok(Operation::Scale(-2.5)));
        assert_eq!(
            run(Function::Scale, &["1e3"]),
            Err(E::UnparseableScaleFactor("1e3".into()))
        );
        assert_eq!(
            run(Function::Scale, &["1.2.3"]),
            Err(E::ScaleFactorNotNumber)
        );
        assert_eq!(check(Function::SumSeries, 1, &[]), Err(E::SeriesCount(1)));
        assert_eq!(
            check(Function::DivideSeries, 27, &[]),
            Err(E::SeriesCount(27))
        );
        assert_eq!(
            check(Function::DiffSeries, 2, &[]),
            Ok(Operation::Combine(ArithOp::Subtract))
        );
        assert_eq!(run(Function::HighestMax, &[]), Err(E::MissingTopN));
        assert_eq!(
            run(Function::HighestMax, &["x"]),
            Err(E::UnparseableTopN("x".into()))
        );
        assert_eq!(
            run(Function::HighestMax, &["0"]),
            Err(E::TopNNotPositive(0))
        );
        assert_eq!(
            run(Function::HighestCurrent, &["99999999999"]),
            Err(E::NotAnInteger)
        );
        assert_eq!(
            run(Function::HighestCurrent, &["2"]),
            Ok(Operation::Highest {
                n: 2,
                rank: Rank::Current
            })
        );
        assert_eq!(run(Function::MovingAverage, &[]), Err(E::MissingWindow));
        assert_eq!(
            run(Function::MovingAverage, &["5"]),
            Ok(Operation::MovingAverage(Window::Points(5)))
        );
        assert_eq!(
            run(Function::MovingAverage, &["'60s'"]),
            Ok(Operation::MovingAverage(Window::Millis(60_000)))
        );
        assert_eq!(
            run(Function::MovingAverage, &["'2hour'"]),
            Ok(Operation::MovingAverage(Window::Millis(7_200_000)))
        );
        assert_eq!(
            run(Function::MovingAverage, &["0"]),
            Err(E::WindowNotPositive)
        );
        assert_eq!(
            run(Function::MovingAverage, &["60s"]),
            Err(E::UnparseableWindow("60s".into()))
        );
        assert_eq!(
            run(Function::MovingAverage, &["'min'"]),
            Err(E::InvalidWindow("'min'".into()))
        );
        assert_eq!(
            run(Function::MovingAverage, &["'5y'"]),
            Err(E::WindowUnit {
                unit: "y".into(),
                window: "'5y'".into()
            })
        );
        assert_eq!(run(Function::TimeShift, &[]), Err(E::MissingTimeShift));
        assert_eq!(
            run(Function::TimeShift, &["10min"]),
            Err(E::TimeShiftNotQuoted)
        );
        assert_eq!(
            run(Function::TimeShift, &["'1week'"]),
            Ok(Operation::TimeShift(604_800_000))
        );
        assert_eq!(
            run(Function::TimeShift, &["'10m'"]),
            Err(E::TimeShiftUnit("m".into()))
        );
        assert_eq!(
            run(Function::TimeShift, &["'x'"]),
            Err(E::InvalidTimeShift("'x'".into()))
        );
        assert_eq!(
            run(Function::TimeShift, &["'0sec'"]),
            Err(E::TimeShiftNotPositive)
        );
    }
}
