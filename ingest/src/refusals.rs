//! [`Refusals`]: what one request had refused, bounded. The first [`MAX_KEPT`] are kept with
//! their reasons for the answer; the rest are only counted, so that a request of many tiny bad
//! items (lines, series) costs no more than its size to answer. Every write format's answer
//! lists at most this many.

use std::ops::Deref;

/// Refusals kept with their reasons per request; the others are counted.
pub const MAX_KEPT: usize = 100;

/// The refusals of one request, in input order: the first [`MAX_KEPT`] kept (the slice it
/// derefs to), every one counted.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusals<T> {
    kept: Vec<T>,
    count: usize,
}

impl<T> Default for Refusals<T> {
    fn default() -> Self {
        Self {
            kept: Vec::new(),
            count: 0,
        }
    }
}

impl<T> Refusals<T> {
    /// Counts a refusal, and keeps it while fewer than [`MAX_KEPT`] are kept.
    pub fn push(&mut self, refusal: T) {
        self.count += 1;
        if self.kept.len() < MAX_KEPT {
            self.kept.push(refusal);
        }
    }

    /// Every refusal, kept or only counted.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The kept refusals, one line each as `line` renders them, then `and N more <items>
    /// refused` for those only counted; `None` when nothing was refused.
    pub fn text(&self, line: impl FnMut(&T) -> String, items: &str) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let mut lines: Vec<String> = self.kept.iter().map(line).collect();
        let more = self.count - self.kept.len();
        if more > 0 {
            lines.push(format!("and {more} more {items} refused"));
        }
        Some(lines.join("\n"))
    }
}

impl<T> Deref for Refusals<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.kept
    }
}

impl<'a, T> IntoIterator for &'a Refusals<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.kept.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_hundred_are_kept_and_every_one_counted() {
        let mut r = Refusals::default();
        assert_eq!(r.text(|n: &usize| n.to_string(), "lines"), None);
        for n in 0..1000 {
            r.push(n);
        }
        assert_eq!((r.len(), r.count()), (MAX_KEPT, 1000));
        assert_eq!(r[MAX_KEPT - 1], MAX_KEPT - 1);
        let text = r.text(|n| format!("line {n}"), "lines").unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_KEPT + 1);
        assert_eq!(lines[0], "line 0");
        assert_eq!(lines[MAX_KEPT], "and 900 more lines refused");
    }

    #[test]
    fn a_few_are_listed_without_a_count_line() {
        let mut r = Refusals::default();
        r.push("a");
        r.push("b");
        assert_eq!(r.text(|s| s.to_string(), "series"), Some("a\nb".into()));
    }
}
