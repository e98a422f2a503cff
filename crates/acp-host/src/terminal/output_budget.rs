//! What all the terminals of one host keep together: each terminal's output is bounded by its
//! own limit, and their sum by the host's budget, so that an agent that starts many chatty
//! commands and never releases them cannot make the client hold limit × count bytes.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::output_buffer::OutputBuffer;

/// The default of [`TerminalHost::with_output_budget`](super::TerminalHost::with_output_budget).
pub const DEFAULT_OUTPUT_BUDGET: usize = 64 * 1024 * 1024;

/// What a terminal keeps at least, whatever the others hold (or its own limit, when smaller):
/// enough for the end of a build log or a test run.
pub(crate) const MIN_KEPT_PER_TERMINAL: usize = 64 * 1024;

/// Bytes of output kept by the terminals of one host.
#[derive(Debug)]
pub(crate) struct OutputBudget {
    budget: usize,
    kept: AtomicUsize,
}

impl OutputBudget {
    pub(crate) fn new(budget: usize) -> Self {
        OutputBudget {
            budget,
            kept: AtomicUsize::new(0),
        }
    }

    /// Appends output to a terminal's buffer. When the host's terminals then keep more than
    /// the budget, the terminal that just grew gives up its oldest output (its limit is
    /// lowered for good, down to [`MIN_KEPT_PER_TERMINAL`]): the one producing output pays.
    pub(crate) fn push(&self, buffer: &mut OutputBuffer, bytes: &[u8]) {
        let before = buffer.text().len();
        buffer.push(bytes);
        self.settle(buffer, before);
    }

    /// [`OutputBuffer::finish`], counted.
    pub(crate) fn finish(&self, buffer: &mut OutputBuffer) {
        let before = buffer.text().len();
        buffer.finish();
        self.settle(buffer, before);
    }

    fn settle(&self, buffer: &mut OutputBuffer, before: usize) {
        let after = buffer.text().len();
        let kept = if after >= before {
            self.kept.fetch_add(after - before, Ordering::AcqRel) + (after - before)
        } else {
            self.kept.fetch_sub(before - after, Ordering::AcqRel) - (before - after)
        };
        if kept <= self.budget {
            return;
        }
        let excess = kept - self.budget;
        let floor = MIN_KEPT_PER_TERMINAL.min(buffer.limit());
        let target = after.saturating_sub(excess).max(floor);
        if target < after {
            buffer.shrink_to(target);
            let shrunk = buffer.text().len();
            self.kept.fetch_sub(after - shrunk, Ordering::AcqRel);
        }
    }

    /// A terminal's buffer is gone: its bytes no longer count.
    pub(crate) fn release(&self, buffer: &OutputBuffer) {
        self.kept.fetch_sub(buffer.text().len(), Ordering::AcqRel);
    }

    /// Bytes kept over all terminals.
    pub(crate) fn kept(&self) -> usize {
        self.kept.load(Ordering::Acquire)
    }

    pub(crate) fn budget(&self) -> usize {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_that_grows_past_the_budget_gives_up_its_oldest_output() {
        let budget = OutputBudget::new(3 * MIN_KEPT_PER_TERMINAL);
        let mut quiet = OutputBuffer::new(1 << 20);
        let mut chatty = OutputBuffer::new(1 << 20);
        budget.push(&mut quiet, &vec![b'q'; MIN_KEPT_PER_TERMINAL]);
        for _ in 0..10 {
            budget.push(&mut chatty, &vec![b'c'; MIN_KEPT_PER_TERMINAL]);
            assert!(budget.kept() <= budget.budget(), "{}", budget.kept());
        }
        assert_eq!(quiet.text().len(), MIN_KEPT_PER_TERMINAL);
        assert_eq!(chatty.text().len(), 2 * MIN_KEPT_PER_TERMINAL);
        assert!(chatty.truncated());
        budget.release(&chatty);
        budget.release(&quiet);
        assert_eq!(budget.kept(), 0);
    }

    #[test]
    fn a_terminal_keeps_its_floor_whatever_the_others_hold() {
        let budget = OutputBudget::new(MIN_KEPT_PER_TERMINAL);
        let mut first = OutputBuffer::new(1 << 20);
        let mut second = OutputBuffer::new(1 << 20);
        budget.push(&mut first, &vec![b'a'; MIN_KEPT_PER_TERMINAL]);
        budget.push(&mut second, &vec![b'b'; 4 * MIN_KEPT_PER_TERMINAL]);
        assert_eq!(second.text().len(), MIN_KEPT_PER_TERMINAL);
        assert_eq!(budget.kept(), 2 * MIN_KEPT_PER_TERMINAL);
    }
}
