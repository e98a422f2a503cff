//! Tool call diffs as unified diffs with three lines of context. The edit script and its
//! grouping into hunks come from `similar` (Myers' algorithm, which trims the common prefix
//! and suffix first); this module only prints them, in the format `diff -u` uses.

use std::time::Duration;

use similar::{Algorithm, ChangeTag, TextDiff};

const CONTEXT: usize = 3;

/// How long the diff may search for the smallest edit script. Past it (only for very large,
/// very different texts) the rest is shown as removed, then added: still a correct diff, only
/// a longer one, and never a stalled terminal.
const DEADLINE: Duration = Duration::from_millis(500);

/// A unified diff of `old` (`None`: a new file) to `new`, for `path`. Each line ends with `\n`.
pub fn unified(path: &str, old: Option<&str>, new: &str) -> String {
    let old_lines: Vec<&str> = old.map_or_else(Vec::new, |o| o.lines().collect());
    let new_lines: Vec<&str> = new.lines().collect();
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DEADLINE)
        .diff_slices(&old_lines, &new_lines);
    let mut out = String::new();
    out.push_str(&match old {
        Some(_) => format!("--- {path}\n"),
        None => "--- /dev/null\n".to_owned(),
    });
    out.push_str(&format!("+++ {path}\n"));
    let hunks = diff.grouped_ops(CONTEXT);
    if hunks.is_empty() {
        out.push_str("(no changes)\n");
        return out;
    }
    for hunk in hunks {
        let (Some(first), Some(last)) = (hunk.first(), hunk.last()) else {
            continue;
        };
        let (old_start, new_start) = (first.old_range().start, first.new_range().start);
        let old_len = last.old_range().end - old_start;
        let new_len = last.new_range().end - new_start;
        // 1-based; as diff(1) does, an empty range starts at the line before it.
        let at = |start: usize, len: usize| if len == 0 { start } else { start + 1 };
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            at(old_start, old_len),
            at(new_start, new_len)
        ));
        for op in &hunk {
            for change in diff.iter_changes(op) {
                out.push(match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                });
                out.push_str(change.value());
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unified;

    #[test]
    fn new_file() {
        assert_eq!(
            unified("/p/s.txt", None, "a\nb\n"),
            "--- /dev/null\n+++ /p/s.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        );
    }

    #[test]
    fn change_in_the_middle_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified("f", Some(old), new),
            "--- f\n+++ f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn separate_hunks_and_lcs() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let new = "A\nb\nc\nd\ne\nf\ng\nh\ni\nj\nK\n";
        let diff = unified("f", Some(old), new);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(
            diff.contains("-a\n+A\n") && diff.contains("-k\n+K\n"),
            "{diff}"
        );
        assert_eq!(
            unified("f", Some("x\n"), "x\n"),
            "--- f\n+++ f\n(no changes)\n"
        );
    }

    #[test]
    fn large_texts_diff_without_stalling() {
        let old: String = (0..20_000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..20_000).map(|i| format!("new {i}\n")).collect();
        let diff = unified("f", Some(&old), &new);
        assert_eq!(diff.lines().filter(|l| l.starts_with('-')).count(), 20_001);
        assert_eq!(diff.lines().filter(|l| l.starts_with('+')).count(), 20_001);
    }
}
